//! Groth16 parameter sets: where their files are ([`ParameterFiles`], built from a directory
//! and the set's cache identifier: nothing here reads the environment), the identifier of each
//! kind's set, its blank circuit recorded as a PCE, and random test sets made through
//! filecoin-proofs' own generate-if-missing path (never valid on chain, never downloaded).
//!
//! filecoin-proofs learns where its cache is only from FIL_PROOFS_PARAMETER_CACHE, read once per
//! process: [`generate_in_cache`] runs in a process started with it set (`cuzk params generate`
//! starts one with a staging directory, then renames each finished file into the cache, so a
//! killed run leaves no half-written file under a real name).

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use bellperson::groth16::VerifyingKey;
use blstrs::Bls12;
use filecoin_proofs::constants::DefaultPieceHasher;
use filecoin_proofs::parameters::public_params;
use filecoin_proofs::parameters::{window_post_public_params, winning_post_public_params};
use filecoin_proofs::with_shape;
use filecoin_proofs_api::{RegisteredPoStProof, RegisteredSealProof, RegisteredUpdateProof};
use rand::rngs::OsRng;
use storage_proofs_core::compound_proof::{CircuitComponent, CompoundProof};
use storage_proofs_core::merkle::MerkleTreeTrait;
use storage_proofs_core::parameter_cache::{
    ParameterSetMetadata, GROTH_PARAMETER_EXT, VERIFYING_KEY_EXT, VERSION,
};
use storage_proofs_core::proof::ProofScheme;
use storage_proofs_porep::stacked::{StackedCompound, StackedDrg};
use storage_proofs_post::fallback::{FallbackPoSt, FallbackPoStCircuit, FallbackPoStCompound};
use storage_proofs_update::constants::TreeRHasher;
use storage_proofs_update::{
    EmptySectorUpdate, EmptySectorUpdateCircuit, EmptySectorUpdateCompound,
};

use super::ProofKind;

/// The environment variable filecoin-proofs reads (once per process) for its parameter cache.
/// cuzk reads it only as the default parameter directory (`config`), and sets it only for the
/// process that runs [`generate_in_cache`].
pub const PARAMETER_CACHE_ENV: &str = "FIL_PROOFS_PARAMETER_CACHE";

/// The files of one parameter set in a directory, under filecoin-proofs' names
/// (`v28-<cache identifier>.params` and `.vk`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParameterFiles {
    /// The Groth16 parameters (verifying key, then the proving key's queries).
    pub params: PathBuf,
    /// The verifying key alone.
    pub vk: PathBuf,
}

impl ParameterFiles {
    pub fn new(dir: &Path, cache_identifier: &str) -> ParameterFiles {
        let file = |ext: &str| dir.join(format!("v{VERSION}-{cache_identifier}.{ext}"));
        ParameterFiles {
            params: file(GROTH_PARAMETER_EXT),
            vk: file(VERIFYING_KEY_EXT),
        }
    }

    /// The set's verifying key from its `.vk` file; where that cannot be read, the key at the
    /// head of the `.params` file (`from_params`: the same key), as filecoin-proofs rebuilds a
    /// missing `.vk` from the parameters.
    pub fn verifying_key(
        &self,
        from_params: impl FnOnce() -> VerifyingKey<Bls12>,
    ) -> VerifyingKey<Bls12> {
        crate::srs::read_verifying_key(&self.vk).unwrap_or_else(|e| {
            tracing::warn!(error = %e, "the .vk file is unusable: the key in the .params file is used");
            from_params()
        })
    }
}

/// Makes the parameters and verifying key of `kind` at `sector_size` in filecoin-proofs' cache
/// (the directory [`PARAMETER_CACHE_ENV`] named when this process started), unless its files
/// are there. Slow and memory-hungry (random toxic waste over the whole circuit): for tests.
pub fn generate_in_cache(kind: ProofKind, sector_size: u64) -> Result<()> {
    by_kind(kind, sector_size, Mode::Generate).map(|_| ())
}

/// The filecoin-proofs cache identifier of the parameter set of `kind` at `sector_size` (the
/// stem of its file names).
pub fn cache_identifier(kind: ProofKind, sector_size: u64) -> Result<String> {
    by_kind(kind, sector_size, Mode::Identify)
}

/// Records the R1CS matrices of `kind` at `sector_size` from its blank circuit (the one its
/// Groth16 parameters are made from): no parameters, no sector and no witness needed.
pub fn record_blank(kind: ProofKind, sector_size: u64) -> Result<crate::pce::Pce> {
    let mut out = None;
    by_kind(kind, sector_size, Mode::Record(&mut out))?;
    out.context("no circuit recorded")
}

/// `mode` done to the parameter set of `kind` at `sector_size`.
fn by_kind(kind: ProofKind, sector_size: u64, mode: Mode<'_>) -> Result<String> {
    match kind {
        ProofKind::PorepC2 => porep(sector_size, mode),
        ProofKind::SnapDeals => snap(sector_size, mode),
        ProofKind::WindowPost | ProofKind::WinningPost => post(kind, sector_size, mode),
    }
}

