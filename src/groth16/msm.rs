//! Multi-scalar multiplication on the CPU.
//!
//! Real witnesses are mostly 0 and 1: zeros are skipped, the bases of ones are summed with blst's
//! batch-affine accumulation, and only the remaining scalars go through Pippenger (blst's, with
//! Booth-encoded signed windows and XYZZ buckets), split across the rayon pool. Bases are never
//! copied: blst walks arrays of pointers into the SRS.

use blst::{
    blst_p1, blst_p1_affine, blst_p1s_add, blst_p1s_mult_pippenger,
    blst_p1s_mult_pippenger_scratch_sizeof, blst_p1s_to_affine, blst_p2, blst_p2_affine,
    blst_p2s_add, blst_p2s_mult_pippenger, blst_p2s_mult_pippenger_scratch_sizeof,
    blst_p2s_to_affine,
};
use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
use ff::Field;
use group::Group;
use rayon::prelude::*;

/// Bits in a scalar of BLS12-381's Fr.
const SCALAR_BITS: usize = 255;
/// Below this many non-trivial scalars, plain double-and-add per point is cheaper than buckets.
const PIPPENGER_MIN: usize = 32;
/// Points per batch-affine accumulation call when summing the bases of ones.
const SUM_CHUNK: usize = 1 << 14;

/// A curve group blst can run Pippenger on. Implemented for G1 and G2.
pub trait MsmCurve: Group<Scalar = Scalar> + Send + Sync {
    type Affine: Copy + Default + Send + Sync;
    #[doc(hidden)]
    type RawAffine;
    #[doc(hidden)]
    type Raw: Default;

    #[doc(hidden)]
    fn raw_affine(point: &Self::Affine) -> *const Self::RawAffine;
    #[doc(hidden)]
    fn from_raw(raw: Self::Raw) -> Self;
    #[doc(hidden)]
    fn mul_affine(point: &Self::Affine, scalar: &Scalar) -> Self;
    /// # Safety
    /// `points` holds `n` valid pointers (and one more readable entry); `scalars` points at
    /// `n * 32` contiguous bytes; `scratch` holds `scratch_bytes(n)` bytes.
    #[doc(hidden)]
    unsafe fn pippenger(
        ret: &mut Self::Raw,
        points: *const *const Self::RawAffine,
        n: usize,
        scalars: *const u8,
        scratch: *mut u64,
    );
    #[doc(hidden)]
    fn scratch_bytes(n: usize) -> usize;
    /// # Safety
    /// `points` holds `n` valid pointers.
    #[doc(hidden)]
    unsafe fn sum_affine(ret: &mut Self::Raw, points: *const *const Self::RawAffine, n: usize);
    /// `out[i]` = `points[i]` in affine form, with one field inversion for all of them (blst's
    /// batch conversion; the group crate's `batch_normalize` inverts once per point).
    fn batch_to_affine(points: &[Self], out: &mut [Self::Affine]);
}

macro_rules! msm_curve {
    ($proj:ty, $affine:ty, $raw:ty, $raw_affine:ty, $pip:ident, $scratch:ident, $add:ident, $to_affine:ident) => {
        // blstrs' point types are #[repr(transparent)] wrappers of blst's.
        const _: () = assert!(std::mem::size_of::<$proj>() == std::mem::size_of::<$raw>());
        const _: () = assert!(std::mem::size_of::<$affine>() == std::mem::size_of::<$raw_affine>());

        impl MsmCurve for $proj {
            type Affine = $affine;
            type RawAffine = $raw_affine;
            type Raw = $raw;

            fn raw_affine(point: &$affine) -> *const $raw_affine {
                point as *const $affine as *const $raw_affine
            }

            fn from_raw(raw: $raw) -> Self {
                // SAFETY: repr(transparent) over the same blst type (size checked above).
                unsafe { std::mem::transmute::<$raw, $proj>(raw) }
            }

            fn mul_affine(point: &$affine, scalar: &Scalar) -> Self {
                <$proj>::from(point) * scalar
            }

            unsafe fn pippenger(
                ret: &mut $raw,
                points: *const *const $raw_affine,
                n: usize,
                scalars: *const u8,
                scratch: *mut u64,
            ) {
                let s: [*const u8; 2] = [scalars, std::ptr::null()];
                $pip(ret, points, n, s.as_ptr(), SCALAR_BITS, scratch as *mut _);
            }

            fn scratch_bytes(n: usize) -> usize {
                // SAFETY: a pure size computation.
                unsafe { $scratch(n) }
            }

            unsafe fn sum_affine(ret: &mut $raw, points: *const *const $raw_affine, n: usize) {
                $add(ret, points, n);
            }

            fn batch_to_affine(points: &[$proj], out: &mut [$affine]) {
                assert_eq!(points.len(), out.len());
                if points.is_empty() {
                    return;
                }
                let ptrs: Vec<*const $raw> = points
                    .iter()
                    .map(|p| p as *const $proj as *const $raw)
                    .collect();
                // SAFETY: `ptrs` holds points.len() pointers to valid points and `out` as many
                // affine slots (repr(transparent) over blst's types, sizes checked above).
                unsafe {
                    $to_affine(
                        out.as_mut_ptr() as *mut $raw_affine,
                        ptrs.as_ptr(),
                        ptrs.len(),
                    )
                }
            }
        }
    };
}

