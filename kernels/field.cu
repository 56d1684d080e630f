// BLS12-381 base field Fp (12 x 32-bit limbs), scalar field Fr (8 limbs) and Fp2 = Fp[u]/(u^2+1),
// all in Montgomery form with the same limb order and radix as blst (little-endian, R = 2^384 for
// Fp, 2^256 for Fr), so buffers made by blstrs go to the device unchanged.
//
// The arithmetic is written in portable C++ so that it compiles for the device under NVRTC and for
// the host under a C++ compiler (kernels/hostcheck/ checks it against big-integer arithmetic). On
// the device, Montgomery multiplication uses PTX carry chains instead (CUZK_PORTABLE_FIELD turns
// them off); `cuzk selftest --gpu` checks that version against the CPU.

#if defined(__CUDACC_RTC__) || defined(__CUDACC__)
#define FN __device__ __forceinline__
// Base-field operations are called, not inlined: inlined, every point formula would carry dozens
// of unrolled 12-limb products and NVRTC takes minutes over the G2 kernels.
#define FN_CALL __device__ __noinline__
#define CONST_ARRAY __device__ __constant__
#else
#define FN static inline
#define FN_CALL static
#define CONST_ARRAY static const
#endif

typedef unsigned int u32;
typedef unsigned long long u64;

CONST_ARRAY u32 FP_MODULUS[12] = {0xffffaaab, 0xb9feffff, 0xb153ffff, 0x1eabfffe,
                                  0xf6b0f624, 0x6730d2a0, 0xf38512bf, 0x64774b84,
                                  0x434bacd7, 0x4b1ba7b6, 0x397fe69a, 0x1a0111ea};
// R mod p: one in Montgomery form.
CONST_ARRAY u32 FP_ONE[12] = {0x0002fffd, 0x76090000, 0xc40c0002, 0xebf4000b,
                              0x53c758ba, 0x5f489857, 0x70525745, 0x77ce5853,
                              0xa256ec6d, 0x5c071a97, 0xfa80e493, 0x15f65ec3};
CONST_ARRAY u32 FR_MODULUS[8] = {0x00000001, 0xffffffff, 0xfffe5bfe, 0x53bda402,
                                 0x09a1d805, 0x3339d808, 0x299d7d48, 0x73eda753};
// -p^-1 mod 2^32.
#define FP_INV 0xfffcfffdu
#define FR_INV 0xffffffffu

// r = t - m if t (N + 1 words) >= m, else t: t < 2m.
template <int N>
FN void mont_final(u32 *r, const u32 *t, const u32 *m) {
    u32 s[N];
    u64 borrow = 0;
#pragma unroll
    for (int j = 0; j < N; j++) {
        u64 d = (u64)t[j] - m[j] - borrow;
        s[j] = (u32)d;
        borrow = (d >> 32) & 1;
    }
    bool keep = t[N] == 0 && borrow;
#pragma unroll
    for (int j = 0; j < N; j++) r[j] = keep ? t[j] : s[j];
}

