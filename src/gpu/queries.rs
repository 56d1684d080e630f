//! The witness's G1 queries in one device call: the assignment (inputs and aux values) crosses
//! once; L sums over the aux values as they are, and A's and B's scalars are gathered from them
//! on the device by their densities (kernels/groth16/density.cu) instead of being gathered on the
//! host and sent again.

use std::time::Instant;

use blstrs::G1Projective;
use cudarc::driver::{CudaSlice, CudaViewMut};
use group::Group;

use super::backend::{launch, GpuBackend, GpuError};
use super::kernels::Kernel;
use super::msm::{msm_working_bytes, DeviceScalars};
use crate::groth16::{Assignment, G1Query, QuerySum, WitnessSums};
use crate::srs::Srs;
use crate::synth::Density;

impl GpuBackend {
    pub(super) fn witness_msms_on_device(
        &self,
        srs: &Srs,
        w: Assignment<'_>,
    ) -> Result<WitnessSums, GpuError> {
        let (n_in, n_aux) = (w.inputs.len(), w.aux.len());
        let (a_len, b_len) = w.query_lengths();
        for (what, density, of) in [
            ("A's aux density", w.a_aux_density, n_aux),
            ("B's aux density", w.b_aux_density, n_aux),
            ("B's input density", w.b_input_density, n_in),
        ] {
            if density.len() != of {
                return Err(GpuError::Shape(format!(
                    "{what} has {} bits for {of} values",
                    density.len()
                )));
            }
        }
        for (query, len) in [
            (G1Query::L, n_aux),
            (G1Query::A, a_len),
            (G1Query::BG1, b_len),
        ] {
            if query.bases(srs).len() < len {
                return Err(GpuError::Shape(format!(
                    "{} bases for the {} query's {len} scalars",
                    query.bases(srs).len(),
                    query.name()
                )));
            }
        }
        let _busy = self.occupy();
        let start = Instant::now();
        // The assignment, one gathered query, and the largest MSM's own memory.
        let working = (n_in + n_aux + a_len.max(b_len)) * 32
            + msm_working_bytes::<G1Projective>(n_aux.max(a_len).max(b_len), true);
        self.room_for_call(working, None)?;
        let aux = self.upload(w.aux, n_aux * 8)?;
        let inputs = self.upload(w.inputs, n_in * 8)?;
        let clock = self.record(
            format!("assignment.upload ({n_aux} aux, {n_in} inputs)"),
            start,
            ((n_in + n_aux) * 32) as u64,
        )?;

        let l = self.query_msm(srs, G1Query::L, &aux, n_aux, start, clock, working)?;

        let start = Instant::now();
        let mut a = self.stream.alloc_zeros::<u32>(a_len.max(1) * 8)?;
        if n_in > 0 {
            self.stream
                .memcpy_dtod(&inputs, &mut a.slice_mut(0..n_in * 8))?;
        }
        self.gather(&aux, w.a_aux_density, &mut a.slice_mut(n_in * 8..))?;
        let a = self.query_msm(srs, G1Query::A, &a, a_len, start, start, working)?;

        let start = Instant::now();
        let mut b = self.stream.alloc_zeros::<u32>(b_len.max(1) * 8)?;
        let b_in = w.b_input_density.count();
        self.gather(&inputs, w.b_input_density, &mut b.slice_mut(0..b_in * 8))?;
        self.gather(&aux, w.b_aux_density, &mut b.slice_mut(b_in * 8..))?;
        let b_g1 = self.query_msm(srs, G1Query::BG1, &b, b_len, start, start, working)?;
        Ok(WitnessSums { l, a, b_g1 })
    }

    /// Σ scalars[..len]·bases over `query`, its bases resident; its time counts from `since`.
    #[allow(clippy::too_many_arguments)]
    fn query_msm(
        &self,
        srs: &Srs,
        query: G1Query,
        scalars: &CudaSlice<u32>,
        len: usize,
        since: Instant,
        clock: Instant,
        working: usize,
    ) -> Result<QuerySum, GpuError> {
        if len == 0 {
            return Ok(QuerySum {
                sum: G1Projective::identity(),
                stats: Default::default(),
                took: since.elapsed(),
            });
        }
        let bases = self.call_bases::<G1Projective>(
            query.bases(srs),
            len,
            Some((srs.id, query.name())),
            working,
        )?;
        let label = format!("msm_g1 {} ({len} points)", query.name());
        let scalars = DeviceScalars {
            buf: scalars,
            positions: len,
            points: len,
            rev_bits: 0,
        };
        let (sum, stats) = self.msm_kernels::<G1Projective>(&bases, scalars, &label, clock)?;
        Ok(QuerySum {
            sum,
            stats,
            took: since.elapsed(),
        })
    }

    /// dst[..density.count()] <- the scalars of `src` whose bit is set in `density`, in order.
    fn gather(
        &self,
        src: &CudaSlice<u32>,
        density: &Density,
        dst: &mut CudaViewMut<'_, u32>,
    ) -> Result<(), GpuError> {
        let len = density.len();
        if density.count() == 0 {
            return Ok(());
        }
        let len32 =
            u32::try_from(len).map_err(|_| GpuError::Shape(format!("a density of {len} bits")))?;
        let words = len.div_ceil(32);
        let bits = self.stream.clone_htod(&density_words(density)[..words])?;
        // SAFETY: density_popcount writes every word's count.
        let mut before = unsafe { self.stream.alloc::<u32>(words) }?;
        let words32 = words as u32;
        launch!(self, Kernel::DensityPopcount, words, 256; &bits, &words32, &mut before);
        self.scan(&mut before, words)?;
        launch!(self, Kernel::DensityGather, len, 256; src, &len32, &bits, &before, &mut *dst);
        Ok(())
    }
}

/// A density's bits as 32-bit words: bit i is bit i % 32 of word i / 32 (the u64 words split,
/// low half first).
fn density_words(density: &Density) -> Vec<u32> {
    density
        .words()
        .iter()
        .flat_map(|&w| [w as u32, (w >> 32) as u32])
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn density_words_put_bit_i_at_word_i_over_32() {
        let mut d = Density::new();
        for i in 0..200 {
            d.push();
            if i % 7 == 3 || i == 63 || i == 64 {
                d.set(i);
            }
        }
        let w = density_words(&d);
        for i in 0..200 {
            assert_eq!((w[i / 32] >> (i % 32)) & 1 == 1, d.get(i), "bit {i}");
        }
    }
}