msm_curve!(
    G1Projective,
    G1Affine,
    blst_p1,
    blst_p1_affine,
    blst_p1s_mult_pippenger,
    blst_p1s_mult_pippenger_scratch_sizeof,
    blst_p1s_add,
    blst_p1s_to_affine
);
msm_curve!(
    G2Projective,
    G2Affine,
    blst_p2,
    blst_p2_affine,
    blst_p2s_mult_pippenger,
    blst_p2s_mult_pippenger_scratch_sizeof,
    blst_p2s_add,
    blst_p2s_to_affine
);

/// The indices of a scalar vector, sorted into what each needs.
struct Split {
    ones: Vec<u32>,
    others: Vec<u32>,
}

fn split(scalars: &[Scalar]) -> Split {
    const CHUNK: usize = 1 << 16;
    let parts: Vec<Split> = scalars
        .par_chunks(CHUNK)
        .enumerate()
        .map(|(c, chunk)| {
            let mut part = Split {
                ones: Vec::new(),
                others: Vec::new(),
            };
            for (i, s) in chunk.iter().enumerate() {
                let index = (c * CHUNK + i) as u32;
                if *s == Scalar::ONE {
                    part.ones.push(index);
                } else if !bool::from(s.is_zero()) {
                    part.others.push(index);
                }
            }
            part
        })
        .collect();
    let mut all = Split {
        ones: Vec::with_capacity(parts.iter().map(|p| p.ones.len()).sum()),
        others: Vec::with_capacity(parts.iter().map(|p| p.others.len()).sum()),
    };
    for p in parts {
        all.ones.extend_from_slice(&p.ones);
        all.others.extend_from_slice(&p.others);
    }
    all
}

/// How many scalars of each kind an MSM saw: where its time went.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct MsmStats {
    pub points: usize,
    pub zeros: usize,
    pub ones: usize,
    pub others: usize,
}

/// Σ scalars[i] · bases[i]. `bases` must be at least as long as `scalars`.
pub fn msm<C: MsmCurve>(bases: &[C::Affine], scalars: &[Scalar]) -> (C, MsmStats) {
    assert!(bases.len() >= scalars.len(), "fewer bases than scalars");
    let Split { ones, others } = split(scalars);
    let stats = MsmStats {
        points: scalars.len(),
        zeros: scalars.len() - ones.len() - others.len(),
        ones: ones.len(),
        others: others.len(),
    };
    let (sum_ones, sum_others) = rayon::join(
        || sum_points::<C>(bases, &ones),
        || pippenger::<C>(bases, scalars, &others),
    );
    (sum_ones + sum_others, stats)
}

/// Σ bases[i] for i in `indices`.
fn sum_points<C: MsmCurve>(bases: &[C::Affine], indices: &[u32]) -> C {
    indices
        .par_chunks(SUM_CHUNK)
        .map(|chunk| {
            let ptrs: Vec<*const C::RawAffine> = chunk
                .iter()
                .map(|&i| C::raw_affine(&bases[i as usize]))
                .chain(std::iter::once(std::ptr::null()))
                .collect();
            let mut raw = C::Raw::default();
            // SAFETY: every pointer is into `bases`, which outlives the call.
            unsafe { C::sum_affine(&mut raw, ptrs.as_ptr(), chunk.len()) };
            C::from_raw(raw)
        })
        .reduce(C::identity, |a, b| a + b)
}

