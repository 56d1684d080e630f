//! The crash-test harness: the real `cuzk serve` killed with SIGKILL while a client submits,
//! cancels, waits for and fetches WinningPoSt proofs; restarted; then held to what it
//! acknowledged. Kill points are of two sorts:
//!
//! - steps: every change the service makes to its data dir (a write, fsync, rename, unlink,
//!   mkdir), numbered by a preloaded library (`tests/shims/crashpoint.c`) that kills the process
//!   at the chosen one, before it is made (a write torn in half first). A first run with no kill
//!   traces the scenario's steps: accepting (a job's staging dir, request and record), persisting
//!   (state changes), writing the PCE, writing a result (proof.bin) and cancelling;
//! - moments: the process killed from outside at a fraction of the traced run's length, between
//!   steps (mid-synthesis, mid-proof).
//!
//! After each kill the service is started again on the same data dir, without the library, and
//! must start; then every acknowledged submission is there and ends done (or cancelled, when the
//! cancellation was acknowledged) with a proof that filecoin-proofs verifies; a proof served
//! before the kill is served again unchanged; no job ends failed; nothing is quarantined (no
//! corrupt record was made); every PCE file at its final name loads with its checksums; no
//! temporary file or half-made job is left behind.
//!
//! `CUZK_CRASH_POINTS`: how many step kill points, spread over the traced steps (default 12, as
//! CI runs it); `all` for every step. Five moments run either way. The points hit and what each
//! was are printed (`-- --nocapture`).

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use common::server::*;
use common::*;
use serde_json::Value;

/// The preloaded library, built with cc.
fn crashpoint_library(dir: &Path) -> PathBuf {
    let library = dir.join("crashpoint.so");
    let built = Command::new("cc")
        .args(["-shared", "-fPIC", "-O1", "-Wall", "-Werror", "-o"])
        .arg(&library)
        .arg(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/shims/crashpoint.c"
        ))
        .arg("-ldl")
        .status()
        .expect("cc (build-essential) builds the crash-point library");
    assert!(built.success());
    library
}

/// What the service acknowledged before it was killed.
#[derive(Default, Debug)]
struct Acknowledged {
    submitted: BTreeSet<String>,
    cancelled: BTreeSet<String>,
    proofs: BTreeMap<String, Vec<u8>>,
}

/// A client that reports a dead service as an error instead of panicking.
struct Client {
    agent: ureq::Agent,
    base: String,
}

impl Client {
    fn new(port: u16) -> Client {
        Client {
            agent: ureq::AgentBuilder::new()
                .timeout_connect(Duration::from_secs(5))
                .timeout(Duration::from_secs(120))
                .build(),
            base: format!("http://127.0.0.1:{port}"),
        }
    }

    fn send(
        &self,
        method: &str,
        path: &str,
        body: Option<&Value>,
    ) -> Result<(u16, Vec<u8>), String> {
        let request = self.agent.request(method, &format!("{}{path}", self.base));
        let result = match body {
            Some(b) => request
                .set("content-type", "application/json")
                .send_bytes(&serde_json::to_vec(b).unwrap()),
            None => request.call(),
        };
        let response = match result {
            Ok(r) => r,
            Err(ureq::Error::Status(_, r)) => r,
            Err(e) => return Err(e.to_string()),
        };
        let status = response.status();
        let mut bytes = Vec::new();
        response
            .into_reader()
            .read_to_end(&mut bytes)
            .map_err(|e| e.to_string())?;
        Ok((status, bytes))
    }

    fn json(&self, method: &str, path: &str, body: Option<&Value>) -> Result<(u16, Value), String> {
        let (status, bytes) = self.send(method, path, body)?;
        let value = serde_json::from_slice(&bytes).map_err(|e| format!("{status}: {e}"))?;
        Ok((status, value))
    }

