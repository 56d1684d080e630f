#ifndef CUZK_FF_FP2_CUH
#define CUZK_FF_FP2_CUH

// Fp2 = Fp[u]/(u^2+1), the field of G2's coordinates, as blst lays it out (c0, c1); and the
// operations the curve code (ec/) uses on it. Its arithmetic is called, not inlined (see
// util/common.cuh).

#include "ff/fp.cuh"

struct fp2_t {
    fp_t c0, c1;
};

FN_CALL fp2_t fp2_add(const fp2_t &a, const fp2_t &b) { return {fp_add(a.c0, b.c0), fp_add(a.c1, b.c1)}; }
FN_CALL fp2_t fp2_sub(const fp2_t &a, const fp2_t &b) { return {fp_sub(a.c0, b.c0), fp_sub(a.c1, b.c1)}; }
// (a0 + a1 u)(b0 + b1 u) with u^2 = -1, Karatsuba: three base multiplications.
FN_CALL fp2_t fp2_mul(const fp2_t &a, const fp2_t &b) {
    fp_t t0 = fp_mul(a.c0, b.c0);
    fp_t t1 = fp_mul(a.c1, b.c1);
    fp_t t2 = fp_mul(fp_add(a.c0, a.c1), fp_add(b.c0, b.c1));
    return {fp_sub(t0, t1), fp_sub(fp_sub(t2, t0), t1)};
}
// (a0 + a1 u)^2 = (a0 + a1)(a0 - a1) + 2 a0 a1 u.
FN_CALL fp2_t fp2_sqr(const fp2_t &a) {
    fp_t t = fp_mul(a.c0, a.c1);
    return {fp_mul(fp_add(a.c0, a.c1), fp_sub(a.c0, a.c1)), fp_add(t, t)};
}
FN fp2_t fp2_zero() { return {fp_zero(), fp_zero()}; }
FN fp2_t fp2_one() { return {fp_one(), fp_zero()}; }
FN bool fp2_is_zero(const fp2_t &a) { return fp_is_zero(a.c0) && fp_is_zero(a.c1); }
FN fp2_t fp2_neg(const fp2_t &a) { return {fp_neg(a.c0), fp_neg(a.c1)}; }
// (a0 + a1 u)^-1 = (a0 - a1 u) / (a0^2 + a1^2): one inversion in Fp; 0 gives 0.
FN_CALL fp2_t fp2_inv(const fp2_t &a) {
    fp_t t = fp_inv(fp_add(fp_mul(a.c0, a.c0), fp_mul(a.c1, a.c1)));
    return {fp_mul(a.c0, t), fp_neg(fp_mul(a.c1, t))};
}

// The operations the curve code uses, on Fp2.
FN fp2_t f_add(const fp2_t &a, const fp2_t &b) { return fp2_add(a, b); }
FN fp2_t f_sub(const fp2_t &a, const fp2_t &b) { return fp2_sub(a, b); }
FN fp2_t f_mul(const fp2_t &a, const fp2_t &b) { return fp2_mul(a, b); }
FN fp2_t f_sqr(const fp2_t &a) { return fp2_sqr(a); }
FN fp2_t f_mul_sub(const fp2_t &a, const fp2_t &b, const fp2_t &c, const fp2_t &d) {
    return fp2_sub(fp2_mul(a, b), fp2_mul(c, d));
}
FN fp2_t f_inv(const fp2_t &a) { return fp2_inv(a); }
FN fp2_t f_neg(const fp2_t &a) { return fp2_neg(a); }
FN bool f_is_zero(const fp2_t &a) { return fp2_is_zero(a); }
FN void f_set_zero(fp2_t &a) { a = fp2_zero(); }
FN void f_set_one(fp2_t &a) { a = fp2_one(); }

#endif  // CUZK_FF_FP2_CUH
