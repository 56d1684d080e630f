//! SnapDeals (empty sector update): one EmptySectorUpdate circuit per partition, from the
//! per-partition vanilla proofs Curio holds and the three commitments.

use std::panic::{catch_unwind, AssertUnwindSafe};

use bellperson::groth16::{prepare_verifying_key, Parameters, VerifyingKey};
use blstrs::{Bls12, Scalar as Fr};
use filecoin_proofs::types::SectorUpdateConfig;
use filecoin_proofs::with_shape;
use filecoin_proofs_api::RegisteredUpdateProof;
use storage_proofs_core::compound_proof::{self, CompoundProof};
use storage_proofs_core::merkle::MerkleTreeTrait;
use storage_proofs_core::multi_proof::MultiProof;
use storage_proofs_core::parameter_cache::CacheableParameters;
use storage_proofs_core::proof::ProofScheme;
use storage_proofs_update::constants::{TreeDDomain, TreeRDomain, TreeRHasher};
use storage_proofs_update::{
    EmptySectorUpdate, EmptySectorUpdateCircuit, EmptySectorUpdateCompound, PartitionProof,
    PublicInputs, PublicParams, SetupParams,
};

use super::oracle::{bellperson_prove, Oracle, OracleCircuits, WithOracle};
use super::{
    concat_proofs, synthesize_checked, verified, CircuitError, CircuitId, PartitionCircuits,
    ProofJob, ProofKind, Through,
};
use crate::groth16::Proof;
use crate::pce::Synthesized;
use crate::synth::{Buffers, SynthPath};

/// A parsed, checked SnapDeals job.
pub struct SnapDeals {
    registered_proof: RegisteredUpdateProof,
    circuit: Box<dyn SnapCircuits>,
}

/// A SnapDeals job's typed circuits and their verifier.
trait SnapCircuits: OracleCircuits {
    /// verify_empty_sector_update_proof without the file lookup: these proof bytes of every
    /// partition, checked by storage-proofs' EmptySectorUpdateCompound::verify with `vk` and
    /// that function's public inputs.
    fn verify(&self, proof: &[u8], vk: &VerifyingKey<Bls12>) -> anyhow::Result<bool>;
}

impl std::fmt::Debug for SnapDeals {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SnapDeals")
            .field("registered_proof", &self.registered_proof)
            .field("partitions", &self.circuit.partitions())
            .finish()
    }
}

struct Typed<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>> {
    sector_bytes: u64,
    public_params: PublicParams,
    public_inputs: PublicInputs,
    proofs: Vec<PartitionProof<Tree>>,
}

impl SnapDeals {
    /// Checks the commitments and every partition's vanilla proof (bincode `PartitionProof`, as
    /// filecoin-proofs-api's generate_partition_proofs returns them).
    pub fn new(
        registered_proof: RegisteredUpdateProof,
        vanilla_proofs: &[&[u8]],
        comm_r_old: [u8; 32],
        comm_r_new: [u8; 32],
        comm_d_new: [u8; 32],
    ) -> Result<Self, CircuitError> {
        let commitments = Commitments {
            r_old: domain("comm_r_old", &comm_r_old)?,
            r_new: domain("comm_r_new", &comm_r_new)?,
            d_new: domain("comm_d_new", &comm_d_new)?,
        };
        let config = SectorUpdateConfig::from_porep_config(&registered_proof.as_v1_config());
        let circuit = super::refusing_panics("vanilla_proofs", || {
            with_shape!(
                u64::from(config.sector_size),
                typed,
                registered_proof,
                &config,
                vanilla_proofs,
                &commitments,
            )
        })?;
        Ok(SnapDeals {
            registered_proof,
            circuit,
        })
    }

    pub fn registered_proof(&self) -> RegisteredUpdateProof {
        self.registered_proof
    }
}

impl ProofJob for SnapDeals {
    fn kind(&self) -> ProofKind {
        ProofKind::SnapDeals
    }

