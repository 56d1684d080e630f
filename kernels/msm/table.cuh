#ifndef CUZK_MSM_TABLE_CUH
#define CUZK_MSM_TABLE_CUH

// Fixed-base windows: the multiples 2^(c·w)·p of a base for w < windows, so that one set of
// 2^(c-1) buckets takes the digits of every window (host-checked by hostcheck/).

#include "ec/xyzz.cuh"

// Windows a table holds at most: c >= 16 covers a 255-bit scalar in 16 windows.
#define MSM_TABLE_WINDOWS 16

// Calls write(w, 2^(c·w)·p) for w < windows (at most MSM_TABLE_WINDOWS), each affine, the
// point at infinity as (0, 0). The multiples are doubled up in XYZZ and brought back with one
// inversion for all of them (Montgomery's trick over their ZZ·ZZZ).
template <class F, class Write>
FN void window_multiples(const affine_t<F> &p, u32 c, u32 windows, Write write) {
    write(0, p);
    if (windows < 2) return;
    if (affine_is_inf(p)) {
        for (u32 w = 1; w < windows; w++) write(w, p);
        return;
    }
    // Per window w >= 1 (index w - 1): X·ZZZ, Y·ZZ, ZZ·ZZZ (1 for infinity), and the product of
    // the ZZ·ZZZ up to it.
    F xs[MSM_TABLE_WINDOWS - 1], ys[MSM_TABLE_WINDOWS - 1], den[MSM_TABLE_WINDOWS - 1],
        upto[MSM_TABLE_WINDOWS - 1];
    u32 inf = 0;  // bit w - 1: window w's multiple is infinity
    xyzz_t<F> q;
    q.X = p.x;
    q.Y = p.y;
    f_set_one(q.ZZ);
    f_set_one(q.ZZZ);
    F acc;
    f_set_one(acc);
#pragma unroll 1
    for (u32 w = 1; w < windows; w++) {
#pragma unroll 1
        for (u32 k = 0; k < c; k++) xyzz_dbl(q);
        u32 j = w - 1;
        if (xyzz_is_inf(q)) {
            inf |= 1u << j;
            f_set_one(den[j]);
        } else {
            den[j] = f_mul(q.ZZ, q.ZZZ);
        }
        xs[j] = f_mul(q.X, q.ZZZ);
        ys[j] = f_mul(q.Y, q.ZZ);
        acc = f_mul(acc, den[j]);
        upto[j] = acc;
    }
    F inv = f_inv(acc);  // of the product of windows 1..=w's denominators, w going down
#pragma unroll 1
    for (u32 w = windows - 1; w >= 1; w--) {
        u32 j = w - 1;
        F den_inv = j > 0 ? f_mul(inv, upto[j - 1]) : inv;
        inv = f_mul(inv, den[j]);
        affine_t<F> out;
        if (inf >> j & 1) {
            f_set_zero(out.x);
            f_set_zero(out.y);
        } else {
            out.x = f_mul(xs[j], den_inv);  // X/ZZ = X·ZZZ / (ZZ·ZZZ)
            out.y = f_mul(ys[j], den_inv);  // Y/ZZZ = Y·ZZ / (ZZ·ZZZ)
        }
        write(w, out);
    }
}

#endif  // CUZK_MSM_TABLE_CUH
