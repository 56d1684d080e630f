//! The witness's G1 queries in one device call: the assignment (inputs and aux values) crosses
//! once; L sums over the aux values as they are, and A's and B's scalars are gathered from them
//! on the device by their densities (kernels/groth16/density.cu) instead of being gathered on the
//! host and sent again.

use std::time::Instant;

use blstrs::{G1Projective, Scalar};
use cudarc::driver::{CudaEvent, CudaSlice, CudaViewMut};
use group::Group;

use super::backend::{launch, GpuBackend, GpuError};
use super::kernels::Kernel;
use super::msm::{msm_working_bytes, DeviceScalars};
use super::ntt::h_working_bytes;
use crate::groth16::{Assignment, G1Query, G1Sums, QuerySum, WitnessSums};
use crate::srs::Srs;
use crate::synth::Density;

impl GpuBackend {
    /// L, A and B in G1 over `w`: the assignment uploaded, then [`GpuBackend::witness_kernels`].
    pub(super) fn witness_msms_on_device(
        &self,
        srs: &Srs,
        w: Assignment<'_>,
    ) -> Result<WitnessSums, GpuError> {
        check_assignment(srs, &w)?;
        let _busy = self.occupy();
        let start = Instant::now();
        self.room_for_call(witness_working_bytes(&w), None)?;
        let mut on_device = self.assignment_buffers(&w)?;
        self.copy.join(&self.stream)?;
        let uploaded = self.upload_assignment(&w, &mut on_device)?;
        self.stream.wait(&uploaded)?;
        let clock = self.record(assignment_label(&w), start, assignment_bytes(&w))?;
        self.witness_kernels(srs, &w, &on_device, start, clock)
    }

    /// Every G1 sum of a proof: h from a, b and c into its MSM over H, and the witness's
    /// queries. The assignment's upload runs on the copy stream while h is transformed, so
    /// only the first of a, b, c waits for its transfer.
    pub(super) fn g1_on_device(
        &self,
        srs: &Srs,
        abc: [Vec<Scalar>; 3],
        w: Assignment<'_>,
    ) -> Result<G1Sums, GpuError> {
        check_assignment(srs, &w)?;
        let log_n = Self::h_domain(abc[0].len())?;
        let n = 1usize << log_n;
        if n == 1 || srs.h.len() < n - 1 {
            // No h to speak of, or bases that do not fit it: the two parts apart say which.
            let start = Instant::now();
            let [a, b, c] = abc;
            let (h, _, h_took) = self.h_msm_on_device(&srs.h, Some((srs.id, "h")), a, b, c)?;
            let msm_h_took = start.elapsed().saturating_sub(h_took);
            let witness = self.witness_msms_on_device(srs, w)?;
            return Ok(G1Sums {
                h,
                h_took,
                msm_h_took,
                witness,
            });
        }
        let _busy = self.occupy();
        let start = Instant::now();
        let working = h_working_bytes(n)
            + msm_working_bytes::<G1Projective>(n - 1, true)
            + witness_working_bytes(&w);
        let h_bases = self.call_bases::<G1Projective>(
            &srs.h,
            n - 1,
            Some((srs.id, G1Query::H.name())),
            working,
        )?;
        let mut on_device = self.assignment_buffers(&w)?;
        let (h, uploaded, staged) =
            self.h_kernels(abc, log_n, || self.upload_assignment(&w, &mut on_device))?;
        let (h_took, h_sum, msm_h_took) = staged.free_beside(|| {
            self.stream.synchronize()?;
            let h_took = start.elapsed();
            let clock = Instant::now();
            let (h_sum, _) = self.msm_of_h(&h_bases, &h, log_n)?;
            Ok::<_, GpuError>((h_took, h_sum, clock.elapsed()))
        })?;
        drop((h, h_bases));
        self.stream.wait(&uploaded)?;
        let start = Instant::now();
        let witness = self.witness_kernels(srs, &w, &on_device, start, start)?;
        Ok(G1Sums {
            h: h_sum,
            h_took,
            msm_h_took,
            witness,
        })
    }

