#ifndef CUZK_EC_AFFINE_CUH
#define CUZK_EC_AFFINE_CUH

// Affine additions in batches: the sums of up to K pairs of affine points with one field
// inversion for all of them (Montgomery's trick: the slopes' denominators are multiplied up,
// the product inverted once, and each denominator's inverse unwound from it). Every case is
// exact: chords, tangents (p = q), p = -q and points at infinity (blst's (0, 0)).

#include "ec/xyzz.cuh"

// The slope of p + q as num / den; den = 0 where the sum needs no slope (an input or the sum is
// infinity).
template <class F>
FN void affine_slope(const affine_t<F> &p, const affine_t<F> &q, F &num, F &den) {
    f_set_zero(num);
    f_set_zero(den);
    if (affine_is_inf(p) || affine_is_inf(q)) return;
    F dx = f_sub(q.x, p.x);
    if (!f_is_zero(dx)) {
        num = f_sub(q.y, p.y);
        den = dx;
    } else if (!f_is_zero(f_add(p.y, q.y))) {
        // p = q: the tangent, 3x^2 / 2y.
        F xx = f_sqr(p.x);
        num = f_add(f_add(xx, xx), xx);
        den = f_add(p.y, p.y);
    }
}

// sum(k, p + q) for (p, q) = pair(k), k < count <= K; pair(k, p, q) is called twice for each k
// (once to multiply the denominators up, once to unwind them), so it should read, not compute.
template <class F, int K, class Pair, class Sum>
FN void affine_add_batch(u32 count, Pair pair, Sum sum) {
    F running[K];  // running[k]: the product of the nonzero denominators of pairs 0..=k
    F acc;
    f_set_one(acc);
    for (u32 k = 0; k < count; k++) {
        affine_t<F> p, q;
        pair(k, p, q);
        F num, den;
        affine_slope(p, q, num, den);
        if (!f_is_zero(den)) acc = f_mul(acc, den);
        running[k] = acc;
    }
    F inv = f_inv(acc);  // of the product of pairs 0..=k's denominators, k going down
    for (u32 k = count; k-- > 0;) {
        affine_t<F> p, q, r;
        pair(k, p, q);
        F num, den;
        affine_slope(p, q, num, den);
        if (f_is_zero(den)) {
            // An input at infinity gives the other; otherwise p = -q and the sum is infinity.
            if (affine_is_inf(p)) {
                r = q;
            } else if (affine_is_inf(q)) {
                r = p;
            } else {
                f_set_zero(r.x);
                f_set_zero(r.y);
            }
        } else {
            F den_inv = inv;
            if (k > 0) den_inv = f_mul(inv, running[k - 1]);
            inv = f_mul(inv, den);
            F l = f_mul(num, den_inv);
            r.x = f_sub(f_sub(f_sqr(l), p.x), q.x);
            r.y = f_sub(f_mul(l, f_sub(p.x, r.x)), p.y);
        }
        sum(k, r);
    }
}

#endif  // CUZK_EC_AFFINE_CUH
