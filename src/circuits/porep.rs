//! PoRep C2 (seal commit phase 2): one StackedDrg circuit per partition, from the C1 output.

use base64::Engine as _;
use bellperson::groth16::{prepare_verifying_key, Parameters, VerifyingKey};
use blstrs::Scalar as Fr;
use filecoin_hashers::{Domain as _, Hasher};
use filecoin_proofs::constants::{
    DefaultPieceHasher, SectorShape2KiB, SectorShape32GiB, SectorShape512MiB, SectorShape64GiB,
    SectorShape8MiB, SECTOR_SIZE_2_KIB, SECTOR_SIZE_32_GIB, SECTOR_SIZE_512_MIB,
    SECTOR_SIZE_64_GIB, SECTOR_SIZE_8_MIB,
};
use filecoin_proofs::parameters::setup_params;
use filecoin_proofs::types::VanillaSealProof as RawVanillaSealProof;
use filecoin_proofs::{as_safe_commitment, DefaultPieceDomain, PoRepConfig};
use filecoin_proofs_api::seal::{SealCommitPhase1Output, VanillaSealProof};
use filecoin_proofs_api::{ApiFeature, RegisteredSealProof, SectorId};
use serde::Deserialize;
use storage_proofs_core::compound_proof::{self, CompoundProof};
use storage_proofs_core::merkle::MerkleTreeTrait;
use storage_proofs_core::multi_proof::MultiProof;
use storage_proofs_core::parameter_cache::CacheableParameters;
use storage_proofs_porep::stacked::{
    self, generate_replica_id, ChallengeRequirements, StackedCompound, StackedDrg,
};

use super::oracle::{bellperson_prove, Oracle, OracleCircuits, WithOracle};
use super::{
    concat_proofs, prover_id_from_miner, synthesize_checked, verified, CircuitError, CircuitId,
    PartitionCircuits, ProofJob, ProofKind, Through,
};
use crate::groth16::Proof;
use crate::pce::Synthesized;
use crate::synth::{Buffers, SynthPath};

/// The envelope Curio's client sends: the C1 JSON, base64-encoded, with the sector's identity.
#[derive(Deserialize)]
struct Envelope {
    #[serde(rename = "SectorNum")]
    sector_num: Option<u64>,
    #[serde(rename = "Phase1Out")]
    phase1_out: String,
    #[serde(rename = "SectorSize")]
    sector_size: Option<u64>,
}

/// A parsed, checked PoRep C2 job: everything needed to synthesize each partition and to check
/// the final proof.
pub struct PoRepC2 {
    registered_proof: RegisteredSealProof,
    sector_id: SectorId,
    circuit: Box<dyn PoRepCircuits>,
}

/// A PoRep's typed circuits and their verifier.
trait PoRepCircuits: OracleCircuits {
    /// verify_seal without the file lookup: these proof bytes of every partition, checked by
    /// storage-proofs' StackedCompound::verify with `vk` and verify_seal's public inputs and
    /// challenge requirements.
    fn verify(&self, proof: &[u8], vk: &VerifyingKey<blstrs::Bls12>) -> anyhow::Result<bool>;
}

impl std::fmt::Debug for PoRepC2 {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PoRepC2")
            .field("registered_proof", &self.registered_proof)
            .field("sector_id", &self.sector_id)
            .field("partitions", &self.circuit.partitions())
            .finish()
    }
}

type Compound<Tree> = StackedCompound<Tree, DefaultPieceHasher>;
type Scheme<Tree> = StackedDrg<'static, Tree, DefaultPieceHasher>;

struct Typed<Tree: 'static + MerkleTreeTrait> {
    public_inputs: stacked::PublicInputs<
        <Tree::Hasher as Hasher>::Domain,
        <DefaultPieceHasher as Hasher>::Domain,
    >,
    /// The compound public parameters (all partitions), as verify_seal sets them up.
    public_params: compound_proof::PublicParams<'static, Scheme<Tree>>,
    /// verify_seal's challenge requirements.
    minimum_challenges: usize,
    proofs: Vec<Vec<RawVanillaSealProof<Tree>>>,
}

