//! Parameter sets and PCEs in memory: shared by the jobs using them, loaded under a [`Hold`]
//! from the budget, the last one of each kind kept resident for the next job unless a load
//! waits for budget ([`Sets`]).
//!
//! A parameter set is loaded at its job's priority, one load per file at a time; while a load
//! waits for budget the engine starts only more urgent jobs (`may_start`), so the sets in use
//! drain. A PCE is an optimisation: it is loaded only when it fits now with nothing waiting
//! (`Admission::try_hold`), and a missing or unusable file starts a background extraction
//! (`super::extraction`) while this job synthesizes on the full path.
//!
//! [`Hold`]: crate::memory::Hold

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use super::run::{internal, set_hold_bytes, Ending, OverBudget};
use super::sets::{Loaded, Sets};
use super::{lock, Inner};
use crate::circuits::{CircuitId, ProofJob};
use crate::memory::{Purpose, Refused};
use crate::pce::{Pce, PceStore};
use crate::srs::Srs;

#[derive(Default)]
pub(super) struct Residency {
    /// Parameter sets in use, shared by concurrent jobs.
    pub(super) srs: Sets<Srs>,
    /// PCEs in use, likewise; loaded only when they fit without waiting.
    pub(super) pces: Sets<Pce>,
    /// One load per file at a time (held while it waits for budget and reads).
    loading: Mutex<HashMap<PathBuf, Arc<Mutex<()>>>>,
    /// Priorities of the loads waiting for budget.
    loads_waiting: Mutex<Vec<u8>>,
    /// A rehearsal's parameter set (random bases where no file exists), held for the engine's
    /// life; while there is one, proofs end unverified (`Engine::rehearse`).
    rehearsal: std::sync::OnceLock<Arc<Loaded<Srs>>>,
}

impl Residency {
    /// Whether a job of `priority` may start now: not while a load of its priority or a more
    /// urgent one waits for budget (the sets in use drain and the load gets its room).
    pub(super) fn may_start(&self, priority: u8) -> bool {
        lock(&self.loads_waiting).iter().all(|w| priority < *w)
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

    /// Lets the resident sets of both kinds go (they stay while a job uses them).
    pub(super) fn drop_resident(&self) {
        self.srs.drop_resident();
        self.pces.drop_resident();
    }
}

/// Bytes held while a PCE is recorded: its arrays take about 57 bytes per constraint (8 per
/// non-zero entry, 12 per row), growing vectors up to twice that; 96 per row of the domain (at
/// least one row per constraint) covers them.
pub(super) fn extraction_bytes(srs: &Srs) -> u64 {
    (srs.h.len() as u64 + 1) * 96
}

impl Inner {
    /// Rehearses with `srs` where no file of the size exists: it stands for `path` (held from
    /// the budget for the engine's life), and proofs, which cannot verify with random bases,
    /// end unverified (the job's stage says so; nothing counts them as verified).
    pub(super) fn rehearse(&self, path: &Path, srs: Srs) -> anyhow::Result<()> {
        let r = &self.residency;
        let bytes = set_hold_bytes(srs.heap_bytes() as u64, srs.shape());
        let held = self
            .proving
            .admission
            .hold(0, Purpose::Parameters, bytes, &AtomicBool::new(false))
            .map_err(|e| anyhow::anyhow!("the rehearsal's parameter set ({bytes} bytes): {e:?}"))?;
        let set = Arc::new(Loaded { value: srs, held });
        r.rehearsal
            .set(set.clone())
            .map_err(|_| anyhow::anyhow!("the engine already rehearses"))?;
        r.srs.insert(path, &set, || true);
        tracing::warn!(path = %path.display(), bytes, "rehearsing: a parameter set of random bases stands for this file; proofs will not be verified");
        Ok(())
    }

    /// Whether this engine rehearses (proofs end unverified).
    pub(super) fn rehearsing(&self) -> bool {
        self.residency.rehearsal.get().is_some()
    }

