//! The engine: takes stored jobs and runs them. It knows nothing of HTTP or of the job store's
//! format.
//!
//! - [`Engine`] (here): submission, status, cancellation, draining, and the engine loop that
//!   starts queued jobs on free workers and feeds the systemd watchdog (a hung engine stops the
//!   pings, a busy one does not: the proving runs on worker threads).
//! - `queue`: the jobs known and the queue of those waiting, by priority then FIFO.
//! - `run`: one job's run, from running to an end, the proof stored before it reads done.
//! - `partitions`: a job's partitions at once through the memory [`Admission`] and the
//!   [`ProverSlots`], each partition's buffers counted in the [`Ledger`].
//! - `residency` and `sets`: parameter sets and PCEs shared by the jobs using them, the last one
//!   resident; `extraction`: PCEs recorded in the background.
//! - `retention`: finished jobs deleted by age and count. [`Concurrency`]: how much runs at once.
//!
//! [`Admission`]: crate::memory::Admission

mod concurrency;
mod extraction;
mod ledger;
mod partitions;
mod pooled;
mod provers;
mod queue;
mod residency;
mod retention;
mod run;
mod sets;
mod status;
#[cfg(test)]
mod tests;

pub use concurrency::Concurrency;
pub use ledger::{Ledger, LedgerEntry, Stage};
pub use pooled::{pooled_sizes, PoolBuffers};
pub use provers::{ProverSlot, ProverSlots};
pub use run::partition_bytes;
pub use status::{EngineStatus, GpuStatus, LoadedFile};

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use anyhow::Result;
use sha2::{Digest, Sha256};
use tokio::sync::watch;

use crate::circuits::ProofKind;
use crate::config::Finish;
use crate::gpu::Provers;
use crate::jobs::{now_ms, JobRecord, JobState, JobStore, Progress};
use crate::memory::{Admission, PinnedPool};
use crate::metrics::Metrics;
use crate::pce::PceStore;
use crate::systemd::Notifier;
use extraction::Extractions;
use queue::{Job, Queue, StoreIo};
use residency::Residency;

/// What may change while the service runs (SIGHUP).
#[derive(Clone, Debug)]
pub struct Limits {
    pub max_queued_jobs: usize,
    pub retention: Duration,
    pub retention_count: usize,
}

#[derive(Debug, thiserror::Error)]
pub enum SubmitError {
    #[error("job {0} exists with a different request")]
    Conflict(String),
    #[error("{0} jobs are queued, the configured maximum")]
    QueueFull(usize),
    #[error("the service is shutting down")]
    Draining,
    #[error("storing the job: {0:#}")]
    Store(anyhow::Error),
}

