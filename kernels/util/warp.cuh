#ifndef CUZK_UTIL_WARP_CUH
#define CUZK_UTIL_WARP_CUH

// Warp-wide helpers. Every lane of the warp must call them (no lane may have returned).

#include "util/common.cuh"

#if defined(__CUDACC_RTC__) || defined(__CUDACC__)

// Appends one item for each lane where `take` holds to a list whose length is *count: one
// atomic per warp. Returns this lane's slot (meaningful where `take` holds).
FN u32 warp_append(bool take, u32 *count) {
    u32 mask = __ballot_sync(0xffffffffu, take);
    if (mask == 0) return 0;
    u32 lane = threadIdx.x & 31;
    u32 leader = __ffs(mask) - 1;
    u32 base = 0;
    if (lane == leader) base = atomicAdd(count, __popc(mask));
    base = __shfl_sync(0xffffffffu, base, leader);
    return base + __popc(mask & ((1u << lane) - 1));
}

// The value of `v` held by lane (this lane + delta), word by word.
template <class T>
FN T shfl_down_words(const T &v, u32 delta) {
    static_assert(sizeof(T) % 4 == 0, "whole words");
    T r;
    const u32 *src = reinterpret_cast<const u32 *>(&v);
    u32 *dst = reinterpret_cast<u32 *>(&r);
#pragma unroll
    for (int i = 0; i < (int)(sizeof(T) / 4); i++) dst[i] = __shfl_down_sync(0xffffffffu, src[i], delta);
    return r;
}

#endif
#endif  // CUZK_UTIL_WARP_CUH
