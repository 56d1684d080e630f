//! The quotient h on the device (kernels/ntt/, kernels/groth16/h.cu): a, b and c uploaded, each
//! taken to coefficients (inverse NTT), scaled onto the coset g·H and evaluated there (forward
//! NTT); the pointwise (a·b - c)/Z(g); back to coefficients and off the coset. Seven radix-2 NTTs,
//! twiddles and coset powers from two small tables each.

use std::time::Instant;

use blstrs::Scalar;
use cudarc::driver::{CudaSlice, DriverError};
use ff::{Field, PrimeField};

use super::backend::{launch, words, words_mut, GpuBackend, GpuError};
use super::kernels::Kernel;
use crate::groth16::domain::DomainTooLarge;
use crate::groth16::ProveError;

/// Device bytes one h call over a domain of `n` needs: a, b, c and the power tables (small),
/// with slack.
pub(super) fn h_working_bytes(n: usize) -> usize {
    3 * n * 32 + (256 << 20)
}

/// Powers of one base as the kernels read them: base^i = lo[i mod 2^lo_bits] * hi[i >> lo_bits].
struct Tables {
    lo: CudaSlice<u32>,
    hi: CudaSlice<u32>,
    lo_bits: u32,
}

impl GpuBackend {
    /// In place over `v` (2^log_n scalars): evaluations at `tables`' root's powers.
    fn ntt_in_place(
        &self,
        v: &mut CudaSlice<u32>,
        log_n: u32,
        t: &Tables,
    ) -> Result<(), DriverError> {
        let n = 1usize << log_n;
        launch!(self, Kernel::BitReverse, n, 256; &mut *v, &log_n);
        for stage in 0..log_n {
            launch!(self, Kernel::NttStage, n / 2, 256; &mut *v, &log_n, &stage, &t.lo, &t.hi, &t.lo_bits);
        }
        Ok(())
    }

    fn scale(&self, v: &mut CudaSlice<u32>, n: u32, t: &Tables) -> Result<(), DriverError> {
        launch!(self, Kernel::ScalePowers, n as usize, 256; &mut *v, &n, &t.lo, &t.hi, &t.lo_bits);
        Ok(())
    }

    /// Uploads lo/hi power tables of `base` covering exponents < 2^count_log, times `scale`.
    fn tables(&self, base: Scalar, count_log: u32, scale: Scalar) -> Result<Tables, DriverError> {
        let lo_bits = count_log.div_ceil(2);
        let lo: Vec<Scalar> = powers(base, 1 << lo_bits, Scalar::ONE);
        let step = base.pow_vartime([1u64 << lo_bits]);
        let hi: Vec<Scalar> = powers(step, 1usize << (count_log - lo_bits), scale);
        Ok(Tables {
            lo: self.stream.clone_htod(words(&lo))?,
            hi: self.stream.clone_htod(words(&hi))?,
            lo_bits,
        })
    }