#[derive(Debug, thiserror::Error)]
pub enum CancelError {
    #[error("no job {0}")]
    NotFound(String),
    #[error("job {0} is already {1}")]
    Final(String, &'static str),
    /// The cancellation could not be stored: the job stays queued.
    #[error("storing the cancellation of job {0}: {1:#}")]
    Store(String, anyhow::Error),
}

/// What proves: the memory gate, the prover slots and the backends behind them, and how jobs
/// use them.
pub struct Proving {
    pub admission: Arc<Admission>,
    /// Slot i proves on `provers.backends[i % len]`.
    pub slots: Arc<ProverSlots>,
    pub provers: Provers,
    /// Where B in G2 and the join run (`proving.finish`).
    pub finish: Finish,
    /// Partitions kept as compact witnesses where every backend computes a, b and c
    /// (`proving.compact_witness`).
    pub compact_witness: bool,
    /// Jobs in progress at once.
    pub workers: usize,
    /// Where the Groth16 parameter files are.
    pub params_dir: PathBuf,
    /// PCE files (None: every partition on the full path).
    pub pce: Option<Arc<PceStore>>,
    /// The page-locked pool partitions' vectors are lent from (None: the heap).
    pub pool: Option<Arc<PinnedPool>>,
}

/// The engine loop's pulse, for /healthz and the systemd watchdog.
struct Heartbeat {
    /// Unix ms of the engine loop's last turn.
    last_ms: AtomicU64,
    /// Pings and status go to systemd only after READY=1.
    ready: AtomicBool,
    notifier: Option<Arc<Notifier>>,
    /// How often the loop pings the watchdog (None: no watchdog).
    watchdog: Option<Duration>,
}

struct Inner {
    store: JobStore,
    metrics: Arc<Metrics>,
    ledger: Ledger,
    proving: Proving,
    limits: Mutex<Limits>,
    queue: Queue,
    residency: Residency,
    extractions: Extractions,
    heartbeat: Heartbeat,
    /// Job directories moved into quarantine at start (unreadable records).
    quarantined: Mutex<Vec<String>>,
    /// Seconds a job has taken lately (a moving average of the jobs that ended), for how soon
    /// a client refused for a full queue should come back.
    recent_job_s: Mutex<Option<f64>>,
    /// This engine, for the threads it starts on its own (PCE extractions).
    me: std::sync::Weak<Inner>,
}

#[derive(Clone)]
pub struct Engine {
    inner: Arc<Inner>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

fn sha256_hex(bytes: &[u8]) -> String {
    crate::circuits::request::hex(&Sha256::digest(bytes))
}

impl Engine {
    /// Loads the stored jobs (queued and interrupted ones run again) and starts the engine loop.
    pub fn start(
        store: JobStore,
        metrics: Arc<Metrics>,
        proving: Proving,
        limits: Limits,
        notifier: Option<Arc<Notifier>>,
        watchdog: Option<Duration>,
    ) -> Result<Engine> {
        let inner = Arc::new_cyclic(|me| Inner {
            me: me.clone(),
            ledger: Ledger::new(metrics.clone()),
            proving,
            store,
            metrics,
            limits: Mutex::new(limits),
            queue: Queue::default(),
            residency: Residency::default(),
            extractions: Extractions::default(),
            quarantined: Mutex::default(),
            recent_job_s: Mutex::default(),
            heartbeat: Heartbeat {
                last_ms: AtomicU64::new(now_ms()),
                ready: AtomicBool::new(false),
                watchdog: watchdog.filter(|_| notifier.is_some()),
                notifier,
            },
        });
        {
            let loaded = inner.store.load_all()?;
            *lock(&inner.quarantined) = loaded.quarantined;
            let mut st = inner.queue.lock();
            // Nothing is written here: a start on a full disk must serve what is stored. An
            // interrupted job's record says running until it starts again.
            for mut record in loaded.records {
                if matches!(record.state, JobState::Running | JobState::Queued) {
                    if record.state == JobState::Running {
                        tracing::info!(id = %record.id, "job was interrupted; it runs again");
                    }
                    record.state = JobState::Queued;
                    record.progress = Progress::default();
                    st.enqueue(record.kind, &record.id, &inner.metrics);
                }
                inner.count(record.kind, record.state, 1);
                st.jobs.insert(record.id.clone(), Job::new(record));
            }
            tracing::info!(jobs = st.jobs.len(), queued = st.queued, "job store loaded");
        }
        let engine = Engine { inner };
        let looped = engine.clone();
        std::thread::Builder::new()
            .name("cuzk-engine".into())
            .spawn(move || looped.run())?;
        Ok(engine)
    }

    /// Rehearses (`bench pipeline --rehearse`; never the service): jobs whose parameter file
    /// is `path` prove with `srs` (random bases, `Srs::random`) and end unverified.
    pub fn rehearse(&self, path: &std::path::Path, srs: crate::srs::Srs) -> anyhow::Result<()> {
        self.inner.rehearse(path, srs)
    }

    /// From now on the engine loop pings the systemd watchdog.
    pub fn set_ready(&self) {
        self.inner.heartbeat.ready.store(true, Ordering::SeqCst);
    }

    pub fn set_limits(&self, limits: Limits) {
        *lock(&self.inner.limits) = limits;
    }

