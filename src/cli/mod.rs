//! The `cuzk` command line: thin wrappers over the library, one file per command family.

mod appliance;
mod bench;
mod bench_gpu;
mod bench_load;
mod config;
mod kernels;
mod logging;
mod params;
mod pce;
mod prove;
mod selftest;
mod serve;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};
use clap::{Parser, Subcommand};

use crate::circuits::ProofKind;
use crate::config::Finish;
use crate::gpu::BackendChoice;

#[derive(Parser)]
#[command(name = "cuzk", version, about = "Filecoin Groth16 proving appliance")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the service: REST API, job store and prover (what systemd starts).
    Serve(serve::ServeArgs),
    /// The service's configuration.
    #[command(subcommand)]
    Config(config::ConfigCommand),
    /// Prove a job from files and write the proof bytes (verified first).
    Prove(prove::ProveArgs),
    /// Groth16 parameter files.
    #[command(subcommand)]
    Params(params::ParamsCommand),
    /// Pre-compiled constraint evaluators (recorded R1CS matrices).
    #[command(subcommand)]
    Pce(pce::PceCommand),
    /// Measure the prover, optionally against bellperson in the same run.
    #[command(subcommand)]
    Bench(bench::BenchCommand),
    /// Check the GPU kernels against the CPU backend.
    Selftest(selftest::SelftestArgs),
    /// The GPU kernels' compiled form.
    #[command(subcommand)]
    Kernels(kernels::KernelsCommand),
    /// Ask a running service to read its configuration again (SIGHUP; the unit's ExecReload).
    Reload(serve::ReloadArgs),
}

/// Where the CLI commands cache compiled GPU kernels (the service uses <data_dir>/kernels).
pub const DEFAULT_KERNEL_CACHE: &str = "/var/tmp/cuzk-kernels";

/// Which backend proves, for the commands that prove.
#[derive(clap::Args, Clone, Debug)]
pub struct BackendArgs {
    /// auto: every GPU found, else the CPU; cpu; gpu: fail without one.
    #[arg(long, default_value = "auto", value_parser = backend_parser())]
    pub backend: BackendChoice,
    /// GPU ordinals to use (default: all).
    #[arg(long, value_delimiter = ',')]
    pub gpus: Vec<usize>,
    /// Where compiled kernels are cached.
    #[arg(long, default_value = DEFAULT_KERNEL_CACHE)]
    pub kernel_cache: PathBuf,
}

impl BackendArgs {
    pub fn select(&self) -> anyhow::Result<crate::gpu::Provers> {
        crate::gpu::select(self.backend, &self.gpus, &self.kernel_cache)
    }
}

/// Where Groth16 parameter files are looked up.
#[derive(clap::Args, Clone, Debug)]
pub struct ParamsLocation {
    /// Directory of .params/.vk files (default: FIL_PROOFS_PARAMETER_CACHE, else
    /// /var/tmp/filecoin-proof-parameters).
    #[arg(long, value_name = "DIR")]
    pub params_dir: Option<PathBuf>,
}

impl ParamsLocation {
    /// The directory, which must exist.
    fn dir(&self) -> anyhow::Result<PathBuf> {
        let dir = self
            .params_dir
            .clone()
            .unwrap_or_else(crate::config::default_params_dir);
        if !dir.is_dir() {
            anyhow::bail!("parameter directory {} does not exist", dir.display());
        }
        Ok(dir)
    }
}

/// A clap parser of the names `values`, parsed with `T`'s FromStr (the names show in --help and
/// in the error for an unknown one).
fn named<T>(values: Vec<PossibleValue>) -> impl TypedValueParser<Value = T>
where
    T: std::str::FromStr + Clone + Send + Sync + 'static,
    T::Err: std::fmt::Debug,
{
    PossibleValuesParser::new(values).map(|s| s.parse::<T>().expect("one of the listed names"))
}

/// Proof kinds by name; `porep` and `snap` for short.
fn kind_parser() -> impl TypedValueParser<Value = ProofKind> {
    named(
        ProofKind::ALL
            .iter()
            .map(|k| match k {
                ProofKind::PorepC2 => PossibleValue::new(k.as_str()).alias("porep"),
                ProofKind::SnapDeals => PossibleValue::new(k.as_str()).alias("snap"),
                _ => PossibleValue::new(k.as_str()),
            })
            .collect(),
    )
}

fn backend_parser() -> impl TypedValueParser<Value = BackendChoice> {
    named(
        BackendChoice::ALL
            .iter()
            .map(|b| b.as_str().into())
            .collect(),
    )
}

fn finish_parser() -> impl TypedValueParser<Value = Finish> {
    named(Finish::ALL.iter().map(|f| f.as_str().into()).collect())
}

pub fn run() -> ExitCode {
    let cli = Cli::parse();
    logging::init();
    let result = match cli.command {
        Command::Serve(args) => serve::run(args),
        Command::Config(cmd) => config::run(cmd),
        Command::Prove(cmd) => prove::run(cmd),
        Command::Params(cmd) => params::run(cmd),
        Command::Pce(cmd) => pce::run(cmd),
        Command::Bench(cmd) => bench::run(cmd),
        Command::Selftest(args) => selftest::run(args),
        Command::Kernels(cmd) => kernels::run(cmd),
        Command::Reload(args) => serve::reload_running(args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
