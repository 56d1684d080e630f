//! `cuzk config show`: the effective configuration and where each value came from.

use std::path::PathBuf;

use anyhow::Result;
use clap::Subcommand;

use crate::config;

#[derive(Subcommand)]
pub enum ConfigCommand {
    /// Print every key with its effective value and its source (default, file, environment).
    Show {
        /// Configuration file (default /etc/cuzk/cuzk.toml, when it exists).
        #[arg(long, value_name = "FILE")]
        config: Option<PathBuf>,
    },
}

pub fn run(cmd: ConfigCommand) -> Result<()> {
    match cmd {
        ConfigCommand::Show { config: path } => {
            let loaded = config::load(path.as_deref())?;
            loaded.config.settings()?;
            print!("{}", loaded.show()?);
            Ok(())
        }
    }
}