    /// Stores a new job before returning it (`true`), or returns the existing job of this id if
    /// its request is the same (`false`). The store's I/O runs outside the queue's lock: a
    /// second submission of the same id waits for the first to be stored.
    pub fn submit(
        &self,
        id: &str,
        kind: ProofKind,
        request: &[u8],
    ) -> Result<(JobRecord, bool), SubmitError> {
        let digest = sha256_hex(request);
        let queue = &self.inner.queue;
        let mut st = queue.lock();
        while st.busy(id) {
            st = queue.wait(st, Duration::from_millis(100));
        }
        if let Some(job) = st.jobs.get(id) {
            let record = lock(&job.record).clone();
            return if record.request_sha256 == digest {
                Ok((record, false))
            } else {
                Err(SubmitError::Conflict(id.into()))
            };
        }
        if st.draining {
            return Err(SubmitError::Draining);
        }
        let max = lock(&self.inner.limits).max_queued_jobs;
        if st.queued + st.creating.len() >= max {
            return Err(SubmitError::QueueFull(max));
        }
        let creating = StoreIo::begin(queue, &mut st, id, false);
        drop(st);
        let record = JobRecord::new(id, kind, digest);
        self.inner
            .store
            .create(&record, request)
            .map_err(SubmitError::Store)?;
        let mut st = queue.lock();
        st.enqueue(kind, id, &self.inner.metrics);
        st.jobs.insert(id.into(), Job::new(record.clone()));
        drop(st);
        drop(creating);
        self.inner.count(kind, JobState::Queued, 1);
        tracing::info!(%id, %kind, "job accepted");
        Ok((record, true))
    }

    /// The memory gate: what request bodies take their bytes from while they are read.
    pub fn admission(&self) -> &Arc<Admission> {
        &self.inner.proving.admission
    }

    /// Whether the queue has room for one more job (what `submit` checks again).
    pub fn has_room(&self) -> Result<(), SubmitError> {
        let st = self.inner.queue.lock();
        let max = lock(&self.inner.limits).max_queued_jobs;
        match st.queued + st.creating.len() >= max {
            true => Err(SubmitError::QueueFull(max)),
            false => Ok(()),
        }
    }

    /// How soon the queue is likely to have room again: a job's recent time over the jobs
    /// that run at once (30 s before any job has ended), within 1 s and 10 min.
    pub fn retry_after(&self) -> Duration {
        let job_s =
            lock(&self.inner.recent_job_s).unwrap_or(30.0 * self.inner.proving.workers as f64);
        let secs = job_s / self.inner.proving.workers.max(1) as f64;
        Duration::from_secs_f64(secs.clamp(1.0, 600.0))
    }

    pub fn get(&self, id: &str) -> Option<JobRecord> {
        let job = self.inner.queue.lock().jobs.get(id).cloned()?;
        let record = lock(&job.record).clone();
        Some(record)
    }

    /// Changes of a job's record, for long polls.
    pub fn subscribe(&self, id: &str) -> Option<watch::Receiver<JobRecord>> {
        let job = self.inner.queue.lock().jobs.get(id).cloned()?;
        Some(job.changes.subscribe())
    }

    /// A done job's proof, checked against its record (length and checksum).
    pub fn proof(&self, record: &JobRecord) -> Result<Vec<u8>> {
        self.inner.store.proof(record)
    }

