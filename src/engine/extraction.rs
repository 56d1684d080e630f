//! Background PCE extraction: the first job of a circuit whose PCE file is missing or unusable
//! starts one extraction on a thread of its own (one per circuit at a time, none within
//! [`EXTRACTION_RETRY`] of a failure); the next job of that circuit loads the file.
//!
//! An extraction holds budget like anything else, but it never queues for it: it polls
//! `try_hold`, so it delays no job and keeps no set from staying resident; when the engine is
//! idle it lets resident sets go, so that it cannot wait forever behind them.

use std::collections::{HashMap, HashSet};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use super::{lock, Inner};
use crate::circuits::CircuitId;
use crate::memory::Purpose;
use crate::pce::PceStore;

/// How often a waiting extraction looks for room in the budget.
const EXTRACTION_POLL: Duration = Duration::from_millis(500);
/// How long after a failed extraction the circuit's next one may start.
const EXTRACTION_RETRY: Duration = Duration::from_secs(600);

#[derive(Default)]
pub(super) struct Extractions {
    /// Circuits whose PCE is being extracted.
    pub(super) running: Mutex<HashSet<CircuitId>>,
    /// When a circuit's last extraction failed.
    failed: Mutex<HashMap<CircuitId, Instant>>,
    /// Set when draining: extractions waiting for budget give up.
    pub(super) stopping: AtomicBool,
}

impl Inner {
    /// Records `circuit`'s PCE on a thread of its own, once at a time per circuit (and not
    /// again within EXTRACTION_RETRY of a failure); the next job of that circuit loads it.
    pub(super) fn extract_in_background(&self, circuit: &CircuitId, bytes: u64) {
        let (Some(store), Some(me)) = (self.proving.pce.clone(), self.me.upgrade()) else {
            return;
        };
        let x = &self.extractions;
        let recently_failed = lock(&x.failed)
            .get(circuit)
            .is_some_and(|at| at.elapsed() < EXTRACTION_RETRY);
        if recently_failed || !lock(&x.running).insert(circuit.clone()) {
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
                    lock(&me.extractions.failed).insert(id.clone(), Instant::now());
                }
                lock(&me.extractions.running).remove(&id);
            });
        if let Err(e) = spawned {
            tracing::warn!(error = %e, "cannot start a PCE extraction thread");
            lock(&x.running).remove(circuit);
        }
    }

    /// Waits for room for `bytes` without queueing, then records the PCE and writes it. False
    /// when it failed (not when it gave up because the service stops).
    fn extract(&self, store: &PceStore, circuit: &CircuitId, bytes: u64) -> bool {
        let budget = self.proving.admission.budget();
        if bytes > budget {
            tracing::warn!(%circuit, bytes, budget, "a PCE extraction needs more than the memory budget; jobs stay on the full path");
            return false;
        }
        let _held = loop {
            if self.extractions.stopping.load(Ordering::SeqCst) {
                tracing::info!(%circuit, "PCE extraction given up: shutting down");
                return true;
            }
            if let Some(held) = self
                .proving
                .admission
                .try_hold(Purpose::PceExtraction, bytes)
            {
                break held;
            }
            if self.queue.lock().idle() {
                self.residency.drop_resident();
            }
            std::thread::sleep(EXTRACTION_POLL);
        };
        let (ok, result) = match circuit.obtain_pce(store, false) {
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
}
