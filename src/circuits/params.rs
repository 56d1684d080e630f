//! Groth16 parameters for tests and trials, made through filecoin-proofs' own
//! generate-if-missing path (random toxic waste: never valid on chain, and never downloaded).
//!
//! filecoin-proofs writes its cache files in place, so generation runs in a staging directory
//! beside the cache and each finished file is renamed into it: a killed run leaves no
//! half-written file under a real name.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use filecoin_proofs::constants::DefaultPieceHasher;
use filecoin_proofs::parameters::public_params;
use filecoin_proofs::parameters::{window_post_public_params, winning_post_public_params};
use filecoin_proofs::with_shape;
use filecoin_proofs_api::{RegisteredPoStProof, RegisteredSealProof, RegisteredUpdateProof};
use rand::rngs::OsRng;
use storage_proofs_core::compound_proof::{CircuitComponent, CompoundProof};
use storage_proofs_core::merkle::MerkleTreeTrait;
use storage_proofs_core::parameter_cache::ParameterSetMetadata;
use storage_proofs_core::proof::ProofScheme;
use storage_proofs_porep::stacked::{StackedCompound, StackedDrg};
use storage_proofs_post::fallback::{FallbackPoSt, FallbackPoStCircuit, FallbackPoStCompound};
use storage_proofs_update::constants::TreeRHasher;
use storage_proofs_update::{
    EmptySectorUpdate, EmptySectorUpdateCircuit, EmptySectorUpdateCompound,
};

use super::ProofKind;

/// The environment variable filecoin-proofs reads (once per process) for its parameter cache.
pub const PARAMETER_CACHE_ENV: &str = "FIL_PROOFS_PARAMETER_CACHE";

/// Makes the parameters and verifying keys of `kind` at `sector_size` in `dir`, unless present.
/// Returns the files now in `dir`. Must run before anything else in the process reads
/// filecoin-proofs' settings.
pub fn generate(kind: ProofKind, sector_size: u64, dir: &Path) -> Result<Vec<PathBuf>> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let dir = dir.canonicalize()?;
    remove_stale_staging(&dir);
    let staging = dir.join(format!(".staging-{}", std::process::id()));
    std::fs::create_dir_all(&staging)?;
    // SAFETY (of set_var): called before any other thread of this process reads the environment.
    std::env::set_var(PARAMETER_CACHE_ENV, &staging);
    let names = by_kind(kind, sector_size, Mode::Generate(&dir))?;
    let mut out = Vec::new();
    for name in names {
        let (from, to) = (staging.join(&name), dir.join(&name));
        if from.exists() {
            crate::persist::publish(&from, &to)?;
        }
        out.push(to);
    }
    std::fs::remove_dir_all(&staging).ok();
    Ok(out)
}

/// The filecoin-proofs cache identifier of the parameter set `generate` makes for `kind` at
/// `sector_size` (the stem of its file names).
pub fn cache_identifier(kind: ProofKind, sector_size: u64) -> Result<String> {
    let ids = by_kind(kind, sector_size, Mode::Identify)?;
    Ok(ids.into_iter().next().expect("one identifier"))
}

/// Records the R1CS matrices of `kind` at `sector_size` from its blank circuit (the one its
/// Groth16 parameters are made from): no parameters, no sector and no witness needed.
pub fn record_blank(kind: ProofKind, sector_size: u64) -> Result<crate::pce::Pce> {
    let mut out = None;
    by_kind(kind, sector_size, Mode::Record(&mut out))?;
    out.context("no circuit recorded")
}

/// `mode` done to the parameter set of `kind` at `sector_size`.
fn by_kind(kind: ProofKind, sector_size: u64, mode: Mode<'_>) -> Result<Vec<String>> {
    match kind {
        ProofKind::PorepC2 => porep(sector_size, mode),
        ProofKind::SnapDeals => snap(sector_size, mode),
        ProofKind::WindowPost | ProofKind::WinningPost => post(kind, sector_size, mode),
    }
}

