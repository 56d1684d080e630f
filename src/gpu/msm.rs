//! Multi-scalar multiplication on the device (kernels/msm/): scalars to signed c-bit digits
//! (zeros and ones counted), one thread per (group of points, window) filling its own buckets, a
//! pairwise reduction of the groups, then the window sums weighed by 2^(c·w) on the host.

use std::time::Instant;

use blstrs::{Fp, Fp2, G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
use cudarc::driver::CudaSlice;
use ff::Field;
use group::Group;

use super::backend::{launch, words, GpuBackend, GpuError, Words};
use super::kernels::Kernel;
use super::resident::BasesKey;
use crate::groth16::msm::MsmStats;

/// Window width, window count and point groups of one MSM.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MsmShape {
    /// Bits per signed window (at most 15: digits are i16).
    pub c: u32,
    /// ceil(256 / c): the top window takes the last carry.
    pub windows: u32,
    /// Contiguous chunks of the points, one thread per (group, window); a power of two.
    pub groups: u32,
}

impl MsmShape {
    pub fn new(n: usize, max_groups: u32) -> MsmShape {
        let c: u32 = if n < 1 << 10 {
            4
        } else if n < 1 << 16 {
            6
        } else {
            8
        };
        let wanted = (n >> c).max(1) as u64;
        let groups = (1u64 << (63 - wanted.leading_zeros())).min(max_groups as u64) as u32;
        MsmShape {
            c,
            windows: 256u32.div_ceil(c),
            groups,
        }
    }

    fn threads(&self) -> usize {
        (self.groups * self.windows) as usize
    }

    /// Words of the buckets of curve `C`: 2^(c-1) per thread.
    fn buckets_words<C: GpuCurve>(&self) -> usize {
        (1usize << (self.c - 1)) * self.threads() * C::XYZZ_WORDS
    }
}

/// Device bytes an MSM of `n` points of curve `C` needs: scalars, digits, buckets and results,
/// the bases unless they are resident, and slack.
pub(super) fn msm_working_bytes<C: GpuCurve>(n: usize, bases_resident: bool) -> usize {
    let shape = MsmShape::new(n, C::MAX_GROUPS);
    let bases = if bases_resident {
        0
    } else {
        n * std::mem::size_of::<C::Affine>()
    };
    n * 32
        + shape.windows as usize * n * 2
        + (shape.buckets_words::<C>() + shape.threads() * C::XYZZ_WORDS) * 4
        + bases
        + (64 << 20)
}

impl GpuBackend {
    /// Σ scalars·bases on the device; with `key`, `bases` is that whole query and stays
    /// resident.
    pub(super) fn msm_on_device<C: GpuCurve>(
        &self,
        bases: &[C::Affine],
        key: Option<BasesKey>,
        scalars: &[Scalar],
    ) -> Result<(C, MsmStats), GpuError> {
        let n = scalars.len();
        if n == 0 {
            return Ok((C::identity(), MsmStats::default()));
        }
        if bases.len() < n {
            return Err(GpuError::Shape(format!(
                "{} bases for {n} scalars",
                bases.len()
            )));
        }
        let n32 = u32::try_from(n).map_err(|_| GpuError::Shape(format!("{n} points")))?;
        let shape = MsmShape::new(n, C::MAX_GROUPS);
        let label = format!("msm_{} ({n} points)", C::NAME);
        let _busy = self.occupy();

        let resident = match key {
            Some(key) => self.resident::<C>(key, bases)?,
            None => None,
        };
        self.room_for_call(msm_working_bytes::<C>(n, resident.is_some()), key)?;
        let clock = Instant::now();
        let transient;
        let db: &CudaSlice<u32> = match &resident {
            Some(buf) => buf,
            None => {
                transient = self.stream.clone_htod(words(&bases[..n]))?;
                &transient
            }
        };
        let ds = self.stream.clone_htod(words(scalars))?;
        let bases_bytes = if resident.is_some() {
            0
        } else {
            n * std::mem::size_of::<C::Affine>()
        };
        let bytes = (bases_bytes + n * 32) as u64;
        let clock = self.record(format!("{label}.upload"), clock, bytes)?;

        let threads = shape.threads();
        // SAFETY: msm_digits writes every one of the windows * n digits.
        let mut digits = unsafe { self.stream.alloc::<i16>(shape.windows as usize * n) }?;
        let mut counts = self.stream.alloc_zeros::<u32>(2)?;
        launch!(self, Kernel::MsmDigits, n, 256; &ds, &n32, &shape.c, &shape.windows, &mut digits, &mut counts);
        drop(ds);
        // SAFETY: the bucket kernel initializes every bucket and writes every result.
        let mut buckets = unsafe { self.stream.alloc::<u32>(shape.buckets_words::<C>()) }?;
        let mut results = unsafe { self.stream.alloc::<u32>(threads * C::XYZZ_WORDS) }?;
        launch!(self, C::BUCKETS, threads, 128; db, &digits, &n32, &shape.c, &shape.windows, &shape.groups, &mut buckets, &mut results);
        drop((buckets, digits));
        let mut half = shape.groups / 2;
        while half > 0 {
            launch!(self, C::REDUCE, (half * shape.windows) as usize, 128; &mut results, &shape.windows, &half);
            half /= 2;
        }
        let clock = self.record(format!("{label}.kernels"), clock, 0)?;

        let sums = self
            .stream
            .clone_dtoh(&results.slice(0..shape.windows as usize * C::XYZZ_WORDS))?;
        let counts = self.stream.clone_dtoh(&counts)?;
        self.record(format!("{label}.download"), clock, (sums.len() * 4) as u64)?;

        let mut acc = C::identity();
        for w in sums.chunks(C::XYZZ_WORDS).rev() {
            for _ in 0..shape.c {
                acc = acc.double();
            }
            acc += C::from_xyzz(w);
        }
        let (zeros, ones) = (counts[0] as usize, counts[1] as usize);
        Ok((
            acc,
            MsmStats {
                points: n,
                zeros,
                ones,
                others: n - zeros - ones,
            },
        ))
    }
}

