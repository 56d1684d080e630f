//! Proofs of Spacetime: one WindowPoSt partition, or a WinningPoSt, from the per-sector vanilla
//! proofs (bincode `FallbackPoStSectorProof`) Curio holds, the randomness and the prover id.

use std::panic::{catch_unwind, AssertUnwindSafe};

use bellperson::groth16::{prepare_verifying_key, verify_proof, Parameters, VerifyingKey};
use blstrs::{Bls12, Scalar as Fr};
use filecoin_hashers::Hasher;
use filecoin_proofs::parameters::{window_post_setup_params, winning_post_setup_params};
use filecoin_proofs::{as_safe_commitment, with_shape, FallbackPoStSectorProof, PoStConfig};
use filecoin_proofs_api::{PoStType, RegisteredPoStProof};
use storage_proofs_core::api_version::ApiVersion;
use storage_proofs_core::compound_proof::CompoundProof;
use storage_proofs_core::merkle::MerkleTreeTrait;
use storage_proofs_core::parameter_cache::CacheableParameters;
use storage_proofs_core::proof::ProofScheme;
use storage_proofs_post::fallback::{
    self, FallbackPoSt, FallbackPoStCircuit, FallbackPoStCompound, PublicSector,
};

use super::oracle::{bellperson_prove, Oracle, OracleCircuits, WithOracle};
use super::{
    concat_proofs, synthesize_checked, verified, CircuitError, CircuitId, PartitionCircuits,
    ProofJob, ProofKind, Through,
};
use crate::groth16::Proof;
use crate::pce::Synthesized;
use crate::synth::{Buffers, SynthPath};

/// The actors' limit on partitions in one deadline: a WindowPoSt partition index beyond it is
/// not a request anyone can make.
pub const MAX_WINDOW_PARTITIONS: usize = 3000;

/// A parsed, checked PoSt job: a single partition (one circuit).
pub struct PoStJob {
    kind: ProofKind,
    registered_proof: RegisteredPoStProof,
    /// How many sectors it proves.
    sectors: usize,
    circuit: Box<dyn PoStCircuit>,
}

impl std::fmt::Debug for PoStJob {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PoStJob")
            .field("kind", &self.kind)
            .field("registered_proof", &self.registered_proof)
            .field("sectors", &self.sectors)
            .finish()
    }
}

/// The size-specific half of a job: one partition circuit, and its own verifier.
trait PoStCircuit: OracleCircuits {
    /// Whether the partition's proof verifies with `vk` against the public inputs
    /// verify_window_post (verify_winning_post) derives for it.
    fn verify(&self, proof: &Proof<Bls12>, vk: &VerifyingKey<Bls12>) -> anyhow::Result<bool>;
}

struct Typed<Tree: 'static + MerkleTreeTrait> {
    public_params: fallback::PublicParams,
    /// What the circuit is built from (the sectors given, partition 0 of them).
    circuit_inputs: fallback::PublicInputs<<Tree::Hasher as Hasher>::Domain>,
    partition_proof: fallback::Proof<Tree::Proof>,
    /// The public inputs the verifier derives for this partition (ONE not included).
    expected: Vec<Fr>,
}

struct Request<'a> {
    registered_proof: RegisteredPoStProof,
    config: PoStConfig,
    randomness: [u8; 32],
    prover_id: [u8; 32],
    vanilla_proofs: &'a [&'a [u8]],
}

impl PoStJob {
    /// One WindowPoSt partition, as generate_single_window_post_with_vanilla proves it.
    pub fn window(
        registered_proof: RegisteredPoStProof,
        randomness: [u8; 32],
        prover_id: [u8; 32],
        partition_index: usize,
        vanilla_proofs: &[&[u8]],
    ) -> Result<Self, CircuitError> {
        let req = Request::new(
            PoStType::Window,
            registered_proof,
            randomness,
            prover_id,
            vanilla_proofs,
        )?;
        if partition_index >= MAX_WINDOW_PARTITIONS {
            return Err(CircuitError::invalid(
                "partition_index",
                format!("{partition_index} is beyond the {MAX_WINDOW_PARTITIONS} partitions a deadline can hold"),
            ));
        }
        let (sectors, circuit) = super::refusing_panics("vanilla_proofs", || {
            with_shape!(
                u64::from(registered_proof.sector_size()),
                typed_window,
                &req,
                partition_index,
            )
        })?;
        Ok(req.into_job(ProofKind::WindowPost, sectors, circuit))
    }