fn porep(sector_size: u64, mode: Mode<'_>) -> Result<String> {
    let proofs = [
        RegisteredSealProof::StackedDrg2KiBV1_1,
        RegisteredSealProof::StackedDrg8MiBV1_1,
        RegisteredSealProof::StackedDrg512MiBV1_1,
        RegisteredSealProof::StackedDrg32GiBV1_1,
        RegisteredSealProof::StackedDrg64GiBV1_1,
    ];
    let Some(proof) = proofs
        .into_iter()
        .find(|p| u64::from(p.sector_size()) == sector_size)
    else {
        bail!("no PoRep is registered for sector size {sector_size}");
    };
    let config = proof.as_v1_config();
    with_shape!(sector_size, porep_shape, &config, mode)
}

fn porep_shape<Tree: 'static + MerkleTreeTrait>(
    config: &filecoin_proofs::PoRepConfig,
    mode: Mode<'_>,
) -> Result<String> {
    type Compound<Tree> = StackedCompound<Tree, DefaultPieceHasher>;
    type Circuit<Tree> = storage_proofs_porep::stacked::StackedCircuit<Tree, DefaultPieceHasher>;
    let pp = public_params::<Tree>(config)?;
    make::<StackedDrg<'_, Tree, DefaultPieceHasher>, Circuit<Tree>, Compound<Tree>>(mode, &pp)
}

fn snap(sector_size: u64, mode: Mode<'_>) -> Result<String> {
    let proofs = [
        RegisteredUpdateProof::StackedDrg2KiBV1,
        RegisteredUpdateProof::StackedDrg8MiBV1,
        RegisteredUpdateProof::StackedDrg512MiBV1,
        RegisteredUpdateProof::StackedDrg32GiBV1,
        RegisteredUpdateProof::StackedDrg64GiBV1,
    ];
    if !proofs
        .iter()
        .any(|p| u64::from(p.sector_size()) == sector_size)
    {
        bail!("no SnapDeals proof is registered for sector size {sector_size}");
    }
    with_shape!(sector_size, snap_shape, sector_size, mode)
}

fn snap_shape<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
    sector_size: u64,
    mode: Mode<'_>,
) -> Result<String> {
    type Compound<Tree> = EmptySectorUpdateCompound<Tree>;
    let pp = storage_proofs_update::PublicParams::from_sector_size(sector_size);
    make::<EmptySectorUpdate<Tree>, EmptySectorUpdateCircuit<Tree>, Compound<Tree>>(mode, &pp)
}

fn post(kind: ProofKind, sector_size: u64, mode: Mode<'_>) -> Result<String> {
    use RegisteredPoStProof::*;
    let proofs: [RegisteredPoStProof; 5] = if kind == ProofKind::WinningPost {
        [
            StackedDrgWinning2KiBV1,
            StackedDrgWinning8MiBV1,
            StackedDrgWinning512MiBV1,
            StackedDrgWinning32GiBV1,
            StackedDrgWinning64GiBV1,
        ]
    } else {
        // The v1 and v1.2 WindowPoSt circuits are one circuit; their parameters are shared.
        [
            StackedDrgWindow2KiBV1_2,
            StackedDrgWindow8MiBV1_2,
            StackedDrgWindow512MiBV1_2,
            StackedDrgWindow32GiBV1_2,
            StackedDrgWindow64GiBV1_2,
        ]
    };
    let Some(proof) = proofs
        .into_iter()
        .find(|p| u64::from(p.sector_size()) == sector_size)
    else {
        bail!("no {kind} proof is registered for sector size {sector_size}");
    };
    let config = proof.as_v1_config();
    with_shape!(sector_size, post_shape, &config, mode)
}

fn post_shape<Tree: 'static + MerkleTreeTrait>(
    config: &filecoin_proofs::PoStConfig,
    mode: Mode<'_>,
) -> Result<String> {
    type Compound<Tree> = FallbackPoStCompound<Tree>;
    let pp = match config.typ {
        filecoin_proofs::PoStType::Winning => winning_post_public_params::<Tree>(config)?,
        filecoin_proofs::PoStType::Window => window_post_public_params::<Tree>(config)?,
    };
    make::<FallbackPoSt<'_, Tree>, FallbackPoStCircuit<Tree>, Compound<Tree>>(mode, &pp)
}

/// What the per-kind functions do with a parameter set.
enum Mode<'a> {
    /// Return its cache identifier only.
    Identify,
    /// Make it in filecoin-proofs' cache unless its files are there.
    Generate,
    /// Record the blank circuit's matrices here.
    Record(&'a mut Option<crate::pce::Pce>),
}

