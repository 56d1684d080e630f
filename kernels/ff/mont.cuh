#ifndef CUZK_FF_MONT_CUH
#define CUZK_FF_MONT_CUH

// Montgomery arithmetic on N 32-bit limbs, generic over the modulus: the layer every field of
// ff/ builds on. Limbs are little-endian with the radix blst uses (R = 2^(32N)), so buffers made by
// blstrs go to the device unchanged.
//
// The arithmetic is written in portable C++ so that it compiles for the device under NVRTC and for
// the host under a C++ compiler (kernels/hostcheck/ checks it against big-integer arithmetic). On
// the device, multiplication, addition and subtraction use PTX carry chains instead
// (CUZK_PORTABLE_FIELD, which `--portable-field` of `cuzk kernels build`, `selftest` and `bench
// gpu` sets, turns them off); `cuzk selftest --gpu` checks either version against the CPU.

#include "util/common.cuh"

#if defined(__CUDA_ARCH__) && !defined(CUZK_PORTABLE_FIELD)
// PTX carry chains: each chain is one run of *.cc instructions (the carry flag lives between
// consecutive statements of a chain and nothing between them touches it).
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
FN u32 mad_hi_cc(u32 a, u32 b, u32 c) {
    u32 r;
    asm volatile("mad.hi.cc.u32 %0, %1, %2, %3;" : "=r"(r) : "r"(a), "r"(b), "r"(c));
    return r;
}
FN u32 madc_hi_cc(u32 a, u32 b, u32 c) {
    u32 r;
    asm volatile("madc.hi.cc.u32 %0, %1, %2, %3;" : "=r"(r) : "r"(a), "r"(b), "r"(c));
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

FN u32 add_cc(u32 a, u32 b) {
    u32 r;
    asm volatile("add.cc.u32 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b));
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

// r = a - b as one borrow chain; returns 0xffffffff on a borrow out, else 0.
template <int N>
FN u32 sub_words(u32 *r, const u32 *a, const u32 *b) {
    r[0] = sub_cc(a[0], b[0]);
#pragma unroll
    for (int j = 1; j < N; j++) r[j] = subc_cc(a[j], b[j]);
    return subc(0, 0);
}

// r = t - m if t (N + 1 words) >= m, else t: t < 2m.
template <int N>
FN void mont_final(u32 *r, const u32 *t, const u32 *m) {
    u32 s[N];
    u32 borrow = sub_words<N>(s, t, m);
    bool keep = t[N] == 0 && borrow;
#pragma unroll
    for (int j = 0; j < N; j++) r[j] = keep ? t[j] : s[j];
}

// r = a + b mod m for a, b < m < 2^(32N) / 2, so a + b has no carry out (Fr's modulus is above
// 2^(32N) / 4 but below half).
template <int N>
FN void mod_add(u32 *r, const u32 *a, const u32 *b, const u32 *m) {
    u32 t[N], s[N];
    t[0] = add_cc(a[0], b[0]);
#pragma unroll
    for (int j = 1; j < N - 1; j++) t[j] = addc_cc(a[j], b[j]);
    t[N - 1] = addc(a[N - 1], b[N - 1]);
    u32 borrow = sub_words<N>(s, t, m);
#pragma unroll
    for (int j = 0; j < N; j++) r[j] = borrow ? t[j] : s[j];
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

// t[0..N+1] += x * y[0..N-1] (x a word), as a low-half chain then a high-half chain.
template <int N>
FN void mul_word_add(u32 *t, u32 x, const u32 *y) {
    t[0] = mad_lo_cc(y[0], x, t[0]);
#pragma unroll
    for (int j = 1; j < N; j++) t[j] = madc_lo_cc(y[j], x, t[j]);
    t[N] = addc_cc(t[N], 0);
    t[N + 1] = addc(t[N + 1], 0);
    t[1] = mad_hi_cc(y[0], x, t[1]);
#pragma unroll
    for (int j = 1; j < N; j++) t[j + 1] = madc_hi_cc(y[j], x, t[j + 1]);
    t[N + 1] = addc(t[N + 1], 0);
}

// CIOS Montgomery multiplication: r = a * b / 2^(32N) mod m, for m < 2^(32N) / 4.
template <int N>
FN void mont_mul(u32 *r, const u32 *a, const u32 *b, const u32 *m, u32 inv) {
    u32 t[N + 2];
#pragma unroll
    for (int i = 0; i < N + 2; i++) t[i] = 0;
#pragma unroll
    for (int i = 0; i < N; i++) {
        mul_word_add<N>(t, b[i], a);
        u32 q = t[0] * inv;
        mul_word_add<N>(t, q, m);
        // t[0] is now 0: divide by the word.
#pragma unroll
        for (int j = 0; j <= N; j++) t[j] = t[j + 1];
        t[N + 1] = 0;
    }
    mont_final<N>(r, t, m);
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

// CIOS Montgomery multiplication: r = a * b / 2^(32N) mod m, for m < 2^(32N) / 4.
template <int N>
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
#endif


template <int N>
FN bool limbs_zero(const u32 *a) {
    u32 acc = 0;
#pragma unroll
    for (int j = 0; j < N; j++) acc |= a[j];
    return acc == 0;
}

#endif  // CUZK_FF_MONT_CUH
