//! The engine: takes stored jobs, runs them in priority order (WinningPoSt, then WindowPoSt, then
//! SnapDeals and PoRep; FIFO within a priority) on a fixed number of workers, partition by
//! partition, and records every step in the job store. It keeps the ledger of partition buffers
//! in flight at the narrow waist, and its own loop feeds the systemd watchdog: a hung engine
//! stops the pings, a busy one does not (the proving runs on worker threads).
//!
//! It knows nothing of HTTP. Memory budgeting and the reactive dispatcher replace the simple
//! worker count here (the engine issue); the interface to the API stays.

pub mod dispatch;
mod ledger;
mod partitions;
pub mod pipeline;
mod sets;

pub use ledger::{Ledger, LedgerEntry, Stage};

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, HashSet};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use anyhow::Result;
use serde::Serialize;
use sha2::{Digest, Sha256};
use tokio::sync::watch;

use crate::circuits::{CircuitError, CircuitId, ProofJob, ProofKind, ProofRequest};
use crate::gpu::GpuInfo;
use crate::groth16::Provers;
use crate::jobs::{now_ms, JobError, JobRecord, JobState, JobStore, Progress, Timings};
use crate::metrics::Metrics;
use crate::pce::{Pce, PceStore};
use crate::srs::Srs;
use crate::systemd::Notifier;
pub use partitions::Finish;
use partitions::Partitions;
use sets::{Loaded, Sets};

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
}

/// A job the engine knows: its record (saved on every change) and who waits on it.
struct Job {
    record: Mutex<JobRecord>,
    changes: watch::Sender<JobRecord>,
    cancel: AtomicBool,
}

#[derive(Default)]
struct State {
    /// (priority, sequence, id): the smallest starts first. Entries of jobs cancelled while
    /// queued stay until popped; `queued` is the true count.
    queue: BinaryHeap<Reverse<(u8, u64, String)>>,
    queued: usize,
    jobs: HashMap<String, Arc<Job>>,
    running: usize,
    draining: bool,
    seq: u64,
}

struct Inner {
    store: JobStore,
    metrics: Arc<Metrics>,
    ledger: Ledger,
    pipeline: Arc<pipeline::Pipeline>,
    /// The backends partitions are proved on: prover slot i uses backends[i % len].
    provers: Provers,
    /// Where B in G2 and the join run.
    finish: Finish,
    workers: usize,
    limits: Mutex<Limits>,
    state: Mutex<State>,
    wake: Condvar,
    /// Unix ms of the engine loop's last turn.
    heartbeat_ms: AtomicU64,
    /// Pings and status go to systemd only after READY=1.
    ready: AtomicBool,
    notifier: Option<Arc<Notifier>>,
    /// Parameter sets in use, shared by concurrent jobs; the last one loaded stays resident
    /// unless another load waits for budget.
    srs: Sets<Srs>,
    /// PCEs in use, likewise; loaded only when they fit without waiting.
    pces: Sets<Pce>,
    /// One load per file at a time (held while it waits for budget and reads).
    loading: Mutex<HashMap<PathBuf, Arc<Mutex<()>>>>,
    /// Where PCE files are kept (None: PCEs turned off).
    pce_store: Option<Arc<PceStore>>,
    /// Circuits whose PCE is being extracted in the background.
    extracting: Mutex<HashSet<CircuitId>>,
    /// When a circuit's last extraction failed: none is tried again for EXTRACTION_RETRY.
    extraction_failed: Mutex<HashMap<CircuitId, Instant>>,
    /// Set when draining: background extractions waiting for budget give up.
    stopping: AtomicBool,
    /// This engine, for the threads it starts on its own (PCE extractions).
    me: std::sync::Weak<Inner>,
    /// Priorities of the loads waiting for budget: meanwhile only more urgent jobs start, so the
    /// sets in use drain.
    loads_waiting: Mutex<Vec<u8>>,
    /// How often the engine loop pings the systemd watchdog (None: no watchdog).
    watchdog: Option<Duration>,
}

/// How often a waiting PCE extraction looks for room in the budget.
const EXTRACTION_POLL: Duration = Duration::from_millis(500);
/// How long after a failed extraction the circuit's next one may start.
const EXTRACTION_RETRY: Duration = Duration::from_secs(600);

