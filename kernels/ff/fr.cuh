#ifndef CUZK_FF_FR_CUH
#define CUZK_FF_FR_CUH

// The BLS12-381 scalar field Fr: 8 limbs, Montgomery form (R = 2^256), blst's layout.

#include "ff/mont.cuh"

CONST_ARRAY u32 FR_MODULUS[8] = {0x00000001, 0xffffffff, 0xfffe5bfe, 0x53bda402,
                                 0x09a1d805, 0x3339d808, 0x299d7d48, 0x73eda753};
// -r^-1 mod 2^32: r's low 64 bits are 2^64 - 2^32 + 1 (LOW_FR of ff/mont.cuh).
#define FR_INV 0xffffffffu

struct fr_t {
    u32 l[8];
};

FN fr_t fr_mul(const fr_t &a, const fr_t &b) {
    fr_t r;
    mont_mul<8, LOW_FR>(r.l, a.l, b.l, FR_MODULUS, FR_INV);
    return r;
}
FN fr_t fr_add(const fr_t &a, const fr_t &b) {
    fr_t r;
    mod_add<8>(r.l, a.l, b.l, FR_MODULUS);
    return r;
}
FN fr_t fr_sub(const fr_t &a, const fr_t &b) {
    fr_t r;
    mod_sub<8>(r.l, a.l, b.l, FR_MODULUS);
    return r;
}
// Montgomery form -> the canonical integer.
FN fr_t fr_from_mont(const fr_t &a) {
    fr_t one_raw;
#pragma unroll
    for (int j = 0; j < 8; j++) one_raw.l[j] = j == 0 ? 1 : 0;
    return fr_mul(a, one_raw);
}

#endif  // CUZK_FF_FR_CUH