impl PoRepC2 {
    /// Parses a C1 output (plain JSON or Curio's base64 envelope) for the given miner and sector.
    pub fn from_c1(bytes: &[u8], miner_id: u64, sector_number: u64) -> Result<Self, CircuitError> {
        let c1 = parse_c1(bytes, sector_number)?;
        Self::new(
            c1,
            prover_id_from_miner(miner_id),
            SectorId::from(sector_number),
        )
    }

    /// The job of a C1 output for this prover and sector, every value of it checked.
    pub fn new(
        c1: SealCommitPhase1Output,
        prover_id: [u8; 32],
        sector_id: SectorId,
    ) -> Result<Self, CircuitError> {
        super::refusing_panics("c1", || Self::checked(c1, prover_id, sector_id))
    }

    fn checked(
        c1: SealCommitPhase1Output,
        prover_id: [u8; 32],
        sector_id: SectorId,
    ) -> Result<Self, CircuitError> {
        let SealCommitPhase1Output {
            registered_proof,
            vanilla_proofs,
            comm_r,
            comm_d,
            replica_id,
            seed,
            ticket,
        } = c1;
        let invalid = |field: &'static str, why: String| CircuitError::invalid(field, why);
        if registered_proof.major_version() != 1 {
            return Err(invalid(
                "registered_proof",
                format!("{registered_proof:?} is not supported"),
            ));
        }
        if registered_proof.feature_enabled(ApiFeature::NonInteractivePoRep) {
            return Err(invalid(
                "registered_proof",
                format!(
                    "{registered_proof:?}: non-interactive PoRep (aggregated) is not supported yet"
                ),
            ));
        }
        for (field, value) in [("comm_r", &comm_r), ("comm_d", &comm_d), ("seed", &seed)] {
            if *value == [0u8; 32] {
                return Err(invalid(field, "is all zeros".into()));
            }
        }
        let config = registered_proof.as_v1_config();
        let replica_id: Fr = replica_id.into();
        let args = Args {
            config: &config,
            registered_proof,
            comm_r,
            comm_d,
            replica_id,
            seed,
            ticket,
            prover_id,
            sector_id,
        };
        let circuit: Box<dyn PoRepCircuits> = match vanilla_proofs {
            VanillaSealProof::StackedDrg2KiBV1(p) => {
                Box::new(typed::<SectorShape2KiB>(&args, p, SECTOR_SIZE_2_KIB)?)
            }
            VanillaSealProof::StackedDrg8MiBV1(p) => {
                Box::new(typed::<SectorShape8MiB>(&args, p, SECTOR_SIZE_8_MIB)?)
            }
            VanillaSealProof::StackedDrg512MiBV1(p) => {
                Box::new(typed::<SectorShape512MiB>(&args, p, SECTOR_SIZE_512_MIB)?)
            }
            VanillaSealProof::StackedDrg32GiBV1(p) => {
                Box::new(typed::<SectorShape32GiB>(&args, p, SECTOR_SIZE_32_GIB)?)
            }
            VanillaSealProof::StackedDrg64GiBV1(p) => {
                Box::new(typed::<SectorShape64GiB>(&args, p, SECTOR_SIZE_64_GIB)?)
            }
        };
        Ok(PoRepC2 {
            registered_proof,
            sector_id,
            circuit,
        })
    }

    pub fn registered_proof(&self) -> RegisteredSealProof {
        self.registered_proof
    }

    /// Checks proof bytes as filecoin-proofs' verify_seal does, with the verifying key `vk`.
    pub fn verify(
        &self,
        proof: &[u8],
        vk: &VerifyingKey<blstrs::Bls12>,
    ) -> Result<(), CircuitError> {
        verified(self.circuit.verify(proof, vk), "verify_seal")
    }
}

impl ProofJob for PoRepC2 {
    fn kind(&self) -> ProofKind {
        ProofKind::PorepC2
    }

    fn circuit_id(&self) -> CircuitId {
        CircuitId::porep(u64::from(self.registered_proof.sector_size()))
    }

    fn circuits(&self) -> &dyn PartitionCircuits {
        self.circuit.as_ref()
    }

    /// Joins the partition proofs as seal_commit_phase2 writes them and verifies the result as
    /// verify_seal does.
    fn finish(
        &self,
        proofs: &[Proof<blstrs::Bls12>],
        vk: &VerifyingKey<blstrs::Bls12>,
    ) -> Result<Vec<u8>, CircuitError> {
        let bytes = concat_proofs(proofs, self.partitions())?;
        self.verify(&bytes, vk)?;
        Ok(bytes)
    }
}

