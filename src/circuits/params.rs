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
use filecoin_proofs::with_shape;
use filecoin_proofs_api::RegisteredSealProof;
use rand::rngs::OsRng;
use storage_proofs_core::compound_proof::CompoundProof;
use storage_proofs_core::merkle::MerkleTreeTrait;
use storage_proofs_porep::stacked::{StackedCompound, StackedDrg};

/// Which circuit family to make parameters for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum ParamsKind {
    Porep,
}

/// The environment variable filecoin-proofs reads (once per process) for its parameter cache.
pub const PARAMETER_CACHE_ENV: &str = "FIL_PROOFS_PARAMETER_CACHE";

/// Makes the parameters and verifying keys of `kind` at `sector_size` in `dir`, unless present.
/// Returns the files now in `dir`. Must run before anything else in the process reads
/// filecoin-proofs' settings.
pub fn generate(kind: ParamsKind, sector_size: u64, dir: &Path) -> Result<Vec<PathBuf>> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let dir = dir.canonicalize()?;
    remove_stale_staging(&dir);
    let staging = dir.join(format!(".staging-{}", std::process::id()));
    std::fs::create_dir_all(&staging)?;
    // SAFETY (of set_var): called before any other thread of this process reads the environment.
    std::env::set_var(PARAMETER_CACHE_ENV, &staging);
    let names = match kind {
        ParamsKind::Porep => porep(sector_size, &dir)?,
    };
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

fn porep(sector_size: u64, dir: &Path) -> Result<Vec<String>> {
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
    with_shape!(sector_size, porep_shape, &config, dir)
}

fn porep_shape<Tree: 'static + MerkleTreeTrait>(
    config: &filecoin_proofs::PoRepConfig,
    dir: &Path,
) -> Result<Vec<String>> {
    type Compound<Tree> = StackedCompound<Tree, DefaultPieceHasher>;
    let pp = public_params::<Tree>(config)?;
    let id = <Compound<Tree> as storage_proofs_core::parameter_cache::CacheableParameters<
        storage_proofs_porep::stacked::StackedCircuit<Tree, DefaultPieceHasher>,
        _,
    >>::cache_identifier(&pp);
    let names = file_names(&id);
    if names.iter().all(|n| dir.join(n).exists()) {
        tracing::info!(%id, "parameters already present");
        return Ok(Vec::new());
    }
    tracing::info!(%id, "generating parameters (random, for tests only)");
    <Compound<Tree> as CompoundProof<StackedDrg<'_, Tree, DefaultPieceHasher>, _>>::groth_params(
        Some(&mut OsRng),
        &pp,
    )?;
    <Compound<Tree> as CompoundProof<StackedDrg<'_, Tree, DefaultPieceHasher>, _>>::verifying_key(
        Some(&mut OsRng),
        &pp,
    )?;
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
