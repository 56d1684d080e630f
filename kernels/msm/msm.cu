// Multi-scalar multiplication: Pippenger over buckets sorted on the device.
//
// 1. msm_split: each scalar leaves Montgomery form; zeros are dropped, the points of ones are
//    listed (and summed apart by msm_sum_listed_*: witness scalars are mostly 0 and 1), the rest
//    are listed with their canonical scalar. Lists are appended a warp at a time, in no
//    particular order: a sum does not depend on it.
// 2. msm_histogram: each listed scalar is cut into W signed c-bit digits in [-2^(c-1), 2^(c-1)];
//    every nonzero digit is one entry of bucket (w, |d| - 1): B = W * 2^(c-1) buckets.
// 3. util/scan.cu: exclusive prefix sums of the counts give each bucket's run of entries.
// 4. msm_scatter: each entry (point index, sign in the top bit) goes into its bucket's run.
// 5. msm_accumulate_*: the runs, read as one array cut into chunks of equal length, one chunk a
//    thread, so every thread does the same number of mixed additions however uneven the
//    buckets. A run inside a chunk is its bucket's sum; a run crossing a chunk's edge leaves a
//    partial sum per chunk (a tail where it starts, heads in the chunks it continues into),
//    which msm_fixup_* adds up, one warp per crossing run.
// 6. msm_window_level_*: per window, Σ_k (k+1)·bucket_k, in levels of K buckets (running sums),
//    until one point per window is left.
// The host weighs the W window sums by 2^(c·w) and adds the ones' sum. With a fixed-base table
// of the bases (msm_window_table_*: 2^(c·w)·P for every window w), the windows share one set of
// buckets and there is one window sum.

#include "ff/fr.cuh"
#include "ec/xyzz.cuh"
#include "msm/digits.cuh"
#include "msm/table.cuh"
#include "util/warp.cuh"

// tail_bucket of a chunk without a tail.
#define MSM_NO_TAIL 0xffffffffu

#if defined(__CUDACC_RTC__) || defined(__CUDACC__)

// Position p of `scalars` holds the scalar of point p, or with rev_bits of point
// bitrev(p) (an h left in bit-reversed order by its NTTs); points at or past `points` are
// skipped.
extern "C" __global__ void msm_split(const fr_t *scalars, u32 positions, u32 points, u32 rev_bits,
                                     u32 *ones, u32 *others, fr_t *other_scalars, u32 *counts) {
    u32 p = blockIdx.x * blockDim.x + threadIdx.x;
    u32 i = rev_bits ? __brev(p) >> (32 - rev_bits) : p;
    bool one = false, other = false;
    fr_t s;
    if (p < positions && i < points) {
        s = fr_from_mont(scalars[p]);
        u32 high = 0;
#pragma unroll
        for (int j = 1; j < 8; j++) high |= s.l[j];
        one = high == 0 && s.l[0] == 1;
        other = !one && (high | s.l[0]) != 0;
    }
    u32 k = warp_append(one, &counts[0]);
    if (one) ones[k] = i;
    k = warp_append(other, &counts[1]);
    if (other) {
        others[k] = i;
        other_scalars[k] = s;
    }
}

extern "C" __global__ void msm_histogram(const fr_t *scalars, u32 m, u32 c, u32 stride,
                                         u32 *bucket_counts) {
    u32 k = blockIdx.x * blockDim.x + threadIdx.x;
    if (k >= m) return;
    for_each_digit(scalars[k], c,
                   [&](u32 b) { atomicAdd(&bucket_counts[msm_bucket(b, c, stride)], 1u); });
}

// cursor starts as the runs' offsets and ends as their ends.
extern "C" __global__ void msm_scatter(const fr_t *scalars, const u32 *points, u32 m, u32 c,
                                       u32 stride, u32 *cursor, u32 *entries) {
    u32 k = blockIdx.x * blockDim.x + threadIdx.x;
    if (k >= m) return;
    u32 point = points[k];
    for_each_digit(scalars[k], c, [&](u32 b) {
        u32 at = atomicAdd(&cursor[msm_bucket(b, c, stride)], 1u);
        entries[at] = msm_entry_point(b, c, stride, point) | (b & MSM_NEGATE);
    });
}

// acc += ±bases[entry's point].
template <class F>
FN void add_entry(xyzz_t<F> &acc, const affine_t<F> *bases, u32 entry) {
    affine_t<F> q = bases[entry & ~MSM_NEGATE];
    if (affine_is_inf(q)) return;
    if (entry & MSM_NEGATE) q.y = f_neg(q.y);
    xyzz_add_affine(acc, q);
}

