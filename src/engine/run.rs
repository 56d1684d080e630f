//! One job's run on a worker thread: its record moved through running to an end, the request
//! prepared, its parameter set (and PCE) shared or loaded, every partition proved
//! ([`super::partitions`]), the proof verified and stored before the job reads done.

use std::fmt;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

use super::partitions::Partitions;
use super::queue::{priority, Job};
use super::residency::extraction_bytes;
use super::{lock, Inner};
use crate::circuits::{CircuitError, ParameterFiles, ProofKind, ProofRequest};
use crate::jobs::{now_ms, JobError, JobRecord, JobState, Progress, Timings};
use crate::memory::Refused;
use crate::srs::Srs;
use crate::synth::HostBytes;

/// How a job ended other than with a proof.
pub(super) enum Ending {
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
            CircuitError::Synthesis(_) | CircuitError::CompactRefused { .. } => "synthesis-failed",
        };
        Ending::Failed(JobError {
            kind: kind.into(),
            detail: e.to_string(),
        })
    }
}

/// Why a job cannot fit in memory: every `over-budget` failure is one of these.
pub(super) enum OverBudget {
    /// One partition is larger than the whole budget.
    Partition { bytes: u64, budget: u64 },
    /// The parameter set is larger than the whole budget.
    Parameters {
        path: PathBuf,
        bytes: u64,
        budget: u64,
    },
    /// The set loaded, but it and one partition do not fit together.
    SetAndPartition {
        parameters: u64,
        partition: u64,
        budget: u64,
    },
}

impl fmt::Display for OverBudget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OverBudget::Partition { bytes, budget } => write!(
                f,
                "a partition of this job cannot fit in memory: {bytes} bytes needed, the memory budget is {budget} bytes"
            ),
            OverBudget::Parameters { path, bytes, budget } => write!(
                f,
                "the parameters {} ({bytes} bytes) exceed the memory budget ({budget} bytes)",
                path.display()
            ),
            OverBudget::SetAndPartition {
                parameters,
                partition,
                budget,
            } => write!(
                f,
                "the parameters and one partition exceed the memory budget: parameters {parameters} bytes, partition {partition} bytes, budget {budget} bytes"
            ),
        }
    }
}

impl From<OverBudget> for Ending {
    fn from(e: OverBudget) -> Self {
        Ending::Failed(JobError {
            kind: "over-budget".into(),
            detail: e.to_string(),
        })
    }
}

/// A partition's admission refused: cancelled, or larger than the budget.
pub(super) fn refused(e: Refused) -> Ending {
    match e {
        Refused::Cancelled => Ending::Cancelled,
        Refused::TooLarge { bytes, budget } => OverBudget::Partition { bytes, budget }.into(),
    }
}

pub(super) fn internal(detail: impl Into<String>) -> Ending {
    Ending::Failed(JobError {
        kind: "internal".into(),
        detail: detail.into(),
    })
}

/// What one partition holds on the host, per synthesis path, from the circuit's shape as its
/// parameters give it.
pub fn partition_bytes(srs: &Srs) -> HostBytes {
    shaped_partition_bytes(srs.shape())
}

/// [`partition_bytes`] of a set of this shape, before it is loaded.
pub(super) fn shaped_partition_bytes(shape: crate::srs::SrsShape) -> HostBytes {
    HostBytes::new(shape.h + 1, shape.inputs, shape.l)
}

/// What a parameter set is held at from the budget: its bytes, and at least one partition of
/// it, which the dispatcher's no-deadlock rule leaves room for by leaving room for one more set
/// (a small circuit's partition, its fixed working allowance included, can outgrow its set).
pub(super) fn set_hold_bytes(set_bytes: u64, shape: crate::srs::SrsShape) -> u64 {
    set_bytes.max(shaped_partition_bytes(shape).full)
}

impl Inner {
    pub(super) fn count(&self, kind: ProofKind, state: JobState, delta: i64) {
        self.metrics
            .jobs
            .with_label_values(&[kind.as_str(), state.as_str()])
            .add(delta);
    }

    /// Changes a job's record in memory (and the job counts); the caller saves it.
    pub(super) fn change(&self, job: &Job, change: impl FnOnce(&mut JobRecord)) -> JobRecord {
        let mut record = lock(&job.record);
        let before = record.state;
        change(&mut record);
        if record.state != before {
            self.count(record.kind, before, -1);
            self.count(record.kind, record.state, 1);
        }
        record.clone()
    }