    /// A WinningPoSt, as generate_winning_post_with_vanilla proves it.
    pub fn winning(
        registered_proof: RegisteredPoStProof,
        randomness: [u8; 32],
        prover_id: [u8; 32],
        vanilla_proofs: &[&[u8]],
    ) -> Result<Self, CircuitError> {
        let req = Request::new(
            PoStType::Winning,
            registered_proof,
            randomness,
            prover_id,
            vanilla_proofs,
        )?;
        let (sectors, circuit) = super::refusing_panics("vanilla_proofs", || {
            with_shape!(
                u64::from(registered_proof.sector_size()),
                typed_winning,
                &req,
            )
        })?;
        Ok(req.into_job(ProofKind::WinningPost, sectors, circuit))
    }

    pub fn registered_proof(&self) -> RegisteredPoStProof {
        self.registered_proof
    }
}

impl ProofJob for PoStJob {
    fn kind(&self) -> ProofKind {
        self.kind
    }

    fn circuit_id(&self) -> CircuitId {
        CircuitId::new(self.kind, u64::from(self.registered_proof.sector_size()))
    }

    fn circuits(&self) -> &dyn PartitionCircuits {
        self.circuit.as_ref()
    }

    /// The partition proof: for WindowPoSt generate_single_window_post_with_vanilla's bytes,
    /// for WinningPoSt generate_winning_post_with_vanilla's. Checked with `vk` against the
    /// public inputs the kind's filecoin-proofs verifier derives (verify_window_post for this
    /// partition, verify_winning_post with each sector listed once per challenged sector).
    fn finish(
        &self,
        proofs: &[Proof<Bls12>],
        vk: &VerifyingKey<Bls12>,
    ) -> Result<Vec<u8>, CircuitError> {
        let bytes = concat_proofs(proofs, 1)?;
        let verifier = match self.kind {
            ProofKind::WinningPost => "verify_winning_post",
            _ => "the WindowPoSt partition verifier",
        };
        verified(self.circuit.verify(&proofs[0], vk), verifier)?;
        Ok(bytes)
    }
}

impl WithOracle for PoStJob {
    fn oracle_circuits(&self) -> &dyn OracleCircuits {
        self.circuit.as_ref()
    }
}

impl<'a> Request<'a> {
    fn new(
        typ: PoStType,
        registered_proof: RegisteredPoStProof,
        randomness: [u8; 32],
        prover_id: [u8; 32],
        vanilla_proofs: &'a [&'a [u8]],
    ) -> Result<Self, CircuitError> {
        if registered_proof.typ() != typ {
            return Err(CircuitError::invalid(
                "registered_proof",
                format!("{registered_proof:?} is not a {typ:?}PoSt proof"),
            ));
        }
        if vanilla_proofs.is_empty() {
            return Err(CircuitError::invalid("vanilla_proofs", "is empty"));
        }
        Ok(Request {
            registered_proof,
            config: registered_proof.as_v1_config(),
            randomness,
            prover_id,
            vanilla_proofs,
        })
    }

    fn into_job(self, kind: ProofKind, sectors: usize, circuit: Box<dyn PoStCircuit>) -> PoStJob {
        PoStJob {
            kind,
            registered_proof: self.registered_proof,
            sectors,
            circuit,
        }
    }

    /// The vanilla proofs decoded, each checked to hold one sector with the configured number
    /// of challenges.
    fn sector_proofs<Tree: 'static + MerkleTreeTrait>(
        &self,
        challenges_per_sector: usize,
    ) -> Result<Vec<FallbackPoStSectorProof<Tree>>, CircuitError> {
        let mut out = Vec::with_capacity(self.vanilla_proofs.len());
        for (i, bytes) in self.vanilla_proofs.iter().enumerate() {
            let field = format!("vanilla_proofs[{i}]");
            let proof: FallbackPoStSectorProof<Tree> =
                bincode::deserialize(bytes).map_err(|e| {
                    CircuitError::invalid(
                        field.clone(),
                        format!(
                            "not a bincode FallbackPoStSectorProof for {:?}: {e}",
                            self.registered_proof
                        ),
                    )
                })?;
            let sectors = &proof.vanilla_proof.sectors;
            if sectors.len() != 1 {
                return Err(CircuitError::invalid(
                    field,
                    format!("holds {} sector proofs, expected 1", sectors.len()),
                ));
            }
            let challenges = sectors[0].inclusion_proofs.len();
            if challenges != challenges_per_sector {
                return Err(CircuitError::invalid(
                    field,
                    format!("{challenges} challenge proofs, expected {challenges_per_sector}"),
                ));
            }
            out.push(proof);
        }
        Ok(out)
    }

    fn domains<D: filecoin_hashers::Domain>(&self) -> Result<(D, D), CircuitError> {
        let randomness = as_safe_commitment(&self.randomness, "randomness").map_err(|_| {
            CircuitError::invalid(
                "randomness",
                "not a BLS12-381 field element (top bits set?)",
            )
        })?;
        let prover_id = as_safe_commitment(&self.prover_id, "prover_id")
            .map_err(|_| CircuitError::invalid("prover_id", "not a BLS12-381 field element"))?;
        Ok((randomness, prover_id))
    }
}

