#ifndef CUZK_UTIL_COMMON_CUH
#define CUZK_UTIL_COMMON_CUH

// What every kernel file needs: the word types and the qualifiers that let the arithmetic compile
// for the device under NVRTC and for the host under a C++ compiler (kernels/hostcheck/).

#if defined(__CUDACC_RTC__) || defined(__CUDACC__)
#define FN __device__ __forceinline__
// Called, not inlined: the field products (one copy each instead of one per use, which keeps
// the kernels inside the instruction cache and NVRTC's time to seconds) and the rare curve
// doublings and additions (ec/xyzz.cuh says what a called function may do).
#define FN_CALL __device__ __noinline__
#define CONST_ARRAY __device__ __constant__
#else
#define FN static inline
#define FN_CALL static
#define CONST_ARRAY static const
#endif

typedef unsigned int u32;
typedef unsigned long long u64;

#endif  // CUZK_UTIL_COMMON_CUH
