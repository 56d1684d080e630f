//! `cuzk params ...`

use std::path::PathBuf;

use anyhow::Result;
use clap::Subcommand;

use crate::circuits::params::generate;
use crate::circuits::{parse_sector_size, ProofKind};

#[derive(Subcommand)]
pub enum ParamsCommand {
    /// Make random (test-only) parameters through filecoin-proofs' generate-if-missing path.
    Generate {
        /// The proof kind whose circuit the parameters are for.
        #[arg(long, value_enum)]
        kind: ProofKind,
        /// Sector size, e.g. 2KiB or 32GiB.
        #[arg(long, value_parser = parse_sector_size)]
        sector_size: u64,
        /// Cache directory (kept between runs; files keep filecoin-proofs' names).
        #[arg(long)]
        dir: PathBuf,
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
            for f in &files {
                println!("{}", f.display());
            }
            tracing::info!(
                elapsed_s = start.elapsed().as_secs_f64(),
                "parameters ready"
            );
            Ok(())
        }
    }
}
