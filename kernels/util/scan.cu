// Exclusive prefix sums of u32 counts, in place, for any length: each tile of SCAN_TILE words
// is scanned by one block (scan_tiles) and leaves its total; the totals are scanned the same way
// (the host recurses), then added back to their tiles (scan_add).

#include "util/scan.cuh"

#if defined(__CUDACC_RTC__) || defined(__CUDACC__)

// data[i] <- the sum of the words before i in its tile; sums[tile] <- the tile's total.
extern "C" __global__ void scan_tiles(u32 *data, u32 n, u32 *sums) {
    u64 first = (u64)blockIdx.x * SCAN_TILE;
    u32 total = scan_tile(data + first, (u32)min((u64)SCAN_TILE, n - first));
    if (threadIdx.x == 0) sums[blockIdx.x] = total;
}

// data[i] += sums[i / SCAN_TILE], sums being the exclusive prefix sums of the tiles' totals.
extern "C" __global__ void scan_add(u32 *data, u32 n, const u32 *sums) {
    u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) data[i] += sums[i / SCAN_TILE];
}

#endif