    /// Device buffers for the assignment's aux values and inputs.
    fn assignment_buffers(&self, w: &Assignment<'_>) -> Result<OnDevice, GpuError> {
        let (n_in, n_aux) = (w.inputs.len(), w.aux.len());
        Ok(OnDevice {
            aux: self.device_for(n_aux * 8, n_aux * 8)?,
            inputs: self.device_for(n_in * 8, n_in * 8)?,
        })
    }

    /// The assignment into `to` on the copy stream (which already waits for `to`'s
    /// allocation); the event fires when it is there.
    fn upload_assignment(
        &self,
        w: &Assignment<'_>,
        to: &mut OnDevice,
    ) -> Result<CudaEvent, GpuError> {
        self.upload_on_copy(w.aux, &mut to.aux)?;
        self.upload_on_copy(w.inputs, &mut to.inputs)?;
        Ok(self.copy.record_event(None)?)
    }

    /// L, A and B in G1 over the assignment on the device: L over the aux values as they are,
    /// A's and B's scalars gathered by density. The caller holds the device and has made room.
    fn witness_kernels(
        &self,
        srs: &Srs,
        w: &Assignment<'_>,
        on_device: &OnDevice,
        start: Instant,
        clock: Instant,
    ) -> Result<WitnessSums, GpuError> {
        let (n_in, n_aux) = (w.inputs.len(), w.aux.len());
        let (a_len, b_len) = w.query_lengths();
        let OnDevice { aux, inputs } = on_device;
        let l = self.query_msm(srs, G1Query::L, aux, n_aux, start, clock)?;

        let start = Instant::now();
        let mut a = self.stream.alloc_zeros::<u32>(a_len.max(1) * 8)?;
        if n_in > 0 {
            self.stream
                .memcpy_dtod(inputs, &mut a.slice_mut(0..n_in * 8))?;
        }
        self.gather(aux, w.a_aux_density, &mut a.slice_mut(n_in * 8..))?;
        let a = self.query_msm(srs, G1Query::A, &a, a_len, start, start)?;

        let start = Instant::now();
        let mut b = self.stream.alloc_zeros::<u32>(b_len.max(1) * 8)?;
        let b_in = w.b_input_density.count();
        self.gather(inputs, w.b_input_density, &mut b.slice_mut(0..b_in * 8))?;
        self.gather(aux, w.b_aux_density, &mut b.slice_mut(b_in * 8..))?;
        let b_g1 = self.query_msm(srs, G1Query::BG1, &b, b_len, start, start)?;
        Ok(WitnessSums { l, a, b_g1 })
    }

    /// Σ scalars[..len]·bases over `query`, its bases resident; its time counts from `since`.
    fn query_msm(
        &self,
        srs: &Srs,
        query: G1Query,
        scalars: &CudaSlice<u32>,
        len: usize,
        since: Instant,
        clock: Instant,
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
            // Room for the witness's working memory was made with the call's.
            0,
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

/// The assignment's aux values and inputs on the device.
struct OnDevice {
    aux: CudaSlice<u32>,
    inputs: CudaSlice<u32>,
}

/// Densities as long as what they select from, and bases for every query's scalars.
fn check_assignment(srs: &Srs, w: &Assignment<'_>) -> Result<(), GpuError> {
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
    Ok(())
}

/// Device bytes of the witness's queries: the assignment, one gathered query at a time, and
/// the largest MSM's own memory.
fn witness_working_bytes(w: &Assignment<'_>) -> usize {
    let (a_len, b_len) = w.query_lengths();
    let (n_in, n_aux) = (w.inputs.len(), w.aux.len());
    (n_in + n_aux + a_len.max(b_len)) * 32
        + msm_working_bytes::<G1Projective>(n_aux.max(a_len).max(b_len), true)
}

fn assignment_bytes(w: &Assignment<'_>) -> u64 {
    ((w.inputs.len() + w.aux.len()) * 32) as u64
}

fn assignment_label(w: &Assignment<'_>) -> String {
    format!(
        "assignment.upload ({} aux, {} inputs)",
        w.aux.len(),
        w.inputs.len()
    )
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
