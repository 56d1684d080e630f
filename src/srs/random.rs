//! A parameter set's worth of random points, fast: point i of a section is R[i mod r] + S[i / r]
//! for two tables of about √n random points (distinct points, as a real set's are, so an MSM
//! over them does the work it does over real bases), each sum brought to affine coordinates
//! with one field inversion per block of points (Montgomery's trick: blstrs converts one point
//! at a time, an inversion each, which made a 32 GiB circuit's set take minutes on 16 cores).

use std::ops::Mul;

use blstrs::{Fp, Fp2, G1Affine, G1Projective, G2Affine, G2Projective};
use ff::Field;
use group::prime::PrimeCurveAffine;
use group::{Curve, Group};
use rand::SeedableRng;
use rayon::prelude::*;

/// Points brought to affine together (one inversion each block).
const BLOCK: usize = 1 << 12;

/// A projective (Jacobian: x = X/Z², y = Y/Z³) point type of blstrs and its affine type.
pub(super) trait Jacobian: Group + Curve<AffineRepr = Self::Affine> + Send + Sync {
    type Base: Field + Mul<Output = Self::Base> + Copy + Send + Sync;
    type Affine: PrimeCurveAffine + Copy + Default + Send + Sync;
    fn coordinates(&self) -> [Self::Base; 3];
    fn affine(x: Self::Base, y: Self::Base) -> Self::Affine;
    /// The sum of this point and an affine one (a mixed addition).
    fn plus(&self, other: &Self::Affine) -> Self;
}

impl Jacobian for G1Projective {
    type Base = Fp;
    type Affine = G1Affine;
    fn coordinates(&self) -> [Fp; 3] {
        [self.x(), self.y(), self.z()]
    }
    fn affine(x: Fp, y: Fp) -> G1Affine {
        G1Affine::from_raw_unchecked(x, y, false)
    }
    fn plus(&self, other: &G1Affine) -> G1Projective {
        self + other
    }
}

impl Jacobian for G2Projective {
    type Base = Fp2;
    type Affine = G2Affine;
    fn coordinates(&self) -> [Fp2; 3] {
        [self.x(), self.y(), self.z()]
    }
    fn affine(x: Fp2, y: Fp2) -> G2Affine {
        G2Affine::from_raw_unchecked(x, y, false)
    }
    fn plus(&self, other: &G2Affine) -> G2Projective {
        self + other
    }
}

/// `points` in affine coordinates into `out`, one inversion for all of them (the identity
/// stays the identity).
pub(super) fn to_affine<G: Jacobian>(points: &[G], out: &mut [G::Affine]) {
    assert_eq!(points.len(), out.len());
    // prefix[i] = Z_0 · ... · Z_(i-1), over the points that are not the identity.
    let mut prefix = Vec::with_capacity(points.len());
    let mut acc = G::Base::ONE;
    for p in points {
        prefix.push(acc);
        let z = p.coordinates()[2];
        if z != G::Base::ZERO {
            acc *= z;
        }
    }
    let mut inverse = acc.invert().expect("a product of non-zero Z");
    for (i, p) in points.iter().enumerate().rev() {
        let [x, y, z] = p.coordinates();
        if z == G::Base::ZERO {
            out[i] = G::Affine::identity();
            continue;
        }
        // 1/Z_i = (Z_0 · ... · Z_(i-1)) / (Z_0 · ... · Z_i)
        let z_inv = prefix[i] * inverse;
        inverse *= z;
        let z_inv2 = z_inv.square();
        out[i] = G::affine(x * z_inv2, y * (z_inv2 * z_inv));
    }
}

/// `n` distinct random points fixed by `seed`.
pub(super) fn tiled<G: Jacobian>(n: usize, seed: u64) -> Vec<G::Affine> {
    let r = 1usize << n.max(1).ilog2().div_ceil(2);
    let table = |len: usize, seed: u64| -> Vec<G> {
        (0..len)
            .into_par_iter()
            .map(|i| G::random(rand_chacha::ChaCha8Rng::seed_from_u64(seed ^ i as u64)))
            .collect()
    };
    let rows: Vec<G> = table(r, seed);
    let mut rows_affine = vec![G::Affine::default(); r];
    to_affine(&rows, &mut rows_affine);
    let cols = table(n.div_ceil(r), seed.rotate_left(17) ^ 1);
    let mut out = vec![G::Affine::default(); n];
    out.par_chunks_mut(BLOCK)
        .enumerate()
        .for_each(|(c, chunk)| {
            let first = c * BLOCK;
            let sums: Vec<G> = (first..first + chunk.len())
                .map(|i| cols[i / r].plus(&rows_affine[i % r]))
                .collect();
            to_affine(&sums, chunk);
        });
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_inversion_gives_each_points_own_affine_form_identity_included() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(3);
        let mut g1: Vec<G1Projective> = (0..37).map(|_| G1Projective::random(&mut rng)).collect();
        g1[0] = G1Projective::identity();
        g1[20] = G1Projective::identity();
        let mut out = vec![G1Affine::default(); g1.len()];
        to_affine(&g1, &mut out);
        assert!(g1.iter().zip(&out).all(|(p, a)| p.to_affine() == *a));
        let g2: Vec<G2Projective> = (0..9).map(|_| G2Projective::random(&mut rng)).collect();
        let mut out = vec![G2Affine::default(); g2.len()];
        to_affine(&g2, &mut out);
        assert!(g2.iter().zip(&out).all(|(p, a)| p.to_affine() == *a));
        assert!(out.iter().all(|a| bool::from(a.is_on_curve())));
    }

    /// Times `tiled` against blstrs' one inversion a point on the same sums (a measurement, not
    /// a check: `cargo test --release --lib srs::random -- --ignored --nocapture`).
    #[test]
    #[ignore]
    fn time_blocks_against_one_inversion_a_point() {
        let n = 1 << 21;
        let start = std::time::Instant::now();
        let points = tiled::<G1Projective>(n, 5);
        let blocks = start.elapsed().as_secs_f64();
        let r = 1usize << n.ilog2().div_ceil(2);
        // Sums with Z not 1, as `tiled` makes them (a point from affine has Z = 1, which
        // blstrs converts without an inversion).
        let g = G1Projective::random(rand_chacha::ChaCha8Rng::seed_from_u64(1));
        let sums: Vec<G1Projective> = points.par_iter().map(|p| g.plus(p)).collect();
        let start = std::time::Instant::now();
        let mut each = vec![G1Affine::default(); n];
        each.par_chunks_mut(BLOCK)
            .zip(sums.par_chunks(BLOCK))
            .for_each(|(out, sums)| G1Projective::batch_normalize(sums, out));
        let one_each = start.elapsed().as_secs_f64();
        let start = std::time::Instant::now();
        let mut blocks_of = vec![G1Affine::default(); n];
        blocks_of
            .par_chunks_mut(BLOCK)
            .zip(sums.par_chunks(BLOCK))
            .for_each(|(out, sums)| to_affine(sums, out));
        let in_blocks = start.elapsed().as_secs_f64();
        assert_eq!(each, blocks_of);
        eprintln!(
            "{n} G1 points (r = {r}) on {} threads: tiled {blocks:.2} s; to affine: blstrs {one_each:.2} s, in blocks {in_blocks:.2} s",
            rayon::current_num_threads()
        );
    }
}
