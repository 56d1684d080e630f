//! a, b and c of a circuit on the device: its PCE's matrices (CSR) resident like the bases, the
//! compact witness crossing and expanded there (`witness_expand`, `witness_scatter`), and each
//! matrix times z = (inputs, aux) one thread a row (`pce_spmv`, kernels/groth16/spmv.cu); the
//! rows are then checked (`pce_unsatisfied`: a·b = c). The host keeps only the 2-bit codes and
//! the few other values, not a, b and c: [`GpuBackend::g1_on_device`] takes either.

use std::ops::Range;
use std::sync::Arc;

use blstrs::Scalar;
use cudarc::driver::{CudaSlice, DriverError};
use ff::Field;

use super::backend::{launch, words, words_mut, GpuBackend, GpuError, Lane};
use super::kernels::Kernel;
use super::resident::Owner;
use crate::groth16::ProveError;
use crate::pce::Pce;
use crate::synth::CompactWitness;

/// Where a PCE's arrays lie in its one device buffer, in 32-bit words: the coefficient table
/// (8 words a value), then row_ptr, cols and coeffs of A, B and C.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct PceLayout {
    pub table: Range<usize>,
    /// [row_ptr, cols, coeffs] of each matrix.
    pub matrices: [[Range<usize>; 3]; 3],
    pub words: usize,
}

impl PceLayout {
    pub(super) fn of(pce: &Pce) -> PceLayout {
        let mut at = 0;
        let mut next = |len: usize| {
            at += len;
            at - len..at
        };
        let table = next(pce.coefficients().len() * 8);
        let matrices = [0, 1, 2].map(|m| {
            let matrix = pce.matrix(m);
            [
                next(matrix.row_ptr.len()),
                next(matrix.cols.len()),
                next(matrix.coeffs.len()),
            ]
        });
        PceLayout {
            table,
            matrices,
            words: at,
        }
    }

    pub(super) fn bytes(&self) -> usize {
        self.words * 4
    }
}

/// The compact witness's 2-bit codes as the kernels read them: u64 words as twice as many u32
/// words, the low half first (little-endian), value i's code at bits 2(i mod 16) of word i / 16.
fn codes_u32(codes: &[u64]) -> &[u32] {
    // SAFETY: a u64 is two aligned u32s; every bit pattern is a u32.
    unsafe { std::slice::from_raw_parts(codes.as_ptr().cast::<u32>(), codes.len() * 2) }
}

/// A PCE on the device: resident, or uploaded for one call.
pub(super) struct DevicePce {
    pub buf: Arc<CudaSlice<u32>>,
    pub layout: PceLayout,
    pub rows: u32,
}

/// The compact witness's parts on the device, and ONE, for `witness_expand`/`witness_scatter`.
pub(super) struct CompactParts {
    codes: CudaSlice<u32>,
    index: CudaSlice<u32>,
    value: CudaSlice<u32>,
    one: CudaSlice<u32>,
}

impl GpuBackend {
    /// Whether this device computes a, b and c of `pce`'s circuits: its matrices take at most
    /// half the device's memory (the rest is the call's working memory and resident bases).
    pub fn evaluates_pce(&self, pce: &Pce) -> bool {
        let shape = pce.shape();
        let fits_u32 = u32::try_from(shape.constraints).is_ok() && u32::try_from(shape.aux).is_ok();
        fits_u32 && (PceLayout::of(pce).bytes() as u64) * 2 <= self.info.memory_bytes
    }

    /// `pce` on the device: resident under its id where it fits (and bases are kept),
    /// otherwise uploaded for this call.
    pub(super) fn pce_on_device(&self, pce: &Pce) -> Result<DevicePce, GpuError> {
        let layout = PceLayout::of(pce);
        let rows = u32::try_from(pce.shape().constraints).map_err(|_| too_large("rows"))?;
        let upload = || self.upload_pce(pce, &layout);
        let key = (Owner::Pce(pce.id()), "pce");
        let buf = match self.resident_words(key, pce.shape().constraints, layout.bytes(), upload)? {
            Some(buf) => buf,
            None => Arc::new(self.upload_pce(pce, &layout)?),
        };
        Ok(DevicePce { buf, layout, rows })
    }

