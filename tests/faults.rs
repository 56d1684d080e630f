//! The test build's fault switches (src/faults.rs), met by the real service: built only with
//! `--features faults` (`cargo test --release --features faults --test faults`, as .ci/run
//! does); without the feature this file is empty.
#![cfg(feature = "faults")]

mod common;

use common::server::*;
use common::*;

/// Wrong partition proofs, summed over kinds and backends, as /metrics counts them.
fn wrong_proofs(server: &Server) -> f64 {
    server
        .scrape()
        .samples
        .iter()
        .filter(|s| s.metric == "cuzk_wrong_partition_proofs_total")
        .map(|s| match s.value {
            prometheus_parse::Value::Counter(v) | prometheus_parse::Value::Untyped(v) => v,
            _ => f64::NAN,
        })
        .sum()
}

/// `CUZK_FAULT_WRONG_PROOFS=3`: the prover's first three partition proofs come out wrong. The
/// first job's proof is caught by self-verification, counted and proved once more (on the CPU
/// again, the only backend here), wrong again: the job fails as `wrong-proof`, and no proof is
/// served. The second job's first proof is caught and counted; its proof made again is right,
/// so the job is done and its proof passes filecoin-proofs' verify_winning_post. Three counted.
#[test]
fn wrong_partition_proofs_are_caught_counted_and_proved_again_fault_switch() {
    let winning = winning();
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(
        &dir.path().join("data"),
        &[
            ("CUZK_FAULT_WRONG_PROOFS", "3"),
            ("CUZK_PROVING__WORKERS", "1"),
        ],
    );
    assert_eq!(wrong_proofs(&server), 0.0);

    assert_eq!(server.submit(&winning.body("wrong-twice")).0, 202);
    let job = server.wait_final("wrong-twice");
    assert_eq!(job["state"], "failed", "{job}");
    assert_eq!(job["error"]["type"], "wrong-proof", "{job}");
    assert_eq!(wrong_proofs(&server), 2.0);
    assert_ne!(server.get("/v1/proofs/wrong-twice/proof").0, 200);

    assert_eq!(server.submit(&winning.body("wrong-once")).0, 202);
    let job = server.wait_final("wrong-once");
    assert_eq!(job["state"], "done", "{job}");
    assert_eq!(wrong_proofs(&server), 3.0);
    winning.verify(&server.proof("wrong-once"));
}
