#ifndef CUZK_MSM_DIGITS_CUH
#define CUZK_MSM_DIGITS_CUH

// Signed c-bit digits of a scalar, as the MSM's buckets see them (host-checked by hostcheck/).

#include "ff/fr.cuh"

// An entry's or bucket key's sign bit: the point is subtracted.
#define MSM_NEGATE 0x80000000u

// The windows of c bits that cover a canonical scalar s < r < 2^255 with signed digits: the top
// window holds at most c - 1 bits, so its digit never carries out.
FN u32 msm_windows(u32 c) { return 255 / c + 1; }

// Calls visit(key) for each nonzero digit d of window w of the canonical scalar s, digits in
// [-2^(c-1), 2^(c-1)] with s = Σ d_w 2^(c·w); key = w * 2^(c-1) + |d| - 1, with MSM_NEGATE set
// when d < 0. c is in 2..=24 (keys stay below the sign bit).
template <class Visit>
FN void for_each_digit(const fr_t &s, u32 c, Visit visit) {
    u32 windows = msm_windows(c);
    u32 mask = (1u << c) - 1, half = 1u << (c - 1), carry = 0;
    for (u32 w = 0; w < windows; w++) {
        u32 bit = w * c, limb = bit >> 5, shift = bit & 31;
        u32 raw = s.l[limb] >> shift;
        if (shift + c > 32 && limb + 1 < 8) raw |= s.l[limb + 1] << (32 - shift);
        raw = (raw & mask) + carry;
        if (raw > half) {
            carry = 1;
            u32 d = (1u << c) - raw;
            if (d) visit((w * half + d - 1) | MSM_NEGATE);
        } else {
            carry = 0;
            if (raw) visit(w * half + raw - 1);
        }
    }
}

// The bucket of a digit's key. With a fixed-base table (stride nonzero: msm/table.cuh), every
// window's digits go to one window's 2^(c-1) buckets.
FN u32 msm_bucket(u32 key, u32 c, u32 stride) {
    key &= ~MSM_NEGATE;
    return stride ? key & ((1u << (c - 1)) - 1) : key;
}

// The base a digit's entry names for `point`: the point itself, or with a table (stride
// nonzero) its multiple for the digit's window w, at w·stride + point.
FN u32 msm_entry_point(u32 key, u32 c, u32 stride, u32 point) {
    return stride ? point + ((key & ~MSM_NEGATE) >> (c - 1)) * stride : point;
}

#endif  // CUZK_MSM_DIGITS_CUH
