//! The CPU backend: rayon for the NTTs, blst's Pippenger for the MSMs.

use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
use ff::{Field, PrimeField};
use rayon::prelude::*;

use super::domain::{scale_by_powers, Domain};
use super::msm::{msm, MsmStats};
use super::{Backend, ProveError};
use crate::synth::Scalars;

/// Proves on the host's cores.
#[derive(Clone, Copy, Debug, Default)]
pub struct CpuBackend;

impl Backend for CpuBackend {
    fn name(&self) -> &'static str {
        "cpu"
    }

    fn h_coefficients(
        &self,
        mut a: Scalars,
        mut b: Scalars,
        mut c: Scalars,
    ) -> Result<Scalars, ProveError> {
        let domain = Domain::for_len(a.len())?;
        let n = domain.size();
        let g = Scalar::MULTIPLICATIVE_GENERATOR;
        let n_inv = domain.size_inverse();
        // Evaluations over the domain -> coefficients -> evaluations over the coset g·H, where
        // Z(X) = X^n - 1 is the non-zero constant g^n - 1.
        for v in [&mut a, &mut b, &mut c] {
            v.resize(n, Scalar::ZERO);
            domain.ifft_unscaled(v);
            scale_by_powers(v, g, n_inv);
            domain.fft(v);
        }
        let z_inv = (g.pow_vartime([n as u64]) - Scalar::ONE)
            .invert()
            .expect("g is not in the domain, so Z(g) != 0");
        a.par_iter_mut()
            .zip(b.par_iter())
            .zip(c.par_iter())
            .for_each(|((a, b), c)| *a = (*a * b - c) * z_inv);
        drop((b, c));
        domain.ifft_unscaled(&mut a);
        let g_inv = g.invert().expect("generator is non-zero");
        scale_by_powers(&mut a, g_inv, n_inv);
        // deg h <= n - 2: the SRS has n - 1 powers.
        a.truncate(n - 1);
        Ok(a)
    }

    fn msm_g1(
        &self,
        bases: &[G1Affine],
        scalars: &[Scalar],
    ) -> Result<(G1Projective, MsmStats), ProveError> {
        Ok(msm::<G1Projective>(bases, scalars))
    }

    fn msm_g2(
        &self,
        bases: &[G2Affine],
        scalars: &[Scalar],
    ) -> Result<(G2Projective, MsmStats), ProveError> {
        Ok(msm::<G2Projective>(bases, scalars))
    }
}
