//! Which backends prove: the GPUs found (one [`GpuBackend`] per device), or the CPU.

use std::path::Path;
use std::sync::Arc;

use anyhow::{bail, Result};
use serde::{Deserialize, Serialize};

use super::kernels::FieldCode;
use super::{GpuBackend, GpuInfo};
use crate::groth16::{Backend, CpuBackend};

/// Which backends prove (`proving.backend`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BackendChoice {
    /// Every GPU found (or those of `proving.gpus`); the CPU when there is none.
    #[default]
    Auto,
    /// The CPU, even where there are GPUs.
    Cpu,
    /// The GPUs; refuse to start without one.
    Gpu,
}

impl BackendChoice {
    pub const ALL: [BackendChoice; 3] =
        [BackendChoice::Auto, BackendChoice::Cpu, BackendChoice::Gpu];

    pub fn as_str(self) -> &'static str {
        match self {
            BackendChoice::Auto => "auto",
            BackendChoice::Cpu => "cpu",
            BackendChoice::Gpu => "gpu",
        }
    }
}

impl std::str::FromStr for BackendChoice {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        BackendChoice::ALL
            .into_iter()
            .find(|c| c.as_str() == s)
            .ok_or_else(|| format!("{s:?} is not a backend (auto, cpu, gpu)"))
    }
}

/// The backends chosen, one per GPU, or the CPU alone.
pub struct Provers {
    pub backends: Vec<Arc<dyn Backend>>,
    pub gpus: Vec<GpuInfo>,
}

impl Provers {
    pub fn cpu() -> Provers {
        Provers {
            backends: vec![Arc::new(CpuBackend)],
            gpus: Vec::new(),
        }
    }

    /// "cpu" or "gpu".
    pub fn name(&self) -> &'static str {
        self.backends.first().map_or("cpu", |b| b.name())
    }
}

/// Chooses the backends. `kernel_cache` holds the compiled kernels.
pub fn select(choice: BackendChoice, gpus: &[usize], kernel_cache: &Path) -> Result<Provers> {
    if choice == BackendChoice::Cpu {
        tracing::info!("proving on the CPU (proving.backend = \"cpu\")");
        return Ok(Provers::cpu());
    }
    let found = match super::discover(gpus) {
        Ok(found) => found,
        Err(reason) if choice == BackendChoice::Auto => {
            tracing::info!(reason = %reason, "no GPU: proving on the CPU");
            return Ok(Provers::cpu());
        }
        Err(reason) => bail!("proving.backend is \"gpu\" but there is no usable GPU: {reason}"),
    };
    let mut provers = Provers {
        backends: Vec::new(),
        gpus: Vec::new(),
    };
    for g in &found {
        match GpuBackend::new(g, kernel_cache, FieldCode::CarryChains) {
            Ok(b) => {
                provers.gpus.push(g.info.clone());
                provers.backends.push(Arc::new(b));
            }
            Err(e) if choice == BackendChoice::Auto => {
                tracing::warn!(
                    gpu = g.info.ordinal,
                    error = format!("{e:#}"),
                    "GPU unusable: skipped"
                );
            }
            Err(e) => bail!("GPU {} ({}): {e:#}", g.info.ordinal, g.info.name),
        }
    }
    if provers.backends.is_empty() {
        tracing::warn!("no GPU could load the kernels: proving on the CPU");
        return Ok(Provers::cpu());
    }
    Ok(provers)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// This test is meant for the machines without a GPU (CI): auto falls back to the CPU and
    /// "gpu" refuses with a one-line reason. Where a GPU is present it checks nothing of that.
    #[test]
    fn without_a_gpu_auto_is_the_cpu_and_gpu_is_refused() {
        if crate::gpu::discover(&[]).is_ok() {
            eprintln!("skipped: this machine has a GPU");
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let auto = select(BackendChoice::Auto, &[], dir.path()).unwrap();
        assert_eq!(auto.name(), "cpu");
        assert!(auto.gpus.is_empty());
        let err = select(BackendChoice::Gpu, &[], dir.path()).err().unwrap();
        let msg = format!("{err:#}");
        assert!(
            msg.contains("no usable GPU") && !msg.contains('\n'),
            "{msg}"
        );
        assert_eq!(
            select(BackendChoice::Cpu, &[0], dir.path()).unwrap().name(),
            "cpu"
        );
    }
}
