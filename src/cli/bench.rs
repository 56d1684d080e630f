//! `cuzk bench ...`: measurements printed as one JSON object on stdout.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use blstrs::Scalar;
use clap::{Subcommand, ValueEnum};
use ff::Field;
use filecoin_proofs_api::RegisteredSealProof;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde_json::json;

use super::appliance::assemble;
use super::prove::{load_request, load_srs, prepare, C1Source};
use super::{
    backend_parser, finish_parser, kind_parser, logging, BackendArgs, ParamsLocation,
    DEFAULT_KERNEL_CACHE,
};
use crate::circuits::oracle::OracleJob;
use crate::circuits::samples::sample_request;
use crate::circuits::{
    parse_sector_size, ParameterFiles, ProofJob, ProofKind, ProofRequest, Through,
};
use crate::config::{Finish, Settings};
use crate::engine::{pooled_sizes, PoolBuffers};
use crate::gpu::BackendChoice;
use crate::groth16::{prove, Backend, CpuBackend};
use crate::memory::{PinnedPool, GRANULE};

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Baseline {
    /// bellperson's CPU prover (and its synthesis).
    Bellperson,
    /// Our CPU backend, on the same synthesized circuit with the same r and s.
    Cpu,
}

/// A synthesis path `bench synth` measures.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum SynthChoice {
    /// Every constraint built and evaluated.
    Full,
    /// The witness through the PCE, then a, b and c by the host's SpMV.
    Pce,
    /// The witness alone through the PCE, kept compact.
    Compact,
}

#[derive(Subcommand)]
pub enum BenchCommand {
    /// Time synthesis and proving of one partition of a proof kind.
    Prove {
        /// The proof kind.
        #[arg(long, default_value = "porep-c2", value_parser = kind_parser())]
        kind: ProofKind,
        /// The request to prove (JSON, as for `cuzk prove --input`); without it (or --c1) a
        /// sample of --kind is made with filecoin-proofs on fresh sectors of --sector-size.
        #[arg(long, value_name = "FILE", conflicts_with = "c1")]
        input: Option<PathBuf>,
        #[command(flatten)]
        c1: C1Source,
        /// Sector size of the freshly made sample.
        #[arg(long, default_value = "2KiB", value_parser = parse_sector_size)]
        sector_size: u64,
        /// Partition to prove.
        #[arg(long, default_value_t = 0)]
        partition: usize,
        /// Also prove with this baseline in the same run and report the ratio.
        #[arg(long, value_enum)]
        compare: Option<Baseline>,
        /// The partition's a, b, c and aux synthesized into a page-locked pool registered with
        /// the backend, as the service does (else on the heap).
        #[arg(long)]
        pinned: bool,
        /// Also prove the partition through its PCE (extracted into a temporary store first):
        /// from a, b, c by the host's SpMV, and from its compact witness (a, b and c computed
        /// by the backend); report whether each proof is the same bytes, verified, and what
        /// each path held on the host beside what it was reserved.
        #[arg(long)]
        compact: bool,
        /// Prove the H MSM without its fixed-base table (to measure the difference).
        #[arg(long)]
        no_window_tables: bool,
        #[command(flatten)]
        params: ParamsLocation,
        #[command(flatten)]
        backend: BackendArgs,
    },
    /// Run N jobs at once through the engine, wired as `cuzk serve` wires it from the same
    /// configuration (the flags override its keys), and report throughput, peak memory and how
    /// busy the prover was.
    Pipeline {
        /// Jobs submitted at once.
        #[arg(long, default_value_t = 3)]
        jobs: usize,
        #[arg(long, default_value = "porep-c2", value_parser = kind_parser())]
        kind: ProofKind,
        #[arg(long, default_value = "2KiB", value_parser = parse_sector_size)]
        sector_size: u64,
        /// The configuration `cuzk serve` would read (default /etc/cuzk/cuzk.toml, when it
        /// exists, and CUZK_* variables). Jobs run in a temporary data directory.
        #[arg(long, value_name = "FILE")]
        config: Option<PathBuf>,
        #[command(flatten)]
        overrides: PipelineOverrides,
        /// Where PCE files are kept (the kind's PCE is extracted before the jobs start).
        #[arg(long, default_value = super::pce::DEFAULT_PCE_DIR)]
        pce_dir: PathBuf,
        /// Where compiled kernels are cached.
        #[arg(long, default_value = DEFAULT_KERNEL_CACHE)]
        kernel_cache: PathBuf,
        /// Upload the parameter set's bases to the GPU for every MSM instead of keeping them
        /// resident (to measure the difference).
        #[arg(long)]
        no_resident_bases: bool,
        /// Rehearse at --sector-size (porep-c2, snap-deals, window-post; 32 GiB and 64 GiB
        /// included): rehearsal sectors (see `bench synth --rehearse`) proved with a parameter
        /// set of the circuit's shape made of random points (no file is read), through the real
        /// engine, budget, PCE and prover. Its proofs cannot verify and end unverified.
        #[arg(long)]
        rehearse: bool,
    },
    /// What a partition of a larger circuit's shape holds as its compact witness: a real 2 KiB
    /// partition's witness (its 0s, 1s and other values, in its order) pushed again and again
    /// until `--aux` values, as the witness system pushes them; its bytes, the peak RSS growth
    /// while it is made, and what the engine reserves for a partition of that shape per path.
    Witness {
        /// The kind whose 2 KiB witness is repeated.
        #[arg(long, default_value = "porep-c2", value_parser = kind_parser())]
        kind: ProofKind,
        /// The shape: aux values, inputs, evaluation domain (log2); e.g. a 32 GiB PoRep
        /// partition's, from `cuzk pce extract --sector-size 32GiB`.
        #[arg(long)]
        aux: usize,
        #[arg(long)]
        inputs: usize,
        #[arg(long)]
        domain_log2: u32,
        #[arg(long, default_value = super::pce::DEFAULT_PCE_DIR)]
        pce_dir: PathBuf,
    },
    /// Time synthesis of one partition per proof kind on each of --paths (the PCE extracted
    /// first if missing), alternating, in the same run: seconds, peak RSS, what each holds, the
    /// witness's 0/1 mix, and whether every path made the same synthesized proof.
    Synth {
        /// Proof kinds, measured one after the other in this run.
        #[arg(
            long,
            value_delimiter = ',',
            default_value = "porep-c2,snap-deals",
            value_parser = kind_parser()
        )]
        kinds: Vec<ProofKind>,
        #[arg(long, default_value = "2KiB", value_parser = parse_sector_size)]
        sector_size: u64,
        /// porep-c2, snap-deals and window-post: rehearsal sectors of --sector-size (any size,
        /// 32 GiB and 64 GiB included: sectors that exist only where their challenges look)
        /// instead of freshly sealed ones.
        #[arg(long)]
        rehearse: bool,
        /// The paths to measure.
        #[arg(long, value_enum, value_delimiter = ',', default_value = "pce,compact")]
        paths: Vec<SynthChoice>,
        /// Syntheses per path (the median is reported).
        #[arg(long, default_value_t = 3)]
        runs: usize,
        /// Partition to synthesize.
        #[arg(long, default_value_t = 0)]
        partition: usize,
        #[arg(long, default_value = super::pce::DEFAULT_PCE_DIR)]
        pce_dir: PathBuf,
    },
    /// Time our GPU kernels at a chosen size on random inputs (no parameter file needed).
    Gpu(super::bench_gpu::GpuBenchArgs),
    /// The service under many clients at once: submissions at each concurrency and past a full
    /// queue, their answers (429 and 503 with Retry-After) and latency, /healthz and a job's
    /// status meanwhile, peak RSS (a real `cuzk serve` on a fresh data dir per phase).
    Load(super::bench_load::LoadArgs),
    /// Time one G1 MSM of random points and scalars on the CPU.
    Msm {
        /// log2 of the number of points.
        #[arg(long, default_value_t = 22)]
        log2: u32,
    },
}

