//! `cuzk prove ...`: one job from files, proved partition by partition, verified, written.

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, Result};
use blstrs::Scalar;
use clap::Subcommand;
use ff::Field;
use rand::rngs::OsRng;

use super::ParamsLocation;
use crate::circuits::porep::PoRepC2;
use crate::groth16::{prove, CpuBackend};
use crate::srs::Srs;

#[derive(Subcommand)]
pub enum ProveCommand {
    /// PoRep C2 (seal commit phase 2) from a C1 output.
    PorepC2 {
        /// C1 output: SealCommitPhase1Output JSON, or Curio's {"SectorNum","Phase1Out","SectorSize"}.
        #[arg(long, value_name = "FILE")]
        c1: PathBuf,
        /// Miner actor ID (the number of its f0 address).
        #[arg(long)]
        miner_id: u64,
        #[arg(long)]
        sector_number: u64,
        /// Where to write the proof bytes (as seal_commit_phase2 returns them).
        #[arg(long, value_name = "FILE")]
        out: PathBuf,
        #[command(flatten)]
        params: ParamsLocation,
    },
}

pub fn run(cmd: ProveCommand) -> Result<()> {
    match cmd {
        ProveCommand::PorepC2 {
            c1,
            miner_id,
            sector_number,
            out,
            params,
        } => {
            params.apply()?;
            let job = load_porep(&c1, miner_id, sector_number)?;
            let srs = load_srs(&job.params_path())?;
            let proof = prove_porep(&job, &srs)?;
            crate::persist::write_atomic(&out, &proof)?;
            eprintln!(
                "proof verified; {} bytes written to {}",
                proof.len(),
                out.display()
            );
            Ok(())
        }
    }
}

pub(super) fn load_porep(c1: &Path, miner_id: u64, sector_number: u64) -> Result<PoRepC2> {
    let bytes = std::fs::read(c1).with_context(|| format!("reading {}", c1.display()))?;
    let job = PoRepC2::from_c1(&bytes, miner_id, sector_number)
        .with_context(|| format!("C1 output {}", c1.display()))?;
    tracing::info!(proof = ?job.registered_proof(), partitions = job.partitions(), "C1 output parsed");
    Ok(job)
}

pub(super) fn load_srs(path: &Path) -> Result<Srs> {
    let start = Instant::now();
    let srs = Srs::read(path)
        .context("loading Groth16 parameters (make test ones with `cuzk params generate`)")?;
    tracing::info!(path = %path.display(), secs = start.elapsed().as_secs_f64(), "parameters loaded");
    Ok(srs)
}

/// Proves every partition on the CPU with fresh randomness and returns the verified proof bytes.
pub(super) fn prove_porep(job: &PoRepC2, srs: &Srs) -> Result<Vec<u8>> {
    let mut proofs = Vec::with_capacity(job.partitions());
    for k in 0..job.partitions() {
        let start = Instant::now();
        let synth = job.synthesize(k)?;
        let synth_s = start.elapsed().as_secs_f64();
        let (proof, t) = prove(
            &CpuBackend,
            srs,
            synth,
            Scalar::random(&mut OsRng),
            Scalar::random(&mut OsRng),
        )?;
        eprintln!(
            "partition {}/{}: synthesis {:.2}s, prove {:.2}s",
            k + 1,
            job.partitions(),
            synth_s,
            t.total.as_secs_f64()
        );
        proofs.push(proof);
    }
    Ok(job.finish(&proofs)?)
}
