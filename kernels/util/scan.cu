// Exclusive prefix sums of u32 counts, in place, for any length: each tile of SCAN_TILE words
// is scanned by one block (scan_tiles) and leaves its total; the totals are scanned the same way
// (the host recurses), then added back to their tiles (scan_add).

#include "util/common.cuh"

#define SCAN_THREADS 256
#define SCAN_PER_THREAD 8
#define SCAN_TILE (SCAN_THREADS * SCAN_PER_THREAD)

#if defined(__CUDACC_RTC__) || defined(__CUDACC__)

// data[i] <- the sum of the words before i in its tile; sums[tile] <- the tile's total.
extern "C" __global__ void scan_tiles(u32 *data, u32 n, u32 *sums) {
    __shared__ u32 warp_before[SCAN_THREADS / 32];
    __shared__ u32 tile_total;
    u32 lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    u64 base = (u64)blockIdx.x * SCAN_TILE + threadIdx.x * SCAN_PER_THREAD;
    u32 v[SCAN_PER_THREAD];
    u32 own = 0;
#pragma unroll
    for (int j = 0; j < SCAN_PER_THREAD; j++) {
        v[j] = base + j < n ? data[base + j] : 0;
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
        if (base + j < n) data[base + j] = run;
        run += v[j];
    }
    if (threadIdx.x == 0) sums[blockIdx.x] = tile_total;
}

// data[i] += sums[i / SCAN_TILE], sums being the exclusive prefix sums of the tiles' totals.
extern "C" __global__ void scan_add(u32 *data, u32 n, const u32 *sums) {
    u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) data[i] += sums[i / SCAN_TILE];
}

#endif
