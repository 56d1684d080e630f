#ifndef CUZK_FF_MONT_CUH
#define CUZK_FF_MONT_CUH

// Montgomery arithmetic on N 32-bit limbs, generic over the modulus: the layer every field of
// ff/ builds on. Limbs are little-endian with the radix blst uses (R = 2^(32N)), so buffers made by
// blstrs go to the device unchanged.
//
// Two versions of the same operations:
// - carry chains (the default): multiply-adds and additions that pass a carry flag from one to
//   the next. On the device they are PTX *.cc instructions; on the host the flag is a variable,
//   so kernels/hostcheck/ checks the very algorithms the device runs.
// - portable C++ on 64-bit sums (CUZK_PORTABLE_FIELD, which `--portable-field` of `cuzk kernels
//   build`, `selftest` and `bench gpu` sets): for telling a fault of one from the other.

#include "util/common.cuh"

// What a Montgomery reduction may assume of its modulus m beyond being odd: nothing, or that its
// low 64 bits are 2^64 - 2^32 + 1 (m[0] = 1, m[1] = 2^32 - 1: BLS12-381's Fr), which saves two
// of every row's multiply-adds in the carry-chain product (the portable one ignores it).
enum ModulusLow { LOW_ANY, LOW_FR };

#if !defined(CUZK_PORTABLE_FIELD)
#if defined(__CUDA_ARCH__)
// PTX carry chains: each chain is one run of *.cc instructions (the carry flag lives between
// consecutive statements of a chain and nothing between them touches it).
FN u32 mul_lo(u32 a, u32 b) {
    u32 r;
    asm("mul.lo.u32 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b));
    return r;
}
FN u32 mul_hi(u32 a, u32 b) {
    u32 r;
    asm("mul.hi.u32 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b));
    return r;
}
FN u32 mad_lo_cc(u32 a, u32 b, u32 c) {
    u32 r;
    asm volatile("mad.lo.cc.u32 %0, %1, %2, %3;" : "=r"(r) : "r"(a), "r"(b), "r"(c));
    return r;
}
FN u32 madc_lo_cc(u32 a, u32 b, u32 c) {
    u32 r;
    asm volatile("madc.lo.cc.u32 %0, %1, %2, %3;" : "=r"(r) : "r"(a), "r"(b), "r"(c));
    return r;
}
FN u32 madc_hi_cc(u32 a, u32 b, u32 c) {
    u32 r;
    asm volatile("madc.hi.cc.u32 %0, %1, %2, %3;" : "=r"(r) : "r"(a), "r"(b), "r"(c));
    return r;
}
FN u32 madc_hi(u32 a, u32 b, u32 c) {
    u32 r;
    asm volatile("madc.hi.u32 %0, %1, %2, %3;" : "=r"(r) : "r"(a), "r"(b), "r"(c));
    return r;
}
FN u32 add_cc(u32 a, u32 b) {
    u32 r;
    asm volatile("add.cc.u32 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b));
    return r;
}
FN u32 addc_cc(u32 a, u32 b) {
    u32 r;
    asm volatile("addc.cc.u32 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b));
    return r;
}
FN u32 addc(u32 a, u32 b) {
    u32 r;
    asm volatile("addc.u32 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b));
    return r;
}
FN u32 sub_cc(u32 a, u32 b) {
    u32 r;
    asm volatile("sub.cc.u32 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b));
    return r;
}
FN u32 subc_cc(u32 a, u32 b) {
    u32 r;
    asm volatile("subc.cc.u32 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b));
    return r;
}
FN u32 subc(u32 a, u32 b) {
    u32 r;
    asm volatile("subc.u32 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b));
    return r;
}
#else
// The same instructions on the host, the carry flag a variable (the host check is one thread).
// A subtraction's flag is its borrow, as on the device.
static u32 host_carry;
FN u32 carry_out(u64 sum) {
    host_carry = (u32)(sum >> 32);
    return (u32)sum;
}
FN u32 borrow_out(u64 difference) {
    host_carry = (u32)(difference >> 63);
    return (u32)difference;
}
FN u32 mul_lo(u32 a, u32 b) { return a * b; }
FN u32 mul_hi(u32 a, u32 b) { return (u32)(((u64)a * b) >> 32); }
FN u32 mad_lo_cc(u32 a, u32 b, u32 c) { return carry_out((u64)(a * b) + c); }
FN u32 madc_lo_cc(u32 a, u32 b, u32 c) { return carry_out((u64)(a * b) + c + host_carry); }
FN u32 madc_hi_cc(u32 a, u32 b, u32 c) { return carry_out((u64)mul_hi(a, b) + c + host_carry); }
FN u32 madc_hi(u32 a, u32 b, u32 c) { return mul_hi(a, b) + c + host_carry; }
FN u32 add_cc(u32 a, u32 b) { return carry_out((u64)a + b); }
FN u32 addc_cc(u32 a, u32 b) { return carry_out((u64)a + b + host_carry); }
FN u32 addc(u32 a, u32 b) { return a + b + host_carry; }
FN u32 sub_cc(u32 a, u32 b) { return borrow_out((u64)a - b); }
FN u32 subc_cc(u32 a, u32 b) { return borrow_out((u64)a - b - host_carry); }
FN u32 subc(u32 a, u32 b) { return a - b - host_carry; }
#endif

// r = a - b as one borrow chain; returns 0xffffffff on a borrow out, else 0.
template <int N>
FN u32 sub_words(u32 *r, const u32 *a, const u32 *b) {
    r[0] = sub_cc(a[0], b[0]);
#pragma unroll
    for (int j = 1; j < N; j++) r[j] = subc_cc(a[j], b[j]);
    return subc(0, 0);
}

// r = a + b as one carry chain, for sums without a carry out.
template <int N>
FN void add_words(u32 *r, const u32 *a, const u32 *b) {
    r[0] = add_cc(a[0], b[0]);
#pragma unroll
    for (int j = 1; j < N - 1; j++) r[j] = addc_cc(a[j], b[j]);
    r[N - 1] = addc(a[N - 1], b[N - 1]);
}

// r = t - m if t >= m, else t.
template <int N>
FN void sub_if_not_below(u32 *r, const u32 *t, const u32 *m) {
    u32 s[N];
    u32 borrow = sub_words<N>(s, t, m);
#pragma unroll
    for (int j = 0; j < N; j++) r[j] = borrow ? t[j] : s[j];
}

// r = a + b mod m for a, b < m < 2^(32N) / 2, so a + b has no carry out (Fr's modulus is above
// 2^(32N) / 4 but below half).
template <int N>
FN void mod_add(u32 *r, const u32 *a, const u32 *b, const u32 *m) {
    u32 t[N];
    add_words<N>(t, a, b);
    sub_if_not_below<N>(r, t, m);
}

// r = a - b mod m for a, b < m.
template <int N>
FN void mod_sub(u32 *r, const u32 *a, const u32 *b, const u32 *m) {
    u32 t[N];
    u32 mask = sub_words<N>(t, a, b);
    r[0] = add_cc(t[0], m[0] & mask);
#pragma unroll
    for (int j = 1; j < N - 1; j++) r[j] = addc_cc(t[j], m[j] & mask);
    r[N - 1] = addc(t[N - 1], m[N - 1] & mask);
}

// The Montgomery product keeps its running sum as two numbers, lo + 2^32·hi: lo takes the
// products of the even limbs of a (a_j·x at words j and j+1), hi those of the odd limbs one word
// down. Within either, no two products overlap, so a row of them is one carry chain in which
// each low half is followed by the high half of the same product: the device runs each such
// pair as one wide multiply-add (the low and high halves apart run at half that rate).

// acc[j], acc[j+1] = a[j]·x for even j (pass a + 1 for the odd limbs).
template <int N>
FN void mul_pairs(u32 *acc, const u32 *a, u32 x) {
#pragma unroll
    for (int j = 0; j < N; j += 2) {
        acc[j] = mul_lo(a[j], x);
        acc[j + 1] = mul_hi(a[j], x);
    }
}

// acc += Σ a[j]·x at words j, j+1 for even j >= 2, continuing the flag's chain; the carry out
// is left in the flag.
template <int N>
FN void madc_pairs_above(u32 *acc, const u32 *a, u32 x) {
#pragma unroll
    for (int j = 2; j < N; j += 2) {
        acc[j] = madc_lo_cc(a[j], x, acc[j]);
        acc[j + 1] = madc_hi_cc(a[j], x, acc[j + 1]);
    }
}

// acc += Σ a[j]·x at words j, j+1 for even j, one chain; the carry out is left in the flag.
template <int N>
FN void mad_pairs(u32 *acc, const u32 *a, u32 x) {
    acc[0] = mad_lo_cc(a[0], x, acc[0]);
    acc[1] = madc_hi_cc(a[0], x, acc[1]);
    madc_pairs_above<N>(acc, a, x);
}

// acc = acc / 2^64 + Σ a[j]·x at words j, j+1 for even j, continuing the flag's chain; the
// moduli's spare top bits leave no carry out.
template <int N>
FN void mad_pairs_shifted(u32 *acc, const u32 *a, u32 x) {
#pragma unroll
    for (int j = 0; j < N - 2; j += 2) {
        acc[j] = madc_lo_cc(a[j], x, acc[j + 2]);
        acc[j + 1] = madc_hi_cc(a[j], x, acc[j + 3]);
    }
    acc[N - 2] = madc_lo_cc(a[N - 2], x, 0);
    acc[N - 1] = madc_hi(a[N - 2], x, 0);
}

// lo + 2^32·hi += a·x: the even limbs' products into lo, the odd limbs' into hi, lo's carry out
// (worth 2^(32N): hi[N-1]'s weight) into hi; hi has no carry out where the moduli leave spare
// bits for every product the row takes.
template <int N>
FN void row_add(u32 *lo, u32 *hi, const u32 *a, u32 x) {
    mad_pairs<N>(hi, a + 1, x);
    mad_pairs<N>(lo, a, x);
    hi[N - 1] = addc(hi[N - 1], 0);
}

// A row's first product: the running sum lo + 2^32·hi, whose word 0 is lo's, takes a·x. The
// row before left lo' + 2^32·hi' with lo'[0] = 0, so the sum divided by 2^32 is hi' + lo'[1] +
// 2^32·(lo' / 2^64): the caller passes hi' as lo and lo' as hi, the roles swapping every row.
template <int N>
FN void row_first(u32 *lo, u32 *hi, const u32 *a, u32 x, bool first) {
    if (first) {
        mul_pairs<N>(hi, a + 1, x);
        mul_pairs<N>(lo, a, x);
    } else {
        lo[0] = add_cc(lo[0], hi[1]);  // its carry is worth 2^32: hi[0]'s weight
        mad_pairs_shifted<N>(hi, a + 1, x);
        mad_pairs<N>(lo, a, x);
        hi[N - 1] = addc(hi[N - 1], 0);  // lo's carry out is worth 2^(32N): hi[N-1]'s
    }
}

// lo + 2^32·hi += q·m, as row_add, for the modulus shape LOW: a modulus whose low 64 bits are
// 2^64 - 2^32 + 1 takes q·m[0] = q and q·m[1] = q·2^32 - q, whose words (2^32 - q, q - 1) (or
// zeros for q = 0) take no multiplier: N - 2 wide multiply-adds a row instead of N.
template <int N, ModulusLow LOW>
FN void row_reduce(u32 *lo, u32 *hi, const u32 *m, u32 q) {
    if (LOW == LOW_ANY) {
        row_add<N>(lo, hi, m, q);
        return;
    }
    u32 q1_lo = sub_cc(0, q);  // no chain is open here: the borrow is q != 0
    u32 q1_hi = subc(q, 0);
    hi[0] = add_cc(hi[0], q1_lo);
    hi[1] = addc_cc(hi[1], q1_hi);
    madc_pairs_above<N>(hi, m + 1, q);
    lo[0] = add_cc(lo[0], q);
    lo[1] = addc_cc(lo[1], 0);
    madc_pairs_above<N>(lo, m, q);
    hi[N - 1] = addc(hi[N - 1], 0);
}

// One row of the product: a·x, then q·m with q chosen to clear word 0.
template <int N, ModulusLow LOW>
FN void mont_row(u32 *lo, u32 *hi, const u32 *a, u32 x, const u32 *m, u32 inv, bool first) {
    row_first<N>(lo, hi, a, x, first);
    row_reduce<N, LOW>(lo, hi, m, lo[0] * inv);
}

// The rows' end: odd + 2^32·even with odd[0] = 0, divided by 2^32, into even.
template <int N>
FN void rows_end(u32 *even, const u32 *odd) {
    even[0] = add_cc(even[0], odd[1]);
#pragma unroll
    for (int j = 1; j < N - 1; j++) even[j] = addc_cc(even[j], odd[j + 1]);
    even[N - 1] = addc(even[N - 1], 0);
}

// Montgomery multiplication: r = a * b / 2^(32N) mod m, for m < 2^(32N) / 2 and N even, m of
// the shape LOW.
template <int N, ModulusLow LOW = LOW_ANY>
FN void mont_mul(u32 *r, const u32 *a, const u32 *b, const u32 *m, u32 inv) {
    u32 even[N], odd[N];
#pragma unroll
    for (int i = 0; i < N; i += 2) {
        mont_row<N, LOW>(even, odd, a, b[i], m, inv, i == 0);
        mont_row<N, LOW>(odd, even, a, b[i + 1], m, inv, false);
    }
    rows_end<N>(even, odd);  // the product, below 2m
    sub_if_not_below<N>(r, even, m);
}

// mont_row with a second product: the running sum takes a·x and c·y, then q·m.
template <int N>
FN void mont_row2(u32 *lo, u32 *hi, const u32 *a, u32 x, const u32 *c, u32 y, const u32 *m,
                  u32 inv, bool first) {
    row_first<N>(lo, hi, a, x, first);
    row_add<N>(lo, hi, c, y);
    row_add<N>(lo, hi, m, lo[0] * inv);
}

// r = (a·b - c·d) / 2^(32N) mod m as a·b + c·(m - d), the two products in one Montgomery
// reduction: each row takes a·b_i and c·e_i, then q·m. For moduli below 2^(32N) / 8 (three
// spare bits, as Fp has): the running sum's odd half then takes three products without a carry
// out, and the result is below (2m^2 + 2^(32N)·m) / 2^(32N) < 2m.
template <int N>
FN void mont_mul_sub(u32 *r, const u32 *a, const u32 *b, const u32 *c, const u32 *d,
                     const u32 *m, u32 inv) {
    u32 e[N];  // m - d <= m: below the same bound as the operands (m for d = 0 is fine)
    sub_words<N>(e, m, d);
    u32 even[N], odd[N];
#pragma unroll
    for (int i = 0; i < N; i += 2) {
        mont_row2<N>(even, odd, a, b[i], c, e[i], m, inv, i == 0);
        mont_row2<N>(odd, even, a, b[i + 1], c, e[i + 1], m, inv, false);
    }
    rows_end<N>(even, odd);
    sub_if_not_below<N>(r, even, m);
}

// Row i of the square's cross products: a_i·a_j for j = j0, j0 + 2, ... < N at words i + j,
// i + j + 1 of acc (2N words), one chain, its carry added into the word above its top. Each of
// the two sums takes every row's chain of one parity, and there each carry word is shared by
// two consecutive rows and lies above every earlier row's top: it holds at most the other
// row's carry when a carry lands in it, so no carry goes further.
template <int N>
FN void cross_chain(u32 *acc, const u32 *a, int i, int j0) {
    if (j0 >= N) return;
    acc[i + j0] = mad_lo_cc(a[j0], a[i], acc[i + j0]);
    acc[i + j0 + 1] = madc_hi_cc(a[j0], a[i], acc[i + j0 + 1]);
    int j = j0 + 2;
#pragma unroll
    for (; j < N; j += 2) {
        acc[i + j] = madc_lo_cc(a[j], a[i], acc[i + j]);
        acc[i + j + 1] = madc_hi_cc(a[j], a[i], acc[i + j + 1]);
    }
    acc[i + j] = addc(acc[i + j], 0);  // j is the last j + 2: the word above the top
}

// One row of a Montgomery reduction alone, on the running sum lo + 2^32·hi as in mont_row
// (the caller swaps the roles every row): q·m with q chosen to clear word 0. A row after the
// first divides the sum by 2^32 first, in the same chain as the odd limbs' products.
template <int N>
FN void redc_row(u32 *lo, u32 *hi, const u32 *m, u32 inv, bool first) {
    if (first) {
        u32 q = lo[0] * inv;
        mul_pairs<N>(hi, m + 1, q);
        mad_pairs<N>(lo, m, q);
    } else {
        lo[0] = add_cc(lo[0], hi[1]);  // as in row_first, but q is read after it
        u32 q = lo[0] * inv;           // touches no flag
        mad_pairs_shifted<N>(hi, m + 1, q);
        mad_pairs<N>(lo, m, q);
    }
    hi[N - 1] = addc(hi[N - 1], 0);  // lo's carry out is worth 2^(32N): hi[N-1]'s
}

// Montgomery squaring: r = a^2 / 2^(32N) mod m, for m < 2^(32N) / 2 and N even. The cross
// products a_i·a_j (i < j) once, doubled, the squares a_i^2 added in the same chain, then the
// low half reduced and the high half added: N(N-1)/2 + N + N^2 wide multiply-adds where the
// product takes 2N^2.
template <int N>
FN void mont_sqr(u32 *r, const u32 *a, const u32 *m, u32 inv) {
    // e takes the chains that start at even words (j of i's parity), o those at odd ones.
    u32 e[2 * N], o[2 * N];
#pragma unroll
    for (int k = 0; k < 2 * N; k++) e[k] = o[k] = 0;
#pragma unroll
    for (int i = 0; i < N - 1; i++) {
        cross_chain<N>(e, a, i, i + 2);
        cross_chain<N>(o, a, i, i + 1);
    }
    // t = e + o, the cross products' sum (below a^2 / 2: no carry out).
    u32 t[2 * N];
    add_words<2 * N>(t, e, o);
    // s = 2t + Σ a_i^2 at words 2i, 2i + 1: one chain, no carry out (s = a^2).
    u32 s[2 * N];
    s[0] = mad_lo_cc(a[0], a[0], t[0] << 1);
    s[1] = madc_hi_cc(a[0], a[0], (t[1] << 1) | (t[0] >> 31));
#pragma unroll
    for (int i = 1; i < N - 1; i++) {
        s[2 * i] = madc_lo_cc(a[i], a[i], (t[2 * i] << 1) | (t[2 * i - 1] >> 31));
        s[2 * i + 1] = madc_hi_cc(a[i], a[i], (t[2 * i + 1] << 1) | (t[2 * i] >> 31));
    }
    s[2 * N - 2] = madc_lo_cc(a[N - 1], a[N - 1], (t[2 * N - 2] << 1) | (t[2 * N - 3] >> 31));
    s[2 * N - 1] = madc_hi(a[N - 1], a[N - 1], (t[2 * N - 1] << 1) | (t[2 * N - 2] >> 31));
    // (s_low + q·m) / 2^(32N) < m + 1 by rows as in mont_mul, starting from s's low half.
    u32 even[N], odd[N];
#pragma unroll
    for (int k = 0; k < N; k++) even[k] = s[k];
#pragma unroll
    for (int i = 0; i < N; i += 2) {
        redc_row<N>(even, odd, m, inv, i == 0);
        redc_row<N>(odd, even, m, inv, false);
    }
    // even + odd / 2^32, then + s's high half (a^2 / 2^(32N) < m / 2): below 2m.
    rows_end<N>(even, odd);
    add_words<N>(even, even, s + N);
    sub_if_not_below<N>(r, even, m);
}
#else
// r = t - m if t (N + 1 words) >= m, else t: t < 2m.
template <int N>
FN void mont_final(u32 *r, const u32 *t, const u32 *m) {
    u32 s[N];
    u64 borrow = 0;
#pragma unroll
    for (int j = 0; j < N; j++) {
        u64 d = (u64)t[j] - m[j] - borrow;
        s[j] = (u32)d;
        borrow = (d >> 32) & 1;
    }
    bool keep = t[N] == 0 && borrow;
#pragma unroll
    for (int j = 0; j < N; j++) r[j] = keep ? t[j] : s[j];
}

template <int N>
FN void mod_add(u32 *r, const u32 *a, const u32 *b, const u32 *m) {
    u32 t[N];
    u64 c = 0;
#pragma unroll
    for (int j = 0; j < N; j++) {
        c += (u64)a[j] + b[j];
        t[j] = (u32)c;
        c >>= 32;
    }
    u32 s[N];
    u64 borrow = 0;
#pragma unroll
    for (int j = 0; j < N; j++) {
        u64 d = (u64)t[j] - m[j] - borrow;
        s[j] = (u32)d;
        borrow = (d >> 32) & 1;
    }
    bool keep = c == 0 && borrow;
#pragma unroll
    for (int j = 0; j < N; j++) r[j] = keep ? t[j] : s[j];
}

template <int N>
FN void mod_sub(u32 *r, const u32 *a, const u32 *b, const u32 *m) {
    u32 t[N];
    u64 borrow = 0;
#pragma unroll
    for (int j = 0; j < N; j++) {
        u64 d = (u64)a[j] - b[j] - borrow;
        t[j] = (u32)d;
        borrow = (d >> 32) & 1;
    }
    u32 mask = borrow ? 0xffffffffu : 0;
    u64 c = 0;
#pragma unroll
    for (int j = 0; j < N; j++) {
        c += (u64)t[j] + (m[j] & mask);
        r[j] = (u32)c;
        c >>= 32;
    }
}

// CIOS Montgomery multiplication: r = a * b / 2^(32N) mod m, for m < 2^(32N) / 4 (of any shape).
template <int N, ModulusLow LOW = LOW_ANY>
FN void mont_mul(u32 *r, const u32 *a, const u32 *b, const u32 *m, u32 inv) {
    u32 t[N + 2];
#pragma unroll
    for (int i = 0; i < N + 2; i++) t[i] = 0;
#pragma unroll
    for (int i = 0; i < N; i++) {
        u64 c = 0;
#pragma unroll
        for (int j = 0; j < N; j++) {
            c += (u64)a[j] * b[i] + t[j];
            t[j] = (u32)c;
            c >>= 32;
        }
        c += t[N];
        t[N] = (u32)c;
        t[N + 1] = (u32)(c >> 32);
        u32 q = t[0] * inv;
        c = ((u64)q * m[0] + t[0]) >> 32;
#pragma unroll
        for (int j = 1; j < N; j++) {
            c += (u64)q * m[j] + t[j];
            t[j - 1] = (u32)c;
            c >>= 32;
        }
        c += t[N];
        t[N - 1] = (u32)c;
        t[N] = t[N + 1] + (u32)(c >> 32);
    }
    mont_final<N>(r, t, m);
}

template <int N>
FN void mont_sqr(u32 *r, const u32 *a, const u32 *m, u32 inv) {
    mont_mul<N>(r, a, a, m, inv);
}

template <int N>
FN void mont_mul_sub(u32 *r, const u32 *a, const u32 *b, const u32 *c, const u32 *d,
                     const u32 *m, u32 inv) {
    u32 ab[N], cd[N];
    mont_mul<N>(ab, a, b, m, inv);
    mont_mul<N>(cd, c, d, m, inv);
    mod_sub<N>(r, ab, cd, m);
}
#endif


template <int N>
FN bool limbs_zero(const u32 *a) {
    u32 acc = 0;
#pragma unroll
    for (int j = 0; j < N; j++) acc |= a[j];
    return acc == 0;
}

#endif  // CUZK_FF_MONT_CUH