    fn circuit_id(&self) -> CircuitId {
        CircuitId::new(
            ProofKind::SnapDeals,
            u64::from(self.registered_proof.sector_size()),
        )
    }

    fn circuits(&self) -> &dyn PartitionCircuits {
        self.circuit.as_ref()
    }

    /// The partition proofs joined as generate_empty_sector_update_proof_with_vanilla returns
    /// them, checked as verify_empty_sector_update_proof does.
    fn finish(
        &self,
        proofs: &[Proof<Bls12>],
        vk: &VerifyingKey<Bls12>,
    ) -> Result<Vec<u8>, CircuitError> {
        let bytes = concat_proofs(proofs, self.partitions())?;
        let answer = self.circuit.verify(&bytes, vk);
        verified(answer, "verify_empty_sector_update_proof")?;
        Ok(bytes)
    }
}

impl WithOracle for SnapDeals {
    fn oracle_circuits(&self) -> &dyn OracleCircuits {
        self.circuit.as_ref()
    }
}

struct Commitments {
    r_old: TreeRDomain,
    r_new: TreeRDomain,
    d_new: TreeDDomain,
}

/// A commitment as a domain element; it must be a canonical BLS12-381 field element.
fn domain<D: filecoin_hashers::Domain>(
    field: &'static str,
    bytes: &[u8; 32],
) -> Result<D, CircuitError> {
    filecoin_proofs::as_safe_commitment(bytes, field)
        .map_err(|_| CircuitError::invalid(field, "not a BLS12-381 field element"))
}

fn typed<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
    registered_proof: RegisteredUpdateProof,
    config: &SectorUpdateConfig,
    vanilla_proofs: &[&[u8]],
    commitments: &Commitments,
) -> Result<Box<dyn SnapCircuits>, CircuitError> {
    let partitions = usize::from(config.update_partitions);
    let setup = compound_proof::SetupParams {
        vanilla_params: SetupParams {
            sector_bytes: u64::from(config.sector_size),
        },
        partitions: Some(partitions),
        priority: false,
    };
    let public_params = <EmptySectorUpdateCompound<Tree> as CompoundProof<
        EmptySectorUpdate<Tree>,
        EmptySectorUpdateCircuit<Tree>,
    >>::setup(&setup)
    .map_err(|e| CircuitError::invalid("registered_proof", format!("{e:#}")))?
    .vanilla_params;
    if vanilla_proofs.len() != partitions {
        return Err(CircuitError::invalid(
            "vanilla_proofs",
            format!(
                "{} partition proofs, {registered_proof:?} has {partitions} partitions",
                vanilla_proofs.len()
            ),
        ));
    }
    let public_inputs = PublicInputs {
        k: 0,
        comm_r_old: commitments.r_old,
        comm_d_new: commitments.d_new,
        comm_r_new: commitments.r_new,
        h: config.h,
    };
    let mut proofs = Vec::with_capacity(partitions);
    for (k, bytes) in vanilla_proofs.iter().enumerate() {
        let field = format!("vanilla_proofs[{k}]");
        let proof: PartitionProof<Tree> = bincode::deserialize(bytes).map_err(|e| {
            CircuitError::invalid(
                field.clone(),
                format!("not a bincode PartitionProof for {registered_proof:?}: {e}"),
            )
        })?;
        check_shape(&proof, &public_params).map_err(|why| CircuitError::invalid(&field, why))?;
        // The vanilla check ties the proof to the three commitments: a mismatch found here is
        // named; found later it would only be an unsatisfied circuit.
        let inputs = PublicInputs {
            k,
            ..public_inputs.clone()
        };
        let ok = catch_unwind(AssertUnwindSafe(|| {
            EmptySectorUpdate::<Tree>::verify(&public_params, &inputs, &proof)
        }));
        if !matches!(ok, Ok(Ok(true))) {
            return Err(CircuitError::invalid(
                field,
                "does not verify against comm_r_old, comm_r_new and comm_d_new",
            ));
        }
        proofs.push(proof);
    }
    Ok(Box::new(Typed {
        sector_bytes: u64::from(config.sector_size),
        public_params,
        public_inputs,
        proofs,
    }))
}

