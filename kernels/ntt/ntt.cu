// Number-theoretic transforms over Fr, radix 2^k in shared memory.
//
// fr_ntt_tiles runs k consecutive radix-2 stages of a transform of 2^log_n elements in one pass
// over memory: a block loads the 2^k elements whose indices differ only in the stages' bits
// (a column: contiguous for the low stages, strided for the high ones) of a few neighbouring
// columns, so that its reads and writes are whole lines, runs the k stages in shared memory and
// stores them back. A transform is ceil(log_n / 10) passes. fr_ntt_regs runs the same passes
// with the stages in registers: each thread holds 8 elements of a column and runs up to three
// stages on them (radix 8) between exchanges through shared memory, so a pass of 9 stages reads
// and writes shared memory twice, not 9 times, and waits at 3 barriers, not 10; its first group
// reads global memory straight into registers and its last writes from them. fr_ntt_tiles stays
// for passes of fewer than 3 stages (transforms of 2 and 4 elements). fr_bit_reverse reorders
// by tiles that it transposes in shared memory, reading and writing whole lines.
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

// The twiddles of a tile's stages into shared memory (fr_ntt_tiles, fr_ntt_regs): stage ts of
// a column (half-width 2^(s0+ts)) takes 2^ts of them, at tw[2^ts - 1 + below] (element
// (2^ts - 1 + below) << cols_log | col). A butterfly's twiddle at stage s is
// w^(pos·2^(log_n-s-1)), pos = j0's index within its half: its bits below s, i.e. `below` (the
// tile's bits) and then its column's `low`. Where s0 = 0 (one column a block) they are low_tw's
// first 2^k, the same for every block.
FN void tile_twiddles(uint4 *tw, u32 size, u32 s0, u32 k, u32 cols_log, u32 log_n, u32 low0,
                      const fr_t *tw_lo, const fr_t *tw_hi, u32 lo_bits, const fr_t *low_tw) {
    u32 cols = 1u << cols_log;
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
    tile_twiddles(tw, size, s0, k, cols_log, log_n, low0, tw_lo, tw_hi, lo_bits, low_tw);
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

// An element's slot in a tile of fr_ntt_regs: e with its bits 0-2 XOR bits 3-5, so that eight
// threads reading eight consecutive elements, or eight elements 8 (or 2, or 4) apart, hit eight
// different 16-byte bank groups.
FN u32 tile_slot(u32 e) { return e ^ ((e >> 3) & 7); }

// The twiddle product, called: inlined, the twelve products of a group's body made fr_ntt_regs
// 8.9K instructions, not 3.3K, and the 2^27 transform 73 ms, not 67
// (docs/measurements/2026-12-06-h100-pairs/).
FN_CALL fr_t fr_mul_called(fr_t a, fr_t b) { return fr_mul(a, b); }

// The stages [lo, hi) of a group on a thread's 8 elements x[m] (rows base + m·2^t), in the
// order of DIF (high to low) or DIT; the bit of m a stage pairs is known at compile time, so x
// stays in registers.
template <bool DIF>
FN void regs_stages(fr_t *x, const uint4 *tw, u32 size, u32 s0, u32 t, u32 lo, u32 hi, u32 base,
                    u32 cols_log, u32 col) {
#pragma unroll
    for (int s = 0; s < 3; s++) {
        const int u = DIF ? 2 - s : s;  // the stage's bit of m
        u32 ts = t + u;                 // the stage within the tile
        if (ts < lo || ts >= hi) continue;
        bool unit = s0 == 0 && ts == 0;  // the transform's stage 0: every twiddle is 1
#pragma unroll
        for (int m0 = 0; m0 < 8; m0++) {
            if (m0 & (1 << u)) continue;
            const int m1 = m0 | (1 << u);
            u32 below = (base + ((u32)m0 << t)) & ((1u << ts) - 1);
            u32 w_at = (((1u << ts) - 1 + below) << cols_log) | col;
            fr_t a = x[m0], c = x[m1];
            if (DIF) {
                fr_t d = fr_sub(a, c);
                if (!unit) d = fr_mul_called(d, tile_load(tw, size, w_at));
                x[m0] = fr_add(a, c);
                x[m1] = d;
            } else {
                if (!unit) c = fr_mul_called(c, tile_load(tw, size, w_at));
                x[m0] = fr_add(a, c);
                x[m1] = fr_sub(a, c);
            }
        }
    }
}

// fr_ntt_regs' blocks: at most 2^10 elements a tile, 8 a thread (REGS_LOG in src/gpu/ntt.rs).
#define NTT_REGS_BOUNDS __launch_bounds__(128)

// fr_ntt_tiles' pass (same tile, columns, twiddles and launch arguments) with 2^k·cols / 8
// threads a block, each holding 8 elements of one column: for stages [lo, hi) of a group (at
// most three), the rows base + m·2^t (m < 8, t = lo, or k - 3 for a group of fewer than three
// stages at the top), base having bits t .. t + 2 clear. Groups run low to high (DIT) or high to
// low (DIF); between groups the elements go through shared memory (one barrier), the first
// group's come from global memory and the last group's go back there. k >= 3.
extern "C" __global__ void NTT_REGS_BOUNDS fr_ntt_regs(
    fr_t *v, u32 log_n, u32 s0, u32 k, u32 dif, const fr_t *tw_lo, const fr_t *tw_hi,
    u32 lo_bits, const fr_t *low_tw, u32 cols_log) {
    extern __shared__ uint4 shared_planes[];
    u32 cols = 1u << cols_log;
    u32 size = cols << k;
    uint4 *tile = shared_planes, *tw = shared_planes + 2 * size;
    u32 first = blockIdx.x << cols_log;
    u32 low0 = first & ((1u << s0) - 1);
    u32 high = (first >> s0) << (s0 + k);
    tile_twiddles(tw, size, s0, k, cols_log, log_n, low0, tw_lo, tw_hi, lo_bits, low_tw);
    __syncthreads();
    u32 col = threadIdx.x & (cols - 1), b = threadIdx.x >> cols_log;
    auto at = [&](u32 row) { return high | (row << s0) | (low0 + col); };  // in v
    auto slot = [&](u32 row) { return tile_slot((row << cols_log) | col); };  // in the tile
    u32 groups = (k + 2) / 3;
    fr_t x[8];
#pragma unroll 1
    for (u32 g = 0; g < groups; g++) {
        u32 lo, hi;
        if (dif) {
            hi = k - 3 * g;
            lo = hi > 3 ? hi - 3 : 0;
        } else {
            lo = 3 * g;
            hi = min(lo + 3, k);
        }
        u32 t = min(lo, k - 3);
        u32 base = (b & ((1u << t) - 1)) | ((b >> t) << (t + 3));
#pragma unroll
        for (int m = 0; m < 8; m++) {
            u32 row = base + ((u32)m << t);
            x[m] = g == 0 ? v[at(row)] : tile_load(tile, size, slot(row));
        }
        if (dif)
            regs_stages<true>(x, tw, size, s0, t, lo, hi, base, cols_log, col);
        else
            regs_stages<false>(x, tw, size, s0, t, lo, hi, base, cols_log, col);
#pragma unroll
        for (int m = 0; m < 8; m++) {
            u32 row = base + ((u32)m << t);
            if (g + 1 == groups)
                v[at(row)] = x[m];
            else
                tile_store(tile, size, slot(row), x[m]);
        }
        __syncthreads();
    }
}

// A tile element's slot: row h, its column l XOR h / 4, so that reading a column (h varying as
// the reversal of consecutive numbers) hits different bank groups.
FN u32 rev_slot(u32 h, u32 l, u32 a) { return (h << a) | (l ^ ((h >> 2) & ((1u << a) - 1))); }

// Bit reversal in place by tiles: an index of log_n bits is (h, mid, l) with h and l of `a`
// bits, and bitrev(h, mid, l) = (rev(l), rev(mid), rev(h)): the 2^a x 2^a elements of one mid
// go, transposed, to those of rev(mid). A block takes mid and rev(mid) (blocks whose rev(mid) <
// mid leave at once), loads both tiles with rows of 2^a consecutive elements, and writes each
// into the other's place, again in rows of consecutive elements: every global access is a run
// of whole lines. Dynamic shared memory: two tiles of 2^(2a) elements (64 KiB for a = 5).
extern "C" __global__ void fr_bit_reverse(fr_t *v, u32 log_n, u32 a) {
    extern __shared__ uint4 shared_planes[];
    u32 mid_bits = log_n - 2 * a;
    u32 mid = blockIdx.x, mid_r = bit_reversed(mid, mid_bits);
    if (mid_r < mid) return;
    u32 side = 1u << a, size = side << a;  // elements of one tile
    u32 planes = mid == mid_r ? size : 2 * size;
    uint4 *tiles = shared_planes;  // tile A (mid) at 0, tile B (mid_r) at size; planes apart
    u32 shift = log_n - a;
    for (u32 e = threadIdx.x; e < size; e += blockDim.x) {
        u32 h = e >> a, l = e & (side - 1);
        u32 at = rev_slot(h, l, a);
        tile_store(tiles, planes, at, v[(h << shift) | (mid << a) | l]);
        if (mid != mid_r) tile_store(tiles, planes, size + at, v[(h << shift) | (mid_r << a) | l]);
    }
    __syncthreads();
    for (u32 e = threadIdx.x; e < size; e += blockDim.x) {
        u32 h2 = e >> a, l2 = e & (side - 1);
        u32 at = rev_slot(bit_reversed(l2, a), bit_reversed(h2, a), a);
        // A's element lands in rev(mid)'s tile, B's in mid's.
        v[(h2 << shift) | (mid_r << a) | l2] = tile_load(tiles, planes, at);
        if (mid != mid_r) v[(h2 << shift) | (mid << a) | l2] = tile_load(tiles, planes, size + at);
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
