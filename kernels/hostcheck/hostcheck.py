#!/usr/bin/env python3
"""Checks the kernels' field and curve arithmetic, compiled for the host, against Python integers.

    g++ -O1 -std=c++17 -I kernels -o /tmp/hostcheck kernels/hostcheck/hostcheck.cpp
    python3 kernels/hostcheck/hostcheck.py /tmp/hostcheck

Built as above it runs the carry-chain algorithms the device runs (the carry flag a variable);
with -DCUZK_PORTABLE_FIELD, the portable ones.
"""
import random
import subprocess
import sys

P = 0x1A0111EA397FE69A4B1BA7B6434BACD764774B84F38512BF6730D2A0F6B0F6241EABFFFEB153FFFFB9FEFFFFFFFFAAAB
R = 0x73EDA753299D7D483339D80809A1D80553BDA402FFFE5BFEFFFFFFFF00000001
GX = 0x17F1D3A73197D7942695638C4FA9AC0FC3688C4F9774B905A14E3A3F171BAC586C55E83FF97A1AEFFB3AF00ADB22C6BB
GY = 0x08B3F481E3AAA0F1A09E30ED741D8AE4FCF5E095D5D00AF600DB18CB2C04B3EDD03CC744A2888AE40CAA232946C5E7E1
RP = 2**384 % P  # Montgomery radix of Fp
RR = 2**256 % R  # of Fr


def g1_add(a, b):
    if a is None:
        return b
    if b is None:
        return a
    (x1, y1), (x2, y2) = a, b
    if x1 == x2:
        if (y1 + y2) % P == 0:
            return None
        lam = 3 * x1 * x1 * pow(2 * y1, -1, P) % P
    else:
        lam = (y2 - y1) * pow(x2 - x1, -1, P) % P
    x3 = (lam * lam - x1 - x2) % P
    return (x3, (lam * (x1 - x3) - y1) % P)


def g1_mul(k, point):
    acc = None
    for bit in bin(k)[2:]:
        acc = g1_add(acc, acc)
        if bit == "1":
            acc = g1_add(acc, point)
    return acc


def mont_point(point):
    """A point (None for infinity) as the kernels hold it: Montgomery coordinates, "x:y"."""
    if point is None:
        return "0:0"
    return f"{point[0] * RP % P:x}:{point[1] * RP % P:x}"


