//! Points for benchmarks made on the device (kernels/bench/points.cu): point i is
//! r[i mod |r|] + s[i / |r|] for two small tables of random points from the host, so the 2^27
//! bases of a 32 GiB shape take a fraction of a second on the device and a download, not the
//! minutes the host takes to make them one by one. Distinct pairs give distinct points unless
//! the tables are related, which random tables are not; the kernels do not care either way.

use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective};

use super::backend::{launch, words, words_mut, GpuBackend, GpuError};
use super::msm::GpuCurve;
use crate::groth16::ProveError;

/// Points one thread makes with one inversion (POINTS_PER_THREAD in kernels/bench/points.cu).
const POINTS_PER_THREAD: usize = 32;
/// Points made and downloaded at a time, which bounds the device memory a call takes.
const POINTS_PER_PASS: usize = 1 << 24;

impl GpuBackend {
    /// `n` G1 points, point i = r[i mod r.len()] + s[i / r.len()]; r's length is a power of
    /// two and r.len() · s.len() >= n.
    pub fn pair_sums_g1(
        &self,
        r: &[G1Affine],
        s: &[G1Affine],
        n: usize,
    ) -> Result<Vec<G1Affine>, ProveError> {
        self.pair_sums::<G1Projective>(r, s, n)
            .map_err(|e| e.on(self.info()))
    }

    /// [`GpuBackend::pair_sums_g1`] in G2.
    pub fn pair_sums_g2(
        &self,
        r: &[G2Affine],
        s: &[G2Affine],
        n: usize,
    ) -> Result<Vec<G2Affine>, ProveError> {
        self.pair_sums::<G2Projective>(r, s, n)
            .map_err(|e| e.on(self.info()))
    }

    fn pair_sums<C: GpuCurve>(
        &self,
        r: &[C::Affine],
        s: &[C::Affine],
        n: usize,
    ) -> Result<Vec<C::Affine>, GpuError>
    where
        C::Affine: Default + Clone,
    {
        check_tables(r.len(), s.len(), n)?;
        let mut out = vec![C::Affine::default(); n];
        if n == 0 {
            return Ok(out);
        }
        let _busy = self.occupy();
        let log_r = r.len().trailing_zeros();
        let point_words = std::mem::size_of::<C::Affine>() / 4;
        let pass_bytes =
            (r.len() + POINTS_PER_PASS + s.len().min(POINTS_PER_PASS)) * point_words * 4;
        self.room_for_call(pass_bytes, None)?;
        let dr = self.upload(r, words(r).len())?;
        for (pass, dst) in out.chunks_mut(POINTS_PER_PASS).enumerate() {
            // Pass p makes points p·POINTS_PER_PASS.., which start a row: |r| divides a pass.
            let s_first = (pass * POINTS_PER_PASS) >> log_r;
            let s_pass = &s[s_first..(s_first + dst.len().div_ceil(r.len())).min(s.len())];
            let ds = self.upload(s_pass, words(s_pass).len())?;
            // SAFETY: pair_sums writes every one of the `dst.len()` points.
            let mut dout = unsafe { self.stream.alloc::<u32>(dst.len() * point_words) }?;
            let count = dst.len() as u32;
            let threads = dst.len().div_ceil(POINTS_PER_THREAD);
            launch!(self, C::PAIR_SUMS, threads, 128; &dr, &ds, &log_r, &count, &mut dout);
            self.stream.memcpy_dtoh(&dout, words_mut(dst))?;
        }
        self.stream.synchronize()?;
        Ok(out)
    }
}

/// r's length must be a power of two no longer than a pass, whose rows (with s) cover the `n`
/// points.
fn check_tables(r: usize, s: usize, n: usize) -> Result<(), GpuError> {
    if n == 0 {
        return Ok(());
    }
    if !r.is_power_of_two() || r > POINTS_PER_PASS || r.checked_mul(s).is_none_or(|all| all < n) {
        return Err(GpuError::Shape(format!(
            "tables of {r} and {s} points for {n} pair sums (the first a power of two up to \
             {POINTS_PER_PASS}, their product at least {n})"
        )));
    }
    if n > u32::MAX as usize {
        return Err(GpuError::Shape(format!("{n} pair sums in one call")));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_must_cover_the_points() {
        assert!(check_tables(16, 4, 64).is_ok());
        assert!(check_tables(16, 4, 65).is_err());
        assert!(check_tables(12, 8, 64).is_err());
        assert!(check_tables(1 << 14, 1 << 13, 1 << 27).is_ok());
        assert!(check_tables(0, 0, 0).is_ok());
        assert!(check_tables(POINTS_PER_PASS * 2, 1, 8).is_err());
    }

    #[test]
    fn the_host_constants_match_the_kernels() {
        let src = include_str!("../../kernels/bench/points.cu");
        assert!(src.contains(&format!("#define POINTS_PER_THREAD {POINTS_PER_THREAD}\n")));
        // Every pass starts at a row of s (rows are powers of two up to a pass) and at a
        // thread's first point.
        assert!(POINTS_PER_PASS.is_power_of_two());
        assert_eq!(POINTS_PER_PASS % POINTS_PER_THREAD, 0);
    }
}