/// Bytes held while a PCE is recorded: its arrays take about 57 bytes per constraint (2 KiB
/// PoRep and SnapDeals: 8 per non-zero entry, 12 per row), growing vectors up to twice that;
/// 96 per row of the domain (at least one row per constraint) covers them (2 KiB PoRep:
/// 403 MB held, 161 MB peak RSS of `cuzk pce extract`).
fn extraction_bytes(srs: &Srs) -> u64 {
    (srs.h.len() as u64 + 1) * 96
}

#[derive(Clone)]
pub struct Engine {
    inner: Arc<Inner>,
}

/// The engine as /v1/status shows it.
#[derive(Debug, Serialize)]
pub struct EngineStatus {
    pub workers: usize,
    pub running: usize,
    pub draining: bool,
    pub queued: HashMap<ProofKind, usize>,
    pub ledger: Vec<ledger::StageCount>,
    pub pipeline: pipeline::PipelineStatus,
    pub parameters_loaded: Vec<PathBuf>,
    pub pces_loaded: Vec<LoadedFile>,
    pub pces_extracting: Vec<CircuitId>,
    pub backend: &'static str,
    pub gpus: Vec<GpuStatus>,
}

/// A GPU in use, and how long it has been proving.
#[derive(Debug, Serialize)]
pub struct GpuStatus {
    #[serde(flatten)]
    pub info: GpuInfo,
    /// Seconds of device work since the service started (its device lock held).
    pub busy_seconds: f64,
}

/// A loaded file and the budget bytes it holds.
#[derive(Debug, Serialize)]
pub struct LoadedFile {
    pub path: PathBuf,
    pub bytes: u64,
}