    /// Long-polls a job until it is final; its state.
    fn wait_final(&self, id: &str) -> Result<String, String> {
        loop {
            let (status, job) = self.json("GET", &format!("/v1/proofs/{id}?wait=30s"), None)?;
            if status != 200 {
                return Err(format!("GET {id}: {status} {job}"));
            }
            let state = job["state"].as_str().unwrap_or_default().to_owned();
            if ["done", "failed", "cancelled"].contains(&state.as_str()) {
                return Ok(state);
            }
        }
    }
}

/// The scenario: two jobs submitted, the second cancelled, the first waited for and its proof
/// fetched, the circuit's PCE (extracted in the background after the first job) waited for, a
/// third job submitted, waited for and fetched. Stops at the first transport error (the
/// service died); what was acknowledged until then is in `acked`.
fn scenario(
    client: &Client,
    winning: &Winning,
    data: &Path,
    acked: &mut Acknowledged,
) -> Result<(), String> {
    let submit = |acked: &mut Acknowledged, id: &str| -> Result<(), String> {
        let (status, job) = client.json("POST", "/v1/proofs", Some(&winning.body(id)))?;
        match status {
            202 | 200 => {
                acked.submitted.insert(id.to_owned());
                Ok(())
            }
            _ => panic!("submitting {id}: {status} {job}"),
        }
    };
    let fetch = |acked: &mut Acknowledged, id: &str| -> Result<(), String> {
        let state = client.wait_final(id)?;
        assert_eq!(state, "done", "job {id} ended {state} before any kill");
        let (status, proof) = client.send("GET", &format!("/v1/proofs/{id}/proof"), None)?;
        assert_eq!(status, 200, "the proof of {id}");
        acked.proofs.insert(id.to_owned(), proof);
        Ok(())
    };
    submit(acked, "first")?;
    submit(acked, "cancelled")?;
    let (status, job) = client.json("DELETE", "/v1/proofs/cancelled", None)?;
    match (status, job["state"].as_str()) {
        (202, Some("cancelled")) => {
            acked.cancelled.insert("cancelled".into());
        }
        (409, _) => {} // it was proved first
        other => panic!("cancelling: {other:?} {job}"),
    }
    fetch(acked, "first")?;
    let deadline = Instant::now() + Duration::from_secs(300);
    loop {
        let (_, status) = client.json("GET", "/v1/status", None)?;
        let extracting = status["caches"]["pces_extracting"]
            .as_array()
            .map_or(0, Vec::len);
        let written = std::fs::read_dir(data.join("pce"))
            .into_iter()
            .flatten()
            .flatten()
            .any(|e| e.file_name().to_string_lossy().ends_with(".pce"));
        if extracting == 0 && written {
            break;
        }
        assert!(Instant::now() < deadline, "no PCE was written: {status}");
        std::thread::sleep(Duration::from_millis(100));
    }
    submit(acked, "second")?;
    fetch(acked, "second")
}

#[derive(Clone, Copy, Debug)]
enum KillPoint {
    /// At the step with this number (from 1), before it is made.
    Step(u64),
    /// From outside, this long after the service is ready.
    After(Duration),
}

/// One traced step: its number, kind and path (the service's pid in temporary names cut out).
#[derive(Debug, Clone)]
struct Step {
    number: u64,
    kind: String,
    path: String,
}

fn read_trace(path: &Path, data: &Path) -> Vec<Step> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let data = data.to_string_lossy().into_owned();
    text.lines()
        .filter_map(|line| {
            let mut parts = line.splitn(3, ' ');
            let number = parts.next()?.parse().ok()?;
            let kind = parts.next()?.to_owned();
            let path = parts.next()?.trim_end_matches(" KILL");
            let path = path.strip_prefix(&data).unwrap_or(path);
            Some(Step {
                number,
                kind,
                path: path.to_owned(),
            })
        })
        .collect()
}