/// Keys of the configuration `bench pipeline` overrides (unset: as configured).
#[derive(clap::Args, Clone, Debug)]
pub struct PipelineOverrides {
    /// proving.workers: jobs in progress at once (0: derived).
    #[arg(long)]
    workers: Option<usize>,
    /// proving.depth: partitions ahead of the prover (0: derived).
    #[arg(long)]
    depth: Option<usize>,
    /// memory.budget_bytes (0: from the cgroup or MemTotal).
    #[arg(long)]
    budget_bytes: Option<u64>,
    /// proving.finish: where B in G2 is summed (cpu, prover, held).
    #[arg(long, value_parser = finish_parser())]
    finish: Option<Finish>,
    /// proving.pce = false: synthesize on the full path only.
    #[arg(long)]
    no_pce: bool,
    /// proving.backend.
    #[arg(long, value_parser = backend_parser())]
    backend: Option<BackendChoice>,
    /// proving.gpus.
    #[arg(long, value_delimiter = ',')]
    gpus: Option<Vec<usize>>,
    /// proving.params_dir.
    #[arg(long, value_name = "DIR")]
    params_dir: Option<PathBuf>,
}

impl PipelineOverrides {
    fn apply(&self, s: &mut Settings) {
        if let Some(w) = self.workers {
            s.workers = w;
        }
        if let Some(d) = self.depth {
            s.depth = d;
        }
        if let Some(b) = self.budget_bytes {
            s.budget_bytes = b;
        }
        if let Some(f) = self.finish {
            s.finish = f;
        }
        if self.no_pce {
            s.pce = false;
        }
        if let Some(b) = self.backend {
            s.backend = b;
        }
        if let Some(g) = &self.gpus {
            s.gpus = g.clone();
        }
        if let Some(d) = &self.params_dir {
            s.params_dir = d.clone();
        }
    }
}