    /// Saves a changed record and tells whoever waits.
    pub(super) fn publish(&self, job: &Job, record: JobRecord) -> JobRecord {
        if let Err(e) = self.store.save(&record) {
            tracing::error!(id = %record.id, error = %e, "cannot save the job record");
        }
        job.changes.send_replace(record.clone());
        record
    }

    /// Changes a job's record, saves it, and tells whoever waits.
    pub(super) fn update(&self, job: &Job, change: impl FnOnce(&mut JobRecord)) -> JobRecord {
        let record = self.change(job, change);
        self.publish(job, record)
    }

    /// Changes what a running job shows (stage, progress) without a write: a restart resets
    /// progress, so it need not survive one; the next saved change carries it to disk.
    pub(super) fn show(&self, job: &Job, change: impl FnOnce(&mut JobRecord)) {
        let mut record = lock(&job.record);
        change(&mut record);
        job.changes.send_replace(record.clone());
    }

    /// A job's final state, with the seconds it ran (None: it never started).
    pub(super) fn ended(
        state: JobState,
        error: Option<JobError>,
        total_s: Option<f64>,
    ) -> impl FnOnce(&mut JobRecord) {
        move |r| {
            r.state = state;
            r.error = error;
            r.finished_at_ms = Some(now_ms());
            r.progress.stage = None;
            r.timings.total_s = total_s;
        }
    }

    pub(super) fn run_job(&self, job: &Arc<Job>) {
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
        let end: Box<dyn FnOnce(&mut JobRecord)> = match outcome {
            Ok(digest) => {
                if !self.rehearsing() {
                    self.metrics
                        .proofs_verified
                        .with_label_values(&[kind])
                        .inc();
                }
                self.metrics
                    .job_seconds
                    .with_label_values(&[kind])
                    .observe(total);
                let mut recent = lock(&self.recent_job_s);
                *recent = Some(recent.map_or(total, |r| 0.8 * r + 0.2 * total));
                let done = Inner::ended(JobState::Done, None, Some(total));
                Box::new(move |r| {
                    done(r);
                    r.proof = Some(digest);
                })
            }
            Err(Ending::Cancelled) => {
                Box::new(Inner::ended(JobState::Cancelled, None, Some(total)))
            }
            Err(Ending::Failed(error)) => {
                self.metrics.proofs_failed.with_label_values(&[kind]).inc();
                Box::new(Inner::ended(JobState::Failed, Some(error), Some(total)))
            }
        };
        let ended = self.update(job, end);
        tracing::info!(id = %ended.id, state = ended.state.as_str(), secs = total, error = ?ended.error, "job ended");
        self.queue.lock().running -= 1;
        self.queue.notify();
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
        let files = ParameterFiles::new(&self.proving.params_dir, &proof_job.parameter_set());
        let set = self.srs_for(&files.params, urgency, &job.cancel)?;
        let srs = &set.value;
        let estimates = partition_bytes(srs);
        // The full path's bytes bound every path's.
        let estimate = estimates.full;
        let budget = self.proving.admission.budget();
        // The set's hold covers at least one partition of it (`set_hold_bytes`), as the
        // dispatcher's no-deadlock rule needs; both must still fit the budget together.
        let parameters = set.held.bytes();
        if parameters + estimate > budget {
            self.residency.srs.evict(&set);
            return Err(OverBudget::SetAndPartition {
                parameters,
                partition: estimate,
                budget,
            }
            .into());
        }
        let pce = self.pce_for(proof_job.as_ref(), extraction_bytes(srs));
        let partitions = Partitions {
            admission: &self.proving.admission,
            slots: &self.proving.slots,
            ledger: &self.ledger,
            backends: &self.proving.provers.backends,
            metrics: &self.metrics,
            finish: self.proving.finish,
            compact: self.proving.compact_witness,
            priority: urgency,
            estimates,
            pool: self.proving.pool.as_ref(),
            pooled: super::pooled_sizes(srs),
            check: !self.rehearsing(),
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
        if self.rehearsing() {
            self.stage(job, "joining-unverified")?;
            return Ok(proof_job.join(&proofs)?);
        }
        self.stage(job, "verifying")?;
        let start = Instant::now();
        let vk = files.verifying_key(|| srs.vk.clone());
        let bytes = proof_job.finish(&proofs, &vk)?;
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
}
