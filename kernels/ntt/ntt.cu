// Number-theoretic transforms over Fr, as radix-2 passes.
//
// A forward transform is a bit-reversal followed by log n Cooley-Tukey stages; the inverse is the
// same with omega^-1 (the 1/n factor goes into the coset scaling that follows). Twiddles and coset
// powers come from two small tables: w^i = lo[i & (2^lo_bits - 1)] * hi[i >> lo_bits].

#include "ff/fr.cuh"

#if defined(__CUDACC_RTC__) || defined(__CUDACC__)

FN fr_t fr_table_power(const fr_t *lo, const fr_t *hi, u32 lo_bits, u32 i) {
    return fr_mul(lo[i & ((1u << lo_bits) - 1)], hi[i >> lo_bits]);
}

extern "C" __global__ void fr_bit_reverse(fr_t *v, u32 log_n) {
    u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    if (log_n == 0 || i >= (1u << log_n)) return;
    u32 j = __brev(i) >> (32 - log_n);
    if (i < j) {
        fr_t t = v[i];
        v[i] = v[j];
        v[j] = t;
    }
}

// One stage of butterflies of half-width 2^stage: n/2 threads.
extern "C" __global__ void fr_ntt_stage(fr_t *v, u32 log_n, u32 stage, const fr_t *tw_lo,
                                        const fr_t *tw_hi, u32 lo_bits) {
    u32 j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= (1u << (log_n - 1))) return;
    u32 half = 1u << stage;
    u32 k = j & (half - 1);
    u32 i0 = ((j >> stage) << (stage + 1)) + k;
    u32 i1 = i0 + half;
    fr_t w = fr_table_power(tw_lo, tw_hi, lo_bits, k << (log_n - stage - 1));
    fr_t a = v[i0];
    fr_t t = fr_mul(v[i1], w);
    v[i0] = fr_add(a, t);
    v[i1] = fr_sub(a, t);
}

// v[i] *= scale * g^i (the tables hold it).
extern "C" __global__ void fr_scale_powers(fr_t *v, u32 n, const fr_t *p_lo, const fr_t *p_hi,
                                           u32 lo_bits) {
    u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    v[i] = fr_mul(v[i], fr_table_power(p_lo, p_hi, lo_bits, i));
}

#endif
