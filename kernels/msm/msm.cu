// Multi-scalar multiplication, Pippenger with signed windows of c bits.
//
// 1. msm_digits: one thread per scalar turns it from Montgomery form into W = ceil(256 / c)
//    signed digits in [-2^(c-1), 2^(c-1)], stored window-major (digits[w * n + i]), and counts
//    zeros and ones.
// 2. msm_buckets_*: one thread per (group, window). A group is a contiguous chunk of the points;
//    the thread accumulates each point of its chunk into bucket |d| (negated when d < 0), in XYZZ,
//    then reduces its 2^(c-1) buckets by running sums into one point, results[group * W + window].
//    Every thread does the same amount of work whatever the scalars, so skewed witnesses (mostly
//    0 and 1) cannot pile up in one bucket.
// 3. msm_reduce_*: halves the groups, pairwise, until one point per window is left.
// The host weighs the W window sums by 2^(c w).

#include "ff/fr.cuh"
#include "ec/xyzz.cuh"

#if defined(__CUDACC_RTC__) || defined(__CUDACC__)

extern "C" __global__ void msm_digits(const fr_t *scalars, u32 n, u32 c, u32 windows,
                                      short *digits, u32 *counts) {
    u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    bool zero = false, one = false;
    if (i < n) {
        fr_t s = fr_from_mont(scalars[i]);
        u32 acc = 0;
#pragma unroll
        for (int j = 1; j < 8; j++) acc |= s.l[j];
        zero = acc == 0 && s.l[0] == 0;
        one = acc == 0 && s.l[0] == 1;
        u32 mask = (1u << c) - 1;
        u32 carry = 0;
        for (u32 w = 0; w < windows; w++) {
            u32 bit = w * c;
            u32 limb = bit >> 5, shift = bit & 31;
            u32 raw = 0;
            if (limb < 8) {
                raw = s.l[limb] >> shift;
                if (shift + c > 32 && limb + 1 < 8) raw |= s.l[limb + 1] << (32 - shift);
            }
            raw = (raw & mask) + carry;
            int d;
            if (raw > (1u << (c - 1))) {
                d = (int)raw - (int)(1u << c);
                carry = 1;
            } else {
                d = (int)raw;
                carry = 0;
            }
            digits[(u64)w * n + i] = (short)d;
        }
    }
    u32 zeros = __ballot_sync(0xffffffffu, zero);
    u32 ones = __ballot_sync(0xffffffffu, one);
    if ((threadIdx.x & 31) == 0) {
        if (zeros) atomicAdd(&counts[0], __popc(zeros));
        if (ones) atomicAdd(&counts[1], __popc(ones));
    }
}

template <class F>
FN void msm_buckets(const affine_t<F> *bases, const short *digits, u32 n, u32 c, u32 windows,
                    u32 groups, xyzz_t<F> *buckets, xyzz_t<F> *results) {
    u32 t = blockIdx.x * blockDim.x + threadIdx.x;
    u32 threads = groups * windows;
    if (t >= threads) return;
    u32 w = t % windows;
    u32 g = t / windows;
    u32 chunk = (n + groups - 1) / groups;
    u32 start = g * chunk;
    u32 end = start + chunk < n ? start + chunk : n;
    u32 nb = 1u << (c - 1);
    for (u32 k = 0; k < nb; k++) xyzz_set_inf(buckets[(u64)k * threads + t]);
    const short *row = digits + (u64)w * n;
    for (u32 i = start; i < end; i++) {
        int d = row[i];
        if (d == 0) continue;
        affine_t<F> q = bases[i];
        if (affine_is_inf(q)) continue;
        if (d < 0) {
            q.y = f_neg(q.y);
            d = -d;
        }
        xyzz_add_affine(buckets[(u64)(d - 1) * threads + t], q);
    }
    xyzz_t<F> running, acc;
    xyzz_set_inf(running);
    xyzz_set_inf(acc);
    for (u32 k = nb; k-- > 0;) {
        xyzz_add(running, buckets[(u64)k * threads + t]);
        xyzz_add(acc, running);
    }
    results[t] = acc;
}

// results[g * W + w] += results[(g + half) * W + w] for g < half.
template <class F>
FN void msm_reduce(xyzz_t<F> *results, u32 windows, u32 half) {
    u32 t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= half * windows) return;
    xyzz_t<F> p = results[t];
    xyzz_add(p, results[t + half * windows]);
    results[t] = p;
}

extern "C" __global__ void msm_buckets_g1(const affine_t<fp_t> *bases, const short *digits, u32 n,
                                          u32 c, u32 windows, u32 groups, xyzz_t<fp_t> *buckets,
                                          xyzz_t<fp_t> *results) {
    msm_buckets(bases, digits, n, c, windows, groups, buckets, results);
}

extern "C" __global__ void msm_buckets_g2(const affine_t<fp2_t> *bases, const short *digits,
                                          u32 n, u32 c, u32 windows, u32 groups,
                                          xyzz_t<fp2_t> *buckets, xyzz_t<fp2_t> *results) {
    msm_buckets(bases, digits, n, c, windows, groups, buckets, results);
}

extern "C" __global__ void msm_reduce_g1(xyzz_t<fp_t> *results, u32 windows, u32 half) {
    msm_reduce(results, windows, half);
}

extern "C" __global__ void msm_reduce_g2(xyzz_t<fp2_t> *results, u32 windows, u32 half) {
    msm_reduce(results, windows, half);
}

#endif
