//! One job's partitions through the pipeline, several at once: partition k+1 is admitted and
//! synthesized while partition k waits for or sits on the prover, as far as the budget and the
//! depth allow. The job's thread admits the partitions in order (its own admissions are FIFO),
//! one thread per admitted partition synthesizes and proves it, and the job's thread collects
//! what they report. A partition that fails stops the others at their next step; the first
//! failure is the job's.
//!
//! With `split`, the prover slot is given back once a partition's device work (h, the G1 MSMs)
//! is done: B in G2 and the join run beside the next partition's device work, holding only B's
//! scalars (the reservation shrinks to them; the ledger's `finalizing` stage).

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{channel, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use blstrs::{Bls12, Scalar};
use ff::Field;
use rand::rngs::OsRng;

use super::ledger::{Ledger, Stage};
use super::pipeline::{Pipeline, Reservation};
use super::sets::Loaded;
use super::{internal, lock, refused, Ending};
use crate::circuits::ProofJob;
use crate::groth16::{prove_start, Backend, Proof};
use crate::metrics::Metrics;
use crate::pce::Pce;
use crate::srs::Srs;
use crate::synth::SynthPath;

/// How often the job's thread passes a cancellation on to its partitions.
const POLL: Duration = Duration::from_millis(100);

/// Where a partition is, as its job shows it: the job shows the furthest of its partitions.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Step {
    WaitingForMemory,
    Synthesis,
    WaitingForProver,
    Proving,
}

impl Step {
    pub fn as_str(self) -> &'static str {
        match self {
            Step::WaitingForMemory => "waiting-for-memory",
            Step::Synthesis => "synthesis",
            Step::WaitingForProver => "waiting-for-prover",
            Step::Proving => "proving",
        }
    }
}

/// What a running job shows.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Report {
    pub step: Step,
    pub partitions_done: usize,
    pub synthesis_s: f64,
    pub prove_s: f64,
}

enum Event {
    Step(usize, Step),
    Synthesized(f64),
    Proved(usize, Box<Proof<Bls12>>, f64),
    Ended(usize, Ending),
}

/// The gates and provers a job's partitions go through.
pub struct Partitions<'a> {
    pub pipeline: &'a Arc<Pipeline>,
    pub ledger: &'a Ledger,
    /// Prover slot i proves on `backends[i % len]`.
    pub backends: &'a [Arc<dyn Backend>],
    pub metrics: &'a Metrics,
    /// B in G2 and the join after the prover slot is given back.
    pub split: bool,
    pub priority: u8,
    /// Bytes reserved for each partition until it reaches the prover.
    pub estimate: u64,
}

/// One job's run: what its partition threads share.
struct Run<'r> {
    job: &'r dyn ProofJob,
    srs: &'r Srs,
    /// The job's PCE, until a partition finds it wrong.
    pce: Mutex<Option<Arc<Loaded<Pce>>>>,
    on_wrong_pce: &'r (dyn Fn() + Sync),
    cancel: &'r AtomicBool,
    /// Set on cancellation and on the first failure: every partition stops at its next step.
    stop: AtomicBool,
}

impl Run<'_> {
    fn stopped(&self) -> bool {
        self.stop.load(Ordering::SeqCst) || self.cancel.load(Ordering::SeqCst)
    }
}