type Compound<Tree> = FallbackPoStCompound<Tree>;

fn public_sectors<Tree: MerkleTreeTrait>(
    proofs: &[FallbackPoStSectorProof<Tree>],
) -> Vec<PublicSector<<Tree::Hasher as Hasher>::Domain>> {
    proofs
        .iter()
        .map(|p| PublicSector {
            id: p.sector_id,
            comm_r: p.comm_r,
        })
        .collect()
}

/// Runs a filecoin-proofs vanilla check that may panic on malformed input.
fn vanilla_check<T>(
    check: impl FnOnce() -> anyhow::Result<T>,
    what: &str,
) -> Result<T, CircuitError> {
    match catch_unwind(AssertUnwindSafe(check)) {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(e)) => Err(CircuitError::invalid(
            "vanilla_proofs",
            format!("do not verify for {what} ({e:#})"),
        )),
        Err(_) => Err(CircuitError::invalid(
            "vanilla_proofs",
            "are malformed (the vanilla check failed)",
        )),
    }
}

/// How many sectors are proved, and the circuit.
type Built = (usize, Box<dyn PoStCircuit>);

fn typed_window<Tree: 'static + MerkleTreeTrait>(
    req: &Request<'_>,
    partition_index: usize,
) -> Result<Built, CircuitError> {
    let config = &req.config;
    let public_params = FallbackPoSt::<Tree>::setup(&window_post_setup_params(config))
        .map_err(|e| CircuitError::invalid("registered_proof", format!("{e:#}")))?;
    let per_partition = public_params.sector_count;
    if req.vanilla_proofs.len() > per_partition {
        return Err(CircuitError::invalid(
            "vanilla_proofs",
            format!(
                "{} sectors; a {:?} partition holds at most {per_partition}",
                req.vanilla_proofs.len(),
                req.registered_proof
            ),
        ));
    }
    let proofs = req.sector_proofs::<Tree>(config.challenge_count)?;
    // The chain's verifier (verify_window_post) takes the sectors in ascending order of their
    // numbers and splits them into partitions in that order: a partition proved in any other
    // order verifies here and fails there.
    for (i, pair) in proofs.windows(2).enumerate() {
        let (before, after) = (u64::from(pair[0].sector_id), u64::from(pair[1].sector_id));
        if after <= before {
            return Err(CircuitError::invalid(
                format!("vanilla_proofs[{}]", i + 1),
                format!("sector {after} follows sector {before}: a partition's sectors go in ascending order of their numbers, each once, as the chain's verifier takes them"),
            ));
        }
    }
    let (randomness, prover_id) = req.domains()?;
    let sectors = public_sectors(&proofs);
    let circuit_inputs = fallback::PublicInputs {
        randomness,
        prover_id,
        sectors: sectors.clone(),
        k: Some(partition_index),
    };
    let partition_proof = vanilla_check(
        || {
            filecoin_proofs::single_partition_vanilla_proofs(
                config,
                &public_params,
                &circuit_inputs,
                &proofs,
            )
        },
        "this proof type, randomness and partition index",
    )?;
    // The verifier sees all sectors of the deadline and takes partition k's chunk of them.
    // Only before API v1.2 do the challenges depend on where the chunk starts: there the earlier
    // chunks are filled with copies, which the derivation skips.
    let (all_sectors, k) = match config.api_version {
        ApiVersion::V1_2_0 => (sectors, 0),
        _ => {
            let mut all = vec![sectors[0].clone(); partition_index * per_partition];
            all.extend(sectors);
            (all, partition_index)
        }
    };
    let verifier_inputs = fallback::PublicInputs {
        randomness,
        prover_id,
        sectors: all_sectors,
        k: None,
    };
    let expected =
        <Compound<Tree> as CompoundProof<FallbackPoSt<'_, Tree>, _>>::generate_public_inputs(
            &verifier_inputs,
            &public_params,
            Some(k),
        )
        .map_err(|e| CircuitError::invalid("vanilla_proofs", format!("public inputs: {e:#}")))?;
    Ok((
        proofs.len(),
        Box::new(Typed::<Tree> {
            public_params,
            circuit_inputs: fallback::PublicInputs {
                k: None,
                ..circuit_inputs
            },
            partition_proof,
            expected,
        }),
    ))
}