    pub(super) fn h_on_device(
        &self,
        mut a: Vec<Scalar>,
        b: Vec<Scalar>,
        c: Vec<Scalar>,
    ) -> Result<Vec<Scalar>, GpuError> {
        let log_n = a.len().max(1).next_power_of_two().trailing_zeros();
        if log_n > Scalar::S {
            return Err(GpuError::Domain(DomainTooLarge { log_n }));
        }
        let n = 1usize << log_n;
        if n == 1 {
            return Ok(Vec::new());
        }
        let _busy = self.occupy();
        self.room_for_call(h_working_bytes(n), None)?;
        let clock = Instant::now();
        let bytes = (3 * a.len() * 32) as u64;
        let mut da = self.upload(&a, n * 8)?;
        let mut db = self.upload(&b, n * 8)?;
        drop(b);
        let mut dc = self.upload(&c, n * 8)?;
        drop(c);
        let clock = self.record(format!("h.upload (2^{log_n})"), clock, bytes)?;

        let omega = root_of_unity(log_n);
        let omega_inv = omega.invert().expect("non-zero");
        let g = Scalar::MULTIPLICATIVE_GENERATOR;
        let g_inv = g.invert().expect("non-zero");
        let n_inv = Scalar::from(n as u64).invert().expect("n < r");
        let fwd = self.tables(omega, log_n - 1, Scalar::ONE)?;
        let inv = self.tables(omega_inv, log_n - 1, Scalar::ONE)?;
        let coset = self.tables(g, log_n, n_inv)?;
        let uncoset = self.tables(g_inv, log_n, n_inv)?;
        let z_inv = (g.pow_vartime([n as u64]) - Scalar::ONE)
            .invert()
            .expect("g is not in the domain, so Z(g) != 0");
        let dz = self.stream.clone_htod(words(&[z_inv]))?;
        let n32 = n as u32;
        for v in [&mut da, &mut db, &mut dc] {
            self.ntt_in_place(v, log_n, &inv)?;
            self.scale(v, n32, &coset)?;
            self.ntt_in_place(v, log_n, &fwd)?;
        }
        launch!(self, Kernel::HPointwise, n, 256; &mut da, &db, &dc, &n32, &dz);
        drop((db, dc));
        self.ntt_in_place(&mut da, log_n, &inv)?;
        self.scale(&mut da, n32, &uncoset)?;
        let clock = self.record(format!("h.kernels (7 NTTs of 2^{log_n})"), clock, 0)?;

        a.clear();
        a.resize(n - 1, Scalar::ZERO);
        self.stream
            .memcpy_dtoh(&da.slice(0..(n - 1) * 8), words_mut(&mut a))?;
        self.record(
            format!("h.download (2^{log_n})"),
            clock,
            ((n - 1) * 32) as u64,
        )?;
        Ok(a)
    }

    /// The NTT of `v` (a power-of-two length) over its domain: evaluations at omega^i, or with
    /// `inverse` the coefficients back (scaled by 1/n). For `cuzk selftest`.
    pub fn ntt(&self, mut v: Vec<Scalar>, inverse: bool) -> Result<Vec<Scalar>, ProveError> {
        self.ntt_on_device(&mut v, inverse)
            .map_err(|e| e.on(&self.info))?;
        Ok(v)
    }

    fn ntt_on_device(&self, v: &mut [Scalar], inverse: bool) -> Result<(), GpuError> {
        let n = v.len();
        if !n.is_power_of_two() {
            return Err(GpuError::Shape(format!(
                "NTT of {n} points: not a power of two"
            )));
        }
        let log_n = n.trailing_zeros();
        if log_n > Scalar::S {
            return Err(GpuError::Domain(DomainTooLarge { log_n }));
        }
        if n == 1 {
            return Ok(());
        }
        let _busy = self.occupy();
        let mut d = self.upload(v, n * 8)?;
        let omega = root_of_unity(log_n);
        let base = if inverse {
            omega.invert().expect("non-zero")
        } else {
            omega
        };
        self.ntt_in_place(&mut d, log_n, &self.tables(base, log_n - 1, Scalar::ONE)?)?;
        if inverse {
            let n_inv = Scalar::from(n as u64).invert().expect("n < r");
            self.scale(&mut d, n as u32, &self.tables(Scalar::ONE, log_n, n_inv)?)?;
        }
        self.stream.memcpy_dtoh(&d, words_mut(v))?;
        self.stream.synchronize()?;
        Ok(())
    }
}

/// The primitive 2^log_n-th root of unity the CPU's domain uses.
fn root_of_unity(log_n: u32) -> Scalar {
    let mut omega = Scalar::ROOT_OF_UNITY;
    for _ in log_n..Scalar::S {
        omega = omega.square();
    }
    omega
}

/// scale * base^i for i in 0..count.
fn powers(base: Scalar, count: usize, scale: Scalar) -> Vec<Scalar> {
    let mut out = Vec::with_capacity(count);
    let mut w = scale;
    for _ in 0..count {
        out.push(w);
        w *= base;
    }
    out
}
