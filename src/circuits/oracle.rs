//! bellperson's own prover on our circuits: the byte-identical oracle that tests and
//! `cuzk bench prove --compare bellperson` hold our proofs against. Not on the proving path: the
//! engine sees a job only as a [`ProofJob`]; [`ProofRequest::prepare_with_oracle`] gives the
//! job with its oracle.
//!
//! [`ProofRequest::prepare_with_oracle`]: super::ProofRequest::prepare_with_oracle

use bellperson::groth16::Parameters;
use blstrs::{Bls12, Scalar as Fr};

use super::{check_partition, CircuitError, PartitionCircuits, ProofJob};
use crate::groth16::Proof;

/// bellperson's proof of a partition.
pub trait Oracle {
    /// bellperson's proof of partition `k` with `params`, `r` and `s`: with the same three, ours
    /// must be the same bytes.
    fn bellperson_proof(
        &self,
        k: usize,
        params: &Parameters<Bls12>,
        r: Fr,
        s: Fr,
    ) -> Result<Proof<Bls12>, CircuitError>;
}

/// A job with its oracle.
pub trait OracleJob: ProofJob + Oracle {}
impl<T: ProofJob + Oracle> OracleJob for T {}

/// A kind's typed circuits with their oracle: what each job holds (`k` is in range here).
pub(crate) trait OracleCircuits: PartitionCircuits + Oracle {}
impl<T: PartitionCircuits + Oracle> OracleCircuits for T {}

/// A job holding typed circuits with their oracle: it has the oracle too.
pub(crate) trait WithOracle {
    fn oracle_circuits(&self) -> &dyn OracleCircuits;
}

impl<T: WithOracle> Oracle for T {
    /// Partition `k` checked against the job's partitions, then the circuits' oracle.
    fn bellperson_proof(
        &self,
        k: usize,
        params: &Parameters<Bls12>,
        r: Fr,
        s: Fr,
    ) -> Result<Proof<Bls12>, CircuitError> {
        let circuits = self.oracle_circuits();
        check_partition(k, circuits.partitions())?;
        circuits.bellperson_proof(k, params, r, s)
    }
}

/// bellperson's CPU prover on one circuit.
pub(crate) fn bellperson_prove<C: bellperson::Circuit<Fr> + Send>(
    circuit: C,
    params: &Parameters<Bls12>,
    r: Fr,
    s: Fr,
) -> Result<Proof<Bls12>, CircuitError> {
    let mut proofs =
        bellperson::groth16::create_proof_batch(vec![circuit], params, vec![r], vec![s])
            .map_err(|e| CircuitError::Synthesis(format!("bellperson: {e}")))?;
    Ok(proofs.remove(0))
}