pub fn run(cmd: BenchCommand) -> Result<()> {
    match cmd {
        BenchCommand::Prove {
            kind,
            input,
            c1,
            sector_size,
            partition,
            compare,
            pinned,
            compact,
            no_window_tables,
            params,
            backend,
        } => {
            let params_dir = params.dir()?;
            let provers = backend.select()?;
            let request = match (input, c1.request()) {
                (Some(input), _) => load_request(&input, kind)?,
                (None, Some(request)) => request?,
                (None, None) => fresh_sample(kind, sector_size)?,
            };
            if request.kind() != kind {
                bail!("the request is {}, not {kind}", request.kind());
            }
            let backend = provers.backends[0].as_ref();
            backend.window_tables(!no_window_tables);
            bench_job(
                prepare(request)?.as_ref(),
                &params_dir,
                partition,
                compare,
                backend,
                pinned,
                compact,
            )
        }
        BenchCommand::Pipeline {
            jobs,
            kind,
            sector_size,
            config,
            overrides,
            pce_dir,
            kernel_cache,
            no_resident_bases,
            rehearse,
        } => {
            let mut settings = crate::config::load(config.as_deref())?.config.settings()?;
            overrides.apply(&mut settings);
            let data = tempfile::tempdir()?;
            settings.data_dir = data.path().to_owned();
            // Every job is submitted at once and must stay until the bench has read its end.
            settings.max_queued_jobs = settings.max_queued_jobs.max(jobs);
            settings.retention_count = settings.retention_count.max(jobs);
            settings.retention = settings
                .retention
                .max(std::time::Duration::from_secs(86_400));
            settings.pce_dir = pce_dir;
            settings.kernel_dir = kernel_cache;
            let request = sample(kind, sector_size, rehearse)?;
            let job = prepare(request.clone())?;
            let pce = match settings.pce || rehearse {
                true => {
                    let store = crate::pce::PceStore::open(&settings.pce_dir)?;
                    Some(job.circuit_id().obtain_pce(&store, false)?.0)
                }
                false => None,
            };
            // The rehearsal's parameter set: the shape the PCE's circuit asks for, random points.
            let standing_in = match (rehearse, pce) {
                (true, Some(pce)) => {
                    let shape = pce.srs_shape();
                    drop(pce);
                    let start = Instant::now();
                    let srs = crate::srs::Srs::random(shape, 1);
                    tracing::info!(
                        secs = start.elapsed().as_secs_f64(),
                        ?shape,
                        "made a parameter set of random points"
                    );
                    let files = ParameterFiles::new(&settings.params_dir, &job.parameter_set());
                    Some((files.params, srs))
                }
                _ => None,
            };
            bench_pipeline(&request, jobs, &settings, !no_resident_bases, standing_in)
        }
        BenchCommand::Synth {
            kinds,
            sector_size,
            rehearse,
            paths,
            runs,
            partition,
            pce_dir,
        } => {
            let store = crate::pce::PceStore::open(&pce_dir)?;
            let mut reports = Vec::new();
            for kind in kinds {
                let job = prepare(sample(kind, sector_size, rehearse)?)?;
                reports.push(bench_synth(
                    job.as_ref(),
                    partition,
                    &paths,
                    runs.max(1),
                    &store,
                )?);
            }
            println!(
                "{}",
                serde_json::to_string_pretty(&json!({"bench": "synth", "kinds": reports}))?
            );
            Ok(())
        }
        BenchCommand::Witness {
            kind,
            aux,
            inputs,
            domain_log2,
            pce_dir,
        } => {
            let store = crate::pce::PceStore::open(&pce_dir)?;
            let job = prepare(fresh_sample(kind, 2 << 10)?)?;
            let shape = crate::synth::HostBytes::new(1 << domain_log2, inputs, aux);
            let report = bench_witness(job.as_ref(), aux, &store)?;
            println!(
                "{}",
                serde_json::to_string_pretty(&json!({
                    "bench": "witness",
                    "kind": kind,
                    "shape": {"aux": aux, "inputs": inputs, "domain_log2": domain_log2},
                    "witness": report,
                    "reserved_bytes": {"full": shape.full, "compact": shape.compact},
                }))?
            );
            Ok(())
        }
        BenchCommand::Msm { log2 } => bench_msm(log2),
        BenchCommand::Gpu(args) => super::bench_gpu::run(args),
        BenchCommand::Load(args) => super::bench_load::run(args),
    }
}

/// A request of `kind` at `sector_size` to bench: a rehearsal's, or one freshly sealed.
fn sample(kind: ProofKind, sector_size: u64, rehearse: bool) -> Result<ProofRequest> {
    match rehearse {
        true => rehearsal(kind, sector_size),
        false => fresh_sample(kind, sector_size),
    }
}

/// A rehearsal request of `kind` at `sector_size` (see `circuits::rehearse`).
fn rehearsal(kind: ProofKind, sector_size: u64) -> Result<ProofRequest> {
    use crate::circuits::rehearse;
    let start = Instant::now();
    let request = match kind {
        ProofKind::PorepC2 => rehearse::porep_request(sector_size, 1000, 1, 1)?,
        ProofKind::SnapDeals => rehearse::snap_deals_request(sector_size, 1)?,
        ProofKind::WindowPost => rehearse::window_post_request(sector_size, 1000, 0, 1)?,
        other => bail!("{other} cannot be rehearsed (porep-c2, snap-deals and window-post can)"),
    };
    tracing::info!(
        secs = start.elapsed().as_secs_f64(),
        sector_size,
        "made a rehearsal sector"
    );
    Ok(request)
}