impl WithOracle for PoRepC2 {
    fn oracle_circuits(&self) -> &dyn OracleCircuits {
        self.circuit.as_ref()
    }
}

/// Parses either the plain C1 JSON or the envelope around it.
fn parse_c1(bytes: &[u8], sector_number: u64) -> Result<SealCommitPhase1Output, CircuitError> {
    let json_err = |e: serde_json::Error| {
        CircuitError::invalid("c1", format!("not a SealCommitPhase1Output: {e}"))
    };
    // Which of the two, read without building a Value of the C1 output (its other members
    // are skipped unread).
    #[derive(serde::Deserialize)]
    struct Probe<'a> {
        #[serde(rename = "Phase1Out", borrow, default)]
        phase1_out: Option<&'a serde_json::value::RawValue>,
    }
    let probe: Probe<'_> = serde_json::from_slice(bytes).map_err(json_err)?;
    if probe.phase1_out.is_none() {
        return serde_json::from_slice(bytes).map_err(json_err);
    }
    let env: Envelope = serde_json::from_slice(bytes)
        .map_err(|e| CircuitError::invalid("c1", format!("malformed envelope: {e}")))?;
    if let Some(n) = env.sector_num {
        if n != sector_number {
            return Err(CircuitError::invalid(
                "SectorNum",
                format!("envelope says sector {n}, request says {sector_number}"),
            ));
        }
    }
    let inner = base64::engine::general_purpose::STANDARD
        .decode(env.phase1_out.as_bytes())
        .map_err(|e| CircuitError::invalid("Phase1Out", format!("not base64: {e}")))?;
    let c1: SealCommitPhase1Output = serde_json::from_slice(&inner).map_err(json_err)?;
    if let Some(size) = env.sector_size {
        let registered = u64::from(c1.registered_proof.sector_size());
        if size != registered {
            return Err(CircuitError::invalid(
                "SectorSize",
                format!("envelope says {size} bytes, C1 is for {registered}"),
            ));
        }
    }
    Ok(c1)
}

struct Args<'a> {
    config: &'a PoRepConfig,
    registered_proof: RegisteredSealProof,
    comm_r: [u8; 32],
    comm_d: [u8; 32],
    replica_id: Fr,
    seed: [u8; 32],
    ticket: [u8; 32],
    prover_id: [u8; 32],
    sector_id: SectorId,
}

fn typed<Tree: 'static + MerkleTreeTrait>(
    args: &Args<'_>,
    proofs: Vec<Vec<RawVanillaSealProof<Tree>>>,
    shape_size: u64,
) -> Result<Typed<Tree>, CircuitError> {
    let invalid = |field: &'static str, why: String| CircuitError::invalid(field, why);
    let config = args.config;
    let setup = compound_proof::SetupParams {
        vanilla_params: setup_params(config)
            .map_err(|e| invalid("registered_proof", format!("{e:#}")))?,
        partitions: Some(usize::from(config.partitions)),
        priority: false,
    };
    let registered_size = u64::from(args.registered_proof.sector_size());
    if shape_size != registered_size {
        return Err(invalid(
            "vanilla_proofs",
            format!(
                "are for {shape_size}-byte sectors, {:?} is for {registered_size}",
                args.registered_proof
            ),
        ));
    }
    let public_params = <Compound<Tree> as CompoundProof<Scheme<Tree>, _>>::setup(&setup)
        .map_err(|e| invalid("registered_proof", format!("{e:#}")))?;

    let partitions = usize::from(config.partitions);
    if proofs.len() != partitions {
        return Err(invalid(
            "vanilla_proofs",
            format!(
                "{} partitions, {:?} has {partitions}",
                proofs.len(),
                args.registered_proof
            ),
        ));
    }
    let per_partition = public_params
        .vanilla_params
        .challenges
        .num_challenges_per_partition();
    if let Some((k, p)) = proofs
        .iter()
        .enumerate()
        .find(|(_, p)| p.len() != per_partition)
    {
        return Err(invalid(
            "vanilla_proofs",
            format!(
                "partition {k} has {} challenge proofs, expected {per_partition}",
                p.len()
            ),
        ));
    }
    // The replica id binds the C1 output to this miner and sector: a mismatch would only show as
    // a failed verification much later.
    let expected = generate_replica_id::<Tree::Hasher, _>(
        &args.prover_id,
        u64::from(args.sector_id),
        &args.ticket,
        args.comm_d,
        &config.porep_id,
    );
    if Into::<Fr>::into(expected) != args.replica_id {
        return Err(invalid(
            "replica_id",
            "does not match the given miner id, sector number and ticket".into(),
        ));
    }
    let comm_r = as_safe_commitment::<<Tree::Hasher as Hasher>::Domain, _>(&args.comm_r, "comm_r")
        .map_err(|e| invalid("comm_r", format!("{e:#}")))?;
    let comm_d = DefaultPieceDomain::try_from_bytes(&args.comm_d)
        .map_err(|e| invalid("comm_d", format!("{e:#}")))?;
    Ok(Typed {
        public_inputs: stacked::PublicInputs {
            replica_id: args.replica_id.into(),
            tau: Some(stacked::Tau { comm_d, comm_r }),
            k: None,
            seed: Some(args.seed),
        },
        public_params,
        minimum_challenges: config.minimum_challenges(),
        proofs,
    })
}