    fn upload_pce(&self, pce: &Pce, layout: &PceLayout) -> Result<CudaSlice<u32>, DriverError> {
        // SAFETY: every word is written by the uploads below (the layout tiles the buffer).
        let mut dev = unsafe { self.stream.alloc::<u32>(layout.words.max(1)) }?;
        let mut part = |range: &Range<usize>, host: &[u32]| {
            self.stage(&self.stream, host, &mut dev.slice_mut(range.clone()))
        };
        part(&layout.table, words(pce.coefficients()))?;
        for (m, [r, c, k]) in layout.matrices.iter().enumerate() {
            let matrix = pce.matrix(m);
            part(r, matrix.row_ptr)?;
            part(c, matrix.cols)?;
            part(k, matrix.coeffs)?;
        }
        Ok(dev)
    }

    /// Device buffers for `witness`'s parts (allocated on the compute stream).
    pub(super) fn compact_parts(
        &self,
        witness: &CompactWitness,
    ) -> Result<CompactParts, DriverError> {
        let (codes, index, value) = witness.parts();
        let buf = |words: usize| self.device_for(words, words.max(1));
        Ok(CompactParts {
            codes: buf(codes.len() * 2)?,
            index: buf(index.len())?,
            value: buf(value.len() * 8)?,
            one: buf(8)?,
        })
    }

    /// `witness` expanded into `aux` (8 words a value) on `lane`'s stream: its parts copied
    /// into `parts`, ONE written where coded one, zero elsewhere, then the other values.
    pub(super) fn expand_on(
        &self,
        lane: Lane<'_>,
        witness: &CompactWitness,
        parts: &mut CompactParts,
        aux: &mut CudaSlice<u32>,
    ) -> Result<(), GpuError> {
        let (codes, index, value) = witness.parts();
        let len32 = u32::try_from(witness.len()).map_err(|_| too_large("aux values"))?;
        self.stage(lane.stream, codes_u32(codes), &mut parts.codes)?;
        self.stage(lane.stream, index, &mut parts.index)?;
        self.stage(lane.stream, words(value), &mut parts.value)?;
        self.stage(lane.stream, words(&[Scalar::ONE]), &mut parts.one)?;
        launch!(lane, Kernel::WitnessExpand, witness.len(), 256;
            &parts.codes, &len32, &parts.one, &mut *aux);
        let count32 = index.len() as u32;
        launch!(lane, Kernel::WitnessScatter, index.len(), 256;
            &parts.index, &parts.value, &count32, &mut *aux);
        Ok(())
    }

    /// a, b, c = A·z, B·z, C·z of `pce` into `out` (their first rows; the rest stays as it
    /// is), then the rows where a·b ≠ c added to `unsatisfied`, on `lane`'s stream.
    pub(super) fn evaluate_on(
        &self,
        lane: Lane<'_>,
        pce: &DevicePce,
        inputs: &CudaSlice<u32>,
        aux: &CudaSlice<u32>,
        out: &mut [CudaSlice<u32>; 3],
        unsatisfied: &mut CudaSlice<u32>,
    ) -> Result<(), GpuError> {
        let (buf, layout, rows) = (&pce.buf, &pce.layout, pce.rows);
        let table = buf.slice(layout.table.clone());
        for (m, v) in out.iter_mut().enumerate() {
            let [r, c, k] = &layout.matrices[m];
            let (row_ptr, cols, coeffs) = (
                buf.slice(r.clone()),
                buf.slice(c.clone()),
                buf.slice(k.clone()),
            );
            launch!(lane, Kernel::PceSpmv, rows as usize, 128;
                &row_ptr, &cols, &coeffs, &rows, &table, inputs, aux, v);
        }
        let [a, b, c] = out;
        launch!(lane, Kernel::PceUnsatisfied, rows as usize, 128; &*a, &*b, &*c, &rows, unsatisfied);
        Ok(())
    }

