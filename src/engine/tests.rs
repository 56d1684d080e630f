//! The engine's submission path with a real job store on disk and the CPU prover behind it.
//! The requests are not proof requests: each job fails at once as invalid input, which is all
//! these tests need of a run.

use std::sync::{Arc, Barrier};

use super::*;
use crate::gpu::Provers;
use crate::memory::Admission;

fn engine(data: &std::path::Path, max_queued_jobs: usize) -> Engine {
    engine_with_workers(data, max_queued_jobs, 1)
}

/// With 0 workers nothing starts: submitted jobs stay queued.
fn engine_with_workers(data: &std::path::Path, max_queued_jobs: usize, workers: usize) -> Engine {
    Engine::start(
        JobStore::open(crate::jobs::DataDirLock::take(data).unwrap()).unwrap(),
        Arc::new(Metrics::new()),
        Proving {
            admission: Admission::new(1 << 30, 2),
            slots: ProverSlots::new(1),
            provers: Provers::cpu(),
            finish: Finish::Cpu,
            compact_witness: true,
            workers,
            params_dir: data.to_owned(),
            pce: None,
            pool: None,
        },
        Limits {
            max_queued_jobs,
            retention: Duration::from_secs(86_400),
            retention_count: 100,
        },
        None,
        None,
    )
    .unwrap()
}

fn stored_jobs(data: &std::path::Path) -> usize {
    std::fs::read_dir(data.join("jobs"))
        .unwrap()
        .flatten()
        .filter(|e| !e.file_name().to_string_lossy().starts_with('.'))
        .count()
}

#[test]
fn many_submissions_of_one_id_at_once_store_it_once() {
    let dir = tempfile::tempdir().unwrap();
    let engine = engine(dir.path(), 100);
    let start = Arc::new(Barrier::new(8));
    let created: Vec<bool> = (0..8)
        .map(|_| {
            let (engine, start) = (engine.clone(), start.clone());
            std::thread::spawn(move || {
                start.wait();
                let (record, created) = engine.submit("same", ProofKind::PorepC2, b"{}").unwrap();
                assert_eq!(record.id, "same");
                created
            })
        })
        .collect::<Vec<_>>()
        .into_iter()
        .map(|t| t.join().unwrap())
        .collect();
    assert_eq!(created.iter().filter(|c| **c).count(), 1, "{created:?}");
    assert_eq!(stored_jobs(dir.path()), 1);
    // Another request under the same id is a conflict, not a second job.
    assert!(matches!(
        engine.submit("same", ProofKind::PorepC2, b"{\"other\": 1}"),
        Err(SubmitError::Conflict(_))
    ));
}

#[test]
fn a_job_store_that_fails_refuses_the_submission_and_keeps_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let engine = engine(dir.path(), 100);
    // The jobs directory replaced by a file: creating a job's directory fails.
    std::fs::remove_dir_all(dir.path().join("jobs")).unwrap();
    std::fs::write(dir.path().join("jobs"), b"not a directory").unwrap();
    assert!(matches!(
        engine.submit("a", ProofKind::PorepC2, b"{}"),
        Err(SubmitError::Store(_))
    ));
    assert!(engine.get("a").is_none());
    // The id is free again: the next try fails the same way instead of waiting forever.
    assert!(matches!(
        engine.submit("a", ProofKind::PorepC2, b"{}"),
        Err(SubmitError::Store(_))
    ));
    assert_eq!(engine.status().queued.values().sum::<usize>(), 0);
}

#[test]
fn a_cancellation_that_cannot_be_stored_is_refused_and_the_job_stays_queued() {
    let dir = tempfile::tempdir().unwrap();
    let engine = engine_with_workers(dir.path(), 100, 0);
    engine.submit("a", ProofKind::PorepC2, b"{}").unwrap();
    let job_dir = dir.path().join("jobs/a");
    let away = dir.path().join("jobs-a-away");
    // The job's directory gone for a moment: its record cannot be saved.
    std::fs::rename(&job_dir, &away).unwrap();
    assert!(matches!(engine.cancel("a"), Err(CancelError::Store(..))));
    assert_eq!(engine.get("a").unwrap().state, JobState::Queued);
    assert_eq!(engine.status().queued[&ProofKind::PorepC2], 1);
    std::fs::rename(&away, &job_dir).unwrap();

    let record = engine.cancel("a").unwrap();
    assert_eq!(record.state, JobState::Cancelled);
    let stored: JobRecord =
        serde_json::from_slice(&std::fs::read(job_dir.join("state.json")).unwrap()).unwrap();
    assert_eq!(
        stored.state,
        JobState::Cancelled,
        "acknowledged before it was stored"
    );
    assert_eq!(engine.status().queued[&ProofKind::PorepC2], 0);
}

#[test]
fn the_engine_starts_without_writing_to_its_store() {
    let dir = tempfile::tempdir().unwrap();
    {
        let store = JobStore::open(crate::jobs::DataDirLock::take(dir.path()).unwrap()).unwrap();
        let mut record = JobRecord::new("interrupted", ProofKind::PorepC2, "00".into());
        store.create(&record, b"{}").unwrap();
        record.state = JobState::Running;
        store.save(&record).unwrap();
    }
    let state = dir.path().join("jobs/interrupted/state.json");
    let before = std::fs::read(&state).unwrap();
    let modified = std::fs::metadata(&state).unwrap().modified().unwrap();
    let engine = engine_with_workers(dir.path(), 100, 0);
    assert_eq!(engine.get("interrupted").unwrap().state, JobState::Queued);
    assert_eq!(std::fs::read(&state).unwrap(), before);
    assert_eq!(
        std::fs::metadata(&state).unwrap().modified().unwrap(),
        modified
    );
}
