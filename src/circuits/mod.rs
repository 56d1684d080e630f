//! Filecoin circuits: turning what Curio holds (C1 output, vanilla proofs) into one circuit per
//! partition, and the partition proofs back into the bytes filecoin-proofs returns.

pub mod json;
pub mod oracle;
pub mod params;
pub mod porep;
pub mod post;
pub mod rehearse;
pub mod request;
pub mod samples;
pub mod snap;

use std::fmt;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;

use bellperson::groth16::VerifyingKey;
use blstrs::{Bls12, Scalar as Fr};

use crate::groth16::Proof;
use crate::pce::{CompactProof, HoldsPce, Obtained, Pce, PceError, PceKey, PceStore, Synthesized};
use crate::synth::{synthesize_into, Buffers, Heap, SynthPath, SynthesizedProof};
pub use params::ParameterFiles;
pub use request::{ProofKind, ProofRequest};

/// Bytes of one Groth16 proof (compressed A, B, C).
pub const GROTH_PROOF_BYTES: usize = 192;

#[derive(Debug, thiserror::Error)]
pub enum CircuitError {
    #[error("invalid {field}: {why}")]
    InvalidInput { field: String, why: String },
    #[error("the inputs do not satisfy the circuit: partition {partition} violates {rows} constraints (corrupted vanilla proofs?)")]
    Unsatisfied { partition: usize, rows: usize },
    #[error("partition {partition}: the vanilla proofs do not match {what} (the verifier would derive other public inputs)")]
    PublicInputMismatch {
        partition: usize,
        what: &'static str,
    },
    #[error("synthesis failed: {0}")]
    Synthesis(String),
    /// A compact synthesis whose result was refused: the caller synthesizes again on the full
    /// path, which says whether the input or the PCE is wrong (not done in place: the full
    /// path needs far more memory than was reserved for a compact witness).
    #[error("partition {partition}: the PCE's compact result was refused ({why})")]
    CompactRefused { partition: usize, why: String },
    #[error("proof failed verification: {0}")]
    Verification(String),
}

impl CircuitError {
    pub fn invalid(field: impl Into<String>, why: impl Into<String>) -> Self {
        CircuitError::InvalidInput {
            field: field.into(),
            why: why.into(),
        }
    }
}

/// Runs `check`, which reads request values with filecoin-proofs' code: some of it panics on
/// malformed values (filecoin-hashers' Poseidon on a Merkle node that is not a field element,
/// found by fuzzing). Such a panic is `field`'s error, as any other malformed value is.
pub(crate) fn refusing_panics<T>(
    field: &str,
    check: impl FnOnce() -> Result<T, CircuitError>,
) -> Result<T, CircuitError> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(check)).unwrap_or_else(|panic| {
        let why = panic
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| panic.downcast_ref::<&str>().copied())
            .unwrap_or("refused by filecoin-proofs' checks");
        Err(CircuitError::invalid(field, format!("malformed: {why}")))
    })
}

/// One proof to make: its partitions' circuits, and how their proofs become the bytes
/// filecoin-proofs returns. Made by [`ProofRequest::prepare`]; every input is checked by then.
pub trait ProofJob: Send + Sync + fmt::Debug {
    fn kind(&self) -> ProofKind;
    fn circuit_id(&self) -> CircuitId;
    /// The partitions' circuits.
    fn circuits(&self) -> &dyn PartitionCircuits;
    /// Joins the partition proofs as filecoin-proofs-api returns them for this kind and verifies
    /// the result as filecoin-proofs' verifier does (the same public inputs, storage-proofs'
    /// verification), with `vk`, the verifying key of the job's parameter set. Only a proof
    /// that verifies is returned.
    fn finish(
        &self,
        proofs: &[Proof<Bls12>],
        vk: &VerifyingKey<Bls12>,
    ) -> Result<Vec<u8>, CircuitError>;

    fn partitions(&self) -> usize {
        self.circuits().partitions()
    }

    /// The partition proofs joined as `finish` joins them, unverified: a rehearsal's proofs
    /// (random parameters) cannot verify. Every kind concatenates its partitions' proofs.
    fn join(&self, proofs: &[Proof<Bls12>]) -> Result<Vec<u8>, CircuitError> {
        concat_proofs(proofs, self.partitions())
    }

