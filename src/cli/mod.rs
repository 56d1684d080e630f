//! The `cuzk` command line: thin wrappers over the library, one file per command family.

mod bench;
mod config;
mod logging;
mod params;
mod pce;
mod prove;
mod selftest;
mod serve;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

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
}

/// Where the CLI commands cache compiled GPU kernels (the service uses <data_dir>/kernels).
pub const DEFAULT_KERNEL_CACHE: &str = "/var/tmp/cuzk-kernels";

/// Which backend proves, for the commands that prove.
#[derive(clap::Args, Clone, Debug)]
pub struct BackendArgs {
    /// auto: every GPU found, else the CPU; cpu; gpu: fail without one.
    #[arg(long, value_enum, default_value = "auto")]
    pub backend: crate::groth16::BackendChoice,
    /// GPU ordinals to use (default: all).
    #[arg(long, value_delimiter = ',')]
    pub gpus: Vec<usize>,
    /// Where compiled kernels are cached.
    #[arg(long, default_value = DEFAULT_KERNEL_CACHE)]
    pub kernel_cache: PathBuf,
}

impl BackendArgs {
    pub fn select(&self) -> anyhow::Result<crate::groth16::Provers> {
        crate::groth16::select(self.backend, &self.gpus, &self.kernel_cache)
    }
}

/// Where filecoin-proofs parameter files are looked up.
#[derive(clap::Args, Clone, Debug)]
pub struct ParamsLocation {
    /// Directory of .params/.vk files (sets FIL_PROOFS_PARAMETER_CACHE for this process).
    #[arg(long, value_name = "DIR")]
    pub params_dir: Option<PathBuf>,
}

impl ParamsLocation {
    /// Applies the location; must run before filecoin-proofs reads its settings.
    fn apply(&self) -> anyhow::Result<()> {
        if let Some(dir) = &self.params_dir {
            if !dir.is_dir() {
                anyhow::bail!("parameter directory {} does not exist", dir.display());
            }
            // SAFETY (of set_var): single-threaded here, before any library reads the variable.
            std::env::set_var(crate::circuits::params::PARAMETER_CACHE_ENV, dir);
        }
        Ok(())
    }
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
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