fn typed_winning<Tree: 'static + MerkleTreeTrait>(
    req: &Request<'_>,
) -> Result<Built, CircuitError> {
    let config = &req.config;
    if req.vanilla_proofs.len() != config.sector_count {
        return Err(CircuitError::invalid(
            "vanilla_proofs",
            format!(
                "{} sectors; a WinningPoSt proves {}",
                req.vanilla_proofs.len(),
                config.sector_count
            ),
        ));
    }
    let setup = winning_post_setup_params(config)
        .map_err(|e| CircuitError::invalid("registered_proof", format!("{e:#}")))?;
    let public_params = FallbackPoSt::<Tree>::setup(&setup)
        .map_err(|e| CircuitError::invalid("registered_proof", format!("{e:#}")))?;
    let proofs = req.sector_proofs::<Tree>(config.challenge_count)?;
    // The chain's verifier (verify_window_post) takes the sectors in ascending order of their
    // numbers and splits them into partitions in that order: a partition proved in any other
    // order verifies here and fails there.
    for (i, pair) in proofs.windows(2).enumerate() {
        let (before, after) = (u64::from(pair[0].sector_id), u64::from(pair[1].sector_id));
        if after <= before {
            return Err(CircuitError::invalid(
                format!("vanilla_proofs[{}]", i + 1),
                format!("sector {after} follows sector {before}: a partition's sectors go in ascending order of their numbers, each once, as the chain's verifier takes them"),
            ));
        }
    }
    let (randomness, prover_id) = req.domains()?;
    let sectors = public_sectors(&proofs);
    let circuit_inputs = fallback::PublicInputs {
        randomness,
        prover_id,
        sectors: sectors.clone(),
        k: None,
    };
    let mut partitioned = vanilla_check(
        || {
            filecoin_proofs::partition_vanilla_proofs(
                config,
                &public_params,
                &circuit_inputs,
                1,
                &proofs,
            )
        },
        "this proof type and randomness",
    )?;
    // verify_winning_post lists the sector once per challenge "sector" of the circuit.
    let verifier_inputs = fallback::PublicInputs {
        randomness,
        prover_id,
        sectors: sectors
            .iter()
            .cycle()
            .take(public_params.sector_count * sectors.len())
            .cloned()
            .collect(),
        k: None,
    };
    let expected =
        <Compound<Tree> as CompoundProof<FallbackPoSt<'_, Tree>, _>>::generate_public_inputs(
            &verifier_inputs,
            &public_params,
            Some(0),
        )
        .map_err(|e| CircuitError::invalid("vanilla_proofs", format!("public inputs: {e:#}")))?;
    Ok((
        proofs.len(),
        Box::new(Typed::<Tree> {
            public_params,
            circuit_inputs,
            partition_proof: partitioned.remove(0),
            expected,
        }),
    ))
}

impl<Tree: 'static + MerkleTreeTrait> Typed<Tree> {
    fn circuit(&self) -> Result<FallbackPoStCircuit<Tree>, CircuitError> {
        <Compound<Tree> as CompoundProof<FallbackPoSt<'_, Tree>, _>>::circuit(
            &self.circuit_inputs,
            Default::default(),
            &self.partition_proof,
            &self.public_params,
            Some(0),
        )
        .map_err(|e| CircuitError::invalid("vanilla_proofs", format!("{e:#}")))
    }
}

impl<Tree: 'static + MerkleTreeTrait> PartitionCircuits for Typed<Tree> {
    fn partitions(&self) -> usize {
        1
    }

    fn synthesize(
        &self,
        _k: usize,
        through: Through<'_>,
        buffers: &dyn Buffers,
    ) -> Result<(Synthesized, SynthPath), CircuitError> {
        synthesize_checked(
            || self.circuit(),
            0,
            &self.expected,
            "the randomness, prover id and partition index",
            through,
            buffers,
        )
    }

    fn parameter_set(&self) -> String {
        <Compound<Tree> as CacheableParameters<FallbackPoStCircuit<Tree>, _>>::cache_identifier(
            &self.public_params,
        )
    }
}

impl<Tree: 'static + MerkleTreeTrait> Oracle for Typed<Tree> {
    fn bellperson_proof(
        &self,
        _k: usize,
        params: &Parameters<Bls12>,
        r: Fr,
        s: Fr,
    ) -> Result<Proof<Bls12>, CircuitError> {
        bellperson_prove(self.circuit()?, params, r, s)
    }
}

impl<Tree: 'static + MerkleTreeTrait> PoStCircuit for Typed<Tree> {
    fn verify(&self, proof: &Proof<Bls12>, vk: &VerifyingKey<Bls12>) -> anyhow::Result<bool> {
        let pvk = prepare_verifying_key(vk);
        verify_proof(&pvk, proof, &self.expected).map_err(|e| anyhow::anyhow!("{e}"))
    }
}