/// The counts the circuit relies on, checked before any gadget indexes by them.
fn check_shape<Tree: MerkleTreeTrait<Hasher = TreeRHasher>>(
    proof: &PartitionProof<Tree>,
    params: &PublicParams,
) -> Result<(), String> {
    if proof.apex_leafs.len() != params.apex_leaf_count {
        return Err(format!(
            "{} apex leaves, expected {}",
            proof.apex_leafs.len(),
            params.apex_leaf_count
        ));
    }
    if proof.challenge_proofs.len() != params.challenge_count {
        return Err(format!(
            "{} challenge proofs, expected {}",
            proof.challenge_proofs.len(),
            params.challenge_count
        ));
    }
    Ok(())
}

type Compound<Tree> = EmptySectorUpdateCompound<Tree>;

impl<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>> Typed<Tree> {
    fn circuit(&self, k: usize) -> Result<EmptySectorUpdateCircuit<Tree>, CircuitError> {
        <Compound<Tree> as CompoundProof<EmptySectorUpdate<Tree>, _>>::circuit(
            &self.public_inputs,
            (),
            &self.proofs[k],
            &self.public_params,
            Some(k),
        )
        .map_err(|e| CircuitError::invalid("vanilla_proofs", format!("partition {k}: {e:#}")))
    }
}

impl<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>> PartitionCircuits for Typed<Tree> {
    fn partitions(&self) -> usize {
        self.proofs.len()
    }

    fn synthesize(
        &self,
        k: usize,
        through: Through<'_>,
        buffers: &dyn Buffers,
    ) -> Result<(Synthesized, SynthPath), CircuitError> {
        let expected =
            <Compound<Tree> as CompoundProof<EmptySectorUpdate<Tree>, _>>::generate_public_inputs(
                &self.public_inputs,
                &self.public_params,
                Some(k),
            )
            .map_err(|e| {
                CircuitError::Synthesis(format!("public inputs of partition {k}: {e:#}"))
            })?;
        synthesize_checked(
            || self.circuit(k),
            k,
            &expected,
            "comm_r_old, comm_r_new and comm_d_new",
            through,
            buffers,
        )
    }

    fn parameter_set(&self) -> String {
        <Compound<Tree> as CacheableParameters<EmptySectorUpdateCircuit<Tree>, _>>::cache_identifier(
            &self.public_params,
        )
    }
}

impl<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>> Oracle for Typed<Tree> {
    fn bellperson_proof(
        &self,
        k: usize,
        params: &Parameters<Bls12>,
        r: Fr,
        s: Fr,
    ) -> Result<Proof<Bls12>, CircuitError> {
        bellperson_prove(self.circuit(k)?, params, r, s)
    }
}

impl<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>> SnapCircuits for Typed<Tree> {
    fn verify(&self, proof: &[u8], vk: &VerifyingKey<Bls12>) -> anyhow::Result<bool> {
        let partitions = self.proofs.len();
        let public_inputs = PublicInputs {
            k: partitions,
            ..self.public_inputs.clone()
        };
        let setup = compound_proof::SetupParams {
            vanilla_params: SetupParams {
                sector_bytes: self.sector_bytes,
            },
            partitions: Some(partitions),
            priority: true,
        };
        let public_params =
            <Compound<Tree> as CompoundProof<EmptySectorUpdate<Tree>, _>>::setup(&setup)?;
        let pvk = prepare_verifying_key(vk);
        let proof = MultiProof::new_from_bytes(Some(partitions), proof, &pvk)?;
        <Compound<Tree> as CompoundProof<EmptySectorUpdate<Tree>, _>>::verify(
            &public_params,
            &public_inputs,
            &proof,
            &(),
        )
    }
}
