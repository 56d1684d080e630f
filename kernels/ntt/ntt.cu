// Number-theoretic transforms over Fr, radix 2^k in shared memory.
//
// fr_ntt_tiles runs k consecutive radix-2 stages of a transform of 2^log_n elements in one pass
// over memory: a block loads the 2^k elements whose indices differ only in the stages' bits
// (a column: contiguous for the low stages, strided for the high ones) of a few neighbouring
// columns, so that its reads and writes are whole lines, runs the k stages in shared memory and
// stores them back. A transform is ceil(log_n / 10) passes.
//
// Cooley-Tukey (DIT) stages, low to high, take bit-reversed input to natural output;
// Gentleman-Sande (DIF) stages, high to low, take natural input to bit-reversed output. The
// quotient h chains them so that no reordering pass is needed (src/gpu/ntt.rs). The inverse is
// the same with omega^-1 (the 1/n factor goes into the coset scaling that follows). Twiddles
// and coset powers come from two small tables: w^i = lo[i & (2^lo_bits - 1)] * hi[i >> lo_bits],
// except in the pass of the lowest stages, whose twiddles are the same for every block and are
// read as they are from a third (`low_tw`), and whose stage 0 (twiddle 1) multiplies nothing.

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

// An element of a tile in shared memory, kept as two planes of 16-byte halves (plane 0 at
// [i], plane 1 at [i + size]): threads reading consecutive elements read consecutive 16-byte
// words, one shared-memory wavefront per 8 threads (an element of 32 bytes in one place made
// every other half-warp's read conflict).
FN fr_t tile_load(const uint4 *t, u32 size, u32 i) {
    uint4 a = t[i], b = t[i + size];
    return {{a.x, a.y, a.z, a.w, b.x, b.y, b.z, b.w}};
}
FN void tile_store(uint4 *t, u32 size, u32 i, const fr_t &x) {
    t[i] = make_uint4(x.l[0], x.l[1], x.l[2], x.l[3]);
    t[i + size] = make_uint4(x.l[4], x.l[5], x.l[6], x.l[7]);
}

// Stages s0 .. s0 + k - 1 (DIT: ascending; DIF: descending) of 2^cols_log columns side by side:
// a column is the 2^k elements whose indices differ only in the stages' bits (contiguous for
// the low stages, strided by 2^s0 for the high ones), and a block takes 2^cols_log consecutive
// ones (cols_log <= s0), so each row of the block's tile is that many contiguous elements in
// memory and the strided passes read and write whole lines. One thread per butterfly of a
// stage; dynamic shared memory of 2^(k + cols_log) elements for the tile and as many for its
// twiddles, made once a block from the tables: stage ts of a column (half-width 2^(s0+ts)) takes
// 2^ts of them, at tw[2^ts - 1 + below], which saves a product for every butterfly but those
// made. Element e of the tile is row e >> cols_log of column e & (cols - 1). Where s0 = 0 (one
// column a block) the twiddles are low_tw[0 .. 2^k], the same order (its last entry, past stage
// k - 1, is never read).
extern "C" __global__ void fr_ntt_tiles(fr_t *v, u32 log_n, u32 s0, u32 k, u32 dif,
                                        const fr_t *tw_lo, const fr_t *tw_hi, u32 lo_bits,
                                        const fr_t *low_tw, u32 cols_log) {
    extern __shared__ uint4 shared_planes[];
    u32 cols = 1u << cols_log;
    u32 size = cols << k;  // elements in the tile
    uint4 *tile = shared_planes, *tw = shared_planes + 2 * size;
    u32 first = blockIdx.x << cols_log;  // the block's first column
    u32 low0 = first & ((1u << s0) - 1);
    u32 high = (first >> s0) << (s0 + k);
    for (u32 e = threadIdx.x; e < size; e += blockDim.x) {
        u32 col = e & (cols - 1), j = e >> cols_log;
        tile_store(tile, size, e, v[high | (j << s0) | (low0 + col)]);
    }
    // A butterfly's twiddle at stage s is w^(pos·2^(log_n-s-1)), pos = j0's index within its
    // half: its bits below s, i.e. `below` (the tile's bits) and then its column's `low`.
    for (u32 e = threadIdx.x; e + cols <= size; e += blockDim.x) {
        if (s0 == 0) {
            tile_store(tw, size, e, low_tw[e]);
            continue;
        }
        u32 col = e & (cols - 1), j = e >> cols_log;
        u32 ts = 31 - __clz(j + 1);
        u32 below = j + 1 - (1u << ts);
        u32 pos = (below << s0) | (low0 + col);
        tile_store(tw, size, e,
                   fr_table_power(tw_lo, tw_hi, lo_bits, pos << (log_n - s0 - ts - 1)));
    }
    __syncthreads();
    for (u32 step = 0; step < k; step++) {
        u32 ts = dif ? k - 1 - step : step;  // the stage within the tile
        bool unit = s0 == 0 && ts == 0;      // the transform's stage 0: every twiddle is 1
        for (u32 q = threadIdx.x; q < size / 2; q += blockDim.x) {
            u32 col = q & (cols - 1), qq = q >> cols_log;
            u32 below = qq & ((1u << ts) - 1);
            u32 j0 = ((qq >> ts) << (ts + 1)) | below;
            u32 e0 = (j0 << cols_log) | col, e1 = e0 | (1u << (ts + cols_log));
            fr_t w = tile_load(tw, size, (((1u << ts) - 1 + below) << cols_log) | col);
            fr_t a = tile_load(tile, size, e0), b = tile_load(tile, size, e1);
            if (dif) {
                fr_t d = fr_sub(a, b);
                if (!unit) d = fr_mul(d, w);
                tile_store(tile, size, e0, fr_add(a, b));
                tile_store(tile, size, e1, d);
            } else {
                fr_t t = b;
                if (!unit) t = fr_mul(b, w);
                tile_store(tile, size, e0, fr_add(a, t));
                tile_store(tile, size, e1, fr_sub(a, t));
            }
        }
        __syncthreads();
    }
    for (u32 e = threadIdx.x; e < size; e += blockDim.x) {
        u32 col = e & (cols - 1), j = e >> cols_log;
        v[high | (j << s0) | (low0 + col)] = tile_load(tile, size, e);
    }
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
