//! Fault switches of a test build (`cargo test --features faults`; the packages are built
//! without the feature, where every switch here is a no-op the compiler removes): faults the
//! service cannot otherwise be made to meet, for the tests that show it copes with them.
//!
//! `CUZK_FAULT_WRONG_PROOFS=N`: the first N partition proofs the backends make come out wrong
//! (B moved by G2's generator), as a faulty device's would; the retry on the other backend
//! counts among them. Self-verification must catch each one.

use bellperson::groth16::Proof;
use blstrs::Bls12;

/// Whether this build has the fault switches.
pub const ENABLED: bool = cfg!(feature = "faults");

/// A partition's proof as the prover made it, or made wrong while `CUZK_FAULT_WRONG_PROOFS`
/// says so.
#[cfg(feature = "faults")]
pub fn prover_output(mut proof: Proof<Bls12>) -> Proof<Bls12> {
    use group::prime::PrimeCurveAffine;
    use group::{Curve, Group};
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::OnceLock;

    static LEFT: OnceLock<AtomicU64> = OnceLock::new();
    let left = LEFT.get_or_init(|| {
        let n = std::env::var("CUZK_FAULT_WRONG_PROOFS")
            .ok()
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(0);
        AtomicU64::new(n)
    });
    if left
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