    /// The parameter set at `path`, shared with jobs using it now; loaded (its file's size held
    /// from the budget first, at the job's priority) when no job has it.
    pub(super) fn srs_for(
        &self,
        path: &Path,
        urgency: u8,
        cancel: &AtomicBool,
    ) -> Result<Arc<Loaded<Srs>>, Ending> {
        let r = &self.residency;
        if let Some(set) = r.srs.get(path) {
            return Ok(set);
        }
        // One load per set at a time; loads of different sets wait in the dispatcher together.
        let flight = r.flight(path);
        let _one_load = lock(&flight);
        let file_bytes = std::fs::metadata(path)
            .map_err(|e| internal(format!("Groth16 parameters {}: {e}", path.display())))?
            .len();
        let shape = Srs::read_shape(path).map_err(|e| {
            internal(format!(
                "reading Groth16 parameters {}: {e:#}",
                path.display()
            ))
        })?;
        let bytes = set_hold_bytes(file_bytes, shape);
        if cancel.load(Ordering::SeqCst) {
            return Err(Ending::Cancelled);
        }
        // Registered as waiting with the resident set dropped in one step: a load finishing
        // meanwhile keeps nothing resident (two sets are never held for the sake of a cache).
        let waiting = || lock(&r.loads_waiting).push(urgency);
        if let Some(set) = r.srs.get_or_wait(path, waiting) {
            return Ok(set); // loaded by the flight this one waited behind
        }
        r.pces.drop_resident();
        let held = self
            .proving
            .admission
            .hold(urgency, Purpose::Parameters, bytes, cancel);
        {
            let mut waiting = lock(&r.loads_waiting);
            if let Some(i) = waiting.iter().position(|p| *p == urgency) {
                waiting.swap_remove(i);
            }
        }
        self.queue.notify();
        let held = held.map_err(|e| match e {
            Refused::Cancelled => Ending::Cancelled,
            Refused::TooLarge { budget, .. } => OverBudget::Parameters {
                path: path.to_owned(),
                bytes,
                budget,
            }
            .into(),
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
        r.srs.insert(path, &set, || r.may_keep());
        Ok(set)
    }

    /// The PCE of `job`'s circuit, if PCEs are on, its file is good and it fits in the budget
    /// now (a PCE never waits for budget: the full path needs none). A missing or unusable file
    /// starts a background extraction (`extraction` bytes held while it records) and this job
    /// synthesizes on the full path.
    pub(super) fn pce_for(&self, job: &dyn ProofJob, extraction: u64) -> Option<Arc<Loaded<Pce>>> {
        let store = self.proving.pce.as_ref()?;
        let circuit = job.circuit_id();
        let found = self.load_pce(store, &circuit, extraction);
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
        extraction: u64,
    ) -> Option<Arc<Loaded<Pce>>> {
        let r = &self.residency;
        let path = store.path(circuit.as_str());
        if let Some(set) = r.pces.get(&path) {
            return Some(set);
        }
        let flight = r.flight(&path);
        let _one_load = lock(&flight);
        if let Some(set) = r.pces.get(&path) {
            return Some(set);
        }
        let Ok(meta) = std::fs::metadata(&path) else {
            self.extract_in_background(circuit, extraction);
            return None;
        };
        let Some(held) = self.proving.admission.try_hold(Purpose::Pce, meta.len()) else {
            tracing::info!(%circuit, bytes = meta.len(), "the PCE does not fit in the budget now; full path");
            return None;
        };
        let start = Instant::now();
        let loaded = circuit
            .pce_key()
            .map_err(|e| format!("{e:#}"))
            .and_then(|key| store.load(&key).map_err(|e| e.to_string()));
        match loaded {
            Ok(Some(pce)) => {
                let secs = start.elapsed().as_secs_f64();
                self.metrics
                    .pce_load_seconds
                    .with_label_values(&[circuit.as_str()])
                    .observe(secs);
                tracing::info!(%circuit, secs, held_bytes = held.bytes(), "PCE loaded");
                let set = Arc::new(Loaded { value: pce, held });
                r.pces.insert(&path, &set, || r.may_keep());
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
    pub(super) fn discard_pce(&self, circuit: &CircuitId) {
        let Some(store) = &self.proving.pce else {
            return;
        };
        self.residency.pces.forget(&store.path(circuit.as_str()));
        if let Err(e) = store.discard(circuit.as_str()) {
            tracing::warn!(%circuit, error = %format!("{e:#}"), "cannot remove a wrong PCE file");
        }
    }
}
