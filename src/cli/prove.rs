//! `cuzk prove KIND ...`: one job from files, proved partition by partition, verified, written.

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{bail, Context, Result};
use base64::Engine as _;
use bellperson::groth16::VerifyingKey;
use blstrs::{Bls12, Scalar};
use ff::Field;
use rand::rngs::OsRng;

use super::{kind_parser, BackendArgs, ParamsLocation};
use crate::circuits::oracle::OracleJob;
use crate::circuits::request::{C1Input, PorepC2Request};
use crate::circuits::{ParameterFiles, ProofJob, ProofKind, ProofRequest};
use crate::groth16::{prove, Backend};
use crate::srs::Srs;

#[derive(clap::Args)]
#[command(group = clap::ArgGroup::new("source").required(true).args(["input", "c1"]))]
pub struct ProveArgs {
    /// What to prove.
    #[arg(value_parser = kind_parser())]
    kind: ProofKind,
    /// The request as JSON: the fields of the REST API's POST /v1/proofs body ("kind" may be
    /// left out).
    #[arg(long, value_name = "FILE")]
    input: Option<PathBuf>,
    #[command(flatten)]
    c1: C1Source,
    /// Where to write the proof bytes (as filecoin-proofs-api returns them for the kind).
    #[arg(long, value_name = "FILE")]
    out: PathBuf,
    #[command(flatten)]
    params: ParamsLocation,
    #[command(flatten)]
    backend: BackendArgs,
}

pub fn run(args: ProveArgs) -> Result<()> {
    let params_dir = args.params.dir()?;
    let request = read_request(&args)?;
    let job = prepare(request)?;
    let provers = args.backend.select()?;
    let files = ParameterFiles::new(&params_dir, &job.parameter_set());
    let srs = load_srs(&files.params)?;
    let vk = files.verifying_key(|| srs.vk.clone());
    let proof = prove_job(job.as_ref(), &srs, &vk, provers.backends[0].as_ref())?;
    crate::persist::write_atomic(&args.out, &proof)?;
    eprintln!(
        "proof verified; {} bytes written to {}",
        proof.len(),
        args.out.display()
    );
    Ok(())
}

fn read_request(args: &ProveArgs) -> Result<ProofRequest> {
    if let Some(request) = args.c1.request() {
        if args.kind != ProofKind::PorepC2 {
            bail!(
                "--c1 is for porep-c2; give a {} request with --input",
                args.kind
            );
        }
        return request;
    }
    let path = args.input.as_ref().expect("clap requires --input or --c1");
    load_request(path, args.kind)
}

/// A PoRep C2 job given as a C1 output file instead of a request.
#[derive(clap::Args)]
pub(super) struct C1Source {
    /// porep-c2, instead of --input: the C1 output (SealCommitPhase1Output JSON, or Curio's
    /// {"SectorNum","Phase1Out","SectorSize"} envelope).
    #[arg(long, value_name = "FILE", requires_all = ["miner_id", "sector_number"])]
    c1: Option<PathBuf>,
    /// With --c1: the miner actor ID (the number of its f0 address).
    #[arg(long)]
    miner_id: Option<u64>,
    /// With --c1: the sector number.
    #[arg(long)]
    sector_number: Option<u64>,
}

impl C1Source {
    /// The PoRep C2 request, when --c1 was given.
    pub(super) fn request(&self) -> Option<Result<ProofRequest>> {
        let c1 = self.c1.as_ref()?;
        let read = || {
            let bytes = std::fs::read(c1).with_context(|| format!("reading {}", c1.display()))?;
            Ok(ProofRequest::PorepC2(PorepC2Request {
                c1: C1Input::Base64(base64::engine::general_purpose::STANDARD.encode(bytes)),
                miner_id: self.miner_id.expect("clap requires it with --c1"),
                sector_number: self.sector_number.expect("clap requires it with --c1"),
            }))
        };
        Some(read())
    }
}

/// Reads a request file for `kind`; a file without "kind" is taken as that kind.
pub(super) fn load_request(path: &Path, kind: ProofKind) -> Result<ProofRequest> {
    let bytes = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
    let mut value: serde_json::Value = serde_json::from_slice(&bytes)
        .with_context(|| format!("{} is not JSON", path.display()))?;
    let Some(object) = value.as_object_mut() else {
        bail!("{} is not a JSON object", path.display());
    };
    let named = object.entry("kind").or_insert_with(|| kind.as_str().into());
    if named.as_str() != Some(kind.as_str()) {
        bail!("{} is a {named} request, not {kind}", path.display());
    }
    let bytes = serde_json::to_vec(&value)?;
    ProofRequest::from_json(&bytes).with_context(|| format!("request {}", path.display()))
}

pub(super) fn prepare(request: ProofRequest) -> Result<Box<dyn OracleJob>> {
    let kind = request.kind();
    let job = request
        .prepare_with_oracle()
        .with_context(|| format!("{kind} request"))?;
    tracing::info!(?job, circuit = %job.circuit_id(), "request checked");
    Ok(job)
}

pub(super) fn load_srs(path: &Path) -> Result<Srs> {
    let start = Instant::now();
    let srs = Srs::read(path)
        .context("loading Groth16 parameters (make test ones with `cuzk params generate`)")?;
    tracing::info!(path = %path.display(), secs = start.elapsed().as_secs_f64(), "parameters loaded");
    Ok(srs)
}

/// Proves every partition on `backend` with fresh randomness and returns the proof bytes,
/// verified with `vk`.
fn prove_job(
    job: &dyn ProofJob,
    srs: &Srs,
    vk: &VerifyingKey<Bls12>,
    backend: &dyn Backend,
) -> Result<Vec<u8>> {
    let mut proofs = Vec::with_capacity(job.partitions());
    for k in 0..job.partitions() {
        let start = Instant::now();
        let synth = job.synthesize(k)?;
        let synth_s = start.elapsed().as_secs_f64();
        let (proof, t) = prove(
            backend,
            srs,
            synth,
            Scalar::random(&mut OsRng),
            Scalar::random(&mut OsRng),
        )?;
        eprintln!(
            "partition {}/{}: synthesis {:.2}s, prove {:.2}s ({})",
            k + 1,
            job.partitions(),
            synth_s,
            t.total.as_secs_f64(),
            backend.name()
        );
        proofs.push(proof);
    }
    Ok(job.finish(&proofs, vk)?)
}
