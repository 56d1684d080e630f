//! The durable job store: one directory per job under `<data_dir>/jobs/<id>/`, holding the
//! request as submitted (`request.json`), the job's record (`state.json`) and, once done, the
//! proof (`proof.bin`). A job directory appears whole (made under a temporary name, then renamed)
//! and every file in it is replaced atomically, so a crash leaves each job as it was before or
//! after a change, never in between.
//!
//! One process at a time owns a data directory ([`DataDirLock`], an exclusive `flock` on
//! `<data_dir>/lock` taken before anything in it is touched), so what a dead writer left behind
//! (creations cut short, temporary files) is removed at open, and a job whose record cannot be
//! read is moved aside into `<data_dir>/quarantine/` rather than blocking its id.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;
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

/// The length and SHA-256 of a stored proof: a proof is served only if it still has them.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ProofDigest {
    pub bytes: u64,
    pub sha256: String,
}

impl ProofDigest {
    pub fn of(proof: &[u8]) -> Self {
        use sha2::{Digest, Sha256};
        ProofDigest {
            bytes: proof.len() as u64,
            sha256: crate::circuits::request::hex(&Sha256::digest(proof)),
        }
    }
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
    /// The stored proof's length and checksum, once done (absent in records written before
    /// proofs carried one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proof: Option<ProofDigest>,
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
            proof: None,
        }
    }
}

pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// Checks a client-chosen job id: 1 to 128 of `A-Z a-z 0-9 . _ -`, not starting with a dot
/// or a dash (an id is a directory name an operator may pass to a command), no `..` anywhere.
pub fn valid_id(id: &str) -> bool {
    (1..=128).contains(&id.len())
        && !id.starts_with(['.', '-'])
        && !id.contains("..")
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}

const REQUEST: &str = "request.json";
const STATE: &str = "state.json";
const PROOF: &str = "proof.bin";
const QUARANTINE: &str = "quarantine";

/// A data directory owned by this process: an exclusive `flock` on `<data_dir>/lock`, held
/// until dropped (and by the kernel until the process ends, however it ends), the owner's pid
/// written in it for the message a second owner gets.
#[derive(Debug)]
pub struct DataDirLock {
    dir: PathBuf,
    _file: File,
}

impl DataDirLock {
    /// Takes the lock on `dir` (made if missing), or says which process holds it.
    pub fn take(dir: &Path) -> Result<DataDirLock> {
        use std::io::{Read, Seek, Write};
        std::fs::create_dir_all(dir)
            .with_context(|| format!("creating data dir {}", dir.display()))?;
        let path = dir.join("lock");
        let mut file = persist::lock_file(&path)?;
        match file.try_lock() {
            Ok(()) => {}
            Err(std::fs::TryLockError::WouldBlock) => {
                let mut owner = String::new();
                let _ = file.read_to_string(&mut owner);
                let owner = match owner.trim() {
                    "" => String::new(),
                    pid => format!(" (pid {pid})"),
                };
                anyhow::bail!(
                    "data dir {} is in use by another cuzk{owner}: one service per data dir (key jobs.data_dir)",
                    dir.display()
                );
            }
            Err(std::fs::TryLockError::Error(e)) => {
                return Err(e).with_context(|| format!("locking {}", path.display()))
            }
        }
        // Only a message's detail: a full disk must not stop the start.
        let _ = file
            .set_len(0)
            .and_then(|()| file.rewind())
            .and_then(|()| writeln!(file, "{}", std::process::id()));
        Ok(DataDirLock {
            dir: dir.to_owned(),
            _file: file,
        })
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }
}

/// The jobs directory of a data dir, whose lock it holds for as long as any clone lives.
#[derive(Clone, Debug)]
pub struct JobStore {
    root: PathBuf,
    quarantine: PathBuf,
    _owner: Arc<DataDirLock>,
}

/// What a store holds at open: the jobs, and those moved into quarantine now.
#[derive(Debug, Default)]
pub struct Loaded {
    /// Oldest first.
    pub records: Vec<JobRecord>,
    /// The quarantine entries made by this load (`<id>-<unix ms>`).
    pub quarantined: Vec<String>,
}

