//! One job's partitions through the pipeline, several at once: partition k+1 is admitted and
//! synthesized while partition k waits for or sits on the prover, as far as the budget and the
//! depth allow. The job's thread admits the partitions in order (its own admissions are FIFO),
//! one thread per admitted partition synthesizes and proves it, and the job's thread collects
//! what they report. A partition that fails stops the others at their next step; the first
//! failure is the job's.
//!
//! Unless [`Finish::Held`], the prover slot is given back once a partition's G1 work (h, the G1
//! MSMs) is done: B in G2 and the join run beside the next partition's device work, holding only
//! B's scalars (the reservation shrinks to them; the ledger's `finalizing` stage). With
//! [`Finish::Held`], B in G2 is summed in the same backend call as the G1 work.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{channel, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use bellperson::groth16::PreparedVerifyingKey;
use blstrs::{Bls12, Scalar};
use ff::Field;
use rand::rngs::OsRng;

use super::ledger::{Held, Ledger, Stage};
use super::lock;
use super::pooled::{lease, PoolBuffers};
use super::provers::{ProverSlot, ProverSlots};
use super::run::{internal, refused, Ending};
use super::sets::Loaded;
use crate::circuits::{CircuitError, ProofJob, Through};
use crate::config::Finish;
use crate::groth16::{prove_start, Backend, CpuBackend, Proof, ProveError};
use crate::jobs::JobError;
use crate::memory::{Admission, Lease, PinnedPool, Reservation};
use crate::metrics::Metrics;
use crate::pce::{HoldsPce, Pce, Synthesized};
use crate::srs::Srs;
use crate::synth::{HostBytes, SynthPath};

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
    pub admission: &'a Arc<Admission>,
    pub slots: &'a Arc<ProverSlots>,
    pub ledger: &'a Ledger,
    /// Prover slot i proves on `backends[i % len]`.
    pub backends: &'a [Arc<dyn Backend>],
    pub metrics: &'a Metrics,
    pub finish: Finish,
    /// Keep partitions as compact witnesses where every backend computes a, b and c.
    pub compact: bool,
    pub priority: u8,
    /// Bytes each partition holds until it reaches the prover, per path: reserved from the
    /// budget, but for the part lent from `pool`.
    pub estimates: HostBytes,
    /// The page-locked pool a partition's vectors are lent from, and their sizes
    /// (`pooled_sizes`; on the heap, where none is lent, the room they are given).
    pub pool: Option<&'a Arc<PinnedPool>>,
    pub pooled: [usize; 4],
    /// Verify each partition's proof against its own public inputs with the set's verifying
    /// key (a rehearsal's set of random bases has none to verify with).
    pub check: bool,
}

/// A partition let in: its reservation (`estimate`, less what `lease` lends) for the path
/// chosen, compact or not, through `pce` where there is one.
struct Admitted {
    reservation: Reservation,
    estimate: u64,
    lease: Option<Lease>,
    pce: Option<Arc<Loaded<Pce>>>,
    compact: bool,
}

/// One job's run: what its partition threads share.
struct Run<'r> {
    job: &'r dyn ProofJob,
    srs: &'r Srs,
    /// The job's PCE, until a partition finds it wrong.
    pce: Mutex<Option<Arc<Loaded<Pce>>>>,
    on_wrong_pce: &'r (dyn Fn() + Sync),
    /// The set's verifying key, prepared at the first partition proof checked.
    pvk: OnceLock<PreparedVerifyingKey<Bls12>>,
    cancel: &'r AtomicBool,
    /// Set on cancellation and on the first failure: every partition stops at its next step.
    stop: AtomicBool,
}

