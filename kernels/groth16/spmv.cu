// a, b, c computed on the device from a circuit's PCE (src/pce: its R1CS matrices A, B, C in CSR)
// and a compact witness (src/synth/compact.rs: a 2-bit code per aux value, 0 zero, 1 one,
// 2 other, and the other values listed with their indices), so that the host keeps only the
// compact witness. Values are in Montgomery form as blstrs holds them.

#include "ff/fr.cuh"
#include "util/warp.cuh"

#if defined(__CUDACC_RTC__) || defined(__CUDACC__)

// Column tag of public inputs in the matrices; other columns are aux indices.
#define PCE_INPUT_COLUMN 0x80000000u

// aux[i] <- 0, or one[0] where value i is coded one, for i < len; codes are 16 a 32-bit word
// (value i at bits 2(i mod 16) of word i / 16). Values coded other are written by
// witness_scatter after.
extern "C" __global__ void witness_expand(const u32 *codes, u32 len, const fr_t *one, fr_t *aux) {
    u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= len) return;
    u32 code = (codes[i >> 4] >> (2 * (i & 15))) & 3;
    fr_t v;
#pragma unroll
    for (int j = 0; j < 8; j++) v.l[j] = code == 1 ? one[0].l[j] : 0;
    aux[i] = v;
}

// aux[index[k]] <- value[k] for k < count.
extern "C" __global__ void witness_scatter(const u32 *index, const fr_t *value, u32 count,
                                           fr_t *aux) {
    u32 k = blockIdx.x * blockDim.x + threadIdx.x;
    if (k < count) aux[index[k]] = value[k];
}

// out[r] <- the sum over row r's entries e of table[coeffs[e]] * z[cols[e]], for r < rows, where
// z is inputs for a column tagged PCE_INPUT_COLUMN and aux otherwise. Coefficient 0 is one and 1
// is minus one (no product); a zero or one value needs none either (most of a Filecoin
// witness is bits).
extern "C" __global__ void pce_spmv(const u32 *row_ptr, const u32 *cols, const u32 *coeffs,
                                    u32 rows, const fr_t *table, const fr_t *inputs,
                                    const fr_t *aux, fr_t *out) {
    u32 r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows) return;
    fr_t acc;
#pragma unroll
    for (int j = 0; j < 8; j++) acc.l[j] = 0;
    const fr_t one = table[0];
    for (u32 e = row_ptr[r], end = row_ptr[r + 1]; e < end; e++) {
        u32 col = cols[e], k = coeffs[e];
        const fr_t v = col & PCE_INPUT_COLUMN ? inputs[col & ~PCE_INPUT_COLUMN] : aux[col];
        if (k == 0) {
            acc = fr_add(acc, v);
        } else if (k == 1) {
            acc = fr_sub(acc, v);
        } else {
            bool zero = true, is_one = true;
#pragma unroll
            for (int j = 0; j < 8; j++) {
                zero = zero && v.l[j] == 0;
                is_one = is_one && v.l[j] == one.l[j];
            }
            if (is_one) {
                acc = fr_add(acc, table[k]);
            } else if (!zero) {
                acc = fr_add(acc, fr_mul(v, table[k]));
            }
        }
    }
    out[r] = acc;
}

// count[0] += the rows r < rows where a[r]·b[r] != c[r] (none for a witness that satisfies
// the circuit the PCE was recorded from). Values are reduced, so equal values have equal limbs.
extern "C" __global__ void pce_unsatisfied(const fr_t *a, const fr_t *b, const fr_t *c, u32 rows,
                                           u32 *count) {
    u32 r = blockIdx.x * blockDim.x + threadIdx.x;
    bool bad = false;
    if (r < rows) {
        fr_t p = fr_mul(a[r], b[r]);
#pragma unroll
        for (int j = 0; j < 8; j++) bad = bad || p.l[j] != c[r].l[j];
    }
    warp_append(bad, count);
}

#endif