template <class F>
FN void msm_sum_listed(const affine_t<F> *bases, const u32 *list, u32 count, u32 threads,
                       xyzz_t<F> *partials) {
    u32 t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= threads) return;
    xyzz_t<F> acc;
    xyzz_set_inf(acc);
    for (u32 k = t; k < count; k += threads) add_entry(acc, bases, list[k]);
    partials[t] = acc;
}

// p[t] += p[t + half] for t < half.
template <class F>
FN void msm_fold(xyzz_t<F> *p, u32 half) {
    u32 t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= half) return;
    xyzz_t<F> acc = p[t];
    xyzz_add(acc, p[t + half]);
    p[t] = acc;
}

// offsets has buckets + 1 words (the last is total); entries [t*chunk, (t+1)*chunk) are thread
// t's.
template <class F>
FN void msm_accumulate(const affine_t<F> *bases, const u32 *entries, const u32 *offsets,
                       u32 buckets, u32 total, u32 chunk, xyzz_t<F> *sums, xyzz_t<F> *heads,
                       xyzz_t<F> *tails, u32 *tail_bucket) {
    u32 t = blockIdx.x * blockDim.x + threadIdx.x;
    u64 begin64 = (u64)t * chunk;
    if (begin64 >= total) return;
    u32 begin = (u32)begin64;
    u32 end = total - begin < chunk ? total : begin + chunk;
    tail_bucket[t] = MSM_NO_TAIL;
    // The last bucket whose run starts at or before `begin`: offsets[lo] <= begin < offsets[hi].
    u32 lo = 0, hi = buckets;
    while (hi - lo > 1) {
        u32 mid = (lo + hi) / 2;
        if (offsets[mid] <= begin) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    // One mixed addition an iteration for every thread (a run's end is a short branch), so the
    // threads of a warp stay together whatever the runs' lengths.
    u32 b = lo, run_end = offsets[lo + 1];
    xyzz_t<F> acc;
    xyzz_set_inf(acc);
    for (u32 pos = begin; pos < end; pos++) {
        add_entry(acc, bases, entries[pos]);
        if (pos + 1 == run_end || pos + 1 == end) {
            if (offsets[b] < begin) {
                heads[t] = acc;
            } else if (run_end > end) {
                tails[t] = acc;
                tail_bucket[t] = b;
            } else {
                sums[b] = acc;
            }
            xyzz_set_inf(acc);
            while (offsets[b + 1] <= pos + 1 && b + 1 < buckets) b++;  // past empty buckets
            run_end = offsets[b + 1];
        }
    }
}

// One warp per chunk: a run that starts in chunk t and continues is its tail plus the heads of
// the chunks up to the one holding its last entry.
template <class F>
FN void msm_fixup(const u32 *offsets, u32 chunk, u32 chunks, const xyzz_t<F> *heads,
                  const xyzz_t<F> *tails, const u32 *tail_bucket, xyzz_t<F> *sums) {
    u32 g = blockIdx.x * blockDim.x + threadIdx.x;
    u32 t = g >> 5, lane = g & 31;
    if (t >= chunks) return;  // the whole warp
    u32 b = tail_bucket[t];
    if (b == MSM_NO_TAIL) return;  // the whole warp
    u32 last = (offsets[b + 1] - 1) / chunk;
    xyzz_t<F> acc;
    xyzz_set_inf(acc);
    if (lane == 0) acc = tails[t];
    for (u32 u = t + 1 + lane; u <= last; u += 32) xyzz_add(acc, heads[u]);
#pragma unroll 1
    for (u32 o = 16; o > 0; o >>= 1) {
        xyzz_t<F> other = shfl_down_words(acc, o);
        xyzz_add(acc, other);
    }
    if (lane == 0) sums[b] = acc;
}

// One level of the window sums. Each window has m points in x (and, after the first level, m
// in y); thread g takes K = 2^log_k of them, chunk j of window w (g = w * m/K + j), and leaves
//   x_out[g] = K·Σ_i x_i,   y_out[g] = Σ_i i·x_i + Σ_i y_i,
// or on the first level (x the buckets, no y) y_out[g] = Σ_i (i+1)·x_i. Then
// Σ_k weight_k·x_k + Σ y = Σ_j j·x_out_j + Σ_j y_out_j: the same form, K times shorter.
template <class F>
FN void msm_window_level(const xyzz_t<F> *x, const xyzz_t<F> *y, u32 first, u32 log_k,
                         u32 threads, xyzz_t<F> *x_out, xyzz_t<F> *y_out) {
    u32 g = blockIdx.x * blockDim.x + threadIdx.x;
    if (g >= threads) return;
    u32 k = 1u << log_k;
    u64 base = (u64)g * k;
    xyzz_t<F> run, acc;
    xyzz_set_inf(run);
    xyzz_set_inf(acc);
    for (u32 i = k; i-- > 0;) {
        xyzz_add(run, x[base + i]);
        if (first || i > 0) xyzz_add(acc, run);
    }
    if (!first)
        for (u32 i = 0; i < k; i++) xyzz_add(acc, y[base + i]);
    for (u32 d = 0; d < log_k; d++) xyzz_dbl(run);
    x_out[g] = run;
    y_out[g] = acc;
}

// table[w·n + i] = 2^(c·w)·bases[i] for w < windows (at most MSM_TABLE_WINDOWS).
extern "C" __global__ void msm_window_table_g1(const affine_t<fp_t> *bases, u32 n, u32 c,
                                              u32 windows, affine_t<fp_t> *table) {
    u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    window_multiples(bases[i], c, windows,
                     [&](u32 w, const affine_t<fp_t> &q) { table[(u64)w * n + i] = q; });
}

extern "C" __global__ void msm_sum_listed_g1(const affine_t<fp_t> *bases, const u32 *list,
                                            u32 count, u32 threads, xyzz_t<fp_t> *partials) {
    msm_sum_listed(bases, list, count, threads, partials);
}

extern "C" __global__ void msm_fold_g1(xyzz_t<fp_t> *p, u32 half) { msm_fold(p, half); }

// The accumulation's blocks: 128 threads (ACCUMULATE_BLOCK in src/gpu/msm.rs), 4 of them resident
// per SM, which bounds its registers to 128. Against no bound, G2 ran faster and G1 the same; 5
// blocks spilled more and ran slower (docs/measurements/2026-12-04-h200-field/bounds/).
#define MSM_ACCUMULATE_BOUNDS __launch_bounds__(128, 4)

extern "C" __global__ void MSM_ACCUMULATE_BOUNDS msm_accumulate_g1(
    const affine_t<fp_t> *bases, const u32 *entries, const u32 *offsets, u32 buckets, u32 total,
    u32 chunk, xyzz_t<fp_t> *sums, xyzz_t<fp_t> *heads, xyzz_t<fp_t> *tails, u32 *tail_bucket) {
    msm_accumulate(bases, entries, offsets, buckets, total, chunk, sums, heads, tails, tail_bucket);
}

extern "C" __global__ void msm_fixup_g1(const u32 *offsets, u32 chunk, u32 chunks,
                                       const xyzz_t<fp_t> *heads, const xyzz_t<fp_t> *tails,
                                       const u32 *tail_bucket, xyzz_t<fp_t> *sums) {
    msm_fixup(offsets, chunk, chunks, heads, tails, tail_bucket, sums);
}

extern "C" __global__ void msm_window_level_g1(const xyzz_t<fp_t> *x, const xyzz_t<fp_t> *y,
                                              u32 first, u32 log_k, u32 threads,
                                              xyzz_t<fp_t> *x_out, xyzz_t<fp_t> *y_out) {
    msm_window_level(x, y, first, log_k, threads, x_out, y_out);
}

extern "C" __global__ void msm_sum_listed_g2(const affine_t<fp2_t> *bases, const u32 *list,
                                            u32 count, u32 threads, xyzz_t<fp2_t> *partials) {
    msm_sum_listed(bases, list, count, threads, partials);
}

extern "C" __global__ void msm_fold_g2(xyzz_t<fp2_t> *p, u32 half) { msm_fold(p, half); }

extern "C" __global__ void MSM_ACCUMULATE_BOUNDS msm_accumulate_g2(
    const affine_t<fp2_t> *bases, const u32 *entries, const u32 *offsets, u32 buckets, u32 total,
    u32 chunk, xyzz_t<fp2_t> *sums, xyzz_t<fp2_t> *heads, xyzz_t<fp2_t> *tails, u32 *tail_bucket) {
    msm_accumulate(bases, entries, offsets, buckets, total, chunk, sums, heads, tails, tail_bucket);
}

extern "C" __global__ void msm_fixup_g2(const u32 *offsets, u32 chunk, u32 chunks,
                                       const xyzz_t<fp2_t> *heads, const xyzz_t<fp2_t> *tails,
                                       const u32 *tail_bucket, xyzz_t<fp2_t> *sums) {
    msm_fixup(offsets, chunk, chunks, heads, tails, tail_bucket, sums);
}

extern "C" __global__ void msm_window_level_g2(const xyzz_t<fp2_t> *x, const xyzz_t<fp2_t> *y,
                                              u32 first, u32 log_k, u32 threads,
                                              xyzz_t<fp2_t> *x_out, xyzz_t<fp2_t> *y_out) {
    msm_window_level(x, y, first, log_k, threads, x_out, y_out);
}

#endif
