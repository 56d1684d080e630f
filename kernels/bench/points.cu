// Points for benchmarks, made on the device in a fraction of a second where the host takes
// minutes (2^27 of them for a 32 GiB shape): point i = r[i mod 2^log_r] + s[i >> log_r], r and s
// small tables of random points from the host. Each thread makes POINTS_PER_THREAD consecutive
// points with one inversion (ec/affine.cuh).

#include "ec/affine.cuh"

// Points a thread makes (POINTS_PER_THREAD in src/gpu/points.rs).
#define POINTS_PER_THREAD 32

#if defined(__CUDACC_RTC__) || defined(__CUDACC__)

template <class F>
FN void pair_sums(const affine_t<F> *r, const affine_t<F> *s, u32 log_r, u32 n,
                  affine_t<F> *out) {
    u64 first = (u64)(blockIdx.x * blockDim.x + threadIdx.x) * POINTS_PER_THREAD;
    if (first >= n) return;
    u32 count = n - first < POINTS_PER_THREAD ? (u32)(n - first) : POINTS_PER_THREAD;
    u32 mask = (1u << log_r) - 1;
    affine_add_batch<F, POINTS_PER_THREAD>(
        count,
        [&](u32 k, affine_t<F> &p, affine_t<F> &q) {
            u32 i = (u32)first + k;
            p = r[i & mask];
            q = s[i >> log_r];
        },
        [&](u32 k, const affine_t<F> &sum) { out[first + k] = sum; });
}

extern "C" __global__ void pair_sums_g1(const affine_t<fp_t> *r, const affine_t<fp_t> *s,
                                        u32 log_r, u32 n, affine_t<fp_t> *out) {
    pair_sums(r, s, log_r, n, out);
}

extern "C" __global__ void pair_sums_g2(const affine_t<fp2_t> *r, const affine_t<fp2_t> *s,
                                        u32 log_r, u32 n, affine_t<fp2_t> *out) {
    pair_sums(r, s, log_r, n, out);
}

#endif