    /// A·z, B·z, C·z of `pce`'s matrices with z = (`inputs`, `witness` expanded on the device),
    /// back on the host, and the rows where a·b ≠ c (`cuzk selftest --only spmv`).
    pub fn pce_evaluations(
        &self,
        pce: &Pce,
        inputs: &[Scalar],
        witness: &CompactWitness,
    ) -> Result<([Vec<Scalar>; 3], u32), ProveError> {
        let shape = pce.shape();
        if (inputs.len(), witness.len()) != (shape.inputs, shape.aux) {
            return Err(ProveError::ShapeMismatch(format!(
                "{} inputs and {} aux values for a PCE of {} and {}",
                inputs.len(),
                witness.len(),
                shape.inputs,
                shape.aux
            )));
        }
        self.evaluations_on_device(pce, inputs, witness)
            .map_err(|e| e.on(self.info()))
    }

    fn evaluations_on_device(
        &self,
        pce: &Pce,
        inputs: &[Scalar],
        witness: &CompactWitness,
    ) -> Result<([Vec<Scalar>; 3], u32), GpuError> {
        let _busy = self.occupy();
        let device = self.pce_on_device(pce)?;
        let rows = pce.shape().constraints;
        let lane = self.lane();
        let mut parts = self.compact_parts(witness)?;
        let mut aux = self.stream.alloc_zeros::<u32>(witness.len().max(1) * 8)?;
        self.expand_on(lane, witness, &mut parts, &mut aux)?;
        let inputs = self.upload(inputs, inputs.len().max(1) * 8)?;
        let mut out = Vec::with_capacity(3);
        for _ in 0..3 {
            out.push(self.stream.alloc_zeros::<u32>(rows.max(1) * 8)?);
        }
        let mut out: [CudaSlice<u32>; 3] = out.try_into().expect("three vectors");
        let mut unsatisfied = self.stream.alloc_zeros::<u32>(1)?;
        self.evaluate_on(lane, &device, &inputs, &aux, &mut out, &mut unsatisfied)?;
        let mut host = [Vec::new(), Vec::new(), Vec::new()];
        for (h, dev) in host.iter_mut().zip(&out) {
            *h = vec![Scalar::ZERO; rows];
            self.stream
                .memcpy_dtoh(&dev.slice(0..rows * 8), words_mut(h))?;
        }
        let mut count = [0u32];
        self.stream.memcpy_dtoh(&unsatisfied, &mut count)?;
        self.stream.synchronize()?;
        Ok((host, count[0]))
    }
}

fn too_large(what: &str) -> GpuError {
    GpuError::Shape(format!(
        "2^32 {what} or more: too many for the device's SpMV"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::synth::synthetic::SyntheticCircuit;

    /// The kernel reads the codes as 32-bit words, 16 values a word: the layout the host's
    /// 64-bit words have in memory.
    #[test]
    fn the_codes_read_as_u32_words_are_the_values() {
        let values: Vec<Scalar> = (0..100u64)
            .map(|i| match i % 7 {
                0 | 3 => Scalar::ZERO,
                1 | 4 | 5 => Scalar::ONE,
                _ => Scalar::from(i + 2),
            })
            .collect();
        let mut w = CompactWitness::with_capacity(values.len());
        values.iter().for_each(|v| w.push(*v));
        let (codes, _, _) = w.parts();
        let codes32 = codes_u32(codes);
        for (i, v) in values.iter().enumerate() {
            let code = (codes32[i / 16] >> (2 * (i % 16))) & 3;
            let want = if *v == Scalar::ZERO {
                0
            } else if *v == Scalar::ONE {
                1
            } else {
                2
            };
            assert_eq!(code, want, "value {i}");
        }
    }

    #[test]
    fn the_layout_tiles_one_buffer_with_every_array_of_the_pce() {
        let pce = crate::pce::record(SyntheticCircuit::new(3, 100, 1)).unwrap();
        let l = PceLayout::of(&pce);
        let mut ranges = vec![l.table.clone()];
        l.matrices
            .iter()
            .for_each(|m| ranges.extend(m.iter().cloned()));
        assert_eq!(ranges[0].start, 0);
        for pair in ranges.windows(2) {
            assert_eq!(pair[0].end, pair[1].start);
        }
        assert_eq!(ranges.last().unwrap().end, l.words);
        assert_eq!(l.table.len(), pce.coefficients().len() * 8);
        for m in 0..3 {
            let matrix = pce.matrix(m);
            let [r, c, k] = &l.matrices[m];
            assert_eq!(
                (r.len(), c.len(), k.len()),
                (matrix.row_ptr.len(), matrix.cols.len(), matrix.coeffs.len())
            );
        }
    }
}