impl<Tree: 'static + MerkleTreeTrait> PartitionCircuits for Typed<Tree> {
    fn partitions(&self) -> usize {
        self.proofs.len()
    }

    fn synthesize(
        &self,
        k: usize,
        through: Through<'_>,
        buffers: &dyn Buffers,
    ) -> Result<(Synthesized, SynthPath), CircuitError> {
        // The seed only enters through the public inputs the verifier derives (the challenges):
        // a C1 output with a wrong seed gives a satisfied circuit and a proof that never verifies.
        synthesize_checked(
            || self.circuit(k),
            k,
            &self.public_inputs(k)?,
            "the seed and commitments of the C1 output",
            through,
            buffers,
        )
    }

    fn parameter_set(&self) -> String {
        <Compound<Tree> as CacheableParameters<
            stacked::StackedCircuit<Tree, DefaultPieceHasher>,
            _,
        >>::cache_identifier(&self.public_params.vanilla_params)
    }
}

impl<Tree: 'static + MerkleTreeTrait> Oracle for Typed<Tree> {
    fn bellperson_proof(
        &self,
        k: usize,
        params: &Parameters<blstrs::Bls12>,
        r: Fr,
        s: Fr,
    ) -> Result<Proof<blstrs::Bls12>, CircuitError> {
        bellperson_prove(self.circuit(k)?, params, r, s)
    }
}

impl<Tree: 'static + MerkleTreeTrait> PoRepCircuits for Typed<Tree> {
    fn verify(&self, proof: &[u8], vk: &VerifyingKey<blstrs::Bls12>) -> anyhow::Result<bool> {
        anyhow::ensure!(!proof.is_empty(), "Invalid proof bytes (empty vector)");
        let pvk = prepare_verifying_key(vk);
        let proof = MultiProof::new_from_reader(Some(self.proofs.len()), proof, &pvk)?;
        <Compound<Tree> as CompoundProof<Scheme<Tree>, _>>::verify(
            &self.public_params,
            &self.public_inputs,
            &proof,
            &ChallengeRequirements {
                minimum_challenges: self.minimum_challenges,
            },
        )
    }
}

impl<Tree: 'static + MerkleTreeTrait> Typed<Tree> {
    /// The public inputs the verifier derives for partition `k` (ONE not included).
    fn public_inputs(&self, k: usize) -> Result<Vec<Fr>, CircuitError> {
        <Compound<Tree> as CompoundProof<Scheme<Tree>, _>>::generate_public_inputs(
            &self.public_inputs,
            &self.public_params.vanilla_params,
            Some(k),
        )
        .map_err(|e| CircuitError::invalid("c1", format!("public inputs of partition {k}: {e:#}")))
    }

    fn circuit(
        &self,
        k: usize,
    ) -> Result<stacked::StackedCircuit<Tree, DefaultPieceHasher>, CircuitError> {
        <Compound<Tree> as CompoundProof<Scheme<Tree>, _>>::circuit(
            &self.public_inputs,
            (),
            &self.proofs[k],
            &self.public_params.vanilla_params,
            Some(k),
        )
        .map_err(|e| CircuitError::invalid("vanilla_proofs", format!("partition {k}: {e:#}")))
    }
}