def main():
    exe = sys.argv[1]
    rnd = random.Random(7)
    cases = []
    edge_p = [0, 1, P - 1, P - 2, RP, 2**383 % P]
    edge_r = [0, 1, R - 1, R - 2, RR]
    for _ in range(300):
        a = rnd.choice(edge_p + [rnd.randrange(P)] * 4)
        b = rnd.choice(edge_p + [rnd.randrange(P)] * 4)
        rinv = pow(2**384, -1, P)
        cases.append((f"fp_mul {a:x} {b:x}", f"{a * b * rinv % P:096x}"))
        cases.append((f"fp_sqr {a:x} 0", f"{a * a * rinv % P:096x}"))
        cases.append((f"fp_add {a:x} {b:x}", f"{(a + b) % P:096x}"))
        cases.append((f"fp_sub {a:x} {b:x}", f"{(a - b) % P:096x}"))
        a2 = rnd.randrange(P)
        b2 = rnd.randrange(P)
        # Fp2 in Montgomery form: the product's components times R^-1.
        c0 = (a * b - a2 * b2) * rinv % P
        c1 = (a * b2 + a2 * b) * rinv % P
        cases.append((f"fp2_mul {a:x} {a2:x} {b:x}:{b2:x}", f"{c0:096x} {c1:096x}"))
        s0 = (a * a - a2 * a2) * rinv % P
        s1 = 2 * a * a2 * rinv % P
        cases.append((f"fp2_sqr {a:x} {a2:x} 0:0", f"{s0:096x} {s1:096x}"))
    for _ in range(200):
        a = rnd.choice(edge_p + [rnd.randrange(P)] * 4)
        a1 = rnd.choice([0, rnd.randrange(P)])
        x, x1 = a * pow(RP, -1, P) % P, a1 * pow(RP, -1, P) % P  # the values
        inv = pow(x, -1, P) * RP % P if x else 0
        cases.append((f"fp_inv {a:x}", f"{inv:096x}"))
        norm = (x * x + x1 * x1) % P
        n_inv = pow(norm, -1, P) if norm else 0
        c0, c1 = x * n_inv * RP % P, -x1 * n_inv * RP % P
        cases.append((f"fp2_inv {a:x} {a1:x}", f"{c0:096x} {c1 % P:096x}"))
    # Batches of affine additions: chords, tangents, p = -q, infinity on either side; full
    # batches and short ones.
    gen = (GX, GY)
    for count in [1, 2, 5, 31, 32, 32, 32]:
        ps, qs = [], []
        for _ in range(count):
            p = g1_mul(rnd.randrange(1, 2**64), gen)
            q = rnd.choice([g1_mul(rnd.randrange(1, 2**64), gen)] * 4 + ["same", "neg", "inf", "p_inf"])
            if q == "same":
                q = p
            elif q == "neg":
                q = (p[0], -p[1] % P)
            elif q == "inf":
                q = None
            elif q == "p_inf":
                p, q = None, p
            ps.append(p)
            qs.append(q)
        want = " ".join(mont_point(g1_add(p, q)) for p, q in zip(ps, qs))
        cases.append((f"g1_add_batch {','.join(map(mont_point, ps))} {','.join(map(mont_point, qs))}", want))
    # Fixed-base windows: 2^(c·w)·p for every window, one inversion for all; infinity, the
    # generator, random multiples; the shapes the MSM uses (c >= 16) and short ones.
    for point, c, windows in [
        (None, 16, 16),
        (gen, 16, 16),
        (g1_mul(rnd.randrange(1, R), gen), 20, 13),
        (g1_mul(rnd.randrange(1, R), gen), 24, 11),
        (g1_mul(rnd.randrange(1, R), gen), 3, 5),
        (g1_mul(rnd.randrange(1, R), gen), 18, 1),
        (g1_mul(rnd.randrange(1, R), gen), 17, 2),
    ]:
        want = " ".join(mont_point(g1_mul(2 ** (c * w), point) if point else None) for w in range(windows))
        x, y = mont_point(point).split(":")
        cases.append((f"g1_window_multiples {x} {y} {c}:{windows}", want))
    for _ in range(300):
        a = rnd.choice(edge_r + [rnd.randrange(R)] * 4)
        b = rnd.choice(edge_r + [rnd.randrange(R)] * 4)
        rinv = pow(2**256, -1, R)
        cases.append((f"fr_mul {a:x} {b:x}", f"{a * b * rinv % R:064x}"))
        cases.append((f"fr_add {a:x} {b:x}", f"{(a + b) % R:064x}"))
        cases.append((f"fr_sub {a:x} {b:x}", f"{(a - b) % R:064x}"))
        cases.append((f"fr_from_mont {a:x} 0", f"{a * rinv % R:064x}"))
    # Products near the moduli, where a sum without spare room would carry out.
    for _ in range(3000):
        for modulus, bits, op, radix in ((P, 384, "fp", 2**384), (R, 256, "fr", 2**256)):
            a = modulus - 1 - rnd.randrange(2**rnd.choice([8, 64, 200]))
            b = rnd.choice([modulus - 1, rnd.randrange(modulus), modulus - 1 - rnd.randrange(2**32)])
            want = a * b * pow(radix, -1, modulus) % modulus
            cases.append((f"{op}_mul {a:x} {b:x}", f"{want:0{bits // 4}x}"))
            if op == "fp":
                cases.append((f"fp_sqr {a:x} 0", f"{a * a * pow(radix, -1, modulus) % modulus:096x}"))
    # a·b - c·d in one reduction: edges, zeros, operands near p.
    for _ in range(2000):
        a, b, c, d = (
            rnd.choice(edge_p + [rnd.randrange(P), P - 1 - rnd.randrange(2**rnd.choice([8, 64, 200]))])
            for _ in range(4)
        )
        want = (a * b - c * d) * pow(2**384, -1, P) % P
        cases.append((f"fp_mul_sub {a:x} {b:x} {c:x}:{d:x}", f"{want:096x}"))
    # Squares whose limbs are mostly all ones or mostly zeros (below p): the cross products'
    # carry words at their fullest and emptiest.
    for _ in range(1000):
        words = [rnd.choice([0xFFFFFFFF, 0xFFFFFFFF, 0, rnd.getrandbits(32)]) for _ in range(12)]
        a = sum(w << (32 * k) for k, w in enumerate(words)) % P
        cases.append((f"fp_sqr {a:x} 0", f"{a * a * pow(2**384, -1, P) % P:096x}"))
    points = []
    for k in [1, 2, 3, 4, 5, 7, 16, 31, 100]:
        expect = None
        for _ in range(k):
            expect = g1_add(expect, (GX, GY))
        points.append(k)
        cases.append((f"g1_mul {GX * RP % P:x} {GY * RP % P:x} {k}", expect))

    for c in [2, 3, 4, 7, 8, 9, 13, 15, 16, 17, 19, 20, 21, 24]:
        for s in [0, 1, 2, R - 1, R - 2, 2**254, 2**c, 2**(c - 1), 2**(c - 1) + 1, 2**255 - 19] + [
            rnd.randrange(R) for _ in range(20)
        ]:
            if s < 2**255:
                cases.append((f"digits {c} {s:x}", s))
                if c >= 16:
                    # Through a fixed-base table: one window's buckets, the window in the entry.
                    stride = rnd.choice([1, 3, 2**22 - 1, 2**27])
                    cases.append((f"digits_table {c} {s:x} {stride:x}", s))

    out = subprocess.run(
        [exe], input="\n".join(c for c, _ in cases) + "\n", capture_output=True, text=True, check=True
    ).stdout.splitlines()
    assert len(out) == len(cases), (len(out), len(cases))
    bad = 0
    for (case, want), got in zip(cases, out):
        if case.startswith("g1_mul"):
            vals = [int(v, 16) for v in got.split()]
            for X, Y, ZZ, ZZZ in (vals[0:4], vals[4:8]):
                if ZZ == 0:
                    ok = want is None
                else:
                    ok = want == (X * pow(ZZ, -1, P) % P, Y * pow(ZZZ, -1, P) % P)
                    # ZZ^3 = ZZZ^2 on the values, not on their Montgomery forms.
                    zz, zzz = ZZ * pow(RP, -1, P) % P, ZZZ * pow(RP, -1, P) % P
                    ok = ok and pow(zz, 3, P) == pow(zzz, 2, P)
                if not ok:
                    bad += 1
                    print("MISMATCH", case)
        elif case.startswith("digits "):
            c = int(case.split()[1])
            windows, *keys = [int(v, 16) for v in got.split()]
            half = 1 << (c - 1)
            total, in_range = 0, windows * c >= 255
            for key in keys:
                w, d = divmod(key & 0x7FFFFFFF, half)
                in_range = in_range and w < windows
                total += (-1 if key >> 31 else 1) * ((d + 1) << (c * w))
            if total != want or not in_range:
                bad += 1
                print("MISMATCH", case, total, want)
        elif case.startswith("digits_table"):
            c, stride = int(case.split()[1]), int(case.split()[3], 16)
            windows, *digits = got.split()
            half = 1 << (c - 1)
            total, in_range = 0, True
            for digit in digits:
                bucket, position, sign = (int(v, 16) for v in digit.split(":"))
                w = position // stride
                in_range = in_range and bucket < half and w < int(windows) and position % stride == 0
                total += (-1 if sign else 1) * ((bucket + 1) << (c * w))
            if total != want or not in_range:
                bad += 1
                print("MISMATCH", case, total, want)
        elif case.startswith("g1_add_batch") or case.startswith("g1_window_multiples"):
            norm = lambda text: [tuple(int(v, 16) for v in pt.split(":")) for pt in text.split()]
            if norm(got) != norm(want):
                bad += 1
                print("MISMATCH", case[:80], "\n  want", want[:200], "\n  got ", got[:200])
        elif got.strip() != want:
            bad += 1
            print("MISMATCH", case, "\n  want", want, "\n  got ", got)
    print(f"{len(cases)} cases, {bad} mismatches")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