fn fresh_sample(kind: ProofKind, sector_size: u64) -> Result<ProofRequest> {
    let proof = [
        RegisteredSealProof::StackedDrg2KiBV1_1,
        RegisteredSealProof::StackedDrg8MiBV1_1,
        RegisteredSealProof::StackedDrg512MiBV1_1,
    ]
    .into_iter()
    .find(|p| u64::from(p.sector_size()) == sector_size)
    .with_context(|| format!("no fresh sample for sector size {sector_size}: pass --input"))?;
    let dir = tempfile::tempdir()?;
    let start = Instant::now();
    let request = sample_request(kind, proof, 1000, dir.path())?;
    tracing::info!(
        secs = start.elapsed().as_secs_f64(),
        %kind,
        "made a fresh sample with filecoin-proofs"
    );
    Ok(request)
}

fn bench_job(
    job: &dyn OracleJob,
    params_dir: &std::path::Path,
    partition: usize,
    compare: Option<Baseline>,
    backend: &dyn Backend,
    pinned: bool,
    compact: bool,
) -> Result<()> {
    if partition >= job.partitions() {
        bail!(
            "--partition {partition} is out of range: the job has {} partitions",
            job.partitions()
        );
    }
    let files = ParameterFiles::new(params_dir, &job.parameter_set());
    let params_path = files.params.clone();
    let srs = load_srs(&params_path)?;
    let vk = files.verifying_key(|| srs.vk.clone());
    let mut rng = ChaCha8Rng::seed_from_u64(0xbe7c);
    let (r, s) = (Scalar::random(&mut rng), Scalar::random(&mut rng));

    // With `pinned`, a pool for one partition, registered with the backend.
    let pooled = pooled_sizes(&srs);
    let pool = match pinned {
        true => Some(PinnedPool::new(
            pooled.iter().map(|b| b.next_multiple_of(GRANULE)).sum(),
        )?),
        false => None,
    };
    let register_s = match &pool {
        Some(pool) => backend.register_pool(pool)?.map(|t| t.as_secs_f64()),
        None => None,
    };
    let lease = pool.as_ref().and_then(|p| p.lease(&pooled));
    let start = Instant::now();
    let synth = job
        .synthesize_with(
            partition,
            Through::Full,
            &PoolBuffers::new(lease.as_ref(), &pooled),
        )?
        .0
        .into_full();
    let synthesis_s = start.elapsed().as_secs_f64();
    let reserved = crate::engine::partition_bytes(&srs);
    let held_bytes = (synth.heap_bytes() + synth.lent_bytes()) as u64;
    if pinned && !synth.all_lent() {
        bail!("the partition's vectors did not fit the page-locked pool");
    }
    let constraints = synth.num_constraints();
    let cpu_synth = (compare == Some(Baseline::Cpu)).then(|| synth.clone());
    let compact_synth = match compact {
        true => Some(compact_synthesis(job, partition, backend, &pooled)?),
        false => None,
    };
    backend.record_stages(true);
    if backend.name() != "cpu" {
        // Warm-up on a copy: kernel loading and first-use costs stay out of the figures.
        prove(backend, &srs, synth.clone(), r, s)?;
        backend.stage_times();
    }
    let (proof, timings) = prove(backend, &srs, synth, r, s)?;
    let device_stages = backend.stage_times();
    let prove_s = timings.total.as_secs_f64();
    let mut ours = Vec::new();
    proof.write(&mut ours)?;
    // Whether a proof verifies, where one partition is the whole proof.
    let verify = |proof: crate::groth16::Proof<blstrs::Bls12>| {
        (job.partitions() == 1).then(|| job.finish(&[proof], &vk).is_ok())
    };
    let verified = verify(proof);

    let mut report = json!({
        "bench": "prove",
        "kind": job.kind(),
        "circuit": job.circuit_id(),
        "partition": partition,
        "constraints": constraints,
        "domain_log2": constraints.next_power_of_two().trailing_zeros(),
        "threads": rayon::current_num_threads(),
        "cuzk": {
            "backend": backend.name(),
            "device_stages": device_stages,
            "synthesis_s": synthesis_s,
            "pinned": pool.as_ref().map(|p| json!({
                "locked_bytes": p.status().locked_bytes,
                "lock_s": p.status().lock_seconds,
                "register_s": register_s,
            })),
            "prove_s": prove_s,
            "stages": timings,
            "verified": verified,
            "held_bytes": held_bytes,
            "reserved_bytes": reserved.full,
        },
    });

    if let Some(through_pce) = compact_synth {
        let same_bytes = |proof: &crate::groth16::Proof<blstrs::Bls12>| -> Result<bool> {
            let mut bytes = Vec::new();
            proof.write(&mut bytes)?;
            Ok(bytes == ours)
        };
        let (synth, synthesis_s) = through_pce.host;
        let held_bytes = synth.heap_bytes();
        let (pce_proof, timings) = prove(backend, &srs, synth, r, s)?;
        report["pce"] = json!({
            "synthesis_s": synthesis_s,
            "held_bytes": held_bytes,
            "reserved_bytes": reserved.full,
            "prove_s": timings.total.as_secs_f64(),
            "identical": same_bytes(&pce_proof)?,
            "verified": verify(pce_proof),
        });
        let (proof, synthesis_s) = through_pce.compact;
        let witness_bytes = proof.heap_bytes();
        // Warm-up: the PCE's first upload stays out of the figures.
        prove(backend, &srs, proof.clone(), r, s)?;
        backend.stage_times();
        let (compact_proof, timings) = prove(backend, &srs, proof, r, s)?;
        report["compact"] = json!({
            "synthesis_s": synthesis_s,
            "witness_bytes": witness_bytes,
            "held_bytes": witness_bytes,
            "reserved_bytes": through_pce.reserved,
            "abc_on_backend": through_pce.evaluates,
            "device_stages": backend.stage_times(),
            "prove_s": timings.total.as_secs_f64(),
            "stages": timings,
            "identical": same_bytes(&compact_proof)?,
            "verified": verify(compact_proof),
        });
    }

    if let Some(synth) = cpu_synth {
        let (cpu_proof, cpu_timings) = prove(&CpuBackend, &srs, synth, r, s)?;
        let mut theirs = Vec::new();
        cpu_proof.write(&mut theirs)?;
        let cpu_s = cpu_timings.total.as_secs_f64();
        report["cpu"] = json!({"prove_s": cpu_s, "stages": cpu_timings});
        report["prove_ratio"] = json!(prove_s / cpu_s);
        report["identical"] = json!(ours == theirs);
    }
    drop(srs);

    if let Some(Baseline::Bellperson) = compare {
        let file = std::fs::File::open(&params_path)
            .with_context(|| format!("opening {}", params_path.display()))?;
        let load = Instant::now();
        let params = bellperson::groth16::Parameters::read(std::io::BufReader::new(file), false)
            .context("bellperson reading parameters")?;
        tracing::info!(
            secs = load.elapsed().as_secs_f64(),
            "bellperson parameters loaded"
        );
        let start = Instant::now();
        let theirs_proof = job.bellperson_proof(partition, &params, r, s)?;
        let total_s = start.elapsed().as_secs_f64();
        let mut theirs = Vec::new();
        theirs_proof.write(&mut theirs)?;
        let b_synth = logging::take_bellperson_time("synthesis time").map(|d| d.as_secs_f64());
        let b_prove = logging::take_bellperson_time("prover time").map(|d| d.as_secs_f64());
        let b_prove_s = b_prove.unwrap_or(total_s);
        report["bellperson"] = json!({
            "synthesis_s": b_synth,
            "prove_s": b_prove_s,
            "total_s": total_s,
        });
        report["prove_ratio"] = json!(prove_s / b_prove_s);
        report["total_ratio"] = json!((synthesis_s + prove_s) / total_s);
        report["identical"] = json!(ours == theirs);
    }
    println!("{}", serde_json::to_string_pretty(&report)?);
    Ok(())
}

