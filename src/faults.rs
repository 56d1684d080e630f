//! Fault switches of a test build (`cargo test --features faults`; the packages are built
//! without the feature, where every switch here is a no-op the compiler removes): faults the
//! service cannot otherwise be made to meet, for the tests that show it copes with them.
//! `cuzk serve` arms them from the environment.
//!
//! `CUZK_FAULT_WRONG_PROOFS=N`: the first N partition proofs the backends make come out wrong
//! (B moved by G2's generator), as a faulty device's would; the retry on the other backend
//! counts among them. Self-verification must catch each one.

use bellperson::groth16::Proof;
use blstrs::Bls12;

/// Whether this build has the fault switches.
pub const ENABLED: bool = cfg!(feature = "faults");

/// The variable whose count arms [`arm_wrong_proofs`].
pub const WRONG_PROOFS: &str = "CUZK_FAULT_WRONG_PROOFS";

#[cfg(feature = "faults")]
static WRONG_PROOFS_LEFT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// The next `count` partition proofs come out wrong (a build without the switches: none do).
pub fn arm_wrong_proofs(count: u64) {
    #[cfg(feature = "faults")]
    {
        WRONG_PROOFS_LEFT.store(count, std::sync::atomic::Ordering::SeqCst);
        tracing::warn!(count, "fault switch armed: {WRONG_PROOFS}");
    }
    #[cfg(not(feature = "faults"))]
    let _ = count;
}

/// A partition's proof as the prover made it, or made wrong while the switch is armed.
#[cfg(feature = "faults")]
pub fn prover_output(mut proof: Proof<Bls12>) -> Proof<Bls12> {
    use group::prime::PrimeCurveAffine;
    use group::{Curve, Group};
    use std::sync::atomic::Ordering;

    if WRONG_PROOFS_LEFT
        .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
        .is_ok()
    {
        proof.b = (proof.b.to_curve() + blstrs::G2Projective::generator()).to_affine();
        tracing::warn!("fault switch CUZK_FAULT_WRONG_PROOFS: this partition's proof made wrong");
    }
    proof
}

/// A partition's proof as the prover made it (a build without the fault switches).
#[cfg(not(feature = "faults"))]
#[inline(always)]
pub fn prover_output(proof: Proof<Bls12>) -> Proof<Bls12> {
    proof
}
