//! a, b and c of a circuit on the device: its PCE's matrices (CSR) and the compact witness
//! cross, the witness is expanded there (`witness_expand`, `witness_scatter`) and each matrix
//! times z = (inputs, aux) is one thread a row (`pce_spmv`, kernels/groth16/spmv.cu). The host
//! then needs only the 2-bit codes and the few other values, not a, b and c.
//!
//! Today `cuzk selftest --only spmv` checks it against the host's SpMV; feeding h and the
//! witness's MSMs from these device vectors, with the PCE resident like the bases, comes with
//! the compact witness at the waist.

use blstrs::Scalar;
use cudarc::driver::{CudaSlice, DriverError};
use ff::Field;

use super::backend::{launch, words, words_mut, GpuBackend, GpuError};
use super::kernels::Kernel;
use crate::groth16::ProveError;
use crate::pce::Pce;
use crate::synth::CompactWitness;

impl GpuBackend {
    /// A·z, B·z, C·z of `pce`'s matrices with z = (`inputs`, `witness` expanded on the device),
    /// back on the host.
    pub fn pce_evaluations(
        &self,
        pce: &Pce,
        inputs: &[Scalar],
        witness: &CompactWitness,
    ) -> Result<[Vec<Scalar>; 3], ProveError> {
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
    ) -> Result<[Vec<Scalar>; 3], GpuError> {
        let _busy = self.occupy();
        let aux = self.expand(witness)?;
        let inputs = self.upload_words(words(inputs))?;
        let table = self.upload_words(words(pce.coefficients()))?;
        let rows = pce.shape().constraints;
        let rows32 = u32::try_from(rows).map_err(|_| too_large("rows"))?;
        let mut out = [Vec::new(), Vec::new(), Vec::new()];
        for (m, host) in out.iter_mut().enumerate() {
            let matrix = pce.matrix(m);
            let row_ptr = self.upload_words(matrix.row_ptr)?;
            let cols = self.upload_words(matrix.cols)?;
            let coeffs = self.upload_words(matrix.coeffs)?;
            let mut dev = self.stream.alloc_zeros::<u32>(rows.max(1) * 8)?;
            launch!(self, Kernel::PceSpmv, rows, 128;
                &row_ptr, &cols, &coeffs, &rows32, &table, &inputs, &aux, &mut dev);
            *host = vec![Scalar::ZERO; rows];
            self.stream
                .memcpy_dtoh(&dev.slice(0..rows * 8), words_mut(host))?;
        }
        Ok(out)
    }

    /// The witness's aux values on the device, 8 words each.
    fn expand(&self, witness: &CompactWitness) -> Result<CudaSlice<u32>, GpuError> {
        let (codes, index, value) = witness.parts();
        let len = witness.len();
        let len32 = u32::try_from(len).map_err(|_| too_large("aux values"))?;
        // SAFETY: u64 words as twice as many u32 words, the low half first (little-endian):
        // value i's code at bits 2(i mod 16) of u32 word i / 16.
        let codes32 =
            unsafe { std::slice::from_raw_parts(codes.as_ptr().cast::<u32>(), codes.len() * 2) };
        let codes = self.upload_words(codes32)?;
        let one = self.upload_words(words(&[Scalar::ONE]))?;
        let mut aux = self.stream.alloc_zeros::<u32>(len.max(1) * 8)?;
        launch!(self, Kernel::WitnessExpand, len, 256; &codes, &len32, &one, &mut aux);
        let count = index.len();
        let count32 = count as u32;
        let index = self.upload_words(index)?;
        let value = self.upload_words(words(value))?;
        launch!(self, Kernel::WitnessScatter, count, 256; &index, &value, &count32, &mut aux);
        Ok(aux)
    }

    /// `host` on the device (one word when empty: a kernel's argument must be a buffer).
    fn upload_words(&self, host: &[u32]) -> Result<CudaSlice<u32>, DriverError> {
        if host.is_empty() {
            return self.stream.alloc_zeros::<u32>(1);
        }
        self.stream.clone_htod(host)
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
        // SAFETY: as in `expand`.
        let codes32 =
            unsafe { std::slice::from_raw_parts(codes.as_ptr().cast::<u32>(), codes.len() * 2) };
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
}