/// G1 and G2 as the kernels see them.
pub(super) trait GpuCurve: Group<Scalar = Scalar> + std::ops::AddAssign<Self> {
    type Affine: Words;
    const NAME: &'static str;
    /// u32 words of one XYZZ point.
    const XYZZ_WORDS: usize;
    /// Bucket memory is groups * windows * 2^(c-1) points: keep it near 1.6 GB.
    const MAX_GROUPS: u32;
    const BUCKETS: Kernel;
    const REDUCE: Kernel;
    /// (X, Y, ZZ, ZZZ) in Montgomery words -> Jacobian (X·ZZ·ZZZ², Y·ZZ³·ZZZ², ZZ·ZZZ).
    fn from_xyzz(words: &[u32]) -> Self;
}

fn fp(words: &[u32]) -> Fp {
    let mut l = [0u64; 6];
    for (i, limb) in l.iter_mut().enumerate() {
        *limb = words[2 * i] as u64 | (words[2 * i + 1] as u64) << 32;
    }
    Fp::from_raw_unchecked(l)
}

fn fp2(words: &[u32]) -> Fp2 {
    Fp2::new(fp(&words[..12]), fp(&words[12..24]))
}

impl GpuCurve for G1Projective {
    type Affine = G1Affine;
    const NAME: &'static str = "g1";
    const XYZZ_WORDS: usize = 48;
    const MAX_GROUPS: u32 = 2048;
    const BUCKETS: Kernel = Kernel::MsmBucketsG1;
    const REDUCE: Kernel = Kernel::MsmReduceG1;
    fn from_xyzz(w: &[u32]) -> Self {
        let (x, y, zz, zzz) = (
            fp(&w[0..12]),
            fp(&w[12..24]),
            fp(&w[24..36]),
            fp(&w[36..48]),
        );
        if bool::from(zz.is_zero()) {
            return G1Projective::identity();
        }
        let zzz2 = zzz.square();
        G1Projective::from_raw_unchecked(x * zz * zzz2, y * zz.square() * zz * zzz2, zz * zzz)
    }
}

impl GpuCurve for G2Projective {
    type Affine = G2Affine;
    const NAME: &'static str = "g2";
    const XYZZ_WORDS: usize = 96;
    const MAX_GROUPS: u32 = 1024;
    const BUCKETS: Kernel = Kernel::MsmBucketsG2;
    const REDUCE: Kernel = Kernel::MsmReduceG2;
    fn from_xyzz(w: &[u32]) -> Self {
        let (x, y, zz, zzz) = (
            fp2(&w[0..24]),
            fp2(&w[24..48]),
            fp2(&w[48..72]),
            fp2(&w[72..96]),
        );
        if bool::from(zz.is_zero()) {
            return G2Projective::identity();
        }
        let zzz2 = zzz.square();
        G2Projective::from_raw_unchecked(x * zz * zzz2, y * zz.square() * zz * zzz2, zz * zzz)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn msm_shapes_cover_every_size() {
        for (n, max) in [
            (1, 2048),
            (2, 2048),
            (17, 2048),
            (1000, 2048),
            (1 << 22, 2048),
            (1 << 22, 1024),
            (3 << 20, 2048),
        ] {
            let s = MsmShape::new(n, max);
            assert!(s.c >= 2 && s.c <= 15);
            assert!(
                s.windows * s.c >= 256,
                "windows cover 255 bits and the last carry"
            );
            assert!(s.groups.is_power_of_two() && s.groups <= max);
            assert!(s.groups as usize <= n.max(1));
        }
        assert_eq!(
            MsmShape::new(1 << 22, 2048),
            MsmShape {
                c: 8,
                windows: 32,
                groups: 2048
            }
        );
    }

    #[test]
    fn xyzz_to_jacobian_matches_the_affine_point() {
        // A point in XYZZ with ZZ = λ², ZZZ = λ³ for a random λ must come back as the point.
        use group::Curve;
        let mut rng = rand::thread_rng();
        let p = G1Projective::random(&mut rng).to_affine();
        let l = Fp::random(&mut rng);
        let (zz, zzz) = (l.square(), l.square() * l);
        let coords = [p.x() * zz, p.y() * zzz, zz, zzz];
        let mut w = Vec::new();
        for c in coords {
            // SAFETY: Fp is repr(transparent) over blst_fp, six u64 Montgomery limbs.
            let limbs: [u64; 6] = unsafe { std::mem::transmute(c) };
            for limb in limbs {
                w.push(limb as u32);
                w.push((limb >> 32) as u32);
            }
        }
        assert_eq!(G1Projective::from_xyzz(&w).to_affine(), p);
        let zero = vec![0u32; 48];
        assert!(bool::from(G1Projective::from_xyzz(&zero).is_identity()));
    }

    #[test]
    fn working_memory_counts_the_bases_only_when_they_are_not_resident() {
        let n = 1 << 22;
        let resident = msm_working_bytes::<G1Projective>(n, true);
        let uploaded = msm_working_bytes::<G1Projective>(n, false);
        assert_eq!(uploaded - resident, n * 96);
        // Buckets dominate the fixed part: about 1.6 GB at the largest shapes.
        let buckets = MsmShape::new(n, 2048).buckets_words::<G1Projective>() * 4;
        assert!(buckets > 1 << 30 && buckets < 2 << 30, "{buckets}");
    }
}