/// Σ scalars[i] · bases[i] for i in `indices`, by Pippenger on each of the pool's threads.
fn pippenger<C: MsmCurve>(bases: &[C::Affine], scalars: &[Scalar], indices: &[u32]) -> C {
    if indices.len() < PIPPENGER_MIN {
        return indices
            .iter()
            .map(|&i| C::mul_affine(&bases[i as usize], &scalars[i as usize]))
            .fold(C::identity(), |a, b| a + b);
    }
    let threads = rayon::current_num_threads().max(1);
    let per = indices.len().div_ceil(threads).max(PIPPENGER_MIN);
    indices
        .par_chunks(per)
        .map(|chunk| {
            if chunk.len() < PIPPENGER_MIN {
                return chunk
                    .iter()
                    .map(|&i| C::mul_affine(&bases[i as usize], &scalars[i as usize]))
                    .fold(C::identity(), |a, b| a + b);
            }
            let ptrs: Vec<*const C::RawAffine> = chunk
                .iter()
                .map(|&i| C::raw_affine(&bases[i as usize]))
                .chain(std::iter::once(std::ptr::null()))
                .collect();
            let mut bytes = Vec::with_capacity(chunk.len() * 32);
            for &i in chunk {
                bytes.extend_from_slice(&scalars[i as usize].to_bytes_le());
            }
            let mut scratch = vec![0u64; C::scratch_bytes(chunk.len()).div_ceil(8)];
            let mut raw = C::Raw::default();
            // SAFETY: `ptrs` has chunk.len() pointers into `bases` plus a trailing entry, `bytes`
            // holds chunk.len() scalars, `scratch` is sized by blst for chunk.len() points.
            unsafe {
                C::pippenger(
                    &mut raw,
                    ptrs.as_ptr(),
                    chunk.len(),
                    bytes.as_ptr(),
                    scratch.as_mut_ptr(),
                )
            };
            C::from_raw(raw)
        })
        .reduce(C::identity, |a, b| a + b)
}

#[cfg(test)]
mod tests {
    use super::*;
    use group::Curve;
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    fn naive<C: MsmCurve>(bases: &[C], scalars: &[Scalar]) -> C {
        bases
            .iter()
            .zip(scalars)
            .fold(C::identity(), |acc, (b, s)| acc + *b * s)
    }

    fn scalars_mix(rng: &mut ChaCha8Rng, n: usize) -> Vec<Scalar> {
        (0..n)
            .map(|i| match i % 5 {
                0 => Scalar::ZERO,
                1 | 2 => Scalar::ONE,
                3 => -Scalar::ONE,
                _ => Scalar::random(&mut *rng),
            })
            .collect()
    }

    #[test]
    fn batch_to_affine_matches_the_points_one_by_one_infinity_included() {
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        let mut g1: Vec<G1Projective> = (0..100).map(|_| G1Projective::random(&mut rng)).collect();
        g1[7] = G1Projective::identity();
        let mut out = vec![G1Affine::default(); g1.len()];
        G1Projective::batch_to_affine(&g1, &mut out);
        for (p, a) in g1.iter().zip(&out) {
            assert_eq!(p.to_affine(), *a);
        }
        let mut g2: Vec<G2Projective> = (0..20).map(|_| G2Projective::random(&mut rng)).collect();
        g2[0] = G2Projective::identity();
        let mut out = vec![G2Affine::default(); g2.len()];
        G2Projective::batch_to_affine(&g2, &mut out);
        for (p, a) in g2.iter().zip(&out) {
            assert_eq!(p.to_affine(), *a);
        }
        G1Projective::batch_to_affine(&[], &mut []);
    }

    #[test]
    fn g1_msm_matches_naive_sum_for_mixed_scalars() {
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        for n in [0usize, 1, 2, 31, 32, 33, 200, 1000] {
            let proj: Vec<G1Projective> = (0..n).map(|_| G1Projective::random(&mut rng)).collect();
            let mut affine = vec![G1Affine::default(); n];
            G1Projective::batch_normalize(&proj, &mut affine);
            let scalars = scalars_mix(&mut rng, n);
            let (got, stats) = msm::<G1Projective>(&affine, &scalars);
            assert_eq!(got, naive(&proj, &scalars), "n = {n}");
            assert_eq!(stats.points, n);
        }
    }

    #[test]
    fn g2_msm_matches_naive_sum_for_mixed_scalars() {
        let mut rng = ChaCha8Rng::seed_from_u64(2);
        for n in [1usize, 40, 300] {
            let proj: Vec<G2Projective> = (0..n).map(|_| G2Projective::random(&mut rng)).collect();
            let affine: Vec<G2Affine> = proj.iter().map(|p| p.to_affine()).collect();
            let scalars = scalars_mix(&mut rng, n);
            assert_eq!(
                msm::<G2Projective>(&affine, &scalars).0,
                naive(&proj, &scalars)
            );
        }
    }

    #[test]
    fn msm_with_repeated_bases_and_all_ones() {
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        let p = G1Projective::random(&mut rng);
        let affine = vec![p.to_affine(); 5000];
        let scalars = vec![Scalar::ONE; 5000];
        assert_eq!(
            msm::<G1Projective>(&affine, &scalars).0,
            p * Scalar::from(5000u64)
        );
        let zeros = vec![Scalar::ZERO; 5000];
        assert_eq!(
            msm::<G1Projective>(&affine, &zeros).0,
            G1Projective::identity()
        );
    }
}