/// The steps worth a kill: every step but the writes inside a run of writes to one file, of
/// which the first and the last stay.
fn kill_steps(trace: &[Step]) -> Vec<&Step> {
    let mut chosen = Vec::new();
    for (i, step) in trace.iter().enumerate() {
        let same =
            |other: Option<&Step>| other.is_some_and(|o| o.kind == "write" && o.path == step.path);
        let inner = step.kind == "write"
            && same(i.checked_sub(1).map(|j| &trace[j]))
            && same(trace.get(i + 1));
        if !inner {
            chosen.push(step);
        }
    }
    chosen
}

/// What one run did: whether its kill point was reached, what was killed, what was checked.
struct RunReport {
    /// From the start to the scenario's end or the kill.
    length: Duration,
    steps: Vec<Step>,
    hit: Option<String>,
    acked: Acknowledged,
    jobs_after: usize,
}

/// One run: a fresh data dir, the service with the library and `point`, the scenario, a kill
/// (or the scenario's end, then a kill), the restart and the checks.
fn run(library: &Path, winning: &Winning, point: Option<KillPoint>, trace: &Path) -> RunReport {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let _ = std::fs::remove_file(trace);
    let at = match point {
        Some(KillPoint::Step(n)) => n.to_string(),
        _ => "0".into(),
    };
    let env = [
        ("LD_PRELOAD", library.to_str().unwrap()),
        ("CUZK_CRASH_DIR", data.to_str().unwrap()),
        ("CUZK_CRASH_TRACE", trace.to_str().unwrap()),
        ("CUZK_CRASH_AT", at.as_str()),
        ("CUZK_PROVING__WORKERS", "1"),
    ];
    let mut server = Server::launch(&data, &env, &[], None);
    let mut acked = Acknowledged::default();
    let mut outcome = Err("did not start".to_owned());
    let started = Instant::now();
    if server.ready_or_exited() {
        let client = Client::new(server.port);
        let pid = server.child.id() as libc::pid_t;
        std::thread::scope(|s| {
            if let Some(KillPoint::After(delay)) = point {
                s.spawn(move || {
                    std::thread::sleep(delay);
                    // SAFETY: kill(2) on the child's pid; it is reaped only after this scope.
                    unsafe { libc::kill(pid, libc::SIGKILL) };
                });
            }
            outcome = scenario(&client, winning, &data, &mut acked);
        });
    }
    let length = started.elapsed();
    let steps = read_trace(trace, &data);
    let hit = match point {
        Some(KillPoint::Step(n)) => steps
            .iter()
            .find(|s| s.number == n)
            .map(|s| format!("step {n}: {} {}", s.kind, s.path)),
        Some(KillPoint::After(d)) if outcome.is_err() => Some(format!("after {d:.2?}")),
        _ => None,
    };
    drop(server); // SIGKILL if still running, then reaped

    // Started again on the same data dir, without the library.
    let server = Server::start(&data, &[("CUZK_PROVING__WORKERS", "1")]);
    let context = format!("kill point {point:?} ({hit:?}), acknowledged {acked:?}");
    let jobs: Vec<String> = std::fs::read_dir(data.join("jobs"))
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    for name in &jobs {
        assert!(
            !name.starts_with(".new-"),
            "{context}: a half-made job {name} was left"
        );
    }
    for id in &acked.submitted {
        assert!(
            jobs.contains(id),
            "{context}: acknowledged job {id} is lost"
        );
    }
    for id in &jobs {
        let state = server.wait_final(id)["state"].as_str().unwrap().to_owned();
        if acked.cancelled.contains(id) {
            assert_eq!(
                state, "cancelled",
                "{context}: the cancellation of {id} is lost"
            );
            continue;
        }
        if state == "cancelled" {
            assert_eq!(id, "cancelled", "{context}: {id} was never cancelled");
            continue;
        }
        assert_eq!(
            state,
            "done",
            "{context}: job {id} ended {state}: {}",
            server.log_text()
        );
        let proof = server.proof(id);
        winning.verify(&proof);
        if let Some(before) = acked.proofs.get(id) {
            assert_eq!(
                &proof, before,
                "{context}: the proof of {id} served before the kill changed"
            );
        }
        let leftovers: Vec<String> = std::fs::read_dir(data.join("jobs").join(id))
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.contains(".tmp-"))
            .collect();
        assert!(leftovers.is_empty(), "{context}: {id} holds {leftovers:?}");
    }
    let (_, status) = server.get_json("/v1/status");
    assert_eq!(
        status["quarantined_jobs"],
        serde_json::json!([]),
        "{context}: {status}"
    );
    assert!(
        !data.join("quarantine").exists(),
        "{context}: a record was quarantined"
    );
    for entry in std::fs::read_dir(data.join("pce"))
        .into_iter()
        .flatten()
        .flatten()
    {
        let name = entry.file_name().to_string_lossy().into_owned();
        assert!(
            !name.contains(".tmp-"),
            "{context}: a dead writer's {name} was left in pce/"
        );
        if name.ends_with(".pce") && !name.starts_with('.') {
            let bytes = std::fs::read(entry.path()).unwrap();
            let (id, hash) = cuzk::pce::file::claimed_identity(&bytes);
            if let Err(e) = cuzk::pce::file::from_bytes(&bytes, &id, &hash) {
                panic!("{context}: the PCE {name} at its final name does not load: {e}");
            }
        }
    }
    RunReport {
        length,
        steps,
        hit,
        acked,
        jobs_after: jobs.len(),
    }
}