impl Partitions<'_> {
    /// Proves every partition of `job` with `srs` (through `pce` while it is right; a wrong
    /// one is reported to `on_wrong_pce` once), telling `report` each change. The proofs come
    /// back in partition order.
    pub fn prove(
        &self,
        job: &dyn ProofJob,
        srs: &Srs,
        pce: Option<Arc<Loaded<Pce>>>,
        cancel: &AtomicBool,
        on_wrong_pce: &(dyn Fn() + Sync),
        report: &mut dyn FnMut(Report),
    ) -> Result<Vec<Proof<Bls12>>, Ending> {
        let n = job.partitions();
        let run = Run {
            job,
            srs,
            pce: Mutex::new(pce),
            on_wrong_pce,
            cancel,
            stop: AtomicBool::new(false),
        };
        let mut steps: Vec<Option<Step>> = vec![None; n];
        let mut proofs: Vec<Option<Proof<Bls12>>> = vec![None; n];
        let mut shown = Report {
            step: Step::WaitingForMemory,
            partitions_done: 0,
            synthesis_s: 0.0,
            prove_s: 0.0,
        };
        report(shown);
        let (mut failure, mut cancelled) = (None, false);
        std::thread::scope(|scope| {
            let (tx, rx) = channel();
            let run = &run;
            std::thread::Builder::new()
                .name("cuzk-admit".into())
                .spawn_scoped(scope, move || self.admit_all(scope, run, n, tx))
                .map_err(|e| internal(format!("cannot start a thread: {e}")))?;
            loop {
                match rx.recv_timeout(POLL) {
                    Ok(Event::Step(k, step)) => steps[k] = Some(step),
                    Ok(Event::Synthesized(secs)) => shown.synthesis_s += secs,
                    Ok(Event::Proved(k, proof, secs)) => {
                        steps[k] = None;
                        proofs[k] = Some(*proof);
                        shown.partitions_done += 1;
                        shown.prove_s += secs;
                    }
                    Ok(Event::Ended(k, ending)) => {
                        steps[k] = None;
                        run.stop.store(true, Ordering::SeqCst);
                        match ending {
                            Ending::Cancelled => cancelled = true,
                            failed => {
                                failure.get_or_insert(failed);
                            }
                        }
                    }
                    Err(RecvTimeoutError::Timeout) => {}
                    Err(RecvTimeoutError::Disconnected) => break,
                }
                if cancel.load(Ordering::SeqCst) {
                    run.stop.store(true, Ordering::SeqCst);
                }
                let furthest = steps.iter().flatten().max().copied();
                let now = Report {
                    step: furthest.unwrap_or(shown.step),
                    ..shown
                };
                if now != shown {
                    shown = now;
                    report(shown);
                }
            }
            Ok::<(), Ending>(())
        })?;
        if let Some(failed) = failure {
            return Err(failed);
        }
        if cancelled || cancel.load(Ordering::SeqCst) {
            return Err(Ending::Cancelled);
        }
        proofs
            .into_iter()
            .enumerate()
            .map(|(k, p)| p.ok_or_else(|| internal(format!("partition {k} was not proved"))))
            .collect()
    }

    /// Admits the partitions in order, each to a thread of its own, until one is refused or
    /// the run stops.
    fn admit_all<'scope, 'env: 'scope>(
        &'env self,
        scope: &'scope std::thread::Scope<'scope, 'env>,
        run: &'env Run<'env>,
        n: usize,
        tx: Sender<Event>,
    ) {
        for k in 0..n {
            if run.stopped() {
                return;
            }
            let _ = tx.send(Event::Step(k, Step::WaitingForMemory));
            let reservation = match self.pipeline.admit(self.priority, self.estimate, &run.stop) {
                Ok(r) => r,
                Err(e) => {
                    let _ = tx.send(Event::Ended(k, refused(e)));
                    return;
                }
            };
            let tx_k = tx.clone();
            let spawned = std::thread::Builder::new()
                .name(format!("cuzk-partition-{k}"))
                .spawn_scoped(scope, move || {
                    let outcome = catch_unwind(AssertUnwindSafe(|| {
                        self.partition(run, k, reservation, &tx_k)
                    }))
                    .unwrap_or_else(|_| {
                        Err(internal(format!(
                            "partition {k}: the prover panicked (see the log)"
                        )))
                    });
                    let event = match outcome {
                        Ok((proof, secs)) => Event::Proved(k, Box::new(proof), secs),
                        Err(ending) => {
                            run.stop.store(true, Ordering::SeqCst);
                            Event::Ended(k, ending)
                        }
                    };
                    let _ = tx_k.send(event);
                });
            if let Err(e) = spawned {
                let _ = tx.send(Event::Ended(
                    k,
                    internal(format!("cannot start a thread: {e}")),
                ));
                return;
            }
        }
    }

    /// Synthesizes and proves partition `k` under its reservation; the proof and its prove
    /// seconds.
    fn partition(
        &self,
        run: &Run<'_>,
        k: usize,
        mut reservation: Reservation,
        tx: &Sender<Event>,
    ) -> Result<(Proof<Bls12>, f64), Ending> {
        let step = |step: Step| {
            if run.stopped() {
                return Err(Ending::Cancelled);
            }
            let _ = tx.send(Event::Step(k, step));
            Ok(())
        };
        let kind = run.job.kind().as_str();
        step(Step::Synthesis)?;
        let entry = self.ledger.enter(Stage::Synthesizing, 0);
        let start = Instant::now();
        let pce = lock(&run.pce).clone();
        let (synth, path) = run
            .job
            .synthesize_with(k, pce.as_ref().map(|set| &set.value))?;
        drop(pce);
        if path == SynthPath::FullAfterPce && lock(&run.pce).take().is_some() {
            (run.on_wrong_pce)();
        }
        let secs = start.elapsed().as_secs_f64();
        let _ = tx.send(Event::Synthesized(secs));
        self.metrics
            .syntheses
            .with_label_values(&[kind, path.as_str()])
            .inc();
        self.metrics
            .synthesis_seconds
            .with_label_values(&[kind])
            .observe(secs);
        let bytes = synth.heap_bytes();
        let entry = entry.move_to(Stage::Synthesized, bytes);
        for (measure, b) in [("estimated", self.estimate), ("synthesized", bytes as u64)] {
            self.metrics
                .partition_bytes
                .with_label_values(&[kind, measure])
                .set(b as i64);
        }
        if k == 0 {
            tracing::info!(
                estimated_bytes = self.estimate,
                synthesized_bytes = bytes,
                synthesis_path = path.as_str(),
                synthesis_s = secs,
                "partition reservation: estimate and synthesized size"
            );
        }

        step(Step::WaitingForProver)?;
        let slot = self
            .pipeline
            .prover(self.priority, &mut reservation, &run.stop)
            .map_err(refused)?;
        step(Step::Proving)?;
        let entry = entry.move_to(Stage::Proving, bytes);
        let backend = &self.backends[slot.id() % self.backends.len()];
        let failed = |e| internal(format!("partition {k}: {e}"));
        let (r, s) = (Scalar::random(&mut OsRng), Scalar::random(&mut OsRng));
        let started = prove_start(backend.as_ref(), run.srs, synth, r, s).map_err(failed)?;
        // Split: the next partition's device work starts now, beside this one's finish.
        let slot = if self.split {
            drop(slot);
            None
        } else {
            Some(slot)
        };
        let left = started.heap_bytes();
        let entry = entry.move_to(Stage::Finalizing, left);
        reservation.shrink_to(left as u64);
        let (proof, timings) = started.finish(backend.as_ref(), run.srs).map_err(failed)?;
        drop((entry, slot, reservation));
        let secs = timings.total.as_secs_f64();
        self.metrics
            .prove_seconds
            .with_label_values(&[kind])
            .observe(secs);
        Ok((proof, secs))
    }
}