impl JobStore {
    /// Opens the jobs of the data dir `owner` holds, removing what dead writers left: job
    /// creations cut short (never acknowledged) and temporary files inside job directories.
    pub fn open(owner: DataDirLock) -> Result<Self> {
        let root = owner.dir.join("jobs");
        std::fs::create_dir_all(&root).with_context(|| format!("creating {}", root.display()))?;
        for entry in std::fs::read_dir(&root)?.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if name.starts_with(".new-") {
                let _ = std::fs::remove_dir_all(entry.path());
            } else if !name.starts_with('.') {
                remove_temp_files(&entry.path());
            }
        }
        Ok(JobStore {
            root,
            quarantine: owner.dir.join(QUARANTINE),
            _owner: Arc::new(owner),
        })
    }

    fn dir(&self, id: &str) -> PathBuf {
        self.root.join(id)
    }

    /// Stores a new job (request and record) durably: when this returns, both survive a crash.
    pub fn create(&self, record: &JobRecord, request: &[u8]) -> Result<()> {
        let staging = self
            .root
            .join(format!(".new-{}-{}", record.id, std::process::id()));
        let stored = std::fs::create_dir_all(&staging)
            .map_err(anyhow::Error::from)
            .and_then(|()| persist::write_atomic(&staging.join(REQUEST), request))
            .and_then(|()| {
                persist::write_atomic(&staging.join(STATE), &serde_json::to_vec_pretty(record)?)
            })
            .and_then(|()| persist::publish(&staging, &self.dir(&record.id)))
            .with_context(|| format!("storing job {}", record.id));
        if stored.is_err() {
            // Nothing half-made stays under the staging name (a full disk, say).
            let _ = std::fs::remove_dir_all(&staging);
        }
        stored
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

    /// Stores a job's proof durably; its digest goes into the job's record.
    pub fn save_proof(&self, id: &str, proof: &[u8]) -> Result<ProofDigest> {
        persist::write_atomic(&self.dir(id).join(PROOF), proof)?;
        Ok(ProofDigest::of(proof))
    }

    /// A done job's proof, if it is what `record` says was stored: its length and checksum
    /// (a record without a digest, from before proofs had one: a whole number of Groth16
    /// proofs). A missing, cut or altered file is an error.
    pub fn proof(&self, record: &JobRecord) -> Result<Vec<u8>> {
        let path = self.dir(&record.id).join(PROOF);
        let bytes = std::fs::read(&path).with_context(|| format!("reading {}", path.display()))?;
        let good = match &record.proof {
            Some(digest) => ProofDigest::of(&bytes) == *digest,
            None => !bytes.is_empty() && bytes.len() % GROTH16_PROOF_BYTES == 0,
        };
        if !good {
            anyhow::bail!(
                "{} ({} bytes) is not the proof its record names ({:?})",
                path.display(),
                bytes.len(),
                record.proof
            );
        }
        Ok(bytes)
    }

    /// Every stored job's record. A job whose record cannot be read (or names another job) is
    /// moved into the quarantine directory, logged, and its id is free again.
    pub fn load_all(&self) -> Result<Loaded> {
        let mut loaded = Loaded::default();
        for entry in std::fs::read_dir(&self.root)?.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if name.starts_with('.') {
                continue;
            }
            let path = entry.path().join(STATE);
            let record = std::fs::read(&path)
                .map_err(anyhow::Error::from)
                .and_then(|b| Ok(serde_json::from_slice::<JobRecord>(&b)?))
                .and_then(|r| match r.id == name {
                    true => Ok(r),
                    false => Err(anyhow::anyhow!("the record names job {:?}", r.id)),
                });
            match record {
                Ok(record) => loaded.records.push(record),
                Err(e) => {
                    let aside = format!("{name}-{}", now_ms());
                    let moved = std::fs::create_dir_all(&self.quarantine)
                        .and_then(|()| std::fs::rename(entry.path(), self.quarantine.join(&aside)));
                    match moved {
                        Ok(()) => {
                            tracing::warn!(job = %name, error = %format!("{e:#}"), quarantined = %self.quarantine.join(&aside).display(), "unreadable job record: moved into quarantine");
                            loaded.quarantined.push(aside);
                        }
                        Err(m) => {
                            tracing::warn!(job = %name, error = %format!("{e:#}"), move_error = %m, "unreadable job record: skipped (cannot move it into quarantine)")
                        }
                    }
                }
            }
        }
        loaded
            .records
            .sort_by_key(|r| (r.submitted_at_ms, r.id.clone()));
        Ok(loaded)
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

/// A Groth16 proof's bytes (A, B, C compressed).
const GROTH16_PROOF_BYTES: usize = 192;

/// Removes `persist`'s temporary files (`.NAME.tmp-PID`) in a job directory: under the data
/// dir's lock, their writers are dead.
fn remove_temp_files(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with('.') && name.contains(".tmp-") {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

/// Whether `e` (anywhere in its chain) is a file system out of space or over its quota: the
/// operator's to fix, not a fault of the service or the request.
pub fn out_of_space(e: &anyhow::Error) -> bool {
    e.chain().any(|cause| {
        cause
            .downcast_ref::<std::io::Error>()
            .and_then(|io| io.raw_os_error())
            .is_some_and(|code| code == libc::ENOSPC || code == libc::EDQUOT)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(id: &str) -> JobRecord {
        JobRecord::new(id, ProofKind::WinningPost, "00".into())
    }

    fn open(dir: &Path) -> JobStore {
        JobStore::open(DataDirLock::take(dir).unwrap()).unwrap()
    }

    #[test]
    fn jobs_round_trip_through_the_store_and_survive_reopening() {
        let dir = tempfile::tempdir().unwrap();
        let store = open(dir.path());
        let mut r = record("job-1");
        store.create(&r, b"{\"kind\":\"x\"}").unwrap();
        assert!(store.create(&r, b"{}").is_err(), "ids are unique");
        r.state = JobState::Done;
        r.proof = Some(store.save_proof("job-1", &[7; 192]).unwrap());
        store.save(&r).unwrap();
        // A creation that died half-way is dropped at the next open.
        std::fs::create_dir_all(dir.path().join("jobs/.new-job-2-1")).unwrap();
        drop(store);

        let store = open(dir.path());
        assert_eq!(store.load_all().unwrap().records, vec![r.clone()]);
        assert_eq!(store.request("job-1").unwrap(), b"{\"kind\":\"x\"}");
        assert_eq!(store.proof(&r).unwrap(), vec![7; 192]);
        assert!(!dir.path().join("jobs/.new-job-2-1").exists());
        store.remove("job-1").unwrap();
        assert!(store.load_all().unwrap().records.is_empty());
    }

    #[test]
    fn a_second_owner_of_a_data_dir_is_refused_with_the_first_ones_pid() {
        let dir = tempfile::tempdir().unwrap();
        let first = DataDirLock::take(dir.path()).unwrap();
        let e = DataDirLock::take(dir.path()).unwrap_err().to_string();
        assert!(e.contains("in use by another cuzk"), "{e}");
        assert!(e.contains(&format!("pid {}", std::process::id())), "{e}");
        drop(first);
        DataDirLock::take(dir.path()).expect("free again once the owner is gone");
    }

    #[test]
    fn a_corrupt_record_is_quarantined_and_its_id_is_free_again() {
        let dir = tempfile::tempdir().unwrap();
        let store = open(dir.path());
        store.create(&record("good"), b"{}").unwrap();
        store.create(&record("torn"), b"{}").unwrap();
        std::fs::write(dir.path().join("jobs/torn/state.json"), b"{\"id\": \"to").unwrap();
        store.create(&record("other"), b"{}").unwrap();
        std::fs::write(
            dir.path().join("jobs/other/state.json"),
            serde_json::to_vec(&record("elsewhere")).unwrap(),
        )
        .unwrap();

        let loaded = store.load_all().unwrap();
        assert_eq!(loaded.records.len(), 1, "{loaded:?}");
        assert_eq!(loaded.records[0].id, "good");
        let mut aside = loaded.quarantined.clone();
        aside.sort();
        assert_eq!(aside.len(), 2, "{aside:?}");
        assert!(aside[0].starts_with("other-") && aside[1].starts_with("torn-"));
        let kept = dir
            .path()
            .join("quarantine")
            .join(&aside[1])
            .join("state.json");
        assert_eq!(
            std::fs::read(kept).unwrap(),
            b"{\"id\": \"to",
            "kept as it was"
        );
        store
            .create(&record("torn"), b"{}")
            .expect("the id is free again");
    }

    #[test]
    fn temporary_files_of_dead_writers_are_removed_at_open() {
        let dir = tempfile::tempdir().unwrap();
        let store = open(dir.path());
        store.create(&record("job"), b"{}").unwrap();
        let orphan = dir.path().join("jobs/job/.state.json.tmp-99999");
        std::fs::write(&orphan, b"half").unwrap();
        drop(store);
        let store = open(dir.path());
        assert!(!orphan.exists());
        assert_eq!(store.load_all().unwrap().records.len(), 1);
    }

    #[test]
    fn a_proof_is_served_only_with_its_recorded_length_and_checksum() {
        let dir = tempfile::tempdir().unwrap();
        let store = open(dir.path());
        let mut r = record("job");
        store.create(&r, b"{}").unwrap();
        assert!(store.proof(&r).is_err(), "no file");
        r.proof = Some(store.save_proof("job", &[1; 384]).unwrap());
        assert_eq!(store.proof(&r).unwrap().len(), 384);
        let file = dir.path().join("jobs/job/proof.bin");
        std::fs::write(&file, [1; 5]).unwrap();
        assert!(store.proof(&r).is_err(), "cut");
        let mut altered = vec![1; 384];
        altered[100] = 2;
        std::fs::write(&file, &altered).unwrap();
        assert!(store.proof(&r).is_err(), "same length, other bytes");
        // A record from before digests: whole Groth16 proofs only.
        r.proof = None;
        assert!(store.proof(&r).is_ok());
        std::fs::write(&file, [1; 5]).unwrap();
        assert!(store.proof(&r).is_err());
    }

    #[test]
    fn out_of_space_is_recognized_through_context() {
        let full = anyhow::Error::from(std::io::Error::from_raw_os_error(libc::ENOSPC))
            .context("writing x")
            .context("storing job y");
        assert!(out_of_space(&full));
        let denied = anyhow::Error::from(std::io::Error::from_raw_os_error(libc::EACCES));
        assert!(!out_of_space(&denied));
    }

    #[test]
    fn job_ids_are_checked() {
        assert!(valid_id("sector-7.porep_c2"));
        assert!(!valid_id(""));
        assert!(!valid_id(".hidden"));
        assert!(!valid_id("-rf"));
        assert!(!valid_id("a..b"));
        assert!(!valid_id("../etc"));
        assert!(!valid_id("a/b"));
        assert!(!valid_id(&"x".repeat(129)));
    }
}
