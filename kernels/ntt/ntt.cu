// Number-theoretic transforms over Fr, radix 2^k in shared memory.
//
// fr_ntt_tiles runs k consecutive radix-2 stages of a transform of 2^log_n elements in one pass
// over memory: a block loads the 2^k elements whose indices differ only in the stages' bits
// (a tile: contiguous for the low stages, strided for the high ones; an element is one 32-byte
// sector either way), runs the k stages in shared memory and stores them back. A transform is
// ceil(log_n / 10) passes.
//
// Cooley-Tukey (DIT) stages, low to high, take bit-reversed input to natural output;
// Gentleman-Sande (DIF) stages, high to low, take natural input to bit-reversed output. The
// quotient h chains them so that no reordering pass is needed (src/gpu/ntt.rs). The inverse is
// the same with omega^-1 (the 1/n factor goes into the coset scaling that follows). Twiddles
// and coset powers come from two small tables: w^i = lo[i & (2^lo_bits - 1)] * hi[i >> lo_bits].

#include "ff/fr.cuh"

#if defined(__CUDACC_RTC__) || defined(__CUDACC__)

FN fr_t fr_table_power(const fr_t *lo, const fr_t *hi, u32 lo_bits, u32 i) {
    return fr_mul(lo[i & ((1u << lo_bits) - 1)], hi[i >> lo_bits]);
}

FN u32 bit_reversed(u32 i, u32 log_n) { return log_n ? __brev(i) >> (32 - log_n) : 0; }

extern "C" __global__ void fr_bit_reverse(fr_t *v, u32 log_n) {
    u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    if (log_n == 0 || i >= (1u << log_n)) return;
    u32 j = bit_reversed(i, log_n);
    if (i < j) {
        fr_t t = v[i];
        v[i] = v[j];
        v[j] = t;
    }
}

// Stages s0 .. s0 + k - 1 (DIT: ascending; DIF: descending). One block of 2^(k-1) threads per
// tile; dynamic shared memory of 2^k elements for the tile and 2^k - 1 for its twiddles, made
// once a block from the tables: stage ts of the tile (half-width 2^(s0+ts)) takes 2^ts of them,
// at tw[2^ts - 1 + below], which saves a product for every butterfly but those made.
extern "C" __global__ void fr_ntt_tiles(fr_t *v, u32 log_n, u32 s0, u32 k, u32 dif,
                                        const fr_t *tw_lo, const fr_t *tw_hi, u32 lo_bits) {
    extern __shared__ fr_t tile[];
    u32 size = 1u << k;
    fr_t *tw = tile + size;
    u32 low = blockIdx.x & ((1u << s0) - 1);
    u32 high = (blockIdx.x >> s0) << (s0 + k);
    for (u32 j = threadIdx.x; j < size; j += blockDim.x) tile[j] = v[high | (j << s0) | low];
    // A butterfly's twiddle at stage s is w^(pos·2^(log_n-s-1)), pos = j0's index within its
    // half: its bits below s, i.e. `below` (the tile's bits) and then `low`.
    for (u32 j = threadIdx.x; j + 1 < size; j += blockDim.x) {
        u32 ts = 31 - __clz(j + 1);
        u32 below = j + 1 - (1u << ts);
        u32 pos = (below << s0) | low;
        tw[j] = fr_table_power(tw_lo, tw_hi, lo_bits, pos << (log_n - s0 - ts - 1));
    }
    __syncthreads();
    for (u32 step = 0; step < k; step++) {
        u32 ts = dif ? k - 1 - step : step;  // the stage within the tile
        for (u32 q = threadIdx.x; q < size / 2; q += blockDim.x) {
            u32 below = q & ((1u << ts) - 1);
            u32 j0 = ((q >> ts) << (ts + 1)) | below;
            u32 j1 = j0 | (1u << ts);
            fr_t w = tw[(1u << ts) - 1 + below];
            fr_t a = tile[j0], b = tile[j1];
            if (dif) {
                tile[j0] = fr_add(a, b);
                tile[j1] = fr_mul(fr_sub(a, b), w);
            } else {
                fr_t t = fr_mul(b, w);
                tile[j0] = fr_add(a, t);
                tile[j1] = fr_sub(a, t);
            }
        }
        __syncthreads();
    }
    for (u32 j = threadIdx.x; j < size; j += blockDim.x) v[high | (j << s0) | low] = tile[j];
}

// v[i] *= scale * g^e with e = i, or e = bitrev(i) over rev_bits bits for a vector in
// bit-reversed order (the tables hold scale * g^e).
extern "C" __global__ void fr_scale_powers(fr_t *v, u32 n, u32 rev_bits, const fr_t *p_lo,
                                           const fr_t *p_hi, u32 lo_bits) {
    u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    u32 e = rev_bits ? bit_reversed(i, rev_bits) : i;
    v[i] = fr_mul(v[i], fr_table_power(p_lo, p_hi, lo_bits, e));
}

#endif