#if defined(__CUDA_ARCH__) && !defined(CUZK_PORTABLE_FIELD)
// PTX carry chains: each chain is one run of *.cc instructions (the carry flag lives between
// consecutive statements of a chain and nothing between them touches it).
FN u32 mad_lo_cc(u32 a, u32 b, u32 c) {
    u32 r;
    asm volatile("mad.lo.cc.u32 %0, %1, %2, %3;" : "=r"(r) : "r"(a), "r"(b), "r"(c));
    return r;
}
FN u32 madc_lo_cc(u32 a, u32 b, u32 c) {
    u32 r;
    asm volatile("madc.lo.cc.u32 %0, %1, %2, %3;" : "=r"(r) : "r"(a), "r"(b), "r"(c));
    return r;
}
FN u32 mad_hi_cc(u32 a, u32 b, u32 c) {
    u32 r;
    asm volatile("mad.hi.cc.u32 %0, %1, %2, %3;" : "=r"(r) : "r"(a), "r"(b), "r"(c));
    return r;
}
FN u32 madc_hi_cc(u32 a, u32 b, u32 c) {
    u32 r;
    asm volatile("madc.hi.cc.u32 %0, %1, %2, %3;" : "=r"(r) : "r"(a), "r"(b), "r"(c));
    return r;
}
FN u32 addc_cc(u32 a, u32 b) {
    u32 r;
    asm volatile("addc.cc.u32 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b));
    return r;
}
FN u32 addc(u32 a, u32 b) {
    u32 r;
    asm volatile("addc.u32 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b));
    return r;
}

// t[0..N+1] += x * y[0..N-1] (x a word), as a low-half chain then a high-half chain.
template <int N>
FN void mul_word_add(u32 *t, u32 x, const u32 *y) {
    t[0] = mad_lo_cc(y[0], x, t[0]);
#pragma unroll
    for (int j = 1; j < N; j++) t[j] = madc_lo_cc(y[j], x, t[j]);
    t[N] = addc_cc(t[N], 0);
    t[N + 1] = addc(t[N + 1], 0);
    t[1] = mad_hi_cc(y[0], x, t[1]);
#pragma unroll
    for (int j = 1; j < N; j++) t[j + 1] = madc_hi_cc(y[j], x, t[j + 1]);
    t[N + 1] = addc(t[N + 1], 0);
}

// CIOS Montgomery multiplication: r = a * b / 2^(32N) mod m, for m < 2^(32N) / 4.
template <int N>
FN void mont_mul(u32 *r, const u32 *a, const u32 *b, const u32 *m, u32 inv) {
    u32 t[N + 2];
#pragma unroll
    for (int i = 0; i < N + 2; i++) t[i] = 0;
#pragma unroll
    for (int i = 0; i < N; i++) {
        mul_word_add<N>(t, b[i], a);
        u32 q = t[0] * inv;
        mul_word_add<N>(t, q, m);
        // t[0] is now 0: divide by the word.
#pragma unroll
        for (int j = 0; j <= N; j++) t[j] = t[j + 1];
        t[N + 1] = 0;
    }
    mont_final<N>(r, t, m);
}
#else
// CIOS Montgomery multiplication: r = a * b / 2^(32N) mod m, for m < 2^(32N) / 4.
template <int N>
FN void mont_mul(u32 *r, const u32 *a, const u32 *b, const u32 *m, u32 inv) {
    u32 t[N + 2];
#pragma unroll
    for (int i = 0; i < N + 2; i++) t[i] = 0;
#pragma unroll
    for (int i = 0; i < N; i++) {
        u64 c = 0;
#pragma unroll
        for (int j = 0; j < N; j++) {
            c += (u64)a[j] * b[i] + t[j];
            t[j] = (u32)c;
            c >>= 32;
        }
        c += t[N];
        t[N] = (u32)c;
        t[N + 1] = (u32)(c >> 32);
        u32 q = t[0] * inv;
        c = ((u64)q * m[0] + t[0]) >> 32;
#pragma unroll
        for (int j = 1; j < N; j++) {
            c += (u64)q * m[j] + t[j];
            t[j - 1] = (u32)c;
            c >>= 32;
        }
        c += t[N];
        t[N - 1] = (u32)c;
        t[N] = t[N + 1] + (u32)(c >> 32);
    }
    mont_final<N>(r, t, m);
}
#endif


template <int N>
FN void mod_add(u32 *r, const u32 *a, const u32 *b, const u32 *m) {
    u32 t[N];
    u64 c = 0;
#pragma unroll
    for (int j = 0; j < N; j++) {
        c += (u64)a[j] + b[j];
        t[j] = (u32)c;
        c >>= 32;
    }
    u32 s[N];
    u64 borrow = 0;
#pragma unroll
    for (int j = 0; j < N; j++) {
        u64 d = (u64)t[j] - m[j] - borrow;
        s[j] = (u32)d;
        borrow = (d >> 32) & 1;
    }
    bool keep = c == 0 && borrow;
#pragma unroll
    for (int j = 0; j < N; j++) r[j] = keep ? t[j] : s[j];
}

template <int N>
FN void mod_sub(u32 *r, const u32 *a, const u32 *b, const u32 *m) {
    u32 t[N];
    u64 borrow = 0;
#pragma unroll
    for (int j = 0; j < N; j++) {
        u64 d = (u64)a[j] - b[j] - borrow;
        t[j] = (u32)d;
        borrow = (d >> 32) & 1;
    }
    u32 mask = borrow ? 0xffffffffu : 0;
    u64 c = 0;
#pragma unroll
    for (int j = 0; j < N; j++) {
        c += (u64)t[j] + (m[j] & mask);
        r[j] = (u32)c;
        c >>= 32;
    }
}

template <int N>
FN bool limbs_zero(const u32 *a) {
    u32 acc = 0;
#pragma unroll
    for (int j = 0; j < N; j++) acc |= a[j];
    return acc == 0;
}

struct fr_t {
    u32 l[8];
};
struct fp_t {
    u32 l[12];
};
struct fp2_t {
    fp_t c0, c1;
};

FN fr_t fr_mul(const fr_t &a, const fr_t &b) {
    fr_t r;
    mont_mul<8>(r.l, a.l, b.l, FR_MODULUS, FR_INV);
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

FN_CALL fp_t fp_mul(const fp_t &a, const fp_t &b) {
    fp_t r;
    mont_mul<12>(r.l, a.l, b.l, FP_MODULUS, FP_INV);
    return r;
}
FN fp_t fp_sqr(const fp_t &a) { return fp_mul(a, a); }
FN_CALL fp_t fp_add(const fp_t &a, const fp_t &b) {
    fp_t r;
    mod_add<12>(r.l, a.l, b.l, FP_MODULUS);
    return r;
}
FN_CALL fp_t fp_sub(const fp_t &a, const fp_t &b) {
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

FN fp2_t fp2_add(const fp2_t &a, const fp2_t &b) { return {fp_add(a.c0, b.c0), fp_add(a.c1, b.c1)}; }
FN fp2_t fp2_sub(const fp2_t &a, const fp2_t &b) { return {fp_sub(a.c0, b.c0), fp_sub(a.c1, b.c1)}; }
// (a0 + a1 u)(b0 + b1 u) with u^2 = -1, Karatsuba: three base multiplications.
FN fp2_t fp2_mul(const fp2_t &a, const fp2_t &b) {
    fp_t t0 = fp_mul(a.c0, b.c0);
    fp_t t1 = fp_mul(a.c1, b.c1);
    fp_t t2 = fp_mul(fp_add(a.c0, a.c1), fp_add(b.c0, b.c1));
    return {fp_sub(t0, t1), fp_sub(fp_sub(t2, t0), t1)};
}
// (a0 + a1 u)^2 = (a0 + a1)(a0 - a1) + 2 a0 a1 u.
FN fp2_t fp2_sqr(const fp2_t &a) {
    fp_t t = fp_mul(a.c0, a.c1);
    return {fp_mul(fp_add(a.c0, a.c1), fp_sub(a.c0, a.c1)), fp_add(t, t)};
}
FN fp2_t fp2_zero() { return {fp_zero(), fp_zero()}; }
FN fp2_t fp2_one() { return {fp_one(), fp_zero()}; }
FN bool fp2_is_zero(const fp2_t &a) { return fp_is_zero(a.c0) && fp_is_zero(a.c1); }
FN fp2_t fp2_neg(const fp2_t &a) { return {fp_neg(a.c0), fp_neg(a.c1)}; }

// The operations the curve code uses, overloaded on the field.
FN fp_t f_add(const fp_t &a, const fp_t &b) { return fp_add(a, b); }
FN fp_t f_sub(const fp_t &a, const fp_t &b) { return fp_sub(a, b); }
FN fp_t f_mul(const fp_t &a, const fp_t &b) { return fp_mul(a, b); }
FN fp_t f_sqr(const fp_t &a) { return fp_sqr(a); }
FN fp_t f_neg(const fp_t &a) { return fp_neg(a); }
FN bool f_is_zero(const fp_t &a) { return fp_is_zero(a); }
FN void f_set_zero(fp_t &a) { a = fp_zero(); }
FN void f_set_one(fp_t &a) { a = fp_one(); }
FN fp2_t f_add(const fp2_t &a, const fp2_t &b) { return fp2_add(a, b); }
FN fp2_t f_sub(const fp2_t &a, const fp2_t &b) { return fp2_sub(a, b); }
FN fp2_t f_mul(const fp2_t &a, const fp2_t &b) { return fp2_mul(a, b); }
FN fp2_t f_sqr(const fp2_t &a) { return fp2_sqr(a); }
FN fp2_t f_neg(const fp2_t &a) { return fp2_neg(a); }
FN bool f_is_zero(const fp2_t &a) { return fp2_is_zero(a); }
FN void f_set_zero(fp2_t &a) { a = fp2_zero(); }
FN void f_set_one(fp2_t &a) { a = fp2_one(); }
