//! The durable job store: one directory per job under `<data_dir>/jobs/<id>/`, holding the
//! request as submitted (`request.json`), the job's record (`state.json`) and, once done, the
//! proof (`proof.bin`). A job directory appears whole (made under a temporary name, then renamed)
//! and every file in it is replaced atomically, so a crash leaves each job as it was before or
//! after a change, never in between.

use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use crate::circuits::ProofKind;
use crate::persist;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum JobState {
    Queued,
    Running,
    Done,
    Failed,
    Cancelled,
}

impl JobState {
    pub const ALL: [JobState; 5] = [
        JobState::Queued,
        JobState::Running,
        JobState::Done,
        JobState::Failed,
        JobState::Cancelled,
    ];

    pub fn is_final(self) -> bool {
        matches!(
            self,
            JobState::Done | JobState::Failed | JobState::Cancelled
        )
    }

    pub fn as_str(self) -> &'static str {
        match self {
            JobState::Queued => "queued",
            JobState::Running => "running",
            JobState::Done => "done",
            JobState::Failed => "failed",
            JobState::Cancelled => "cancelled",
        }
    }
}

/// Where a running job is.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Progress {
    pub partitions_done: usize,
    pub partitions_total: usize,
    /// The stage now: `loading-parameters`, `synthesis`, `proving`, `verifying`.
    pub stage: Option<String>,
}

/// Seconds spent per stage (summed over partitions).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Timings {
    pub queue_wait_s: Option<f64>,
    pub synthesis_s: Option<f64>,
    pub prove_s: Option<f64>,
    pub verify_s: Option<f64>,
    pub total_s: Option<f64>,
}

/// Why a job failed: a stable type (the problem type of the API) and a sentence.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct JobError {
    #[serde(rename = "type")]
    pub kind: String,
    pub detail: String,
}

/// A job as the store keeps it and the API shows it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct JobRecord {
    pub id: String,
    pub kind: ProofKind,
    pub state: JobState,
    /// SHA-256 of the request as stored: the idempotency check.
    pub request_sha256: String,
    /// Unix milliseconds.
    pub submitted_at_ms: u64,
    pub started_at_ms: Option<u64>,
    pub finished_at_ms: Option<u64>,
    /// Times the job was started (more than one after a restart).
    pub attempts: u32,
    pub progress: Progress,
    pub timings: Timings,
    pub error: Option<JobError>,
}

impl JobRecord {
    /// A job just submitted.
    pub fn new(id: &str, kind: ProofKind, request_sha256: String) -> Self {
        JobRecord {
            id: id.into(),
            kind,
            state: JobState::Queued,
            request_sha256,
            submitted_at_ms: now_ms(),
            started_at_ms: None,
            finished_at_ms: None,
            attempts: 0,
            progress: Progress::default(),
            timings: Timings::default(),
            error: None,
        }
    }
}

pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// Checks a client-chosen job id: 1 to 128 of `A-Z a-z 0-9 . _ -`, not starting with a dot.
pub fn valid_id(id: &str) -> bool {
    (1..=128).contains(&id.len())
        && !id.starts_with('.')
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}

const REQUEST: &str = "request.json";
const STATE: &str = "state.json";
const PROOF: &str = "proof.bin";

/// The jobs directory of a data dir.
#[derive(Clone, Debug)]
pub struct JobStore {
    root: PathBuf,
}

impl JobStore {
    pub fn open(data_dir: &Path) -> Result<Self> {
        let root = data_dir.join("jobs");
        std::fs::create_dir_all(&root).with_context(|| format!("creating {}", root.display()))?;
        // Directories of creations that a crash interrupted: never acknowledged, safe to drop.
        for entry in std::fs::read_dir(&root)?.flatten() {
            if entry.file_name().to_string_lossy().starts_with(".new-") {
                let _ = std::fs::remove_dir_all(entry.path());
            }
        }
        Ok(JobStore { root })
    }

    fn dir(&self, id: &str) -> PathBuf {
        self.root.join(id)
    }

