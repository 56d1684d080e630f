//! `cuzk params ...`
//!
//! filecoin-proofs takes its parameter directory only from FIL_PROOFS_PARAMETER_CACHE, read
//! once per process, so `generate` runs the generator in a child process (this binary, the
//! hidden `generate-in-cache` command) started with that variable set to a staging directory
//! beside the cache, then renames each finished file into the cache: a killed run leaves no
//! half-written file under a real name, and this process's environment is never changed.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context, Result};
use clap::Subcommand;

use super::kind_parser;
use crate::circuits::params::{cache_identifier, generate_in_cache, PARAMETER_CACHE_ENV};
use crate::circuits::{parse_sector_size, ParameterFiles, ProofKind};

#[derive(Subcommand)]
pub enum ParamsCommand {
    /// Make random (test-only) parameters through filecoin-proofs' generate-if-missing path.
    Generate {
        /// The proof kind whose circuit the parameters are for.
        #[arg(long, value_parser = kind_parser())]
        kind: ProofKind,
        /// Sector size, e.g. 2KiB or 32GiB.
        #[arg(long, value_parser = parse_sector_size)]
        sector_size: u64,
        /// Cache directory (kept between runs; files keep filecoin-proofs' names).
        #[arg(long)]
        dir: PathBuf,
    },
    /// The generator itself, in filecoin-proofs' cache: what `generate` runs in a child
    /// process, with FIL_PROOFS_PARAMETER_CACHE set to the staging directory it names.
    #[command(hide = true)]
    GenerateInCache {
        #[arg(long, value_parser = kind_parser())]
        kind: ProofKind,
        #[arg(long, value_parser = parse_sector_size)]
        sector_size: u64,
        /// The staging directory FIL_PROOFS_PARAMETER_CACHE must name.
        #[arg(long)]
        staging: PathBuf,
    },
}

pub fn run(cmd: ParamsCommand) -> Result<()> {
    match cmd {
        ParamsCommand::Generate {
            kind,
            sector_size,
            dir,
        } => {
            let start = std::time::Instant::now();
            let files = generate(kind, sector_size, &dir)?;
            for f in [&files.params, &files.vk] {
                println!("{}", f.display());
            }
            tracing::info!(
                elapsed_s = start.elapsed().as_secs_f64(),
                "parameters ready"
            );
            Ok(())
        }
        ParamsCommand::GenerateInCache {
            kind,
            sector_size,
            staging,
        } => {
            // Never into a real cache: only where the parent pointed filecoin-proofs.
            if std::env::var_os(PARAMETER_CACHE_ENV).as_deref() != Some(staging.as_os_str()) {
                bail!(
                    "{PARAMETER_CACHE_ENV} must name --staging {}",
                    staging.display()
                );
            }
            generate_in_cache(kind, sector_size)
        }
    }
}

/// Makes the parameter set of `kind` at `sector_size` in `dir` unless both its files are there.
fn generate(kind: ProofKind, sector_size: u64, dir: &Path) -> Result<ParameterFiles> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let dir = dir.canonicalize()?;
    let id = cache_identifier(kind, sector_size)?;
    let files = ParameterFiles::new(&dir, &id);
    if files.params.exists() && files.vk.exists() {
        tracing::info!(params = %files.params.display(), "parameters already present");
        return Ok(files);
    }
    remove_stale_staging(&dir);
    let staging = dir.join(format!(".staging-{}", std::process::id()));
    std::fs::create_dir_all(&staging)?;
    let status = Command::new(std::env::current_exe().context("finding this program")?)
        .args(["params", "generate-in-cache", "--kind", kind.as_str()])
        .args(["--sector-size", &sector_size.to_string()])
        .arg("--staging")
        .arg(&staging)
        .env(PARAMETER_CACHE_ENV, &staging)
        .status()
        .context("starting the parameter generator")?;
    if !status.success() {
        std::fs::remove_dir_all(&staging).ok();
        bail!("the parameter generator failed ({status})");
    }
    let staged = ParameterFiles::new(&staging, &id);
    for (from, to) in [(&staged.params, &files.params), (&staged.vk, &files.vk)] {
        if from.exists() {
            crate::persist::publish(from, to)?;
        } else if !to.exists() {
            bail!("the generator made no {}", from.display());
        }
    }
    std::fs::remove_dir_all(&staging).ok();
    Ok(files)
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