/// Removes staging directories left by generator runs that died (their pid is gone).
fn remove_stale_staging(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name.to_str().and_then(|n| n.strip_prefix(".staging-")) else {
            continue;
        };
        if pid.parse::<u32>().is_ok() && !Path::new("/proc").join(pid).exists() {
            tracing::info!(path = %entry.path().display(), "removing a dead run's staging directory");
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

fn porep(sector_size: u64, mode: Mode<'_>) -> Result<Vec<String>> {
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
) -> Result<Vec<String>> {
    type Compound<Tree> = StackedCompound<Tree, DefaultPieceHasher>;
    type Circuit<Tree> = storage_proofs_porep::stacked::StackedCircuit<Tree, DefaultPieceHasher>;
    let pp = public_params::<Tree>(config)?;
    make::<StackedDrg<'_, Tree, DefaultPieceHasher>, Circuit<Tree>, Compound<Tree>>(mode, &pp)
}

fn snap(sector_size: u64, mode: Mode<'_>) -> Result<Vec<String>> {
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
) -> Result<Vec<String>> {
    type Compound<Tree> = EmptySectorUpdateCompound<Tree>;
    let pp = storage_proofs_update::PublicParams::from_sector_size(sector_size);
    make::<EmptySectorUpdate<Tree>, EmptySectorUpdateCircuit<Tree>, Compound<Tree>>(mode, &pp)
}

fn post(kind: ProofKind, sector_size: u64, mode: Mode<'_>) -> Result<Vec<String>> {
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
) -> Result<Vec<String>> {
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
    /// Make it unless its files are in this directory.
    Generate(&'a Path),
    /// Record the blank circuit's matrices here.
    Record(&'a mut Option<crate::pce::Pce>),
}

/// Makes one parameter set (Groth16 parameters and verifying key, through the compound
/// proof's own generate-if-missing path) unless its files are in `dir`; returns the names of the
/// files made (in the staging directory, for the caller to publish). Identifying, returns the
/// cache identifier.
fn make<'a, S, C, Compound>(mode: Mode<'_>, pp: &S::PublicParams) -> Result<Vec<String>>
where
    S: ProofScheme<'a>,
    S::Proof: Sync + Send,
    S::PublicParams: ParameterSetMetadata + Sync + Send,
    S::PublicInputs: Clone + Sync,
    C: bellperson::Circuit<blstrs::Scalar> + CircuitComponent + Send,
    Compound: CompoundProof<'a, S, C>,
{
    let id = Compound::cache_identifier(pp);
    let dir = match mode {
        Mode::Identify => return Ok(vec![id]),
        Mode::Record(out) => {
            let circuit = Compound::blank_circuit(pp);
            *out = Some(crate::pce::record(circuit).with_context(|| format!("recording {id}"))?);
            return Ok(vec![id]);
        }
        Mode::Generate(dir) => dir,
    };
    let names = file_names(&id);
    if names.iter().all(|n| dir.join(n).exists()) {
        tracing::info!(%id, "parameters already present");
        return Ok(Vec::new());
    }
    tracing::info!(%id, "generating parameters (random, for tests only)");
    Compound::groth_params(Some(&mut OsRng), pp)?;
    Compound::verifying_key(Some(&mut OsRng), pp)?;
    Ok(names)
}

/// The cache's file names for a parameter set: `.params` and `.vk` (filecoin-proofs' own names).
fn file_names(id: &str) -> Vec<String> {
    let base = |path: PathBuf| {
        path.file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()
    };
    vec![
        base(storage_proofs_core::parameter_cache::parameter_cache_params_path(id)),
        base(storage_proofs_core::parameter_cache::parameter_cache_verifying_key_path(id)),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every registered proof type of filecoin-proofs-api, of every size and version, is proved
    /// with the parameter set `generate` makes for its kind and size.
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