impl Run<'_> {
    fn stopped(&self) -> bool {
        self.stop.load(Ordering::SeqCst) || self.cancel.load(Ordering::SeqCst)
    }

    /// Whether `proof` verifies against `inputs` (ONE first) with the set's verifying key.
    fn verifies(&self, proof: &Proof<Bls12>, inputs: &[Scalar]) -> bool {
        let pvk = self
            .pvk
            .get_or_init(|| bellperson::groth16::prepare_verifying_key(&self.srs.vk));
        bellperson::groth16::verify_proof(pvk, proof, inputs.get(1..).unwrap_or_default())
            .unwrap_or(false)
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
            pvk: OnceLock::new(),
            cancel,
            stop: AtomicBool::new(false),
        };
        let mut steps: Vec<Option<Step>> = vec![None; n];
        let mut proofs: Vec<Option<Proof<Bls12>>> = vec![None; n];
        let mut now = Report {
            step: Step::WaitingForMemory,
            partitions_done: 0,
            synthesis_s: 0.0,
            prove_s: 0.0,
        };
        let mut shown = now;
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
                    Ok(Event::Synthesized(secs)) => now.synthesis_s += secs,
                    Ok(Event::Proved(k, proof, secs)) => {
                        steps[k] = None;
                        proofs[k] = Some(*proof);
                        now.partitions_done += 1;
                        now.prove_s += secs;
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
                if let Some(furthest) = steps.iter().flatten().max() {
                    now.step = *furthest;
                }
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
            // The path is chosen here: its bytes are what is reserved. A compact witness takes
            // no pool buffers; otherwise the pool's bytes are held from the budget already,
            // and what is lent is not reserved again.
            let pce = lock(&run.pce).clone();
            let compact = pce.as_ref().filter(|set| self.compacts(set));
            let (estimate, lease) = match compact {
                // The shape's bound, or the PCE's where its proven bits make it closer.
                Some(set) => (self.estimates.compact.min(set.value.compact_bytes()), None),
                None => (self.estimates.full, lease(self.pool, &self.pooled)),
            };
            let compact = compact.is_some();
            let lent = lease.as_ref().map_or(0, |l| l.bytes().min(estimate));
            let reservation = match self
                .admission
                .admit(self.priority, estimate - lent, &run.stop)
            {
                Ok(r) => r,
                Err(e) => {
                    let _ = tx.send(Event::Ended(k, refused(e)));
                    return;
                }
            };
            let admitted = Admitted {
                reservation,
                estimate,
                lease,
                pce,
                compact,
            };
            let tx_k = tx.clone();
            let spawned = std::thread::Builder::new()
                .name(format!("cuzk-partition-{k}"))
                .spawn_scoped(scope, move || {
                    let outcome =
                        catch_unwind(AssertUnwindSafe(|| self.partition(run, k, admitted, &tx_k)))
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

    /// Whether a partition through `set` is kept as its compact witness: asked for, and
    /// every prover computes a, b and c itself.
    fn compacts(&self, set: &Loaded<Pce>) -> bool {
        self.compact && self.backends.iter().all(|b| b.evaluates(&set.value))
    }

    /// Synthesizes and proves partition `k` as admitted; the proof and its prove seconds.
    fn partition(
        &self,
        run: &Run<'_>,
        k: usize,
        admitted: Admitted,
        tx: &Sender<Event>,
    ) -> Result<(Proof<Bls12>, f64), Ending> {
        let Admitted {
            mut reservation,
            estimate,
            lease,
            pce,
            compact,
        } = admitted;
        let step = |step: Step| {
            if run.stopped() {
                return Err(Ending::Cancelled);
            }
            let _ = tx.send(Event::Step(k, step));
            Ok(())
        };
        let kind = run.job.kind().as_str();
        step(Step::Synthesis)?;
        let entry = self.ledger.enter(Stage::Synthesizing, Held::default());
        let start = Instant::now();
        // A PCE found wrong since this partition was admitted is not used.
        let pce = pce.filter(|_| lock(&run.pce).is_some());
        let shared: Option<Arc<dyn HoldsPce>> = pce
            .as_ref()
            .filter(|_| compact)
            .map(|set| set.clone() as Arc<dyn HoldsPce>);
        let through = match (&shared, &pce) {
            (Some(shared), _) => Through::Compact(shared),
            (None, Some(set)) => Through::Pce(&set.value),
            (None, None) => Through::Full,
        };
        let synthesized = match (compact, &through) {
            // Admitted compact, its PCE gone: the full path, under its own reservation.
            (true, Through::Full) => Err(CircuitError::CompactRefused {
                partition: k,
                why: "the PCE was found wrong after this partition was admitted".into(),
            }),
            _ => {
                run.job
                    .synthesize_with(k, through, &PoolBuffers::new(lease.as_ref(), &self.pooled))
            }
        };
        drop(shared);
        // The buffers taken keep their memory lent; the rest goes back to the pool now.
        drop((pce, lease));
        let (synth, path, estimate) = match synthesized {
            // Refused: synthesized again on the full path under the full path's reservation,
            // which says whether the input or the PCE is wrong.
            Err(CircuitError::CompactRefused { why, .. }) => {
                tracing::warn!(partition = k, refused = %why, "a compact synthesis was refused: synthesized again on the full path");
                drop(reservation);
                let (synth, full) = self.full_again(run, k)?;
                reservation = full;
                (synth, SynthPath::FullAfterPce, self.estimates.full)
            }
            synthesized => {
                let (synth, path) = synthesized?;
                (synth, path, estimate)
            }
        };
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
        let held = Held {
            heap: bytes,
            pinned: synth.lent_bytes(),
        };
        self.count_buffers(kind, &synth);
        let entry = entry.move_to(Stage::Synthesized, held);
        for (measure, b) in [("estimated", estimate), ("synthesized", bytes as u64)] {
            self.metrics
                .partition_bytes
                .with_label_values(&[kind, measure])
                .set(b as i64);
        }
        if k == 0 {
            tracing::info!(
                estimated_bytes = estimate,
                synthesized_bytes = bytes,
                pinned_bytes = held.pinned,
                synthesis_path = path.as_str(),
                synthesis_s = secs,
                "partition reservation: estimate and synthesized size"
            );
        }

        if path == SynthPath::Compact {
            // What the compact witness holds, and B's scalars if the prover's call gathers them
            // on the host: the rest of the estimate goes back while it waits for the prover.
            let b_scalars = match self.finish {
                Finish::Held => 0,
                Finish::Prover | Finish::Cpu => run.srs.b_g1.len() * 32,
            };
            reservation.settle_to((bytes + b_scalars) as u64);
        }

        step(Step::WaitingForProver)?;
        let mut slot = self
            .slots
            .acquire(self.priority, &run.stop)
            .map_err(|_| Ending::Cancelled)?;
        reservation.reached_prover();
        step(Step::Proving)?;
        let entry = entry.move_to(Stage::Proving, held);
        let failed = |e| internal(format!("partition {k}: {e}"));
        let (r, s) = (Scalar::random(&mut OsRng), Scalar::random(&mut OsRng));
        let with_b_g2 = self.finish == Finish::Held;
        let inputs = synth.inputs().to_vec();
        let mut again = None;
        let started = match prove_start(self.backend(&slot), run.srs, synth, r, s, with_b_g2) {
            // The prover found rows of the compact witness unsatisfied: the PCE is wrong for
            // the circuit (as the full path, tried now, says by succeeding) or the input is.
            Err(ProveError::Unsatisfied { rows }) if path == SynthPath::Compact => {
                tracing::warn!(partition = k, rows, "rows unsatisfied through the PCE on the prover: synthesized again on the full path");
                if lock(&run.pce).take().is_some() {
                    (run.on_wrong_pce)();
                }
                let (full, next) = self.again_in_full(run, k, slot)?;
                slot = next;
                let started = prove_start(self.backend(&slot), run.srs, full.0, r, s, with_b_g2);
                again = Some(full.1);
                started
            }
            started => started,
        }
        .map_err(failed)?;
        // Split: the next partition's device work starts now, beside this one's finish.
        let prover = self.backend(&slot);
        let finisher: &dyn Backend = match self.finish {
            Finish::Held | Finish::Prover => prover,
            Finish::Cpu => &CpuBackend,
        };
        let slot = if self.finish == Finish::Held {
            Some(slot)
        } else {
            drop(slot);
            None
        };
        let left = started.heap_bytes();
        let entry = entry.move_to(
            Stage::Finalizing,
            Held {
                heap: left,
                pinned: 0,
            },
        );
        reservation.shrink_to(left as u64);
        let (proof, timings) = started.finish(finisher, run.srs).map_err(failed)?;
        drop((entry, slot, reservation, again));
        let proof = crate::faults::prover_output(proof);
        let proof = self.checked(run, k, proof, &inputs, prover)?;
        let secs = timings.total.as_secs_f64();
        self.metrics
            .prove_seconds
            .with_label_values(&[kind])
            .observe(secs);
        Ok((proof, secs))
    }

    /// Partition `k`'s `proof`, made by `prover`, if it verifies against the partition's own
    /// public `inputs` (or nothing is checked). Else it is counted and the partition is
    /// synthesized again and proved once more on the other backend (the CPU for a GPU; the CPU
    /// again where it is the only one): a proof that fails twice fails the job.
    fn checked(
        &self,
        run: &Run<'_>,
        k: usize,
        proof: Proof<Bls12>,
        inputs: &[Scalar],
        prover: &dyn Backend,
    ) -> Result<Proof<Bls12>, Ending> {
        if !self.check || run.verifies(&proof, inputs) {
            return Ok(proof);
        }
        let kind = run.job.kind().as_str();
        let wrong = |backend: &dyn Backend| {
            self.metrics
                .wrong_partition_proofs
                .with_label_values(&[kind, backend.name()])
                .inc();
        };
        wrong(prover);
        let other: &dyn Backend = match prover.name() {
            "cpu" => self
                .backends
                .iter()
                .map(|b| b.as_ref())
                .find(|b| b.name() != "cpu")
                .unwrap_or(&CpuBackend),
            _ => &CpuBackend,
        };
        tracing::error!(
            partition = k,
            backend = prover.name(),
            again_on = other.name(),
            "a partition's proof does not verify against its public inputs: proved once more"
        );
        let (synth, reservation) = self.full_again(run, k)?;
        let (r, s) = (Scalar::random(&mut OsRng), Scalar::random(&mut OsRng));
        let (proof, _) = prove_start(other, run.srs, synth, r, s, true)
            .and_then(|started| started.finish(other, run.srs))
            .map_err(|e| internal(format!("partition {k}: {e}")))?;
        let proof = crate::faults::prover_output(proof);
        drop(reservation);
        if run.verifies(&proof, inputs) {
            return Ok(proof);
        }
        wrong(other);
        Err(Ending::Failed(JobError {
            kind: "wrong-proof".into(),
            detail: format!(
                "partition {k}'s proof does not verify against its public inputs, made on {} and again on {}",
                prover.name(),
                other.name()
            ),
        }))
    }

    /// The backend prover slot `slot` proves on.
    fn backend(&self, slot: &ProverSlot) -> &dyn Backend {
        self.backends[slot.id() % self.backends.len()].as_ref()
    }

    /// Partition `k` synthesized again on the full path on the heap, under a reservation of
    /// its own (the compact one gave its estimate back): the prover slot goes back while that
    /// waits for the budget, so the partitions ahead can finish; then a slot again.
    fn again_in_full(
        &self,
        run: &Run<'_>,
        k: usize,
        slot: ProverSlot,
    ) -> Result<((Synthesized, Reservation), ProverSlot), Ending> {
        drop(slot);
        let (synth, mut reservation) = self.full_again(run, k)?;
        let slot = self
            .slots
            .acquire(self.priority, &run.stop)
            .map_err(|_| Ending::Cancelled)?;
        reservation.reached_prover();
        Ok(((synth, reservation), slot))
    }

    /// Partition `k` synthesized on the full path on the heap, under the full path's
    /// reservation (waited for).
    fn full_again(&self, run: &Run<'_>, k: usize) -> Result<(Synthesized, Reservation), Ending> {
        let reservation = self
            .admission
            .admit(self.priority, self.estimates.full, &run.stop)
            .map_err(refused)?;
        let (synth, _) =
            run.job
                .synthesize_with(k, Through::Full, &PoolBuffers::new(None, &self.pooled))?;
        Ok((synth, reservation))
    }

    /// Counts where `synth`'s large vectors are: lent from the pool, or on the heap; or that it
    /// is a compact witness (on the heap, in place of them).
    fn count_buffers(&self, kind: &str, synth: &Synthesized) {
        let (heap, compact) = match synth {
            Synthesized::Full(synth) => (
                [&synth.a, &synth.b, &synth.c, &synth.aux]
                    .iter()
                    .map(|v| v.heap_bytes())
                    .sum(),
                0,
            ),
            Synthesized::Compact(proof) => (0, proof.witness.heap_bytes()),
        };
        let places = [
            ("pinned", synth.lent_bytes()),
            ("heap", heap),
            ("compact", compact),
        ];
        for (place, bytes) in places {
            self.metrics
                .synthesis_buffer_bytes
                .with_label_values(&[kind, place])
                .inc_by(bytes as u64);
        }
    }
}

#[cfg(test)]
mod tests {
    //! The real pipeline, ledger and CPU backend on a synthetic job of several partitions
    //! (every 2 KiB Filecoin proof has one partition, so no real job can show the overlap).

    use std::sync::atomic::AtomicUsize;

    use bellperson::groth16::{
        generate_random_parameters, prepare_verifying_key, verify_proof, VerifyingKey,
    };
    use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective};
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    use super::*;
    use crate::circuits::{CircuitError, CircuitId, PartitionCircuits, ProofKind};
    use crate::groth16::msm::MsmStats;
    use crate::groth16::G1Sums;
    use crate::groth16::{CpuBackend, ProveError};
    use crate::pce::CompactProof;
    use crate::synth::synthetic::SyntheticCircuit;
    use crate::synth::{synthesize_into, Buffers, Scalars};

    /// When something started and ended, by what.
    type Log = Mutex<Vec<(&'static str, usize, Instant, Instant)>>;

    /// A job of `partitions` synthetic circuits of one shape (their values differ by seed),
    /// each synthesis 100 ms longer than it takes (a fake duration).
    #[derive(Debug)]
    struct SyntheticJob {
        partitions: usize,
        /// This partition's synthesis fails.
        fails: Option<usize>,
        /// Synthesis through this PCE (the full path without).
        pce: Option<Pce>,
        log: Arc<Log>,
    }

    const ROWS: usize = 3000;

    fn circuit(k: usize) -> SyntheticCircuit {
        SyntheticCircuit::new(2, ROWS, k as u64)
    }

    impl PartitionCircuits for SyntheticJob {
        fn partitions(&self) -> usize {
            self.partitions
        }
        fn synthesize(
            &self,
            k: usize,
            through: Through<'_>,
            buffers: &dyn Buffers,
        ) -> Result<(Synthesized, SynthPath), CircuitError> {
            let start = Instant::now();
            if self.fails == Some(k) {
                return Err(CircuitError::Synthesis(format!("partition {k} fails")));
            }
            // Long enough for the partitions admitted together to be seen synthesizing together.
            std::thread::sleep(Duration::from_millis(100));
            let failed = |e: String| CircuitError::Synthesis(e);
            let synth = match (through, &self.pce) {
                // A refused compact result goes back to the caller, as the real circuits'.
                (Through::Compact(pce), _) => (
                    CompactProof::synthesize(pce.clone(), circuit(k))
                        .map_err(|e| CircuitError::CompactRefused {
                            partition: k,
                            why: e.to_string(),
                        })?
                        .into(),
                    SynthPath::Compact,
                ),
                (Through::Pce(pce), _) | (Through::Full, Some(pce)) => (
                    pce.synthesize_into(circuit(k), buffers)
                        .map_err(|e| failed(e.to_string()))?
                        .into(),
                    SynthPath::Pce,
                ),
                (Through::Full, None) => (
                    synthesize_into(circuit(k), buffers)
                        .map_err(|e| failed(e.to_string()))?
                        .into(),
                    SynthPath::Full,
                ),
            };
            lock(&self.log).push(("synthesis", k, start, Instant::now()));
            Ok(synth)
        }
        fn parameter_set(&self) -> String {
            "synthetic".into()
        }
    }

    impl ProofJob for SyntheticJob {
        fn kind(&self) -> ProofKind {
            ProofKind::PorepC2
        }
        fn circuit_id(&self) -> CircuitId {
            CircuitId::new(ProofKind::PorepC2, 2048)
        }
        fn circuits(&self) -> &dyn PartitionCircuits {
            self
        }
        /// Every partition's proof verifies against its own inputs.
        fn finish(
            &self,
            proofs: &[Proof<Bls12>],
            vk: &VerifyingKey<Bls12>,
        ) -> Result<Vec<u8>, CircuitError> {
            let pvk = prepare_verifying_key(vk);
            let mut bytes = Vec::new();
            for (k, proof) in proofs.iter().enumerate() {
                let ok = verify_proof(&pvk, proof, &circuit(k).inputs)
                    .map_err(|e| CircuitError::Verification(e.to_string()))?;
                if !ok {
                    return Err(CircuitError::Verification(format!("partition {k}")));
                }
                proof.write(&mut bytes).expect("to memory");
            }
            Ok(bytes)
        }
    }

    /// The CPU backend, with B in G2 taking at least `g2` (a fake duration, so the test can
    /// see what runs beside it) and every call logged.
    struct SlowG2 {
        g2: Duration,
        log: Arc<Log>,
        calls: AtomicUsize,
        /// Says it computes a, b and c of every PCE (it does, on the host: a device's part).
        evaluates: bool,
        /// Its first this many sums of B in G2 are off by the generator (a faulty device's
        /// wrong proofs).
        wrong: AtomicUsize,
        name: &'static str,
    }

    impl Backend for SlowG2 {
        fn name(&self) -> &'static str {
            self.name
        }
        fn h_coefficients(
            &self,
            a: Scalars,
            b: Scalars,
            c: Scalars,
        ) -> Result<Scalars, ProveError> {
            let start = Instant::now();
            let lent = a.is_lent() && b.is_lent() && c.is_lent();
            let h = CpuBackend.h_coefficients(a, b, c);
            let n = self.calls.fetch_add(1, Ordering::SeqCst);
            lock(&self.log).push(("h", n, start, Instant::now()));
            if lent {
                lock(&self.log).push(("h from the pool", n, start, Instant::now()));
            }
            h
        }
        fn msm_g1(
            &self,
            bases: &[G1Affine],
            scalars: &[Scalar],
        ) -> Result<(G1Projective, MsmStats), ProveError> {
            CpuBackend.msm_g1(bases, scalars)
        }
        fn msm_g2(
            &self,
            bases: &[G2Affine],
            scalars: &[Scalar],
        ) -> Result<(G2Projective, MsmStats), ProveError> {
            let start = Instant::now();
            let mut sum = CpuBackend.msm_g2(bases, scalars);
            let faulty = self
                .wrong
                .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1));
            if let (Ok(_), Ok((sum, _))) = (faulty, &mut sum) {
                *sum += <blstrs::G2Projective as group::Group>::generator();
            }
            std::thread::sleep(self.g2);
            lock(&self.log).push(("g2", 0, start, Instant::now()));
            sum
        }
        fn evaluates(&self, _pce: &Pce) -> bool {
            self.evaluates
        }
        fn g1_sums_compact(
            &self,
            srs: &Srs,
            proof: &CompactProof,
            b_g2: bool,
        ) -> Result<G1Sums, ProveError> {
            let start = Instant::now();
            let sums = crate::groth16::g1_sums_expanded(self, srs, proof, b_g2);
            lock(&self.log).push(("compact", 0, start, Instant::now()));
            sums
        }
    }

    struct Bench {
        _dir: tempfile::TempDir,
        srs: Srs,
    }

    fn bench() -> Bench {
        let dir = tempfile::tempdir().unwrap();
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        let params = generate_random_parameters::<Bls12, _, _>(circuit(0), &mut rng).unwrap();
        let path = dir.path().join("synthetic.params");
        let mut bytes = Vec::new();
        params.write(&mut bytes).unwrap();
        std::fs::write(&path, bytes).unwrap();
        Bench {
            srs: Srs::read(&path).unwrap(),
            _dir: dir,
        }
    }

    struct Outcome {
        result: Result<Vec<Proof<Bls12>>, Ending>,
        log: Vec<(&'static str, usize, Instant, Instant)>,
        reports: Vec<Report>,
        /// Bytes of a, b, c and aux synthesized on the heap (`cuzk_synthesis_buffer_bytes_total`).
        heap_bytes: u64,
        /// Times the run reported its PCE wrong.
        wrong_pce: usize,
        /// Partition proofs that did not verify, made by the fake GPU and by the CPU.
        wrong_proofs: [u64; 2],
        /// Partitions synthesized as a compact witness (`cuzk_syntheses_total`).
        compact_syntheses: u64,
    }

    /// Runs `job` through an admission gate of `depth` and one prover slot.
    fn run(
        bench: &Bench,
        partitions: usize,
        fails: Option<usize>,
        depth: usize,
        finish: Finish,
        cancel_after: Option<Duration>,
    ) -> Outcome {
        let job = SyntheticJob {
            partitions,
            fails,
            pce: None,
            log: Arc::default(),
        };
        run_with(bench, job, depth, finish, cancel_after, None)
    }

    /// A PCE as the engine holds it: loaded, its bytes held from `admission`.
    fn loaded(admission: &Arc<Admission>, pce: Pce) -> Arc<Loaded<Pce>> {
        let held = admission
            .try_hold(crate::memory::Purpose::Pce, pce.bytes())
            .expect("room for the PCE");
        Arc::new(Loaded { value: pce, held })
    }

    /// Runs `job` as `run` does, its vectors lent from `pool` where given.
    fn run_with(
        bench: &Bench,
        job: SyntheticJob,
        depth: usize,
        finish: Finish,
        cancel_after: Option<Duration>,
        pool: Option<&Arc<PinnedPool>>,
    ) -> Outcome {
        run_through(
            bench,
            job,
            depth,
            finish,
            cancel_after,
            pool,
            Setup::default(),
        )
    }

    /// A run given a PCE, with a backend that computes a, b and c itself, under `budget`.
    struct Compact {
        pce: Pce,
        budget: u64,
    }

    /// What a run is given beyond its job: a PCE and budget ([`Compact`]), and how many of its
    /// backend's proofs are wrong (a fake faulty GPU).
    #[derive(Default)]
    struct Setup {
        compact: Option<Compact>,
        wrong: usize,
    }

    impl Setup {
        fn compact(compact: Compact) -> Setup {
            Setup {
                compact: Some(compact),
                wrong: 0,
            }
        }

        fn wrong_proofs(wrong: usize) -> Setup {
            Setup {
                compact: None,
                wrong,
            }
        }
    }

    /// `run_with`, the job's run given `compact`'s PCE (loaded) and a backend that says it
    /// computes a, b and c itself, under its budget.
    fn run_through(
        bench: &Bench,
        job: SyntheticJob,
        depth: usize,
        finish: Finish,
        cancel_after: Option<Duration>,
        pool: Option<&Arc<PinnedPool>>,
        setup: Setup,
    ) -> Outcome {
        let Setup { compact, wrong } = setup;
        let log = job.log.clone();
        let leased_before = pool.map(|p| p.status().leased_bytes);
        let metrics = Metrics::new();
        let ledger = Ledger::new(Arc::new(Metrics::new()));
        let budget = compact.as_ref().map_or(1 << 40, |c| c.budget);
        let admission = Admission::new(budget, depth);
        let pce = compact.map(|c| c.pce);
        let slots = ProverSlots::new(1);
        let backends: Vec<Arc<dyn Backend>> = vec![Arc::new(SlowG2 {
            g2: Duration::from_millis(300),
            log: log.clone(),
            calls: AtomicUsize::new(0),
            evaluates: pce.is_some(),
            wrong: AtomicUsize::new(wrong),
            name: if wrong > 0 { "fake-gpu" } else { "cpu" },
        })];
        let pce = pce.map(|pce| loaded(&admission, pce));
        let wrong_pce = AtomicUsize::new(0);
        let p = Partitions {
            admission: &admission,
            slots: &slots,
            ledger: &ledger,
            backends: &backends,
            metrics: &metrics,
            finish,
            compact: true,
            priority: 2,
            estimates: HostBytes {
                full: 1 << 20,
                compact: 1 << 20,
            },
            pool,
            pooled: crate::engine::pooled_sizes(&bench.srs),
            check: true,
        };
        let cancel = AtomicBool::new(false);
        let mut reports = Vec::new();
        let result = std::thread::scope(|s| {
            if let Some(after) = cancel_after {
                let cancel = &cancel;
                s.spawn(move || {
                    std::thread::sleep(after);
                    cancel.store(true, Ordering::SeqCst);
                });
            }
            let on_wrong_pce = || {
                wrong_pce.fetch_add(1, Ordering::SeqCst);
            };
            p.prove(&job, &bench.srs, pce, &cancel, &on_wrong_pce, &mut |r| {
                reports.push(r)
            })
        });
        // Whatever happened, nothing stays in the ledger, the budget or the pool.
        assert!(ledger
            .snapshot()
            .iter()
            .all(|c| c.buffers == 0 && c.bytes == 0 && c.pinned_bytes == 0));
        assert_eq!(pool.map(|p| p.status().leased_bytes), leased_before);
        let snap = admission.snapshot();
        assert_eq!(
            (snap.reserved_bytes, snap.held_bytes, snap.ahead_of_prover),
            (0, 0, 0),
            "the PCE's hold given back with the last proof that kept it"
        );
        if let Ok(proofs) = &result {
            job.finish(proofs, &bench.srs.vk)
                .expect("every partition's proof verifies");
        }
        let log = std::mem::take(&mut *lock(&log));
        Outcome {
            result,
            log,
            reports,
            heap_bytes: metrics
                .synthesis_buffer_bytes
                .with_label_values(&["porep-c2", "heap"])
                .get(),
            wrong_pce: wrong_pce.load(Ordering::SeqCst),
            wrong_proofs: ["fake-gpu", "cpu"].map(|b| {
                metrics
                    .wrong_partition_proofs
                    .with_label_values(&["porep-c2", b])
                    .get()
            }),
            compact_syntheses: metrics
                .syntheses
                .with_label_values(&["porep-c2", "compact"])
                .get(),
        }
    }

    /// A real page-locked pool of `bytes`, or None where this process may not lock that much
    /// (RLIMIT_MEMLOCK below it, not root): said on stderr.
    fn locked_pool(bytes: usize) -> Option<Arc<PinnedPool>> {
        match PinnedPool::new(bytes) {
            Ok(pool) => Some(pool),
            Err(e) => {
                eprintln!("skipped: {e}");
                None
            }
        }
    }

    /// Where the backend computes a, b and c itself, partitions are synthesized as their
    /// compact witness and proved from it; a PCE wrong for the circuit is caught by the
    /// prover's row check, one of another shape by the compact synthesis itself, and the
    /// partition is synthesized again on the full path. The backend is the CPU's saying it is
    /// a device's: no device exists in CI.
    #[test]
    fn the_compact_witness_goes_to_a_prover_that_computes_abc_and_a_wrong_pce_falls_back_fake_device(
    ) {
        let bench = bench();
        let stale = crate::pce::record(SyntheticCircuit::new(2, ROWS - 100, 99)).unwrap();
        // The PCE, the wrong PCEs reported, and the partitions proved compact (None: at least
        // the first, since those synthesized after the report take the full path).
        for (pce, wrong, proved_compact) in [
            (crate::pce::record(circuit(99)).unwrap(), 0, Some(3)),
            (crate::pce::record(circuit(99)).unwrap().tampered(), 1, None),
            (stale, 1, Some(0)),
        ] {
            let job = SyntheticJob {
                partitions: 3,
                fails: None,
                pce: None,
                log: Arc::default(),
            };
            let compact = Compact {
                pce,
                budget: 1 << 40,
            };
            let out = run_through(
                &bench,
                job,
                2,
                Finish::Prover,
                None,
                None,
                Setup::compact(compact),
            );
            assert!(out.result.is_ok(), "the job failed");
            assert_eq!(out.wrong_pce, wrong, "the wrong PCE reported once");
            if wrong == 0 {
                assert_eq!(
                    out.heap_bytes, 0,
                    "no a, b, c or aux synthesized on the heap"
                );
            }
            let compact = intervals(&out.log, "compact").len();
            assert_eq!(compact as u64, out.compact_syntheses);
            match proved_compact {
                Some(n) => assert_eq!(compact, n, "partitions proved from their compact witness"),
                None => assert!(compact >= 1, "the first partition went compact"),
            }
        }
    }

    /// A compact partition gives back its estimate once synthesized: under a budget of one
    /// and a half partitions, the next partition synthesizes while the first is on the prover
    /// (a full one would keep its estimate until its call is done, and the next would wait).
    #[test]
    fn a_compact_partition_waiting_for_the_prover_leaves_the_budget_to_the_next_fake_device() {
        let bench = bench();
        let job = SyntheticJob {
            partitions: 3,
            fails: None,
            pce: None,
            log: Arc::default(),
        };
        let pce = crate::pce::record(circuit(99)).unwrap();
        let budget = pce.bytes() + (3 << 20) / 2;
        let compact = Compact { pce, budget };
        let out = run_through(
            &bench,
            job,
            2,
            Finish::Prover,
            None,
            None,
            Setup::compact(compact),
        );
        assert!(out.result.is_ok(), "the job failed");
        let synthesis: Vec<_> = out
            .log
            .iter()
            .filter(|e| e.0 == "synthesis" && e.1 > 0)
            .map(|e| (e.2, e.3))
            .collect();
        let proving = intervals(&out.log, "compact");
        let overlap = synthesis
            .iter()
            .any(|s| proving.iter().any(|p| s.0 < p.1 && p.0 < s.1));
        assert!(overlap, "no partition synthesized while another was proved");
    }

    #[test]
    fn every_partitions_vectors_are_lent_from_the_page_locked_pool_and_given_back() {
        let bench = bench();
        let Some(pool) = locked_pool(64 << 20) else {
            return;
        };
        let recorded = crate::pce::record(circuit(99)).unwrap();
        for pce in [None, Some(recorded)] {
            let path = if pce.is_some() { "pce" } else { "full" };
            let job = SyntheticJob {
                partitions: 4,
                fails: None,
                pce,
                log: Arc::default(),
            };
            let out = run_with(&bench, job, 2, Finish::Prover, None, Some(&pool));
            assert!(out.result.is_ok(), "{path}: the job failed");
            let pooled = intervals(&out.log, "h from the pool").len();
            assert_eq!(pooled, 4, "{path}: h calls on a, b, c in the pool");
            assert_eq!(out.heap_bytes, 0, "{path}: vectors synthesized on the heap");
        }
        // With no room in the pool the vectors go to the heap, and the metric says so.
        let hog = pool.lease(&[60 << 20]).expect("the pool is idle");
        let job = SyntheticJob {
            partitions: 2,
            fails: None,
            pce: None,
            log: Arc::default(),
        };
        let out = run_with(&bench, job, 2, Finish::Prover, None, Some(&pool));
        assert!(out.result.is_ok());
        assert!(intervals(&out.log, "h from the pool").is_empty());
        assert!(out.heap_bytes > 0);
        drop(hog);
    }

    fn intervals(
        log: &[(&'static str, usize, Instant, Instant)],
        what: &str,
    ) -> Vec<(Instant, Instant)> {
        log.iter()
            .filter(|e| e.0 == what)
            .map(|e| (e.2, e.3))
            .collect()
    }

    /// The most intervals open at one instant.
    fn most_at_once(spans: &[(Instant, Instant)]) -> usize {
        spans
            .iter()
            .map(|(t, _)| spans.iter().filter(|(a, b)| a <= t && t < b).count())
            .max()
            .unwrap_or(0)
    }

    #[test]
    fn a_jobs_partitions_synthesize_at_once_up_to_the_depth_and_all_verify_fake_slow_synthesis() {
        let bench = bench();
        let out = run(&bench, 5, None, 3, Finish::Prover, None);
        let proofs = out.result.unwrap_or_else(|_| panic!("the job failed"));
        assert_eq!(proofs.len(), 5);
        let synth = intervals(&out.log, "synthesis");
        assert_eq!(synth.len(), 5);
        let at_once = most_at_once(&synth);
        assert_eq!(at_once, 3, "syntheses at once with depth 3");
        // A later partition synthesized while an earlier one was on the prover.
        let proving: Vec<_> = intervals(&out.log, "h");
        assert!(
            synth
                .iter()
                .any(|(s, e)| proving.iter().any(|(a, b)| s < b && a < e)),
            "no synthesis overlapped a proof"
        );
        let last = out.reports.last().unwrap();
        assert_eq!(last.partitions_done, 5);
        assert!(out.reports.iter().any(|r| r.step == Step::Synthesis));
        assert!(out
            .reports
            .windows(2)
            .all(|w| w[0].partitions_done <= w[1].partitions_done));
    }

    #[test]
    fn with_the_split_the_next_partitions_device_work_begins_while_b_in_g2_finishes_fake_slow_g2() {
        let bench = bench();
        for finish in [Finish::Prover, Finish::Held, Finish::Cpu] {
            let out = run(&bench, 3, None, 3, finish, None);
            assert!(out.result.is_ok(), "{finish:?}: the job failed");
            let g2 = intervals(&out.log, "g2");
            let h = intervals(&out.log, "h");
            if finish == Finish::Cpu {
                // B in G2 went to the CPU backend, not the prover's.
                assert_eq!((g2.len(), h.len()), (0, 3));
                continue;
            }
            assert_eq!((g2.len(), h.len()), (3, 3));
            let h_during_g2 = h
                .iter()
                .filter(|(start, _)| g2.iter().any(|(a, b)| a < start && start < b))
                .count();
            if finish == Finish::Prover {
                assert!(h_during_g2 >= 1, "no h began while B in G2 ran");
            } else {
                assert_eq!(h_during_g2, 0, "the slot is held through B in G2");
            }
        }
    }

    #[test]
    fn a_failing_partition_fails_the_job_and_stops_the_others() {
        let bench = bench();
        let out = run(&bench, 6, Some(1), 2, Finish::Prover, None);
        match out.result {
            Err(Ending::Failed(e)) => {
                assert_eq!(e.kind, "synthesis-failed");
                assert!(e.detail.contains("partition 1 fails"), "{}", e.detail);
            }
            Err(Ending::Cancelled) => panic!("a failure, not a cancellation"),
            Ok(_) => panic!("partition 1 cannot be proved"),
        }
        // With depth 2, partition 1 fails while partitions 0 and 2 run; 3..5 never start.
        let synthesized: Vec<usize> = out
            .log
            .iter()
            .filter(|e| e.0 == "synthesis")
            .map(|e| e.1)
            .collect();
        assert!(
            synthesized.iter().all(|&k| k < 4),
            "partitions synthesized after the failure: {synthesized:?}"
        );
    }

    /// A job on a (fake) GPU that makes two wrong proofs: each is caught by its partition's
    /// check, counted against the GPU, and made again on the CPU; the job's proofs verify.
    #[test]
    fn a_wrong_partition_proof_is_caught_counted_and_made_again_on_the_cpu_fake_faulty_gpu() {
        let bench = bench();
        let job = SyntheticJob {
            partitions: 4,
            fails: None,
            pce: None,
            log: Arc::default(),
        };
        let out = run_through(
            &bench,
            job,
            2,
            Finish::Held,
            None,
            None,
            Setup::wrong_proofs(2),
        );
        let Ok(proofs) = out.result else {
            panic!("every partition is proved");
        };
        assert_eq!(proofs.len(), 4);
        assert_eq!(out.wrong_proofs, [2, 0]);
    }

    /// A set whose verifying key is not its bases' (no proof of it can verify): the first
    /// partition's proof fails on the prover and again on the CPU, and the job fails as
    /// `wrong-proof`, never with a proof.
    #[test]
    fn a_proof_wrong_on_both_backends_fails_the_job_as_a_wrong_proof() {
        let mut bench = bench();
        let mut rng = ChaCha8Rng::seed_from_u64(8);
        let other = generate_random_parameters::<Bls12, _, _>(circuit(0), &mut rng).unwrap();
        bench.srs.vk = other.vk;
        let out = run(&bench, 3, None, 1, Finish::Prover, None);
        match out.result {
            Err(Ending::Failed(e)) => {
                assert_eq!(e.kind, "wrong-proof");
                assert!(
                    e.detail.contains("made on cpu and again on cpu"),
                    "{}",
                    e.detail
                );
            }
            other => panic!("the job must fail as a wrong proof: {:?}", other.is_ok()),
        }
        assert!(out.wrong_proofs[1] >= 2, "{:?}", out.wrong_proofs);
    }

    #[test]
    fn a_cancelled_job_stops_at_its_partitions_next_step() {
        let bench = bench();
        let out = run(
            &bench,
            8,
            None,
            2,
            Finish::Prover,
            Some(Duration::from_millis(400)),
        );
        assert!(matches!(out.result, Err(Ending::Cancelled)));
        let proved = intervals(&out.log, "g2").len();
        assert!(proved < 8, "all {proved} partitions were proved");
    }
}