/// Does `mode` to one parameter set and returns its cache identifier. Generating goes through
/// the compound proof's own generate-if-missing path (Groth16 parameters, then the verifying
/// key), which reads and writes filecoin-proofs' cache.
fn make<'a, S, C, Compound>(mode: Mode<'_>, pp: &S::PublicParams) -> Result<String>
where
    S: ProofScheme<'a>,
    S::Proof: Sync + Send,
    S::PublicParams: ParameterSetMetadata + Sync + Send,
    S::PublicInputs: Clone + Sync,
    C: bellperson::Circuit<blstrs::Scalar> + CircuitComponent + Send,
    Compound: CompoundProof<'a, S, C>,
{
    let id = Compound::cache_identifier(pp);
    match mode {
        Mode::Identify => {}
        Mode::Record(out) => {
            let circuit = Compound::blank_circuit(pp);
            *out = Some(crate::pce::record(circuit).with_context(|| format!("recording {id}"))?);
        }
        Mode::Generate => {
            tracing::info!(%id, "generating parameters (random, for tests only)");
            Compound::groth_params(Some(&mut OsRng), pp)?;
            Compound::verifying_key(Some(&mut OsRng), pp)?;
        }
    }
    Ok(id)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every registered proof type of filecoin-proofs-api, of every size and version, is proved
    /// with the parameter set of its kind and size that `cache_identifier` names.
    #[test]
    fn every_registered_proof_maps_to_the_parameters_we_make() {
        use filecoin_proofs_api::ApiFeature;
        use RegisteredPoStProof as P;
        use RegisteredSealProof as S;
        use RegisteredUpdateProof as U;
        let seal = [
            S::StackedDrg2KiBV1,
            S::StackedDrg8MiBV1,
            S::StackedDrg512MiBV1,
            S::StackedDrg32GiBV1,
            S::StackedDrg64GiBV1,
            S::StackedDrg2KiBV1_1,
            S::StackedDrg8MiBV1_1,
            S::StackedDrg512MiBV1_1,
            S::StackedDrg32GiBV1_1,
            S::StackedDrg64GiBV1_1,
            S::StackedDrg2KiBV1_1_Feat_SyntheticPoRep,
            S::StackedDrg8MiBV1_1_Feat_SyntheticPoRep,
            S::StackedDrg512MiBV1_1_Feat_SyntheticPoRep,
            S::StackedDrg32GiBV1_1_Feat_SyntheticPoRep,
            S::StackedDrg64GiBV1_1_Feat_SyntheticPoRep,
            S::StackedDrg2KiBV1_2_Feat_NonInteractivePoRep,
            S::StackedDrg8MiBV1_2_Feat_NonInteractivePoRep,
            S::StackedDrg512MiBV1_2_Feat_NonInteractivePoRep,
            S::StackedDrg32GiBV1_2_Feat_NonInteractivePoRep,
            S::StackedDrg64GiBV1_2_Feat_NonInteractivePoRep,
        ];
        let mut checked = 0;
        let mut snap_ids = std::collections::HashSet::new();
        for p in seal {
            if p.feature_enabled(ApiFeature::NonInteractivePoRep) {
                continue; // refused by PoRepC2::new until aggregation is supported
            }
            let ours = cache_identifier(ProofKind::PorepC2, u64::from(p.sector_size())).unwrap();
            assert_eq!(ours, p.circuit_identifier().unwrap(), "{p:?}");
            checked += 1;
        }
        for p in [
            U::StackedDrg2KiBV1,
            U::StackedDrg8MiBV1,
            U::StackedDrg512MiBV1,
            U::StackedDrg32GiBV1,
            U::StackedDrg64GiBV1,
        ] {
            // filecoin-proofs-api's RegisteredUpdateProof::circuit_identifier names the PoRep
            // circuit of the size (it goes through as_v1_config); filecoin-proofs' own update
            // prover and verifier use EmptySectorUpdateCompound's identifier, as we do.
            let ours = cache_identifier(ProofKind::SnapDeals, u64::from(p.sector_size())).unwrap();
            assert!(ours.starts_with("empty-sector-update-"), "{p:?}: {ours}");
            assert!(snap_ids.insert(ours), "{p:?}: one parameter set per size");
            checked += 1;
        }
        for p in [
            P::StackedDrgWinning2KiBV1,
            P::StackedDrgWinning8MiBV1,
            P::StackedDrgWinning512MiBV1,
            P::StackedDrgWinning32GiBV1,
            P::StackedDrgWinning64GiBV1,
            P::StackedDrgWindow2KiBV1,
            P::StackedDrgWindow8MiBV1,
            P::StackedDrgWindow512MiBV1,
            P::StackedDrgWindow32GiBV1,
            P::StackedDrgWindow64GiBV1,
            P::StackedDrgWindow2KiBV1_2,
            P::StackedDrgWindow8MiBV1_2,
            P::StackedDrgWindow512MiBV1_2,
            P::StackedDrgWindow32GiBV1_2,
            P::StackedDrgWindow64GiBV1_2,
        ] {
            let kind = match p.typ() {
                filecoin_proofs_api::PoStType::Winning => ProofKind::WinningPost,
                filecoin_proofs_api::PoStType::Window => ProofKind::WindowPost,
            };
            let ours = cache_identifier(kind, u64::from(p.sector_size())).unwrap();
            assert_eq!(ours, p.circuit_identifier().unwrap(), "{p:?}");
            checked += 1;
        }
        assert_eq!(checked, 35);
        assert!(cache_identifier(ProofKind::SnapDeals, 4096).is_err());
    }
}