    /// Stores a new job (request and record) durably: when this returns, both survive a crash.
    pub fn create(&self, record: &JobRecord, request: &[u8]) -> Result<()> {
        let staging = self
            .root
            .join(format!(".new-{}-{}", record.id, std::process::id()));
        std::fs::create_dir_all(&staging)?;
        persist::write_atomic(&staging.join(REQUEST), request)?;
        persist::write_atomic(&staging.join(STATE), &serde_json::to_vec_pretty(record)?)?;
        persist::publish(&staging, &self.dir(&record.id))
            .with_context(|| format!("storing job {}", record.id))
    }

    /// Replaces a job's record.
    pub fn save(&self, record: &JobRecord) -> Result<()> {
        persist::write_atomic(
            &self.dir(&record.id).join(STATE),
            &serde_json::to_vec_pretty(record)?,
        )
    }

    pub fn request(&self, id: &str) -> Result<Vec<u8>> {
        let path = self.dir(id).join(REQUEST);
        std::fs::read(&path).with_context(|| format!("reading {}", path.display()))
    }

    pub fn save_proof(&self, id: &str, proof: &[u8]) -> Result<()> {
        persist::write_atomic(&self.dir(id).join(PROOF), proof)
    }

    pub fn proof(&self, id: &str) -> Result<Vec<u8>> {
        let path = self.dir(id).join(PROOF);
        std::fs::read(&path).with_context(|| format!("reading {}", path.display()))
    }

    /// Every stored job's record; a job whose record cannot be read is logged and skipped.
    pub fn load_all(&self) -> Result<Vec<JobRecord>> {
        let mut out = Vec::new();
        for entry in std::fs::read_dir(&self.root)?.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if name.starts_with('.') {
                continue;
            }
            let path = entry.path().join(STATE);
            match std::fs::read(&path)
                .map_err(anyhow::Error::from)
                .and_then(|b| Ok(serde_json::from_slice::<JobRecord>(&b)?))
            {
                Ok(record) if record.id == name => out.push(record),
                Ok(_) => {
                    tracing::warn!(path = %path.display(), "job record names another job; skipped")
                }
                Err(e) => {
                    tracing::warn!(path = %path.display(), error = %e, "unreadable job record; skipped")
                }
            }
        }
        out.sort_by_key(|r| (r.submitted_at_ms, r.id.clone()));
        Ok(out)
    }

    pub fn remove(&self, id: &str) -> Result<()> {
        let dir = self.dir(id);
        // Renamed away first, so that a crash mid-delete leaves no half job under its name.
        let doomed = self
            .root
            .join(format!(".new-gone-{id}-{}", std::process::id()));
        std::fs::rename(&dir, &doomed).with_context(|| format!("removing job {id}"))?;
        std::fs::remove_dir_all(&doomed)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(id: &str) -> JobRecord {
        JobRecord::new(id, ProofKind::WinningPost, "00".into())
    }

    #[test]
    fn jobs_round_trip_through_the_store_and_survive_reopening() {
        let dir = tempfile::tempdir().unwrap();
        let store = JobStore::open(dir.path()).unwrap();
        let mut r = record("job-1");
        store.create(&r, b"{\"kind\":\"x\"}").unwrap();
        assert!(store.create(&r, b"{}").is_err(), "ids are unique");
        r.state = JobState::Done;
        store.save(&r).unwrap();
        store.save_proof("job-1", &[7; 192]).unwrap();
        // A creation that died half-way is dropped at the next open.
        std::fs::create_dir_all(dir.path().join("jobs/.new-job-2-1")).unwrap();

        let store = JobStore::open(dir.path()).unwrap();
        assert_eq!(store.load_all().unwrap(), vec![r]);
        assert_eq!(store.request("job-1").unwrap(), b"{\"kind\":\"x\"}");
        assert_eq!(store.proof("job-1").unwrap(), vec![7; 192]);
        assert!(!dir.path().join("jobs/.new-job-2-1").exists());
        store.remove("job-1").unwrap();
        assert!(store.load_all().unwrap().is_empty());
    }

    #[test]
    fn job_ids_are_checked() {
        assert!(valid_id("sector-7.porep_c2"));
        assert!(!valid_id(""));
        assert!(!valid_id(".hidden"));
        assert!(!valid_id("../etc"));
        assert!(!valid_id("a/b"));
        assert!(!valid_id(&"x".repeat(129)));
    }
}