fn priority(kind: ProofKind) -> u8 {
    match kind {
        ProofKind::WinningPost => 0,
        ProofKind::WindowPost => 1,
        ProofKind::SnapDeals | ProofKind::PorepC2 => 2,
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

fn sha256_hex(bytes: &[u8]) -> String {
    crate::circuits::request::hex(&Sha256::digest(bytes))
}

/// Jobs in progress and partitions ahead of the prover, as configured or derived.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Concurrency {
    pub workers: usize,
    pub depth: usize,
}

impl Concurrency {
    /// `workers` and `depth` as configured, 0 meaning derived from the machine. On the CPU the
    /// prover takes every core: one partition synthesizing while one proves (2) keeps it busy
    /// (measured prover busy 0.93-0.99). With GPUs synthesis is the bottleneck (a 2 KiB PoRep
    /// partition synthesizes in ~1.6 s and proves in 0.87 s on an H200): 3/8 of the cores, at
    /// most 6 per GPU (8 PoRep jobs on 16 cores and one H200: 2150 proofs/h at 2, 2906 at 6).
    /// The memory budget bounds what actually runs either way.
    pub fn derive(workers: usize, depth: usize, cores: usize, gpus: usize) -> Concurrency {
        let derived = if gpus == 0 {
            2
        } else {
            (cores * 3 / 8).min(6 * gpus).max(2)
        };
        Concurrency {
            workers: if workers == 0 { derived } else { workers },
            depth: if depth == 0 { derived } else { depth },
        }
    }
}

/// What proves: the pipeline's gates, the backends behind the prover slots, and how many jobs
/// run at once.
pub struct Proving {
    pub pipeline: Arc<pipeline::Pipeline>,
    pub provers: Provers,
    /// Where B in G2 and the join run (`proving.finish`).
    pub finish: Finish,
    pub workers: usize,
    /// PCE files (None: every partition on the full path).
    pub pce: Option<Arc<PceStore>>,
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
        let Proving {
            pipeline,
            provers,
            finish,
            workers,
            pce,
        } = proving;
        let inner = Arc::new_cyclic(|me| Inner {
            me: me.clone(),
            ledger: Ledger::new(metrics.clone()),
            pipeline,
            provers,
            finish,
            store,
            metrics,
            workers,
            limits: Mutex::new(limits),
            state: Mutex::new(State::default()),
            wake: Condvar::new(),
            heartbeat_ms: AtomicU64::new(now_ms()),
            ready: AtomicBool::new(false),
            srs: Sets::new(),
            pces: Sets::new(),
            loading: Mutex::new(HashMap::new()),
            pce_store: pce,
            extracting: Mutex::new(HashSet::new()),
            extraction_failed: Mutex::new(HashMap::new()),
            stopping: AtomicBool::new(false),
            loads_waiting: Mutex::new(Vec::new()),
            watchdog: watchdog.filter(|_| notifier.is_some()),
            notifier,
        });
        {
            let mut st = lock(&inner.state);
            for mut record in inner.store.load_all()? {
                if matches!(record.state, JobState::Running | JobState::Queued) {
                    if record.state == JobState::Running {
                        tracing::info!(id = %record.id, "job was interrupted; it runs again");
                    }
                    record.state = JobState::Queued;
                    record.progress = Progress::default();
                    inner.store.save(&record)?;
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

    /// From now on the engine loop pings the systemd watchdog.
    pub fn set_ready(&self) {
        self.inner.ready.store(true, Ordering::SeqCst);
    }

    pub fn set_limits(&self, limits: Limits) {
        *lock(&self.inner.limits) = limits;
    }

    /// Stores a new job before returning it (`true`), or returns the existing job of this id if
    /// its request is the same (`false`).
    pub fn submit(
        &self,
        id: &str,
        kind: ProofKind,
        request: &[u8],
    ) -> Result<(JobRecord, bool), SubmitError> {
        let digest = sha256_hex(request);
        let mut st = lock(&self.inner.state);
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
        if st.queued >= max {
            return Err(SubmitError::QueueFull(max));
        }
        let record = JobRecord::new(id, kind, digest);
        self.inner
            .store
            .create(&record, request)
            .map_err(SubmitError::Store)?;
        st.enqueue(kind, id, &self.inner.metrics);
        st.jobs.insert(id.into(), Job::new(record.clone()));
        self.inner.count(kind, JobState::Queued, 1);
        tracing::info!(%id, %kind, "job accepted");
        self.inner.wake.notify_all();
        Ok((record, true))
    }

    pub fn get(&self, id: &str) -> Option<JobRecord> {
        let job = lock(&self.inner.state).jobs.get(id).cloned()?;
        let record = lock(&job.record).clone();
        Some(record)
    }

    /// Changes of a job's record, for long polls.
    pub fn subscribe(&self, id: &str) -> Option<watch::Receiver<JobRecord>> {
        let job = lock(&self.inner.state).jobs.get(id).cloned()?;
        Some(job.changes.subscribe())
    }

    pub fn proof(&self, id: &str) -> Result<Vec<u8>> {
        self.inner.store.proof(id)
    }

    /// Cancels a job: a queued one at once, a running one at its next stage boundary.
    pub fn cancel(&self, id: &str) -> Result<JobRecord, CancelError> {
        let st = lock(&self.inner.state);
        let job = st
            .jobs
            .get(id)
            .cloned()
            .ok_or_else(|| CancelError::NotFound(id.into()))?;
        let state = lock(&job.record).state;
        match state {
            s if s.is_final() => Err(CancelError::Final(id.into(), s.as_str())),
            JobState::Queued => {
                // The queue entry stays; the engine loop skips jobs that are no longer queued.
                // The state lock is held until the record says so.
                let mut st = st;
                let record = self.inner.finish(&job, JobState::Cancelled, None, None);
                st.queued -= 1;
                drop(st);
                let kind = record.kind.as_str();
                self.inner
                    .metrics
                    .queue_depth
                    .with_label_values(&[kind])
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

    pub fn status(&self) -> EngineStatus {
        let st = lock(&self.inner.state);
        let mut queued: HashMap<ProofKind, usize> =
            ProofKind::ALL.iter().map(|k| (*k, 0)).collect();
        for job in st.jobs.values() {
            let r = lock(&job.record);
            if r.state == JobState::Queued {
                *queued.entry(r.kind).or_default() += 1;
            }
        }
        let parameters_loaded = self
            .inner
            .srs
            .loaded()
            .into_iter()
            .map(|(p, _)| p)
            .collect();
        let pces_loaded = self
            .inner
            .pces
            .loaded()
            .into_iter()
            .map(|(path, bytes)| LoadedFile { path, bytes })
            .collect();
        let mut pces_extracting: Vec<CircuitId> =
            lock(&self.inner.extracting).iter().cloned().collect();
        pces_extracting.sort();
        EngineStatus {
            workers: self.inner.workers,
            running: st.running,
            draining: st.draining,
            queued,
            ledger: self.inner.ledger.snapshot(),
            pipeline: self.inner.pipeline.snapshot(),
            parameters_loaded,
            pces_loaded,
            pces_extracting,
            backend: self.inner.provers.name(),
            gpus: self
                .inner
                .provers
                .gpus
                .iter()
                .zip(&self.inner.provers.backends)
                .map(|(info, backend)| GpuStatus {
                    info: info.clone(),
                    busy_seconds: backend.device_busy().unwrap_or_default().as_secs_f64(),
                })
                .collect(),
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

    /// Seconds since the engine loop last turned.
    pub fn heartbeat_age(&self) -> Duration {
        Duration::from_millis(
            now_ms().saturating_sub(self.inner.heartbeat_ms.load(Ordering::SeqCst)),
        )
    }

    /// Stops starting jobs and waits (at most `timeout`) for the running ones to end. Returns
    /// whether they all did; jobs still running stay stored and run again at the next start.
    pub fn drain(&self, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        self.inner.stopping.store(true, Ordering::SeqCst);
        let mut st = lock(&self.inner.state);
        st.draining = true;
        self.inner.wake.notify_all();
        while st.running > 0 {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                tracing::warn!(
                    running = st.running,
                    "drain timeout: running jobs stay stored and run again at the next start"
                );
                return false;
            }
            st = self
                .inner
                .wake
                .wait_timeout(st, left)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
        true
    }

    /// The engine loop: starts queued jobs on free workers, pings the watchdog, sweeps old jobs.
    fn run(&self) {
        let inner = &self.inner;
        let mut last_sweep: Option<Instant> = None;
        let tick = inner
            .watchdog
            .map_or(Duration::from_secs(1), |w| w.min(Duration::from_secs(1)));
        loop {
            inner.heartbeat_ms.store(now_ms(), Ordering::SeqCst);
            if inner.watchdog.is_some() && inner.ready.load(Ordering::SeqCst) {
                if let Some(n) = &inner.notifier {
                    n.notify("WATCHDOG=1");
                }
            }
            let mut st = lock(&inner.state);
            while !st.draining && st.running < inner.workers {
                // While a parameter set waits for budget, only more urgent jobs start: the sets
                // in use drain and the load gets its room.
                let waiting = lock(&inner.loads_waiting).iter().min().copied();
                match st.queue.peek() {
                    None => break,
                    Some(Reverse((p, _, _))) if waiting.is_some_and(|w| *p >= w) => break,
                    Some(_) => {}
                }
                let Some(Reverse((_, _, id))) = st.queue.pop() else {
                    break;
                };
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
            let _ = inner
                .wake
                .wait_timeout(st, tick)
                .unwrap_or_else(|e| e.into_inner());
            if last_sweep.is_none_or(|t| t.elapsed() >= Duration::from_secs(60)) {
                inner.sweep();
                last_sweep = Some(Instant::now());
            }
        }
    }
}

/// How a job ended other than with a proof.
enum Ending {
    Cancelled,
    Failed(JobError),
}

impl From<CircuitError> for Ending {
    fn from(e: CircuitError) -> Self {
        let kind = match &e {
            CircuitError::InvalidInput { .. }
            | CircuitError::Unsatisfied { .. }
            | CircuitError::PublicInputMismatch { .. } => "invalid-input",
            CircuitError::Verification(_) => "verification-failed",
            CircuitError::Synthesis(_) => "synthesis-failed",
        };
        Ending::Failed(JobError {
            kind: kind.into(),
            detail: e.to_string(),
        })
    }
}

fn refused(e: pipeline::Refused) -> Ending {
    match e {
        pipeline::Refused::Cancelled => Ending::Cancelled,
        pipeline::Refused::TooLarge { .. } => Ending::Failed(JobError {
            kind: "over-budget".into(),
            detail: format!("a partition of this job cannot fit in memory: {e}"),
        }),
    }
}

/// Bytes one partition holds from synthesis to the end of proving, from the circuit's shape as
/// its parameters give it: a, b, c over the domain and the H quotient (4 domain-sized vectors),
/// and the witness with its MSM scalars (3 per variable), 32 bytes each.
pub fn partition_bytes(srs: &Srs) -> u64 {
    let domain = srs.h.len() as u64 + 1;
    let variables = (srs.vk.ic.len() + srs.l.len()) as u64;
    32 * (4 * domain + 3 * variables)
}

fn internal(detail: impl Into<String>) -> Ending {
    Ending::Failed(JobError {
        kind: "internal".into(),
        detail: detail.into(),
    })
}

impl Job {
    fn new(record: JobRecord) -> Arc<Job> {
        let (changes, _) = watch::channel(record.clone());
        Arc::new(Job {
            record: Mutex::new(record),
            changes,
            cancel: AtomicBool::new(false),
        })
    }

    fn id(&self) -> String {
        lock(&self.record).id.clone()
    }
}

impl State {
    /// Puts a queued job in line behind those of its priority.
    fn enqueue(&mut self, kind: ProofKind, id: &str, metrics: &Metrics) {
        self.seq += 1;
        self.queue
            .push(Reverse((priority(kind), self.seq, id.to_owned())));
        self.queued += 1;
        metrics
            .queue_depth
            .with_label_values(&[kind.as_str()])
            .inc();
    }
}

impl Inner {
    fn count(&self, kind: ProofKind, state: JobState, delta: i64) {
        self.metrics
            .jobs
            .with_label_values(&[kind.as_str(), state.as_str()])
            .add(delta);
    }

    /// Changes a job's record, saves it, and tells whoever waits.
    fn update(&self, job: &Job, change: impl FnOnce(&mut JobRecord)) -> JobRecord {
        let mut record = lock(&job.record);
        let before = record.state;
        change(&mut record);
        if record.state != before {
            self.count(record.kind, before, -1);
            self.count(record.kind, record.state, 1);
        }
        if let Err(e) = self.store.save(&record) {
            tracing::error!(id = %record.id, error = %e, "cannot save the job record");
        }
        job.changes.send_replace(record.clone());
        record.clone()
    }

    /// Changes what a running job shows (stage, progress) without a write: a restart resets
    /// progress, so it need not survive one; the next saved change carries it to disk.
    fn show(&self, job: &Job, change: impl FnOnce(&mut JobRecord)) {
        let mut record = lock(&job.record);
        change(&mut record);
        job.changes.send_replace(record.clone());
    }

    /// A job's final state, with the seconds it ran (None: it never started).
    fn finish(
        &self,
        job: &Job,
        state: JobState,
        error: Option<JobError>,
        total_s: Option<f64>,
    ) -> JobRecord {
        self.update(job, |r| {
            r.state = state;
            r.error = error;
            r.finished_at_ms = Some(now_ms());
            r.progress.stage = None;
            r.timings.total_s = total_s;
        })
    }

    fn run_job(&self, job: &Arc<Job>) {
        let started = Instant::now();
        let record = self.update(job, |r| {
            r.state = JobState::Running;
            r.started_at_ms = Some(now_ms());
            r.attempts += 1;
            let wait = now_ms().saturating_sub(r.submitted_at_ms) as f64 / 1000.0;
            r.timings = Timings {
                queue_wait_s: Some(wait),
                ..Timings::default()
            };
        });
        let kind = record.kind.as_str();
        self.metrics.queue_depth.with_label_values(&[kind]).dec();
        if let Some(wait) = record.timings.queue_wait_s {
            self.metrics
                .queue_wait_seconds
                .with_label_values(&[kind])
                .observe(wait);
        }
        tracing::info!(id = %record.id, kind, attempt = record.attempts, "job started");

        // The proof is on disk before the job reads done.
        let outcome = catch_unwind(AssertUnwindSafe(|| self.prove(job)))
            .unwrap_or_else(|_| Err(internal("the prover panicked (see the log)")))
            .and_then(|proof| {
                self.store
                    .save_proof(&record.id, &proof)
                    .map_err(|e| internal(format!("storing the proof: {e:#}")))
            });
        let total = started.elapsed().as_secs_f64();
        let ended = match outcome {
            Ok(()) => {
                self.metrics
                    .proofs_verified
                    .with_label_values(&[kind])
                    .inc();
                self.metrics
                    .job_seconds
                    .with_label_values(&[kind])
                    .observe(total);
                self.finish(job, JobState::Done, None, Some(total))
            }
            Err(Ending::Cancelled) => self.finish(job, JobState::Cancelled, None, Some(total)),
            Err(Ending::Failed(error)) => {
                self.metrics.proofs_failed.with_label_values(&[kind]).inc();
                self.finish(job, JobState::Failed, Some(error), Some(total))
            }
        };
        tracing::info!(id = %ended.id, state = ended.state.as_str(), secs = total, error = ?ended.error, "job ended");
        {
            let mut st = lock(&self.state);
            st.running -= 1;
            self.wake.notify_all();
        }
        // A finished job may push an older one past the retention count.
        self.sweep();
    }

    /// Proves a running job: every partition, then the verified proof bytes.
    fn prove(&self, job: &Job) -> Result<Vec<u8>, Ending> {
        let id = job.id();
        let request = self
            .store
            .request(&id)
            .map_err(|e| internal(format!("{e:#}")))?;
        let proof_job = ProofRequest::from_json(&request)?.prepare()?;
        let partitions = proof_job.partitions();
        self.show(job, |r| {
            r.progress = Progress {
                partitions_done: 0,
                partitions_total: partitions,
                stage: Some("loading-parameters".into()),
            }
        });
        let urgency = priority(proof_job.kind());
        let set = self.srs_for(&proof_job.params_path(), urgency, &job.cancel)?;
        let srs = &set.value;
        let estimate = partition_bytes(srs);
        let budget = self.pipeline.snapshot().budget_bytes;
        // The dispatcher's no-deadlock rule needs a partition no larger than its set (true of
        // every Filecoin circuit: the set holds several points per variable and domain row).
        let unfit = if estimate > set.held.bytes() {
            Some("a partition estimate larger than its parameter set")
        } else if set.held.bytes() + estimate > budget {
            Some("the parameters and one partition exceed the memory budget")
        } else {
            None
        };
        if let Some(why) = unfit {
            let held = set.held.bytes();
            self.srs.evict(&set);
            return Err(Ending::Failed(JobError {
                kind: "over-budget".into(),
                detail: format!(
                    "{why}: parameters {held} bytes, partition {estimate} bytes, budget {budget} bytes"
                ),
            }));
        }
        let pce = self.pce_for(proof_job.as_ref(), extraction_bytes(srs));
        let partitions = Partitions {
            pipeline: &self.pipeline,
            ledger: &self.ledger,
            backends: &self.provers.backends,
            metrics: &self.metrics,
            finish: self.finish,
            priority: urgency,
            estimate,
        };
        let circuit = proof_job.circuit_id();
        let proofs = partitions.prove(
            proof_job.as_ref(),
            srs,
            pce,
            &job.cancel,
            &|| self.discard_pce(&circuit),
            &mut |shown| {
                self.show(job, |r| {
                    r.progress.stage = Some(shown.step.as_str().into());
                    r.progress.partitions_done = shown.partitions_done;
                    r.timings.synthesis_s = Some(shown.synthesis_s);
                    r.timings.prove_s = Some(shown.prove_s);
                })
            },
        )?;
        self.stage(job, "verifying")?;
        let start = Instant::now();
        let bytes = proof_job.finish(&proofs)?;
        let verify_s = start.elapsed().as_secs_f64();
        self.show(job, |r| r.timings.verify_s = Some(verify_s));
        Ok(bytes)
    }

    /// Enters a stage, unless the job was cancelled.
    fn stage(&self, job: &Job, stage: &str) -> Result<(), Ending> {
        if job.cancel.load(Ordering::SeqCst) {
            return Err(Ending::Cancelled);
        }
        self.show(job, |r| r.progress.stage = Some(stage.into()));
        Ok(())
    }

    /// One load of `path` at a time in this process.
    fn flight(&self, path: &Path) -> Arc<Mutex<()>> {
        lock(&self.loading)
            .entry(path.to_path_buf())
            .or_default()
            .clone()
    }

    /// Whether a set just loaded may stay resident: not while another load waits for budget.
    fn may_keep(&self) -> bool {
        lock(&self.loads_waiting).is_empty()
    }

    /// The parameter set at `path`, shared with jobs using it now; loaded (its file's size held
    /// from the budget first, at the job's priority) when no job has it.
    fn srs_for(
        &self,
        path: &Path,
        urgency: u8,
        cancel: &AtomicBool,
    ) -> Result<Arc<Loaded<Srs>>, Ending> {
        if let Some(set) = self.srs.get(path) {
            return Ok(set);
        }
        // One load per set at a time; loads of different sets wait in the dispatcher together.
        let flight = self.flight(path);
        let _one_load = lock(&flight);
        let bytes = std::fs::metadata(path)
            .map_err(|e| internal(format!("Groth16 parameters {}: {e}", path.display())))?
            .len();
        if cancel.load(Ordering::SeqCst) {
            return Err(Ending::Cancelled);
        }
        // Registered as waiting with the resident set dropped in one step: a load finishing
        // meanwhile keeps nothing resident (two sets are never held for the sake of a cache).
        let waiting = || lock(&self.loads_waiting).push(urgency);
        if let Some(set) = self.srs.get_or_wait(path, waiting) {
            return Ok(set); // loaded by the flight this one waited behind
        }
        self.pces.drop_resident();
        let held = self.pipeline.hold(urgency, bytes, cancel);
        {
            let mut waiting = lock(&self.loads_waiting);
            if let Some(i) = waiting.iter().position(|p| *p == urgency) {
                waiting.swap_remove(i);
            }
        }
        self.wake.notify_all();
        let held = held.map_err(|e| match e {
            pipeline::Refused::Cancelled => Ending::Cancelled,
            pipeline::Refused::TooLarge { budget, .. } => Ending::Failed(JobError {
                kind: "over-budget".into(),
                detail: format!(
                    "the parameters {} ({bytes} bytes) exceed the memory budget ({budget} bytes)",
                    path.display()
                ),
            }),
        })?;
        if cancel.load(Ordering::SeqCst) {
            return Err(Ending::Cancelled);
        }
        let start = Instant::now();
        let srs = Srs::read(path).map_err(|e| {
            internal(format!(
                "loading Groth16 parameters {}: {e:#}",
                path.display()
            ))
        })?;
        tracing::info!(path = %path.display(), secs = start.elapsed().as_secs_f64(), held_bytes = bytes, "parameters loaded");
        let set = Arc::new(Loaded { value: srs, held });
        self.srs.insert(path, &set, || self.may_keep());
        Ok(set)
    }

    /// The PCE of `job`'s circuit, if PCEs are on, its file is good and it fits in the budget
    /// now (a PCE never waits for budget: the full path needs none). A missing or unusable file
    /// starts a background extraction (`extraction` bytes held while it records) and this job
    /// synthesizes on the full path.
    fn pce_for(&self, job: &dyn ProofJob, extraction: u64) -> Option<Arc<Loaded<Pce>>> {
        let store = self.pce_store.as_ref()?;
        let circuit = job.circuit_id();
        let path = store.path(&circuit);
        let found = self.load_pce(store, &circuit, &path, extraction);
        let result = if found.is_some() { "hit" } else { "miss" };
        self.metrics
            .pce_lookups
            .with_label_values(&[circuit.as_str(), result])
            .inc();
        found
    }

    fn load_pce(
        &self,
        store: &Arc<PceStore>,
        circuit: &CircuitId,
        path: &Path,
        extraction: u64,
    ) -> Option<Arc<Loaded<Pce>>> {
        if let Some(set) = self.pces.get(path) {
            return Some(set);
        }
        let flight = self.flight(path);
        let _one_load = lock(&flight);
        if let Some(set) = self.pces.get(path) {
            return Some(set);
        }
        let Ok(meta) = std::fs::metadata(path) else {
            self.extract_in_background(circuit, extraction);
            return None;
        };
        let Some(held) = self.pipeline.try_hold(meta.len()) else {
            tracing::info!(%circuit, bytes = meta.len(), "the PCE does not fit in the budget now; full path");
            return None;
        };
        let start = Instant::now();
        match store.load(circuit) {
            Ok(Some(pce)) => {
                let secs = start.elapsed().as_secs_f64();
                self.metrics
                    .pce_load_seconds
                    .with_label_values(&[circuit.as_str()])
                    .observe(secs);
                tracing::info!(%circuit, secs, held_bytes = held.bytes(), "PCE loaded");
                let set = Arc::new(Loaded { value: pce, held });
                self.pces.insert(path, &set, || self.may_keep());
                Some(set)
            }
            Ok(None) => {
                self.extract_in_background(circuit, extraction);
                None
            }
            Err(e) => {
                tracing::warn!(%circuit, path = %path.display(), error = %e, "the PCE file is unusable; it is extracted anew");
                self.extract_in_background(circuit, extraction);
                None
            }
        }
    }

    /// Forgets a PCE that proved wrong for its circuit and removes its file; jobs take the full
    /// path until an extraction makes it again.
    fn discard_pce(&self, circuit: &CircuitId) {
        let Some(store) = &self.pce_store else {
            return;
        };
        self.pces.forget(&store.path(circuit));
        if let Err(e) = store.discard(circuit) {
            tracing::warn!(%circuit, error = %format!("{e:#}"), "cannot remove a wrong PCE file");
        }
    }

    /// Records `circuit`'s PCE on a thread of its own, once at a time per circuit (and not
    /// again within EXTRACTION_RETRY of a failure); the next job of that circuit loads it.
    fn extract_in_background(&self, circuit: &CircuitId, bytes: u64) {
        let (Some(store), Some(me)) = (self.pce_store.clone(), self.me.upgrade()) else {
            return;
        };
        let recently_failed = lock(&self.extraction_failed)
            .get(circuit)
            .is_some_and(|at| at.elapsed() < EXTRACTION_RETRY);
        if recently_failed || !lock(&self.extracting).insert(circuit.clone()) {
            return;
        }
        let id = circuit.clone();
        let spawned = std::thread::Builder::new()
            .name(format!("cuzk-pce-{circuit}"))
            .spawn(move || {
                let ok = catch_unwind(AssertUnwindSafe(|| me.extract(&store, &id, bytes)))
                    .unwrap_or_else(|_| {
                        tracing::error!(circuit = %id, "the PCE extraction panicked");
                        false
                    });
                if !ok {
                    lock(&me.extraction_failed).insert(id.clone(), Instant::now());
                }
                lock(&me.extracting).remove(&id);
            });
        if let Err(e) = spawned {
            tracing::warn!(error = %e, "cannot start a PCE extraction thread");
            lock(&self.extracting).remove(circuit);
        }
    }

    /// Waits for room for `bytes` without queueing (polling `try_hold`: a waiting extraction
    /// delays no job and keeps no set from staying resident; when the engine is idle, resident
    /// sets are let go so that it cannot wait forever behind them), then records the PCE and
    /// writes it. False when it failed (not when it gave up because the service stops).
    fn extract(&self, store: &PceStore, circuit: &CircuitId, bytes: u64) -> bool {
        let budget = self.pipeline.snapshot().budget_bytes;
        if bytes > budget {
            tracing::warn!(%circuit, bytes, budget, "a PCE extraction needs more than the memory budget; jobs stay on the full path");
            return false;
        }
        let _held = loop {
            if self.stopping.load(Ordering::SeqCst) {
                tracing::info!(%circuit, "PCE extraction given up: shutting down");
                return true;
            }
            if let Some(held) = self.pipeline.try_hold(bytes) {
                break held;
            }
            let idle = {
                let st = lock(&self.state);
                st.running == 0 && st.queued == 0
            };
            if idle {
                self.srs.drop_resident();
                self.pces.drop_resident();
            }
            std::thread::sleep(EXTRACTION_POLL);
        };
        let (ok, result) = match store.obtain(circuit, false) {
            Ok((pce, _)) => {
                tracing::info!(%circuit, held_bytes = bytes, bytes = pce.bytes(), "PCE ready for the next job");
                (true, "ok")
            }
            Err(e) => {
                tracing::warn!(%circuit, error = %format!("{e:#}"), "PCE extraction failed; jobs stay on the full path");
                (false, "failed")
            }
        };
        self.metrics
            .pce_extractions
            .with_label_values(&[circuit.as_str(), result])
            .inc();
        ok
    }

    /// Deletes finished jobs beyond the retention age and count.
    fn sweep(&self) {
        let limits = lock(&self.limits).clone();
        let mut finished: Vec<(u64, String, Arc<Job>)> = {
            let st = lock(&self.state);
            st.jobs
                .iter()
                .filter_map(|(id, job)| {
                    let r = lock(&job.record);
                    r.state
                        .is_final()
                        .then(|| (r.finished_at_ms.unwrap_or(0), id.clone(), job.clone()))
                })
                .collect()
        };
        finished.sort_by_key(|(at, id, _)| Reverse((*at, id.clone())));
        let cutoff = now_ms().saturating_sub(limits.retention.as_millis() as u64);
        for (i, (at, id, job)) in finished.into_iter().enumerate() {
            if i < limits.retention_count && at >= cutoff {
                continue;
            }
            let mut st = lock(&self.state);
            if let Err(e) = self.store.remove(&id) {
                tracing::warn!(%id, error = %e, "cannot remove an expired job");
                continue;
            }
            st.jobs.remove(&id);
            let r = lock(&job.record);
            self.count(r.kind, r.state, -1);
            tracing::info!(%id, "expired job removed");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Concurrency;

    #[test]
    fn concurrency_is_derived_only_where_not_configured() {
        let c = |w, d, cores, gpus| {
            let c = Concurrency::derive(w, d, cores, gpus);
            (c.workers, c.depth)
        };
        assert_eq!(c(0, 0, 2, 0), (2, 2), "CPU proving");
        assert_eq!(c(0, 0, 64, 0), (2, 2), "CPU proving uses the cores itself");
        assert_eq!(c(0, 0, 16, 1), (6, 6), "one H200 box");
        assert_eq!(c(0, 0, 128, 2), (12, 12), "capped per GPU");
        assert_eq!(c(0, 0, 2, 1), (2, 2), "never under 2");
        assert_eq!(c(3, 0, 16, 1), (3, 6));
        assert_eq!(c(0, 5, 16, 0), (2, 5));
    }
}
