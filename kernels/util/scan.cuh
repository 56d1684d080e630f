#ifndef CUZK_UTIL_SCAN_CUH
#define CUZK_UTIL_SCAN_CUH

// The exclusive prefix sums of one tile of SCAN_TILE u32 counts by one block of SCAN_THREADS
// threads: the step util/scan.cu repeats over any length, and the MSM's sort does for the
// buckets of one group (msm/msm.cu).

#include "util/common.cuh"

#define SCAN_THREADS 256
#define SCAN_PER_THREAD 8
#define SCAN_TILE (SCAN_THREADS * SCAN_PER_THREAD)

#if defined(__CUDACC_RTC__) || defined(__CUDACC__)

// tile[i] <- the sum of tile[0 .. i) for i < n, in global or shared memory (words from n on
// count as 0 and are left alone); returns the tile's total to every thread. Every thread of
// the block calls it; the block's threads may read the tile once it returns.
FN u32 scan_tile(u32 *tile, u32 n) {
    __shared__ u32 warp_before[SCAN_THREADS / 32];
    __shared__ u32 tile_total;
    u32 lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    u32 base = threadIdx.x * SCAN_PER_THREAD;
    u32 v[SCAN_PER_THREAD];
    u32 own = 0;
#pragma unroll
    for (int j = 0; j < SCAN_PER_THREAD; j++) {
        v[j] = base + j < n ? tile[base + j] : 0;
        own += v[j];
    }
    // Inclusive sums of the threads' totals within each warp, then across the warps.
    u32 incl = own;
#pragma unroll
    for (u32 o = 1; o < 32; o <<= 1) {
        u32 t = __shfl_up_sync(0xffffffffu, incl, o);
        if (lane >= o) incl += t;
    }
    if (lane == 31) warp_before[warp] = incl;
    __syncthreads();
    if (warp == 0) {
        u32 w = lane < SCAN_THREADS / 32 ? warp_before[lane] : 0;
        u32 wi = w;
#pragma unroll
        for (u32 o = 1; o < 32; o <<= 1) {
            u32 t = __shfl_up_sync(0xffffffffu, wi, o);
            if (lane >= o) wi += t;
        }
        if (lane < SCAN_THREADS / 32) warp_before[lane] = wi - w;
        if (lane == SCAN_THREADS / 32 - 1) tile_total = wi;
    }
    __syncthreads();
    u32 run = warp_before[warp] + incl - own;
#pragma unroll
    for (int j = 0; j < SCAN_PER_THREAD; j++) {
        if (base + j < n) tile[base + j] = run;
        run += v[j];
    }
    u32 total = tile_total;
    __syncthreads();
    return total;
}

#endif
#endif  // CUZK_UTIL_SCAN_CUH