    /// Synthesizes partition `k` on the full path, checks its public inputs against those the
    /// verifier derives and that the witness satisfies every constraint.
    fn synthesize(&self, k: usize) -> Result<SynthesizedProof, CircuitError> {
        Ok(self.synthesize_with(k, Through::Full, &Heap)?.0.into_full())
    }

    /// As `synthesize`, `through` a PCE when given (the full path if the PCE's result is
    /// refused, see `synthesize_checked`), the large vectors in `buffers`; says which path
    /// made it.
    fn synthesize_with(
        &self,
        k: usize,
        through: Through<'_>,
        buffers: &dyn Buffers,
    ) -> Result<(Synthesized, SynthPath), CircuitError> {
        check_partition(k, self.partitions())?;
        self.circuits().synthesize(k, through, buffers)
    }

    /// The filecoin-proofs cache identifier of this job's Groth16 parameter set: its files are
    /// [`ParameterFiles::new`] of a parameter directory and this.
    fn parameter_set(&self) -> String {
        self.circuits().parameter_set()
    }
}

/// The size-specific half of a job: each kind implements it once, generic over the sector's
/// Merkle tree shape, and picks the shape from the registered proof. `k` is in range here.
pub trait PartitionCircuits: Send + Sync {
    fn partitions(&self) -> usize;
    fn synthesize(
        &self,
        k: usize,
        through: Through<'_>,
        buffers: &dyn Buffers,
    ) -> Result<(Synthesized, SynthPath), CircuitError>;
    /// The cache identifier of the parameter set, from the circuit's public parameters.
    fn parameter_set(&self) -> String;
}

