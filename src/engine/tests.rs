//! The engine's submission path with a real job store on disk and the CPU prover behind it.
//! The requests are not proof requests: each job fails at once as invalid input, which is all
//! these tests need of a run.

use std::sync::{Arc, Barrier};

use super::*;
use crate::gpu::Provers;
use crate::memory::Admission;

fn engine(data: &std::path::Path, max_queued_jobs: usize) -> Engine {
    Engine::start(
        JobStore::open(data).unwrap(),
        Arc::new(Metrics::new()),
        Proving {
            admission: Admission::new(1 << 30, 2),
            slots: ProverSlots::new(1),
            provers: Provers::cpu(),
            finish: Finish::Cpu,
            compact_witness: true,
            workers: 1,
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