/// A partition synthesized through its PCE both ways, each with its synthesis seconds.
struct ThroughPce {
    /// a, b and c by the host's SpMV.
    host: (crate::synth::SynthesizedProof, f64),
    compact: (crate::pce::CompactProof, f64),
    /// What the engine reserves for the compact partition (from the PCE's proven bits).
    reserved: u64,
    /// Whether the backend computes a, b and c itself.
    evaluates: bool,
}

/// `job`'s partition through its PCE (extracted into a temporary store): a, b, c by the
/// host's SpMV into heap vectors sized as the engine sizes them, and its compact witness.
fn compact_synthesis(
    job: &dyn OracleJob,
    partition: usize,
    backend: &dyn Backend,
    sizes: &[usize; 4],
) -> Result<ThroughPce> {
    let dir = tempfile::tempdir()?;
    let store = crate::pce::PceStore::open(dir.path())?;
    let (pce, _) = job.circuit_id().obtain_pce(&store, false)?;
    let evaluates = backend.evaluates(&pce);
    let start = Instant::now();
    let (synth, path) = job.synthesize_with(
        partition,
        Through::Pce(&pce),
        &PoolBuffers::new(None, sizes),
    )?;
    if path != crate::synth::SynthPath::Pce {
        bail!("the PCE synthesis took the {} path", path.as_str())
    }
    let host = (synth.into_full(), start.elapsed().as_secs_f64());
    let reserved = pce.compact_bytes();
    let shared: std::sync::Arc<dyn crate::pce::HoldsPce> = std::sync::Arc::new(pce);
    let start = Instant::now();
    let (synth, path) =
        job.synthesize_with(partition, Through::Compact(&shared), &crate::synth::Heap)?;
    let synthesis_s = start.elapsed().as_secs_f64();
    match synth {
        crate::pce::Synthesized::Compact(proof) => Ok(ThroughPce {
            host,
            compact: (proof, synthesis_s),
            reserved,
            evaluates,
        }),
        crate::pce::Synthesized::Full(_) => {
            bail!("the compact synthesis took the {} path", path.as_str())
        }
    }
}