/// How a partition is synthesized.
#[derive(Clone, Copy)]
pub enum Through<'a> {
    /// The full path: every constraint built and evaluated.
    Full,
    /// The PCE: the witness, then a, b and c by the host's SpMV.
    Pce(&'a Pce),
    /// The PCE's witness alone, compact: a, b and c are computed (and the rows checked) where
    /// the proof is made.
    Compact(&'a Arc<dyn HoldsPce>),
}

/// Synthesizes one partition circuit (made by `circuit`) and checks it: public inputs equal to
/// `expected` (ONE not included), every constraint satisfied (a compact result's rows are
/// checked by its prover). `through` a PCE when given; if its result is refused (a shape that
/// does not fit, unsatisfied rows, a panic) the full path runs: its error is the input's, its
/// success says the PCE is wrong (`SynthPath::FullAfterPce`); a refused compact result is
/// [`CircuitError::CompactRefused`] instead, for the caller to go on. `what` says what mismatched
/// inputs mean for this kind. The large vectors come from `buffers` on every path.
pub(crate) fn synthesize_checked<C: bellpepper_core::Circuit<Fr>>(
    circuit: impl Fn() -> Result<C, CircuitError>,
    k: usize,
    expected: &[Fr],
    what: &'static str,
    through: Through<'_>,
    buffers: &dyn Buffers,
) -> Result<(Synthesized, SynthPath), CircuitError> {
    let synthesis = |e| CircuitError::Synthesis(format!("partition {k}: {e}"));
    let inputs_checked = |inputs: &[Fr]| match inputs.get(1..) == Some(expected) {
        true => Ok(()),
        false => Err(CircuitError::PublicInputMismatch { partition: k, what }),
    };
    let checked = |synth: SynthesizedProof| -> Result<SynthesizedProof, CircuitError> {
        inputs_checked(&synth.inputs)?;
        match synth.unsatisfied_rows() {
            0 => Ok(synth),
            rows => Err(CircuitError::Unsatisfied { partition: k, rows }),
        }
    };
    let full = || -> Result<SynthesizedProof, CircuitError> {
        let c = circuit()?;
        checked(guarded(k, || synthesize_into(c, buffers))?.map_err(synthesis)?)
    };
    // What the PCE made, checked; or why it was not (the circuit's error, a panic).
    let result = match through {
        Through::Full => return Ok((full()?.into(), SynthPath::Full)),
        Through::Pce(pce) => {
            let c = circuit()?;
            guarded(k, || pce.synthesize_into(c, buffers)).map(|made| {
                made.map(|synth| checked(synth).map(|s| (Synthesized::from(s), SynthPath::Pce)))
            })
        }
        Through::Compact(pce) => {
            let c = circuit()?;
            guarded(k, || CompactProof::synthesize(pce.clone(), c)).map(|made| {
                made.map(|proof| {
                    inputs_checked(&proof.inputs).map(|()| (proof.into(), SynthPath::Compact))
                })
            })
        }
    };
    let refused = match result {
        Ok(Ok(Ok(done))) => return Ok(done),
        Ok(Ok(Err(e))) => e.to_string(),
        // The circuit itself failed while computing its witness: the full path would too.
        Ok(Err(PceError::Synthesis(e))) => return Err(synthesis(e)),
        Ok(Err(e)) => e.to_string(),
        Err(e) => e.to_string(),
    };
    if let Through::Compact(_) = through {
        return Err(CircuitError::CompactRefused {
            partition: k,
            why: refused,
        });
    }
    // Bad input fails the full path as well (and is reported as such); a PCE that is wrong
    // for this circuit does not.
    let synth = full()?;
    tracing::warn!(partition = k, refused = %refused, "the PCE's result was refused and the full path succeeded: the PCE is wrong for this circuit");
    Ok((synth.into(), SynthPath::FullAfterPce))
}

/// Runs a synthesis. A malformed vanilla proof (wrong path lengths, say) can trip an index in
/// the gadgets: that is bad input, not a crash.
fn guarded<T>(k: usize, run: impl FnOnce() -> T) -> Result<T, CircuitError> {
    catch_unwind(AssertUnwindSafe(run)).map_err(|_| {
        CircuitError::invalid(
            "vanilla_proofs",
            format!("partition {k} does not fit the circuit"),
        )
    })
}

/// The partition proofs, concatenated in order (how filecoin-proofs writes multi-partition
/// proofs), after checking there is one per partition.
pub(crate) fn concat_proofs(
    proofs: &[Proof<Bls12>],
    partitions: usize,
) -> Result<Vec<u8>, CircuitError> {
    if proofs.len() != partitions {
        return Err(CircuitError::invalid(
            "proofs",
            format!(
                "{} partition proofs for {partitions} partitions",
                proofs.len()
            ),
        ));
    }
    let mut bytes = Vec::with_capacity(proofs.len() * GROTH_PROOF_BYTES);
    for p in proofs {
        p.write(&mut bytes).expect("writing to a Vec cannot fail");
    }
    Ok(bytes)
}

/// A verifier's answer as a result: `Ok(false)` and errors both mean no proof leaves.
pub(crate) fn verified(answer: anyhow::Result<bool>, verifier: &str) -> Result<(), CircuitError> {
    match answer {
        Ok(true) => Ok(()),
        Ok(false) => Err(CircuitError::Verification(format!(
            "{verifier} rejected the proof"
        ))),
        Err(e) => Err(CircuitError::Verification(format!("{verifier}: {e:#}"))),
    }
}

/// The partition index `k` checked against the job's partition count.
pub(crate) fn check_partition(k: usize, partitions: usize) -> Result<(), CircuitError> {
    if k >= partitions {
        return Err(CircuitError::invalid(
            "partition",
            format!("{k} is out of range (0..{partitions})"),
        ));
    }
    Ok(())
}

/// A stable name per circuit kind and shape (e.g. `porep-2k`, `snap-32g`, `wpost-32g`,
/// `winpost-32g`): the key of the SRS and PCE caches.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
#[serde(into = "String")]
pub struct CircuitId {
    name: String,
    kind: ProofKind,
    sector_size: u64,
}

impl CircuitId {
    pub fn new(kind: ProofKind, sector_size: u64) -> Self {
        let family = match kind {
            ProofKind::PorepC2 => "porep",
            ProofKind::SnapDeals => "snap",
            ProofKind::WindowPost => "wpost",
            ProofKind::WinningPost => "winpost",
        };
        CircuitId {
            name: format!("{family}-{}", size_tag(sector_size)),
            kind,
            sector_size,
        }
    }

    pub fn porep(sector_size: u64) -> Self {
        CircuitId::new(ProofKind::PorepC2, sector_size)
    }

    pub fn as_str(&self) -> &str {
        &self.name
    }

    pub fn kind(&self) -> ProofKind {
        self.kind
    }

    pub fn sector_size(&self) -> u64 {
        self.sector_size
    }

    /// The filecoin-proofs cache identifier of this circuit's parameter set.
    pub fn parameter_set(&self) -> anyhow::Result<String> {
        params::cache_identifier(self.kind, self.sector_size)
    }

    /// How the PCE store knows this circuit: its name, and the hash its file must carry (over
    /// the parameter set's cache identifier and the circuit crates' versions).
    pub fn pce_key(&self) -> anyhow::Result<PceKey> {
        Ok(PceKey {
            name: self.name.clone(),
            hash: crate::pce::circuit_hash(&self.parameter_set()?),
        })
    }

    /// This circuit's PCE in `store`: its file if good, else recorded from the blank circuit
    /// and written (`force`: recorded and written anew in any case).
    pub fn obtain_pce(&self, store: &PceStore, force: bool) -> anyhow::Result<(Pce, Obtained)> {
        store.obtain(&self.pce_key()?, force, || {
            params::record_blank(self.kind, self.sector_size)
        })
    }
}

impl From<CircuitId> for String {
    fn from(id: CircuitId) -> String {
        id.name
    }
}

impl fmt::Display for CircuitId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name)
    }
}

