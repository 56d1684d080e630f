//! The appliance assembled from [`Settings`]: the one wiring `cuzk serve` and every `cuzk bench`
//! that runs the engine use, so that a benchmark measures what production runs. Budget from the
//! cgroup (or MemTotal), backends from `proving.backend`, concurrency derived from the cores and
//! GPUs where not configured, the memory gate, the prover slots, the PCE store, the engine.

use std::sync::Arc;
use std::time::Duration;

use anyhow::{anyhow, Context, Result};

use crate::config::Settings;
use crate::engine::{Concurrency, Engine, Limits, ProverSlots, Proving};
use crate::groth16::Backend;
use crate::jobs::{DataDirLock, JobStore};
use crate::memory::{memlock_limit, Admission, Budget, Hold, PinnedPool, Purpose, System, GRANULE};
use crate::metrics::Metrics;
use crate::pce::PceStore;
use crate::systemd::Notifier;

/// A running engine and what was derived on the way.
pub struct Appliance {
    pub engine: Engine,
    pub metrics: Arc<Metrics>,
    pub budget: Budget,
    pub concurrency: Concurrency,
    /// The prover slots (their busy times are the bench's prover occupancy).
    pub slots: Arc<ProverSlots>,
    /// The backends behind the slots: each GPU, or the CPU.
    pub backends: Vec<Arc<dyn Backend>>,
    /// The page-locked pool partitions' vectors are lent from.
    pub pool: Option<Arc<PinnedPool>>,
    /// The budget's share for the backends' page-locked memory and for the pool, returned
    /// when they go.
    _locked: Vec<Hold>,
}

/// What SIGHUP may change in a running engine.
pub fn limits(s: &Settings) -> Limits {
    Limits {
        max_queued_jobs: s.max_queued_jobs,
        retention: s.retention,
        retention_count: s.retention_count,
    }
}

/// Starts the engine as `settings` say, its jobs in the data directory `owner` holds (taken
/// with [`DataDirLock::take`] before anything else touches it). `notifier` and `watchdog`:
/// systemd's, under `cuzk serve`.
pub fn assemble(
    settings: &Settings,
    owner: DataDirLock,
    notifier: Option<Arc<Notifier>>,
    watchdog: Option<Duration>,
) -> Result<Appliance> {
    let store = JobStore::open(owner)?;
    let budget = Budget::detect(
        &System::default(),
        settings.budget_bytes,
        settings.margin_bytes,
    )
    .context("reading the memory limits")?;
    tracing::info!(
        budget_bytes = budget.total_bytes,
        limit_bytes = budget.limit_bytes,
        source = %budget.source,
        "memory budget"
    );
    let metrics = Arc::new(Metrics::new());
    metrics.budget_bytes.set(budget.total_bytes as i64);
    metrics.memory_limit_bytes.set(budget.limit_bytes as i64);
    let provers = crate::gpu::select(settings.backend, &settings.gpus, &settings.kernel_dir)?;
    let slot_count = settings.provers * provers.backends.len();
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let concurrency =
        Concurrency::derive(settings.workers, settings.depth, cores, provers.gpus.len());
    tracing::info!(
        workers = concurrency.workers,
        depth = concurrency.depth,
        prover_slots = slot_count,
        backend = provers.name(),
        cores,
        "concurrency (0 in proving.workers/depth: derived)"
    );
    let admission = Admission::new(budget.total_bytes, concurrency.depth);
    // What the backends keep page-locked counts against the budget for as long as they run.
    let locked: u64 = provers.backends.iter().map(|b| b.locked_bytes()).sum();
    let mut locked = match locked {
        0 => Vec::new(),
        bytes => vec![admission.set_aside(Purpose::Locked, bytes).ok_or_else(|| {
            anyhow!(
                "the memory budget ({} bytes) cannot hold the {bytes} bytes the GPUs keep page-locked",
                budget.total_bytes
            )
        })?],
    };
    let pool = match settings.pinned_bytes {
        None => {
            tracing::info!(
                "no page-locked pool (memory.pinned = false): partitions' vectors on the heap"
            );
            None
        }
        Some(configured) => {
            let (pool, hold) = pinned_pool(&admission, budget.total_bytes, configured)?;
            for backend in &provers.backends {
                if let Some(took) = backend.register_pool(&pool)? {
                    tracing::info!(
                        backend = backend.name(),
                        bytes = pool.status().locked_bytes,
                        seconds = took.as_secs_f64(),
                        "page-locked pool registered with the device"
                    );
                }
            }
            locked.push(hold);
            Some(pool)
        }
    };
    let slots = ProverSlots::new(slot_count);
    let pce = if settings.pce {
        Some(Arc::new(PceStore::open(&settings.pce_dir)?))
    } else {
        None
    };
    let backends = provers.backends.clone();
    let engine = Engine::start(
        store,
        metrics.clone(),
        Proving {
            admission,
            slots: slots.clone(),
            provers,
            finish: settings.finish,
            compact_witness: settings.compact_witness,
            workers: concurrency.workers,
            params_dir: settings.params_dir.clone(),
            pce,
            pool: pool.clone(),
        },
        limits(settings),
        notifier,
        watchdog,
    )?;
    Ok(Appliance {
        engine,
        metrics,
        budget,
        concurrency,
        slots,
        backends,
        pool,
        _locked: locked,
    })
}

/// The page-locked pool: `configured` bytes (0: a quarter of the budget), no more than
/// RLIMIT_MEMLOCK allows (a lower limit is said once, naming the unit's LimitMEMLOCK=), held
/// from the budget for as long as it exists.
fn pinned_pool(
    admission: &Arc<Admission>,
    budget: u64,
    configured: u64,
) -> Result<(Arc<PinnedPool>, Hold)> {
    let wanted = match configured {
        0 => budget / 4,
        bytes => bytes,
    };
    let limit = memlock_limit();
    let bytes = match limit {
        Some(limit) if limit < wanted => {
            tracing::warn!(
                rlimit_memlock = limit,
                wanted,
                "RLIMIT_MEMLOCK is below the page-locked pool's size: the pool is cut to it; set LimitMEMLOCK=infinity in the unit (the packaged unit does)"
            );
            limit
        }
        _ => wanted,
    };
    let bytes = bytes / GRANULE as u64 * GRANULE as u64;
    if bytes == 0 {
        anyhow::bail!("the page-locked pool would be empty (RLIMIT_MEMLOCK {limit:?} bytes, budget {budget}): raise LimitMEMLOCK= or set memory.pinned = false");
    }
    let hold = admission.set_aside(Purpose::PinnedPool, bytes).ok_or_else(|| {
        anyhow!("the memory budget ({budget} bytes) cannot hold a page-locked pool of {bytes} bytes: lower memory.pinned_bytes")
    })?;
    let pool = PinnedPool::new(bytes as usize)?;
    let status = pool.status();
    tracing::info!(
        locked_bytes = status.locked_bytes,
        seconds = status.lock_seconds,
        rlimit_memlock = limit,
        "page-locked pool mapped and locked"
    );
    Ok((pool, hold))
}