/// One kind's synthesis both ways, into heap vectors sized as the engine sizes them. Memory is
/// the peak RSS growth during one synthesis (freed heap trimmed and the peak reset first; the
/// PCE's mapped pages are resident before, so they are not in it: `pce_file.bytes` says what
/// they hold).
fn bench_synth(
    job: &dyn ProofJob,
    partition: usize,
    choices: &[SynthChoice],
    runs: usize,
    store: &crate::pce::PceStore,
) -> Result<serde_json::Value> {
    if choices.is_empty() {
        bail!("--paths names no path");
    }
    use crate::synth::SynthPath;
    let circuit = job.circuit_id();
    let start = Instant::now();
    let (_, obtained) = circuit.obtain_pce(store, false)?;
    let obtain_s = start.elapsed().as_secs_f64();
    let start = Instant::now();
    let pce = std::sync::Arc::new(
        store
            .load(&circuit.pce_key()?)?
            .context("the PCE file vanished after extraction")?,
    );
    let load_s = start.elapsed().as_secs_f64();
    let shared: std::sync::Arc<dyn crate::pce::HoldsPce> = pce.clone();
    // What the engine reserves for a partition of this shape on each path, and the heap
    // vectors it gives where no pool buffer is lent: room for the whole of each from the start.
    let shape = pce.shape();
    let domain = shape.constraints.next_power_of_two();
    let mut estimates = crate::synth::HostBytes::new(domain, shape.inputs, shape.aux);
    estimates.compact = pce.compact_bytes();
    let heap = crate::synth::SizedHeap([domain, domain, domain, shape.aux]);
    let paths: Vec<(Through<'_>, SynthPath)> = choices
        .iter()
        .map(|choice| match choice {
            SynthChoice::Full => (Through::Full, SynthPath::Full),
            SynthChoice::Pce => (Through::Pce(&pce), SynthPath::Pce),
            SynthChoice::Compact => (Through::Compact(&shared), SynthPath::Compact),
        })
        .collect();
    // Comparing paths means a digest of each one's a, b and c (a compact one expanded on the
    // host): only where there is something to compare.
    let compare = paths.len() > 1;
    let mut held = vec![0; paths.len()];
    let mut witness_mix = serde_json::Value::Null;
    let mut seconds = vec![Vec::new(); paths.len()];
    let mut peaks = vec![Vec::new(); paths.len()];
    let mut digests = vec![None; paths.len()];
    let mut synthesized_bytes = 0;
    for run in 0..runs {
        // Alternate which path goes first.
        for i in (0..paths.len()).map(|i| (i + run) % paths.len()) {
            let (with, want) = paths[i];
            let before = reset_peak_rss();
            let start = Instant::now();
            let (synth, path) = job.synthesize_with(partition, with, &heap)?;
            seconds[i].push(start.elapsed().as_secs_f64());
            peaks[i].push(proc_status_bytes("VmHWM:").saturating_sub(before));
            if path != want {
                bail!(
                    "{} synthesis took the {} path",
                    want.as_str(),
                    path.as_str()
                );
            }
            held[i] = synth.heap_bytes();
            match &synth {
                crate::pce::Synthesized::Compact(proof) => {
                    let (zeros, ones, others) = proof.witness.counts();
                    witness_mix = json!({"zeros": zeros, "ones": ones, "others": others});
                }
                crate::pce::Synthesized::Full(_) => synthesized_bytes = synth.heap_bytes(),
            }
            if compare {
                digests[i].get_or_insert_with(|| digest(&synth.into_full()));
            }
        }
    }
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let mut report = json!({
        "kind": job.kind(),
        "circuit": circuit,
        "partition": partition,
        "threads": rayon::current_num_threads(),
        "pce_file": {
            "extracted_now": obtained == crate::pce::Obtained::Extracted,
            "obtain_s": obtain_s,
            "load_s": load_s,
            "bytes": pce.bytes(),
            "constraints": pce.shape().constraints,
            "aux": pce.shape().aux,
            "nnz": pce.nnz(),
            "coefficients": pce.coefficients().len(),
            "most_others": pce.most_others(),
        },
        "synthesized_bytes": synthesized_bytes,
        "witness_mix": witness_mix,
    });
    for (i, (_, path)) in paths.iter().enumerate() {
        report[path.as_str()] = json!({
            "synthesis_s": median(&mut seconds[i]),
            "runs_s": seconds[i],
            "peak_rss_growth_bytes": peaks[i].iter().max(),
            "held_bytes": held[i],
            "reserved_bytes": estimates.on(*path),
        });
    }
    // Every path gives the same proof (a compact one expanded on the host to compare).
    if compare {
        report["identical"] = json!(digests.iter().all(|d| *d == digests[0]));
    }
    if choices.contains(&SynthChoice::Full) && choices.contains(&SynthChoice::Pce) {
        report["speedup"] = json!(
            report["full"]["synthesis_s"].as_f64().unwrap_or(0.0)
                / report["pce"]["synthesis_s"].as_f64().unwrap_or(f64::NAN)
        );
    }
    Ok(report)
}

/// A compact witness of `aux` values made from `job`'s partition 0 (synthesized compact through
/// its PCE, extracted into `store` if missing), repeated: its mix, bytes and peak RSS growth.
fn bench_witness(
    job: &dyn ProofJob,
    aux: usize,
    store: &crate::pce::PceStore,
) -> Result<serde_json::Value> {
    let (pce, _) = job.circuit_id().obtain_pce(store, false)?;
    let pce: std::sync::Arc<dyn crate::pce::HoldsPce> = std::sync::Arc::new(pce);
    let source = match job.synthesize_with(0, Through::Compact(&pce), &crate::synth::Heap)? {
        (crate::pce::Synthesized::Compact(proof), _) => proof.witness,
        (_, path) => bail!("the compact synthesis took the {} path", path.as_str()),
    };
    let before = reset_peak_rss();
    let start = Instant::now();
    let mut witness = crate::synth::CompactWitness::with_capacity(aux);
    while witness.len() < aux {
        witness.extend_from_first(&source, aux - witness.len());
    }
    witness.shrink_to_fit();
    let made_s = start.elapsed().as_secs_f64();
    let peak = proc_status_bytes("VmHWM:").saturating_sub(before);
    let (zeros, ones, others) = witness.counts();
    Ok(json!({
        "source_values": source.len(),
        "values": witness.len(),
        "zeros": zeros,
        "ones": ones,
        "others": others,
        "held_bytes": witness.heap_bytes(),
        "peak_rss_growth_bytes": peak,
        "made_s": made_s,
    }))
}

/// SHA-256 of everything a synthesized proof holds: equal digests, equal proofs.
fn digest(synth: &crate::synth::SynthesizedProof) -> [u8; 32] {
    use ff::PrimeField;
    use sha2::{Digest, Sha256};
    let mut h = Sha256::new();
    for values in [&synth.a[..], &synth.b, &synth.c, &synth.inputs, &synth.aux] {
        h.update((values.len() as u64).to_le_bytes());
        for v in values.iter() {
            h.update(v.to_repr());
        }
    }
    for d in [
        &synth.a_aux_density,
        &synth.b_input_density,
        &synth.b_aux_density,
    ] {
        h.update((d.len() as u64).to_le_bytes());
        for w in d.words() {
            h.update(w.to_le_bytes());
        }
    }
    h.finalize().into()
}

/// Gives freed heap back to the system and resets this process's peak RSS (VmHWM) to its
/// current RSS (Linux: clear_refs 5); returns that RSS.
fn reset_peak_rss() -> u64 {
    // SAFETY: malloc_trim only returns free memory of glibc's arenas to the system.
    unsafe { libc::malloc_trim(0) };
    if let Err(e) = std::fs::write("/proc/self/clear_refs", "5") {
        tracing::warn!(error = %e, "cannot reset the peak RSS: peaks are since process start");
    }
    proc_status_bytes("VmRSS:")
}

/// `VmHWM` (peak resident set) or `VmRSS` of this process, bytes.
fn proc_status_bytes(key: &str) -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|t| {
            t.lines()
                .find_map(|l| l.strip_prefix(key))
                .and_then(|v| v.trim().strip_suffix("kB"))
                .and_then(|v| v.trim().parse::<u64>().ok())
        })
        .map_or(0, |kb| kb * 1024)
}