/// 2048 -> "2k", 8 MiB -> "8m", 32 GiB -> "32g".
fn size_tag(bytes: u64) -> String {
    const UNITS: [(u64, &str); 3] = [(1 << 30, "g"), (1 << 20, "m"), (1 << 10, "k")];
    for (unit, tag) in UNITS {
        if bytes >= unit && bytes.is_multiple_of(unit) {
            return format!("{}{tag}", bytes / unit);
        }
    }
    format!("{bytes}b")
}

/// The prover id of a miner actor: its ID-address number as unsigned LEB128, zero-padded to 32.
pub fn prover_id_from_miner(miner_id: u64) -> [u8; 32] {
    let mut out = [0u8; 32];
    let mut n = miner_id;
    let mut i = 0;
    loop {
        let byte = (n & 0x7f) as u8;
        n >>= 7;
        if n == 0 {
            out[i] = byte;
            break;
        }
        out[i] = byte | 0x80;
        i += 1;
    }
    out
}

/// Parses a sector size such as `2KiB`, `32GiB`, `8MiB` or a plain byte count.
pub fn parse_sector_size(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let (num, mult) = [("KiB", 1u64 << 10), ("MiB", 1 << 20), ("GiB", 1 << 30)]
        .iter()
        .find_map(|(suffix, m)| t.strip_suffix(suffix).map(|n| (n, *m)))
        .unwrap_or((t, 1));
    num.trim()
        .parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(mult))
        .ok_or_else(|| format!("{s:?} is not a sector size (e.g. 2KiB, 32GiB)"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wrong_pce_is_refused_and_the_full_path_takes_over_but_bad_input_still_fails_compact_refusals_go_back(
    ) {
        use crate::synth::synthetic::SyntheticCircuit;
        let circuit = || Ok(SyntheticCircuit::new(2, 500, 3));
        let expected = SyntheticCircuit::new(2, 500, 3).inputs;
        let good = crate::pce::record(SyntheticCircuit::new(2, 500, 9)).unwrap();
        let (fast, path) =
            synthesize_checked(circuit, 0, &expected, "x", Through::Pce(&good), &Heap).unwrap();
        assert_eq!(path, SynthPath::Pce);
        let fast = fast.into_full();
        // The compact witness expands to the same; its rows are the prover's to check.
        let shared: Arc<dyn HoldsPce> = Arc::new(good);
        let (compact, path) =
            synthesize_checked(circuit, 0, &expected, "x", Through::Compact(&shared), &Heap)
                .unwrap();
        assert_eq!(path, SynthPath::Compact);
        assert_eq!(compact.into_full(), fast);
        let wrong = crate::pce::record(SyntheticCircuit::new(2, 500, 9))
            .unwrap()
            .tampered();
        let (full, path) =
            synthesize_checked(circuit, 0, &expected, "x", Through::Pce(&wrong), &Heap).unwrap();
        assert_eq!(path, SynthPath::FullAfterPce);
        assert_eq!(full.into_full(), fast);
        let other = vec![Fr::from(5u64); 2];
        let err =
            synthesize_checked(circuit, 0, &other, "x", Through::Pce(&wrong), &Heap).unwrap_err();
        assert!(
            matches!(err, CircuitError::PublicInputMismatch { .. }),
            "{err}"
        );
        // The compact path does not fall back in place: it says its result was refused, for
        // bad input and for a PCE of another shape alike.
        let stale: Arc<dyn HoldsPce> =
            Arc::new(crate::pce::record(SyntheticCircuit::new(2, 400, 9)).unwrap());
        for (inputs, pce) in [(&other, &shared), (&expected, &stale)] {
            let err = synthesize_checked(circuit, 0, inputs, "x", Through::Compact(pce), &Heap)
                .unwrap_err();
            assert!(
                matches!(err, CircuitError::CompactRefused { partition: 0, .. }),
                "{err}"
            );
        }
    }

    /// The pool's buffers are taken on every path, the full one after a refused PCE included:
    /// what the prover gets is lent memory, never a heap copy (no silent bypass). Vectors lent
    /// from plain Vecs stand in for the page-locked pool, which a test cannot always lock.
    #[test]
    fn every_synthesis_path_fills_the_buffers_it_is_given_fake_pool() {
        use crate::synth::synthetic::SyntheticCircuit;
        use crate::synth::VecLender;
        use std::sync::atomic::Ordering;
        let circuit = || Ok(SyntheticCircuit::new(2, 500, 3));
        let expected = SyntheticCircuit::new(2, 500, 3).inputs;
        let good = crate::pce::record(SyntheticCircuit::new(2, 500, 9)).unwrap();
        let wrong = crate::pce::record(SyntheticCircuit::new(2, 500, 9))
            .unwrap()
            .tampered();
        for (pce, want) in [
            (Through::Full, SynthPath::Full),
            (Through::Pce(&good), SynthPath::Pce),
            (Through::Pce(&wrong), SynthPath::FullAfterPce),
        ] {
            // The full path does not know its size: room for the whole circuit.
            let lender = VecLender {
                room: 4096,
                ..VecLender::default()
            };
            let (synth, path) =
                synthesize_checked(circuit, 0, &expected, "x", pce, &lender).unwrap();
            assert_eq!(path, want);
            let synth = synth.into_full();
            assert!(synth.all_lent(), "{path:?}: {:?} {:?}", synth.a, synth.aux);
            assert_eq!(synth.lent_bytes(), 4 * 4096 * 32, "{path:?}");
            let taken = lender.lent.load(Ordering::SeqCst);
            assert_eq!(taken - lender.returned.load(Ordering::SeqCst), 4);
            drop(synth);
            assert_eq!(
                lender.returned.load(Ordering::SeqCst),
                taken,
                "all given back"
            );
        }
    }

    #[test]
    fn prover_id_is_leb128_zero_padded() {
        assert_eq!(prover_id_from_miner(0)[..2], [0, 0]);
        assert_eq!(prover_id_from_miner(1000)[..3], [0xe8, 0x07, 0]);
        assert_eq!(prover_id_from_miner(127)[..2], [0x7f, 0]);
        assert_eq!(prover_id_from_miner(128)[..3], [0x80, 0x01, 0]);
        assert_eq!(prover_id_from_miner(u64::MAX)[9], 0x01);
    }

    #[test]
    fn sector_sizes_parse_and_name() {
        assert_eq!(parse_sector_size("2KiB"), Ok(2048));
        assert_eq!(parse_sector_size("32GiB"), Ok(32 << 30));
        assert_eq!(parse_sector_size("8388608"), Ok(8 << 20));
        assert!(parse_sector_size("2KB").is_err());
        assert_eq!(CircuitId::porep(2048).as_str(), "porep-2k");
        assert_eq!(CircuitId::porep(64 << 30).as_str(), "porep-64g");
        assert_eq!(
            CircuitId::new(ProofKind::SnapDeals, 32 << 30).as_str(),
            "snap-32g"
        );
        assert_eq!(
            CircuitId::new(ProofKind::WindowPost, 8 << 20).as_str(),
            "wpost-8m"
        );
        assert_eq!(
            CircuitId::new(ProofKind::WinningPost, 512 << 20).as_str(),
            "winpost-512m"
        );
    }
}
