// The scalars of a density-compressed query gathered from the assignment on the device: the
// values whose bit is set, in order. The assignment crosses to the device once; the A and B
// queries take their scalars from it here (src/gpu/queries.rs). A density is a bit vector in
// 32-bit words (bit i of the vector is bit i % 32 of word i / 32); `before[w]` is the number of
// set bits in the words before w (their popcounts, then an exclusive scan: util/scan.cu).

#include "util/common.cuh"

#if defined(__CUDACC_RTC__) || defined(__CUDACC__)

// before[w] <- the set bits of bits[w], for w < words (the scan turns them into prefixes).
extern "C" __global__ void density_popcount(const u32 *bits, u32 words, u32 *before) {
    u32 w = blockIdx.x * blockDim.x + threadIdx.x;
    if (w < words) before[w] = __popc(bits[w]);
}

// dst[before[i / 32] + the set bits below i in its word] <- src[i] for every set bit i < len:
// 8-word scalars, copied as they are.
extern "C" __global__ void density_gather(const u32 *src, u32 len, const u32 *bits,
                                          const u32 *before, u32 *dst) {
    u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= len) return;
    u32 word = bits[i >> 5], bit = i & 31;
    if (!((word >> bit) & 1)) return;
    u32 k = before[i >> 5] + __popc(word & ((1u << bit) - 1));
    const uint4 *from = (const uint4 *)(src + (u64)i * 8);
    uint4 *to = (uint4 *)(dst + (u64)k * 8);
    to[0] = from[0];
    to[1] = from[1];
}

#endif