/// `jobs` copies of `request` through the appliance `settings` describe, all submitted at once.
fn bench_pipeline(
    request: &ProofRequest,
    jobs: usize,
    settings: &Settings,
    resident_bases: bool,
    rehearsal: Option<(PathBuf, crate::srs::Srs)>,
) -> Result<()> {
    use crate::engine::Stage;
    use crate::jobs::JobState;

    let owner = crate::jobs::DataDirLock::take(&settings.data_dir)?;
    let appliance = assemble(settings, owner, None, None)?;
    let rehearsing = rehearsal.is_some();
    if let Some((path, srs)) = rehearsal {
        appliance.engine.rehearse(&path, srs)?;
    }
    for b in &appliance.backends {
        b.keep_bases(resident_bases);
    }
    let (engine, counters) = (&appliance.engine, &appliance.metrics);
    let backends = &appliance.backends;
    let devices = backends.len();
    let backend = backends.first().map_or("cpu", |b| b.name());
    let body = serde_json::to_vec(request)?;
    let rss_before = proc_status_bytes("VmRSS:");
    let start = Instant::now();
    let ids: Vec<String> = (0..jobs).map(|i| format!("bench-{i}")).collect();
    for id in &ids {
        engine
            .submit(id, request.kind(), &body)
            .map_err(|e| anyhow::anyhow!("{e}"))?;
    }
    let busy_now = |b: &std::sync::Arc<dyn Backend>| b.device_busy().unwrap_or_default();
    let device_before: Vec<_> = backends.iter().map(busy_now).collect();
    let (mut samples, mut peak_reserved, mut peak_held) = (0u64, 0u64, 0u64);
    let mut stage_sum = [0i64; Stage::ALL.len()];
    loop {
        let status = engine.status();
        samples += 1;
        peak_reserved = peak_reserved.max(status.memory.reserved_bytes);
        peak_held = peak_held.max(status.memory.held_bytes);
        for (i, c) in status.ledger.iter().enumerate() {
            stage_sum[i] += c.buffers;
        }
        let done = ids
            .iter()
            .filter(|id| engine.get(id).is_some_and(|r| r.state.is_final()))
            .count();
        if done == jobs {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let elapsed = start.elapsed().as_secs_f64();
    let slot_busy = appliance.slots.busy();
    let prover_busy =
        slot_busy.iter().map(|d| d.as_secs_f64()).sum::<f64>() / (elapsed * slot_busy.len() as f64);
    // Only GPUs report device time; the CPU's prover is busy while a slot is held.
    let device_busy: Vec<f64> = backends
        .iter()
        .zip(&device_before)
        .zip(&slot_busy)
        .map(|((b, before), slot)| match b.device_busy() {
            Some(now) => (now - *before).as_secs_f64() / elapsed,
            None => slot.as_secs_f64() / elapsed,
        })
        .collect();
    let done = ids
        .iter()
        .filter(|id| engine.get(id).is_some_and(|r| r.state == JobState::Done))
        .count();
    // A rehearsal's proofs end unverified (random parameters).
    let verified = if rehearsing { 0 } else { done };
    let occupancy: serde_json::Map<String, serde_json::Value> = Stage::ALL
        .iter()
        .zip(stage_sum)
        .map(|(s, sum)| (s.as_str().to_owned(), json!(sum as f64 / samples as f64)))
        .collect();
    let budget = &appliance.budget;
    let kind = request.kind().as_str();
    println!(
        "{}",
        serde_json::to_string_pretty(&json!({
            "bench": "pipeline",
            "kind": request.kind(),
            "jobs": jobs,
            "workers": appliance.concurrency.workers,
            "depth": appliance.concurrency.depth,
            "backend": backend,
            "devices": devices,
            "prover_slots": slot_busy.len(),
            "budget_bytes": budget.total_bytes,
            "budget_source": budget.source.to_string(),
            "pinned_pool": appliance.pool.as_ref().map(|p| p.status()),
            "synthesis_buffer_bytes": {
                "pinned": counters.synthesis_buffer_bytes.with_label_values(&[kind, "pinned"]).get(),
                "heap": counters.synthesis_buffer_bytes.with_label_values(&[kind, "heap"]).get(),
            },
            "elapsed_s": elapsed,
            "proofs_per_hour": jobs as f64 * 3600.0 / elapsed,
            "done": done,
            "verified": verified,
            "rehearsal": rehearsing,
            "rss_before_bytes": rss_before,
            "peak_rss_bytes": proc_status_bytes("VmHWM:"),
            "peak_reserved_bytes": peak_reserved,
            "peak_held_bytes": peak_held,
            "finish": settings.finish,
            "resident_bases": resident_bases,
            "prover_busy_fraction": prover_busy,
            "device_busy_fraction": device_busy,
            "mean_partitions_per_stage": occupancy,
            "pce": settings.pce,
            "syntheses": {
                "pce": counters.syntheses.with_label_values(&[kind, "pce"]).get(),
                "full": counters.syntheses.with_label_values(&[kind, "full"]).get(),
                "compact": counters.syntheses.with_label_values(&[kind, "compact"]).get(),
            },
        }))?
    );
    if done != jobs {
        bail!("{} of {jobs} jobs did not end done", jobs - done);
    }
    Ok(())
}

/// Times one G1 MSM of 2^log2 random points and scalars (no parameters needed).
fn bench_msm(log2: u32) -> Result<()> {
    use blstrs::G1Projective;
    use rayon::prelude::*;
    let n = 1usize << log2;
    let start = Instant::now();
    let bases = super::selftest::random_bases::<G1Projective>(n, 0);
    let scalars: Vec<Scalar> = (0..n)
        .into_par_iter()
        .map_init(
            || ChaCha8Rng::seed_from_u64(rayon::current_thread_index().unwrap_or(0) as u64 + 77),
            |rng, _| Scalar::random(rng),
        )
        .collect();
    let setup_s = start.elapsed().as_secs_f64();
    let start = Instant::now();
    crate::groth16::msm::msm::<G1Projective>(&bases, &scalars);
    let msm_s = start.elapsed().as_secs_f64();
    println!(
        "{}",
        json!({"bench": "msm", "n": n, "setup_s": setup_s, "msm_s": msm_s})
    );
    Ok(())
}
