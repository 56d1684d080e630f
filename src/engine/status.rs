//! What the engine shows of itself: /v1/status, /metrics and systemd's STATUS= read it here,
//! never waiting on the job store.

use std::collections::HashMap;
use std::path::PathBuf;

use serde::Serialize;

use super::{ledger, lock, Engine};
use crate::circuits::{CircuitId, ProofKind};
use crate::gpu::GpuInfo;
use crate::jobs::JobState;
use crate::memory::{MemoryStatus, PoolStatus};

/// The engine as /v1/status shows it.
#[derive(Debug, Serialize)]
pub struct EngineStatus {
    pub workers: usize,
    pub running: usize,
    pub draining: bool,
    pub queued: HashMap<ProofKind, usize>,
    pub ledger: Vec<ledger::StageCount>,
    pub memory: MemoryStatus,
    /// The page-locked pool: locked and leased bytes, how long locking took (null: none).
    pub pinned_pool: Option<PoolStatus>,
    pub parameters_loaded: Vec<PathBuf>,
    pub pces_loaded: Vec<LoadedFile>,
    pub pces_extracting: Vec<CircuitId>,
    pub backend: &'static str,
    pub gpus: Vec<GpuStatus>,
    /// Job directories moved into `<data_dir>/quarantine/` at start: their records could not
    /// be read (the log says why).
    pub quarantined_jobs: Vec<String>,
}

/// A GPU in use, and how long it has been proving.
#[derive(Debug, Serialize)]
pub struct GpuStatus {
    #[serde(flatten)]
    pub info: GpuInfo,
    /// Seconds of device work since the service started (its device lock held).
    pub busy_seconds: f64,
    /// Device bytes of parameter-set bases and PCE matrices kept resident between proofs.
    pub resident_bytes: u64,
}

/// A loaded file and the budget bytes it holds.
#[derive(Debug, Serialize)]
pub struct LoadedFile {
    pub path: PathBuf,
    pub bytes: u64,
}

impl Engine {
    pub fn status(&self) -> EngineStatus {
        let inner = &self.inner;
        let (running, draining, queued) = {
            let st = inner.queue.lock();
            let mut queued: HashMap<ProofKind, usize> =
                ProofKind::ALL.iter().map(|k| (*k, 0)).collect();
            for job in st.jobs.values() {
                let r = lock(&job.record);
                if r.state == JobState::Queued {
                    *queued.entry(r.kind).or_default() += 1;
                }
            }
            (st.running, st.draining, queued)
        };
        let mut pces_extracting: Vec<CircuitId> =
            lock(&inner.extractions.running).iter().cloned().collect();
        pces_extracting.sort();
        let provers = &inner.proving.provers;
        EngineStatus {
            workers: inner.proving.workers,
            running,
            draining,
            queued,
            ledger: inner.ledger.snapshot(),
            memory: inner.proving.admission.snapshot(),
            pinned_pool: inner.proving.pool.as_ref().map(|p| p.status()),
            parameters_loaded: inner
                .residency
                .srs
                .loaded()
                .into_iter()
                .map(|(p, _)| p)
                .collect(),
            pces_loaded: inner
                .residency
                .pces
                .loaded()
                .into_iter()
                .map(|(path, bytes)| LoadedFile { path, bytes })
                .collect(),
            pces_extracting,
            backend: provers.name(),
            gpus: provers
                .gpus
                .iter()
                .zip(&provers.backends)
                .map(|(info, backend)| GpuStatus {
                    info: info.clone(),
                    busy_seconds: backend.device_busy().unwrap_or_default().as_secs_f64(),
                    resident_bytes: backend.device_resident_bytes().unwrap_or_default(),
                })
                .collect(),
            quarantined_jobs: lock(&inner.quarantined).clone(),
        }
    }

    /// A one-line summary for systemd's STATUS=.
    pub fn summary(&self) -> String {
        let s = self.status();
        let queued: usize = s.queued.values().sum();
        let in_flight: i64 = s.ledger.iter().map(|c| c.buffers).sum();
        format!(
            "{} running, {queued} queued, {in_flight} partitions in flight{}",
            s.running,
            if s.draining { ", draining" } else { "" }
        )
    }
}