    /// Cancels a job: a queued one at once (acknowledged once its record is stored; until then
    /// it cannot start, and if the record cannot be stored it stays queued in its place), a
    /// running one at its next stage boundary.
    pub fn cancel(&self, id: &str) -> Result<JobRecord, CancelError> {
        let inner = &self.inner;
        let queue = &inner.queue;
        let mut st = queue.lock();
        while st.busy(id) {
            st = queue.wait(st, Duration::from_millis(100));
        }
        let job = st
            .jobs
            .get(id)
            .cloned()
            .ok_or_else(|| CancelError::NotFound(id.into()))?;
        let state = lock(&job.record).state;
        match state {
            s if s.is_final() => Err(CancelError::Final(id.into(), s.as_str())),
            JobState::Queued => {
                let mut cancelled = lock(&job.record).clone();
                Inner::ended(JobState::Cancelled, None, None)(&mut cancelled);
                let io = StoreIo::cancelling(queue, &mut st, id);
                drop(st);
                let saved = inner.store.save(&cancelled);
                let mut st = queue.lock();
                let parked = io.end(&mut st);
                if let Err(e) = saved {
                    // Back in line where it was, as if nothing had been asked.
                    if let Some(entry) = parked {
                        st.queue.push(entry);
                    }
                    drop(st);
                    queue.notify();
                    tracing::error!(%id, error = %format!("{e:#}"), "cannot store a cancellation; the job stays queued");
                    return Err(CancelError::Store(id.into(), e));
                }
                let record = inner.change(&job, |r| *r = cancelled);
                st.queued -= 1;
                drop(st);
                queue.notify();
                job.changes.send_replace(record.clone());
                inner
                    .metrics
                    .queue_depth
                    .with_label_values(&[record.kind.as_str()])
                    .dec();
                tracing::info!(%id, "queued job cancelled");
                Ok(record)
            }
            _ => {
                job.cancel.store(true, Ordering::SeqCst);
                tracing::info!(%id, "running job cancelling");
                Ok(lock(&job.record).clone())
            }
        }
    }

    /// How long since the engine loop last turned.
    pub fn heartbeat_age(&self) -> Duration {
        let last = self.inner.heartbeat.last_ms.load(Ordering::SeqCst);
        Duration::from_millis(now_ms().saturating_sub(last))
    }

    /// Stops starting jobs and waits (at most `timeout`) for the running ones to end. Returns
    /// whether they all did; jobs still running stay stored and run again at the next start.
    pub fn drain(&self, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        let queue = &self.inner.queue;
        self.inner
            .extractions
            .stopping
            .store(true, Ordering::SeqCst);
        let mut st = queue.lock();
        st.draining = true;
        queue.notify();
        while st.running > 0 {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                tracing::warn!(
                    running = st.running,
                    "drain timeout: running jobs stay stored and run again at the next start"
                );
                return false;
            }
            st = queue.wait(st, left);
        }
        true
    }

    /// The engine loop: starts queued jobs on free workers, pings the watchdog, sweeps old jobs.
    fn run(&self) {
        let inner = &self.inner;
        let beat = &inner.heartbeat;
        let mut last_sweep: Option<Instant> = None;
        let tick = beat
            .watchdog
            .map_or(Duration::from_secs(1), |w| w.min(Duration::from_secs(1)));
        loop {
            beat.last_ms.store(now_ms(), Ordering::SeqCst);
            if beat.watchdog.is_some() && beat.ready.load(Ordering::SeqCst) {
                if let Some(n) = &beat.notifier {
                    n.watchdog();
                }
            }
            let mut st = inner.queue.lock();
            while !st.draining && st.running < inner.proving.workers {
                match st.queue.peek() {
                    Some(head) if inner.residency.may_start(head.0 .0) => {}
                    _ => break,
                }
                let Some(entry) = st.queue.pop() else {
                    break;
                };
                let id = entry.0 .2.clone();
                if let Some(parked) = st.cancelling.get_mut(&id) {
                    *parked = Some(entry); // its cancellation is being stored
                    continue;
                }
                let Some(job) = st.jobs.get(&id).cloned() else {
                    continue;
                };
                if lock(&job.record).state != JobState::Queued {
                    continue; // cancelled while queued
                }
                st.queued -= 1;
                st.running += 1;
                let engine = self.clone();
                let spawned = std::thread::Builder::new()
                    .name(format!("cuzk-job-{id}"))
                    .spawn(move || engine.inner.run_job(&job));
                if let Err(e) = spawned {
                    tracing::error!(%id, error = %e, "cannot start a worker thread");
                    st.running -= 1;
                }
            }
            drop(inner.queue.wait(st, tick));
            if last_sweep.is_none_or(|t| t.elapsed() >= Duration::from_secs(60)) {
                inner.sweep();
                last_sweep = Some(Instant::now());
            }
        }
    }
}
