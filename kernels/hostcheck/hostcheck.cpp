// Host build of the field and curve code, driven by hostcheck.py: reads one operation per line
// (name and hex operands, little-endian limbs as one big-endian hex integer), prints the result.
#include <cstdio>
#include <cstring>
#include <string>
#include <iostream>
#include <sstream>
#include "ff/fr.cuh"
#include "ff/fp2.cuh"
#include "ec/affine.cuh"
#include "msm/digits.cuh"
#include "msm/table.cuh"

template <int N>
static void parse(const std::string &hex, u32 *out) {
    std::string h = hex;
    while (h.size() < (size_t)N * 8) h = "0" + h;
    for (int j = 0; j < N; j++) {
        std::string part = h.substr(h.size() - 8 * (j + 1), 8);
        out[j] = (u32)std::stoul(part, nullptr, 16);
    }
}

template <int N>
static void print(const u32 *a) {
    for (int j = N - 1; j >= 0; j--) printf("%08x", a[j]);
}

int main() {
    std::string line;
    while (std::getline(std::cin, line)) {
        std::istringstream in(line);
        std::string op, x, y, z;
        in >> op >> x >> y >> z;
        if (op == "fp_mul" || op == "fp_add" || op == "fp_sub" || op == "fp_sqr") {
            fp_t a, b;
            parse<12>(x, a.l);
            parse<12>(y, b.l);
            fp_t r = op == "fp_mul"   ? fp_mul(a, b)
                     : op == "fp_add" ? fp_add(a, b)
                     : op == "fp_sub" ? fp_sub(a, b)
                                      : fp_sqr(a);
            print<12>(r.l);
        } else if (op == "fp_mul_sub") {
            // x = a, y = b, z = "c:d"
            fp_t a, b, c, d;
            parse<12>(x, a.l);
            parse<12>(y, b.l);
            size_t colon = z.find(':');
            parse<12>(z.substr(0, colon), c.l);
            parse<12>(z.substr(colon + 1), d.l);
            print<12>(fp_mul_sub(a, b, c, d).l);
        } else if (op == "fp_inv") {
            fp_t a;
            parse<12>(x, a.l);
            fp_t r = fp_inv(a);
            print<12>(r.l);
        } else if (op == "fp2_inv") {
            fp2_t a;
            parse<12>(x, a.c0.l);
            parse<12>(y, a.c1.l);
            fp2_t r = fp2_inv(a);
            print<12>(r.c0.l);
            printf(" ");
            print<12>(r.c1.l);
        } else if (op == "g1_add_batch") {
            // x, y: the pairs' first and second points, "px:py,..." (infinity 0:0); prints the
            // sums as "x:y" separated by spaces.
            affine_t<fp_t> p[32], q[32];
            u32 count = 0;
            for (const std::string *list : {&x, &y}) {
                std::istringstream points(*list);
                std::string point;
                u32 k = 0;
                while (std::getline(points, point, ',') && k < 32) {
                    size_t colon = point.find(':');
                    affine_t<fp_t> &dst = list == &x ? p[k] : q[k];
                    parse<12>(point.substr(0, colon), dst.x.l);
                    parse<12>(point.substr(colon + 1), dst.y.l);
                    k++;
                }
                count = k;
            }
            affine_t<fp_t> out[32];
            affine_add_batch<fp_t, 32>(
                count,
                [&](u32 k, affine_t<fp_t> &a, affine_t<fp_t> &b) {
                    a = p[k];
                    b = q[k];
                },
                [&](u32 k, const affine_t<fp_t> &sum) { out[k] = sum; });
            for (u32 k = 0; k < count; k++) {
                if (k) printf(" ");
                print<12>(out[k].x.l);
                printf(":");
                print<12>(out[k].y.l);
            }
        } else if (op == "g1_window_multiples") {
            // x, y: the point (infinity 0 0); z = "c:windows"; prints 2^(c·w)·p for each window
            // as "x:y" separated by spaces.
            affine_t<fp_t> p;
            parse<12>(x, p.x.l);
            parse<12>(y, p.y.l);
            size_t colon = z.find(':');
            u32 c = (u32)std::stoul(z.substr(0, colon)), windows = (u32)std::stoul(z.substr(colon + 1));
            affine_t<fp_t> out[MSM_TABLE_WINDOWS];
            window_multiples(p, c, windows, [&](u32 w, const affine_t<fp_t> &q) { out[w] = q; });
            for (u32 w = 0; w < windows; w++) {
                if (w) printf(" ");
                print<12>(out[w].x.l);
                printf(":");
                print<12>(out[w].y.l);
            }
        } else if (op == "fr_mul" || op == "fr_add" || op == "fr_sub" || op == "fr_from_mont") {
            fr_t a, b;
            parse<8>(x, a.l);
            parse<8>(y, b.l);
            fr_t r = op == "fr_mul" ? fr_mul(a, b)
                     : op == "fr_add" ? fr_add(a, b)
                     : op == "fr_sub" ? fr_sub(a, b)
                                      : fr_from_mont(a);
            print<8>(r.l);
        } else if (op == "fp2_mul" || op == "fp2_sqr") {
            // x = a0, y = a1, z = "b0:b1"
            fp2_t a, b;
            parse<12>(x, a.c0.l);
            parse<12>(y, a.c1.l);
            size_t colon = z.find(':');
            parse<12>(z.substr(0, colon), b.c0.l);
            parse<12>(z.substr(colon + 1), b.c1.l);
            fp2_t r = op == "fp2_mul" ? fp2_mul(a, b) : fp2_sqr(a);
            print<12>(r.c0.l);
            printf(" ");
            print<12>(r.c1.l);
        } else if (op == "g1_mul") {
            // k * (x, y) by double-and-add in XYZZ, and k * (x, y) by repeated mixed additions;
            // prints both as X Y ZZ ZZZ.
            affine_t<fp_t> p;
            parse<12>(x, p.x.l);
            parse<12>(y, p.y.l);
            unsigned k = (unsigned)std::stoul(z);
            xyzz_t<fp_t> base, acc, slow;
            xyzz_set_inf(base);
            xyzz_add_affine(base, p);
            xyzz_set_inf(acc);
            for (int bit = 31; bit >= 0; bit--) {
                xyzz_dbl(acc);
                if ((k >> bit) & 1) xyzz_add(acc, base);
            }
            xyzz_set_inf(slow);
            for (unsigned i = 0; i < k; i++) xyzz_add_affine(slow, p);
            for (auto *q : {&acc, &slow}) {
                print<12>(q->X.l); printf(" ");
                print<12>(q->Y.l); printf(" ");
                print<12>(q->ZZ.l); printf(" ");
                print<12>(q->ZZZ.l); printf(" ");
            }
        } else if (op == "digits") {
            // x = c, y = a canonical scalar: the bucket keys of its nonzero signed digits.
            fr_t s;
            parse<8>(y, s.l);
            u32 c = (u32)std::stoul(x);
            printf("%u", msm_windows(c));
            for_each_digit(s, c, [&](u32 key) { printf(" %x", key); });
        } else if (op == "digits_table") {
            // x = c, y = a canonical scalar, z = a table's stride: each nonzero digit's bucket,
            // the table position its entry names for point 0, and its sign.
            fr_t s;
            parse<8>(y, s.l);
            u32 c = (u32)std::stoul(x), stride = (u32)std::stoul(z, nullptr, 16);
            printf("%u", msm_windows(c));
            for_each_digit(s, c, [&](u32 key) {
                printf(" %x:%x:%u", msm_bucket(key, c, stride), msm_entry_point(key, c, stride, 0),
                       key >> 31);
            });
        } else {
            printf("unknown op %s", op.c_str());
        }
        printf("\n");
    }
}
