//! Groth16 proving, as in the paper: the quotient polynomial h by NTT, the MSMs over the SRS, and
//! randomization with r and s. Backends (CPU, GPU) implement [`Backend`]; [`prove`] is
//! the one algorithm that drives them.

pub mod cpu;
pub mod domain;
pub mod gpu;
pub mod msm;
mod prover;
pub mod select;

pub use bellperson::groth16::Proof;
pub use cpu::CpuBackend;
pub use gpu::{GpuBackend, StageTime};
pub use prover::{prove, prove_start, ProveTimings, Started};
pub use select::{select, BackendChoice, Provers};

use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar};

use msm::MsmStats;

/// The heavy arithmetic of a proof. Implementations must be exact: the proof they help make is
/// checked byte for byte against bellperson's.
pub trait Backend: Send + Sync {
    fn name(&self) -> &'static str;

    /// Coefficients of h(X) = (A(X)·B(X) - C(X)) / Z(X) from the evaluations of A, B, C over the
    /// smallest power-of-two domain holding them (shorter inputs are zero-padded): n - 1 values.
    fn h_coefficients(
        &self,
        a: Vec<Scalar>,
        b: Vec<Scalar>,
        c: Vec<Scalar>,
    ) -> Result<Vec<Scalar>, ProveError>;

    /// Σ scalars[i]·bases[i] in G1.
    fn msm_g1(
        &self,
        bases: &[G1Affine],
        scalars: &[Scalar],
    ) -> Result<(G1Projective, MsmStats), ProveError>;

    /// Σ scalars[i]·bases[i] in G2.
    fn msm_g2(
        &self,
        bases: &[G2Affine],
        scalars: &[Scalar],
    ) -> Result<(G2Projective, MsmStats), ProveError>;

    /// Device stage times (transfers, kernels) recorded since the last call; empty on the CPU.
    fn stage_times(&self) -> Vec<StageTime> {
        Vec::new()
    }

    /// Starts (or stops) keeping device stage times for [`Backend::stage_times`].
    fn record_stages(&self, _on: bool) {}

    /// How long the device has been doing this backend's work since it started; None on the
    /// CPU, which has no device to keep busy.
    fn device_busy(&self) -> Option<std::time::Duration> {
        None
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ProveError {
    #[error("parameters do not fit the circuit: {0}")]
    ShapeMismatch(String),
    #[error(transparent)]
    Domain(#[from] domain::DomainTooLarge),
    #[error("the verifying key's delta is the identity: parameters are malformed")]
    DegenerateParameters,
    #[error("device error: {0}")]
    Device(String),
}
