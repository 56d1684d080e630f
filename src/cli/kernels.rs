//! `cuzk kernels build`: compiles the GPU kernels with NVRTC into the cubin cache without a GPU
//! (to prepare a cache ahead of a first start, or for a machine with no time to compile).

use std::path::PathBuf;

use anyhow::Result;
use clap::Subcommand;

use crate::gpu::kernels;

#[derive(Subcommand)]
pub enum KernelsCommand {
    /// Compile the kernels for an architecture into the cache (kept if already there).
    Build {
        /// The architecture, as NVRTC names it.
        #[arg(long, default_value = "sm_90")]
        arch: String,
        /// The cubin cache: the service's is <data_dir>/kernels.
        #[arg(long, default_value = super::DEFAULT_KERNEL_CACHE)]
        kernel_cache: PathBuf,
        /// Compile the field arithmetic from its portable C++ instead of PTX carry chains (a
        /// cubin of its own, for `selftest --portable-field`).
        #[arg(long)]
        portable_field: bool,
    },
}

pub fn run(cmd: KernelsCommand) -> Result<()> {
    match cmd {
        KernelsCommand::Build {
            arch,
            kernel_cache,
            portable_field,
        } => {
            let field = kernels::FieldCode::portable(portable_field);
            let (cubin, origin, took) = kernels::load(&kernel_cache, &arch, field)?;
            println!(
                "{} ({} bytes, {:?} in {:.1} s)",
                kernels::cache_path(&kernel_cache, &arch, field)?.display(),
                cubin.len(),
                origin,
                took.as_secs_f64()
            );
            Ok(())
        }
    }
}
