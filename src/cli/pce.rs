//! `cuzk pce ...`

use std::path::PathBuf;
use std::time::Instant;

use anyhow::Result;
use clap::Subcommand;
use serde_json::json;

use super::kind_parser;
use crate::circuits::{parse_sector_size, CircuitId, ProofKind};
use crate::pce::{Obtained, PceStore};

/// Where the CLI commands keep PCE files (the service uses <data_dir>/pce).
pub const DEFAULT_PCE_DIR: &str = "/var/tmp/cuzk-pce";

#[derive(Subcommand)]
pub enum PceCommand {
    /// Record a circuit's constraint matrices from its blank circuit into the PCE directory,
    /// unless a good file is there (the service does this by itself the first time it proves a
    /// kind). Prints one JSON line.
    Extract {
        #[arg(long, value_parser = kind_parser())]
        kind: ProofKind,
        /// Sector size, e.g. 2KiB or 32GiB.
        #[arg(long, value_parser = parse_sector_size)]
        sector_size: u64,
        #[arg(long, default_value = DEFAULT_PCE_DIR)]
        dir: PathBuf,
        /// Record and write it anew even if a good file is there.
        #[arg(long)]
        force: bool,
    },
}

pub fn run(cmd: PceCommand) -> Result<()> {
    match cmd {
        PceCommand::Extract {
            kind,
            sector_size,
            dir,
            force,
        } => {
            let circuit = CircuitId::new(kind, sector_size);
            let store = PceStore::open(&dir)?;
            let start = Instant::now();
            let (pce, obtained) = circuit.obtain_pce(&store, force)?;
            let shape = pce.shape();
            println!(
                "{}",
                json!({
                    "circuit": circuit,
                    "path": store.path(circuit.as_str()),
                    "extracted": obtained == Obtained::Extracted,
                    "seconds": start.elapsed().as_secs_f64(),
                    "bytes": pce.bytes(),
                    "inputs": shape.inputs,
                    "aux": shape.aux,
                    "constraints": shape.constraints,
                    "nnz": pce.nnz(),
                    "coefficients": pce.coefficients().len(),
                    "most_others": pce.most_others(),
                })
            );
            Ok(())
        }
    }
}
