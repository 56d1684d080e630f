#ifndef CUZK_FF_FP_CUH
#define CUZK_FF_FP_CUH

// The BLS12-381 base field Fp: 12 limbs, Montgomery form (R = 2^384), blst's layout; and the
// operations the curve code (ec/) uses, overloaded on the field. Additions and subtractions are
// inlined; the product is called (below).

#include "ff/mont.cuh"

CONST_ARRAY u32 FP_MODULUS[12] = {0xffffaaab, 0xb9feffff, 0xb153ffff, 0x1eabfffe,
                                  0xf6b0f624, 0x6730d2a0, 0xf38512bf, 0x64774b84,
                                  0x434bacd7, 0x4b1ba7b6, 0x397fe69a, 0x1a0111ea};
// R mod p: one in Montgomery form.
CONST_ARRAY u32 FP_ONE[12] = {0x0002fffd, 0x76090000, 0xc40c0002, 0xebf4000b,
                              0x53c758ba, 0x5f489857, 0x70525745, 0x77ce5853,
                              0xa256ec6d, 0x5c071a97, 0xfa80e493, 0x15f65ec3};
// -p^-1 mod 2^32.
#define FP_INV 0xfffcfffdu

struct fp_t {
    u32 l[12];
};

// Called, not inlined: one copy of the product instead of one per use keeps the point formulas
// inside the instruction cache (inlined, the G1 accumulation ran slower, with either product:
// docs/measurements/2026-12-04-h200-field/). Operands by value travel in registers.
FN_CALL fp_t fp_mul(fp_t a, fp_t b) {
    fp_t r;
    mont_mul<12>(r.l, a.l, b.l, FP_MODULUS, FP_INV);
    return r;
}
// The square apart from the product: its cross products are made once (mont_sqr), and it is
// two of the mixed addition's ten products.
FN_CALL fp_t fp_sqr(fp_t a) {
    fp_t r;
    mont_sqr<12>(r.l, a.l, FP_MODULUS, FP_INV);
    return r;
}
// a·b - c·d with one reduction for the two products (Y of every point addition).
FN_CALL fp_t fp_mul_sub(fp_t a, fp_t b, fp_t c, fp_t d) {
    fp_t r;
    mont_mul_sub<12>(r.l, a.l, b.l, c.l, d.l, FP_MODULUS, FP_INV);
    return r;
}
FN fp_t fp_add(const fp_t &a, const fp_t &b) {
    fp_t r;
    mod_add<12>(r.l, a.l, b.l, FP_MODULUS);
    return r;
}
FN fp_t fp_sub(const fp_t &a, const fp_t &b) {
    fp_t r;
    mod_sub<12>(r.l, a.l, b.l, FP_MODULUS);
    return r;
}
FN fp_t fp_zero() {
    fp_t r;
#pragma unroll
    for (int j = 0; j < 12; j++) r.l[j] = 0;
    return r;
}
FN fp_t fp_one() {
    fp_t r;
#pragma unroll
    for (int j = 0; j < 12; j++) r.l[j] = FP_ONE[j];
    return r;
}
FN bool fp_is_zero(const fp_t &a) { return limbs_zero<12>(a.l); }
FN fp_t fp_neg(const fp_t &a) { return fp_sub(fp_zero(), a); }

// a^-1 as a^(p-2) (Fermat), by squarings and products from the exponent's top bit down; 0 gives
// 0. About 380 squarings and 190 products: for the rare inversion (one per batch of additions
// in ec/affine.cuh), not for inner loops.
FN_CALL fp_t fp_inv(fp_t a) {
    fp_t r = fp_one();
#pragma unroll 1
    for (int w = 11; w >= 0; w--) {
        u32 e = FP_MODULUS[w] - (w == 0 ? 2u : 0u);  // p's low word is above 2: no borrow
#pragma unroll 1
        for (int b = 31; b >= 0; b--) {
            r = fp_sqr(r);
            if ((e >> b) & 1) r = fp_mul(r, a);
        }
    }
    return r;
}

// The operations the curve code uses, overloaded on the field.
FN fp_t f_add(const fp_t &a, const fp_t &b) { return fp_add(a, b); }
FN fp_t f_sub(const fp_t &a, const fp_t &b) { return fp_sub(a, b); }
FN fp_t f_mul(const fp_t &a, const fp_t &b) { return fp_mul(a, b); }
FN fp_t f_sqr(const fp_t &a) { return fp_sqr(a); }
FN fp_t f_mul_sub(const fp_t &a, const fp_t &b, const fp_t &c, const fp_t &d) {
    return fp_mul_sub(a, b, c, d);
}
FN fp_t f_inv(const fp_t &a) { return fp_inv(a); }
FN fp_t f_neg(const fp_t &a) { return fp_neg(a); }
FN bool f_is_zero(const fp_t &a) { return fp_is_zero(a); }
FN void f_set_zero(fp_t &a) { a = fp_zero(); }
FN void f_set_one(fp_t &a) { a = fp_one(); }

#endif  // CUZK_FF_FP_CUH