#[test]
fn no_acknowledged_job_result_or_cancellation_is_lost_at_any_kill_point() {
    let winning = winning();
    let dir = tempfile::tempdir().unwrap();
    let library = crashpoint_library(dir.path());
    let trace = dir.path().join("trace");

    // The traced run: the whole scenario with no kill, its steps numbered.
    let traced = run(&library, &winning, None, &trace);
    let length = traced.length;
    assert_eq!(
        traced.acked.proofs.len(),
        2,
        "the scenario ends with two proofs"
    );
    let steps = traced.steps;
    let candidates = kill_steps(&steps);
    assert!(
        candidates.iter().any(|s| s.path.contains("proof.bin"))
            && candidates.iter().any(|s| s.path.contains("state.json"))
            && candidates.iter().any(|s| s.kind == "rename"),
        "the trace holds no result, record or rename: {steps:?}"
    );
    let wanted = match std::env::var("CUZK_CRASH_POINTS").as_deref() {
        Ok("all") => candidates.len(),
        Ok(n) => n.parse().expect("CUZK_CRASH_POINTS: a number or `all`"),
        Err(_) => 12,
    }
    .clamp(1, candidates.len());
    let mut points: Vec<KillPoint> = (0..wanted)
        .map(|i| candidates[i * candidates.len() / wanted].number)
        .map(KillPoint::Step)
        .collect();
    points.extend(
        [0.1, 0.3, 0.5, 0.7, 0.9]
            .into_iter()
            .map(|f| KillPoint::After(length.mul_f64(f))),
    );
    eprintln!(
        "traced run: {:.1}s, {} steps, {} kill candidates; {} kill points",
        length.as_secs_f64(),
        steps.len(),
        candidates.len(),
        points.len()
    );
    let mut hits = 0;
    for point in points {
        let report = run(&library, &winning, Some(point), &trace);
        eprintln!(
            "{point:?}: {}; acknowledged {} submissions, {} cancellations, {} proofs; {} jobs after the restart, all checked",
            report.hit.as_deref().unwrap_or("not reached"),
            report.acked.submitted.len(),
            report.acked.cancelled.len(),
            report.acked.proofs.len(),
            report.jobs_after,
        );
        hits += usize::from(report.hit.is_some());
    }
    assert!(hits * 2 > wanted, "only {hits} kill points were reached");
}
