#ifndef CUZK_EC_XYZZ_CUH
#define CUZK_EC_XYZZ_CUH

// Short Weierstrass points y^2 = x^3 + b over Fp (G1) or Fp2 (G2), generic over the field F.
// Affine points are laid out as blst's (x, y); blst writes the point at infinity as (0, 0).
// Accumulators are XYZZ: x = X/ZZ, y = Y/ZZZ with ZZ^3 = ZZZ^2; infinity is ZZ = 0.
// Formulas: add-2008-s, madd-2008-s, dbl-2008-s-1, mdbl-2008-s-1 (Explicit-Formulas Database, a = 0).
// Each formula's Y = U·V - W·Z is one f_mul_sub: over Fp its two products share one reduction.

#include "ff/fp.cuh"
#include "ff/fp2.cuh"

template <class F>
struct affine_t {
    F x, y;
};

template <class F>
struct xyzz_t {
    F X, Y, ZZ, ZZZ;
};

template <class F>
FN bool affine_is_inf(const affine_t<F> &p) {
    return f_is_zero(p.x) && f_is_zero(p.y);
}

template <class F>
FN void xyzz_set_inf(xyzz_t<F> &p) {
    f_set_zero(p.X);
    f_set_zero(p.Y);
    f_set_zero(p.ZZ);
    f_set_zero(p.ZZZ);
}

template <class F>
FN bool xyzz_is_inf(const xyzz_t<F> &p) {
    return f_is_zero(p.ZZ);
}

// The MSM's inner loop is the mixed addition (inlined); doublings and full additions, rare or
// outside that loop, are called, which keeps the kernels' size and registers down. A called
// curve function has one exit and calls no other curve function: one that returned early from
// divergent branches and called the doubling in its tail faulted on the H200
// (CUDA_ERROR_ILLEGAL_INSTRUCTION right after the inner call's return, in the window sums of
// small MSMs, whose empty and equal buckets make a warp's threads diverge there).

// p <- 2p.
template <class F>
FN_CALL void xyzz_dbl(xyzz_t<F> &p) {
    F U = f_add(p.Y, p.Y);
    F V = f_sqr(U);
    F W = f_mul(U, V);
    F S = f_mul(p.X, V);
    F X2 = f_sqr(p.X);
    F M = f_add(f_add(X2, X2), X2);
    F X3 = f_sub(f_sub(f_sqr(M), S), S);
    p.Y = f_mul_sub(M, f_sub(S, X3), W, p.Y);
    p.X = X3;
    p.ZZ = f_mul(V, p.ZZ);
    p.ZZZ = f_mul(W, p.ZZZ);
}

// p <- 2q for an affine q that is not infinity.
template <class F>
FN_CALL void xyzz_set_dbl_affine(xyzz_t<F> &p, const affine_t<F> &q) {
    F U = f_add(q.y, q.y);
    F V = f_sqr(U);
    F W = f_mul(U, V);
    F S = f_mul(q.x, V);
    F X2 = f_sqr(q.x);
    F M = f_add(f_add(X2, X2), X2);
    F X3 = f_sub(f_sub(f_sqr(M), S), S);
    p.Y = f_mul_sub(M, f_sub(S, X3), W, q.y);
    p.X = X3;
    p.ZZ = V;
    p.ZZZ = W;
}

// p <- p + q for an affine q that is not infinity.
template <class F>
FN void xyzz_add_affine(xyzz_t<F> &p, const affine_t<F> &q) {
    if (xyzz_is_inf(p)) {
        p.X = q.x;
        p.Y = q.y;
        f_set_one(p.ZZ);
        f_set_one(p.ZZZ);
        return;
    }
    F U2 = f_mul(q.x, p.ZZ);
    F S2 = f_mul(q.y, p.ZZZ);
    F P = f_sub(U2, p.X);
    F R = f_sub(S2, p.Y);
    if (f_is_zero(P)) {
        if (f_is_zero(R)) {
            xyzz_set_dbl_affine(p, q);
        } else {
            xyzz_set_inf(p);
        }
        return;
    }
    F PP = f_sqr(P);
    F PPP = f_mul(P, PP);
    F Q = f_mul(p.X, PP);
    F X3 = f_sub(f_sub(f_sub(f_sqr(R), PPP), Q), Q);
    p.Y = f_mul_sub(R, f_sub(Q, X3), p.Y, PPP);
    p.X = X3;
    p.ZZ = f_mul(p.ZZ, PP);
    p.ZZZ = f_mul(p.ZZZ, PPP);
}

// p <- p + q for p and q not infinity: returns 0. Where p = q it returns 1, where p = -q 2, and
// leaves p as it was.
template <class F>
FN_CALL u32 xyzz_add_distinct(xyzz_t<F> &p, const xyzz_t<F> &q) {
    F U1 = f_mul(p.X, q.ZZ);
    F U2 = f_mul(q.X, p.ZZ);
    F S1 = f_mul(p.Y, q.ZZZ);
    F S2 = f_mul(q.Y, p.ZZZ);
    F P = f_sub(U2, U1);
    F R = f_sub(S2, S1);
    u32 same = f_is_zero(P) ? (f_is_zero(R) ? 1 : 2) : 0;
    if (same == 0) {
        F PP = f_sqr(P);
        F PPP = f_mul(P, PP);
        F Q = f_mul(U1, PP);
        F X3 = f_sub(f_sub(f_sub(f_sqr(R), PPP), Q), Q);
        p.Y = f_mul_sub(R, f_sub(Q, X3), S1, PPP);
        p.X = X3;
        p.ZZ = f_mul(f_mul(p.ZZ, q.ZZ), PP);
        p.ZZZ = f_mul(f_mul(p.ZZZ, q.ZZZ), PPP);
    }
    return same;
}

// p <- p + q.
template <class F>
FN void xyzz_add(xyzz_t<F> &p, const xyzz_t<F> &q) {
    if (xyzz_is_inf(q)) return;
    if (xyzz_is_inf(p)) {
        p = q;
        return;
    }
    u32 same = xyzz_add_distinct(p, q);
    if (same == 1) {
        xyzz_dbl(p);
    } else if (same == 2) {
        xyzz_set_inf(p);
    }
}

#endif  // CUZK_EC_XYZZ_CUH
