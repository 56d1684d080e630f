//! The real `cuzk serve` on a free port, talked to over HTTP: proofs submitted, watched, fetched
//! and verified with filecoin-proofs; idempotency, cancellation, problem+json; a kill -9 in the
//! middle of a proof; the systemd notification protocol on a real unix datagram socket.

mod common;

use std::io::Read;
use std::os::unix::net::UnixDatagram;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use common::server::*;
use common::*;
use serde_json::{json, Value};

/// The tests here prove real PoReps; one at a time keeps each inside the machine's memory and
/// cores and their timings meaningful.
fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

fn porep_body(id: &str) -> Value {
    json!({
        "id": id,
        "kind": "porep-c2",
        "c1": serde_json::to_value(sealed_c1()).unwrap(),
        "miner_id": MINER_ID,
        "sector_number": SECTOR_NUMBER,
    })
}

fn verify_porep(proof: &[u8]) {
    assert!(
        verify_sealed_porep(proof, sealed_c1().seed),
        "verify_seal rejected the served proof"
    );
}

fn scrape(server: &Server) -> prometheus_parse::Scrape {
    server.scrape()
}

fn sample(scrape: &prometheus_parse::Scrape, name: &str, label: (&str, &str)) -> f64 {
    scrape
        .samples
        .iter()
        .find(|s| s.metric == name && s.labels.get(label.0) == Some(label.1))
        .map(|s| match s.value {
            prometheus_parse::Value::Gauge(v) | prometheus_parse::Value::Counter(v) => v,
            prometheus_parse::Value::Untyped(v) => v,
            _ => f64::NAN,
        })
        .unwrap_or_else(|| panic!("no {name}{{{}={}}}", label.0, label.1))
}

/// A series without labels.
fn plain(scrape: &prometheus_parse::Scrape, name: &str) -> f64 {
    scrape
        .samples
        .iter()
        .find(|s| s.metric == name)
        .map(|s| match s.value {
            prometheus_parse::Value::Gauge(v) | prometheus_parse::Value::Untyped(v) => v,
            _ => f64::NAN,
        })
        .unwrap_or_else(|| panic!("no {name}"))
}

#[test]
fn porep_and_winning_post_are_proved_over_http_and_verify_and_metrics_move() {
    let _serial = one_at_a_time();
    let winning = winning();
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(&dir.path().join("data"), &[]);

    let (status, job) = server.submit(&porep_body("porep-1"));
    assert_eq!(status, 202, "{job}");
    assert_eq!(job["state"], "queued");
    let (status, job) = server.submit(&winning.body("winning-1"));
    assert_eq!(status, 202, "{job}");

    // While the PoRep partition is proved, the ledger shows it.
    let deadline = Instant::now() + Duration::from_secs(300);
    let mut seen_in_ledger = false;
    while Instant::now() < deadline && !seen_in_ledger {
        let m = scrape(&server);
        seen_in_ledger = sample(&m, "cuzk_ledger_buffers", ("stage", "proving")) == 1.0
            && sample(&m, "cuzk_ledger_bytes", ("stage", "proving")) > 1e8
            && plain(&m, "cuzk_memory_reserved_bytes") > 1e8;
        std::thread::sleep(Duration::from_millis(200));
    }
    assert!(
        seen_in_ledger,
        "the ledger never showed the partition being proved"
    );

    for id in ["porep-1", "winning-1"] {
        let job = server.wait_final(id);
        assert_eq!(job["state"], "done", "{job}");
        assert!(job["timings"]["prove_s"].as_f64().unwrap() > 0.0, "{job}");
        assert_eq!(job["progress"]["partitions_done"], 1);
    }
    verify_porep(&server.proof("porep-1"));
    winning.verify(&server.proof("winning-1"));

    let m = scrape(&server);
    assert_eq!(
        sample(&m, "cuzk_proofs_verified_total", ("kind", "porep-c2")),
        1.0
    );
    assert_eq!(
        sample(&m, "cuzk_proofs_verified_total", ("kind", "winning-post")),
        1.0
    );
    assert!(sample(&m, "cuzk_jobs", ("state", "done")) >= 1.0);
    for stage in ["synthesizing", "synthesized", "proving", "finalizing"] {
        assert_eq!(sample(&m, "cuzk_ledger_buffers", ("stage", stage)), 0.0);
        assert_eq!(sample(&m, "cuzk_ledger_bytes", ("stage", stage)), 0.0);
    }
    assert_eq!(
        plain(&m, "cuzk_memory_reserved_bytes"),
        0.0,
        "reservations returned"
    );
    assert!(m
        .samples
        .iter()
        .any(|s| s.metric == "process_resident_memory_bytes"));
    assert!(m
        .samples
        .iter()
        .any(|s| s.metric == "cuzk_prove_seconds_count" || s.metric == "cuzk_prove_seconds"));
    let (status, st) = server.get_json("/v1/status");
    assert_eq!(status, 200);
    assert_eq!(st["running"], 0, "{st}");
    if cuzk::gpu::discover(&[]).is_err() {
        // No GPU here (CI): backend "auto" proved these on the CPU.
        assert_eq!(st["backend"], "cpu", "{st}");
        assert_eq!(st["gpus"], serde_json::json!([]), "{st}");
    }
    assert!(st["budget"]["total_bytes"].as_u64().unwrap() > 0, "{st}");
    assert!(st["budget"]["source"]["kind"].is_string(), "{st}");
    // The page-locked pool: locked at start (cut to RLIMIT_MEMLOCK where that is lower), held
    // from the budget, nothing leased once the jobs are done.
    let pool = &st["pinned_pool"];
    let locked = pool["locked_bytes"].as_u64().unwrap_or(0);
    assert!(locked > 0 && locked <= 64 << 20, "{st}");
    assert_eq!(pool["leased_bytes"], 0, "{st}");
    let held = st["pipeline"]["held"].as_array().unwrap();
    assert!(
        held.iter()
            .any(|h| h["purpose"] == "pinned-pool" && h["bytes"] == locked),
        "{st}"
    );
    let gauge = |name: &str, label: &str| {
        m.samples.iter().find_map(|s| match s.value {
            prometheus_parse::Value::Gauge(v)
                if s.metric == name && s.labels.get("state") == Some(label) =>
            {
                Some(v)
            }
            _ => None,
        })
    };
    assert_eq!(
        gauge("cuzk_pinned_pool_bytes", "locked"),
        Some(locked as f64)
    );
    let budget = m
        .samples
        .iter()
        .find(|s| s.metric == "cuzk_memory_budget_bytes");
    assert!(budget.is_some_and(|s| matches!(s.value, prometheus_parse::Value::Gauge(v) if v > 0.0)));
}

#[test]
fn without_a_gpu_backend_gpu_is_refused_at_start_in_one_line() {
    if cuzk::gpu::discover(&[]).is_ok() {
        eprintln!("skipped: this machine has a GPU");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_cuzk"))
        .args(["serve"])
        .env("CUZK_JOBS__DATA_DIR", dir.path())
        .env("CUZK_API__LISTEN", format!("127.0.0.1:{}", free_port()))
        .env("CUZK_PROVING__BACKEND", "gpu")
        .env("CUZK_LOG", "warn")
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(err.contains("no usable GPU"), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    let out = Command::new(env!("CARGO_BIN_EXE_cuzk"))
        .args(["selftest", "--gpu"])
        .env("CUZK_LOG", "warn")
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(
        stderr(&out).starts_with("error: no GPU: "),
        "{}",
        stderr(&out)
    );
}

#[test]
fn bad_configuration_is_refused_at_start_with_the_key_named() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("cuzk.toml");
    std::fs::write(&file, "[api]\nlisten = \"127.0.0.1:1\"\nmax_body = 5\n").unwrap();
    let run = |args: &[&str], env: &[(&str, &str)]| {
        Command::new(env!("CARGO_BIN_EXE_cuzk"))
            .args(args)
            .envs(env.iter().copied())
            .env("CUZK_LOG", "warn")
            .output()
            .unwrap()
    };
    for args in [
        &["serve", "--config", file.to_str().unwrap()][..],
        &["config", "show", "--config", file.to_str().unwrap()][..],
    ] {
        let out = run(args, &[]);
        assert!(!out.status.success());
        let err = stderr(&out);
        assert!(err.contains("max_body"), "{err}");
        assert_eq!(err.trim().lines().count(), 1, "{err}");
    }
    let out = run(&["config", "show"], &[("CUZK_PROVING__WORKERS", "many")]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("proving.workers"), "{}", stderr(&out));
    let out = run(&["config", "show"], &[("CUZK_PROVING__WORKERS", "3")]);
    let shown = String::from_utf8_lossy(&out.stdout);
    assert!(
        shown.contains("workers = 3  # environment CUZK_PROVING__WORKERS"),
        "{shown}"
    );
}

#[test]
fn idempotency_cancellation_and_problem_json() {
    let _serial = one_at_a_time();
    let winning = winning();
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(
        &dir.path().join("data"),
        &[
            ("CUZK_API__MAX_BODY_BYTES", "1000000"),
            ("CUZK_API__MAX_QUEUED_JOBS", "1"),
            ("CUZK_PROVING__WORKERS", "1"),
        ],
    );
    let problem = |status: u16, body: &[u8], content_type: &str, expected: (u16, &str)| {
        assert_eq!(status, expected.0, "{}", String::from_utf8_lossy(body));
        assert_eq!(content_type, "application/problem+json");
        let p: Value = serde_json::from_slice(body).unwrap();
        assert_eq!(p["type"], format!("urn:cuzk:problem:{}", expected.1), "{p}");
        assert_eq!(p["status"], expected.0);
        p
    };
    let post = |body: &[u8], content_type: &str| {
        let req = ureq::post(&server.url("/v1/proofs")).set("content-type", content_type);
        server.call(req, Some(body))
    };
    let (s, ct, b) = post(b"{not json", "application/json");
    problem(s, &b, &ct, (400, "malformed-json"));
    let (s, ct, b) = post(br#"{"kind":"teleport"}"#, "application/json");
    let p = problem(s, &b, &ct, (422, "invalid-input"));
    assert_eq!(p["field"], "kind");
    let (s, ct, b) = server.post_early_answer(vec![b' '; 2_000_000], "application/json");
    problem(s, &b, &ct, (413, "body-too-large"));
    let (s, ct, b) = post(b"{}", "text/plain");
    problem(s, &b, &ct, (415, "unsupported-media-type"));
    let mut bad = winning.body("bad-1");
    bad["vanilla_proofs"][0] = json!("AAAA");
    let (s, ct, b) = post(&serde_json::to_vec(&bad).unwrap(), "application/json");
    let p = problem(s, &b, &ct, (422, "invalid-input"));
    assert_eq!(p["field"], "vanilla_proofs[0]");
    let (s, ct, b) = server.get("/v1/proofs/nope");
    problem(s, &b, &ct, (404, "not-found"));

    // A running PoRep, a queued PoRep, and the same id twice.
    let (status, _) = server.submit(&porep_body("run-1"));
    assert_eq!(status, 202);
    // Out of the queue (which holds one job) before the next comes.
    server.wait_running("run-1");
    let (status, first) = server.submit(&porep_body("queued-1"));
    assert_eq!(status, 202);
    let (status, again) = server.submit(&porep_body("queued-1"));
    assert_eq!(status, 200, "same id, same body: the same job");
    assert_eq!(again["submitted_at_ms"], first["submitted_at_ms"]);
    let mut other = porep_body("queued-1");
    other["sector_number"] = json!(SECTOR_NUMBER + 1);
    let (status, p) = server.submit(&other);
    assert_eq!(status, 409, "{p}");
    assert_eq!(p["type"], "urn:cuzk:problem:id-conflict");

    let (status, p) = server.submit(&winning.body("overflow-1"));
    assert_eq!(status, 429, "one job queued is the maximum: {p}");
    assert_eq!(p["type"], "urn:cuzk:problem:queue-full");

    let (status, job) = server.delete("/v1/proofs/queued-1");
    assert_eq!(status, 202);
    assert_eq!(
        job["state"], "cancelled",
        "a queued job is cancelled at once"
    );
    let (_, running) = server.get_json("/v1/proofs/run-1");
    assert_eq!(running["state"], "running", "{running}");
    let (status, _) = server.delete("/v1/proofs/run-1");
    assert_eq!(status, 202);
    let job = server.wait_final("run-1");
    assert_eq!(job["state"], "cancelled", "{job}");
    let (status, p) = server.delete("/v1/proofs/run-1");
    assert_eq!(status, 409, "{p}");
    let (s, ct, b) = server.get("/v1/proofs/run-1/proof");
    problem(s, &b, &ct, (409, "not-done"));
    // Nothing is left in flight, and the engine takes new work.
    let (status, _) = server.submit(&winning.body("after-1"));
    assert_eq!(status, 202);
    assert_eq!(server.wait_final("after-1")["state"], "done");
}

#[test]
fn a_job_killed_mid_proof_completes_after_restart_and_finished_proofs_survive() {
    let _serial = one_at_a_time();
    let winning = winning();
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let server = Server::start(&data, &[]);
    server.submit(&winning.body("winning-1"));
    assert_eq!(server.wait_final("winning-1")["state"], "done");
    let winning_proof = server.proof("winning-1");

    server.submit(&porep_body("porep-1"));
    let deadline = Instant::now() + Duration::from_secs(300);
    loop {
        let (_, job) = server.get_json("/v1/proofs/porep-1");
        if job["progress"]["stage"] == "proving" {
            break;
        }
        assert!(Instant::now() < deadline, "never reached proving: {job}");
        std::thread::sleep(Duration::from_millis(100));
    }
    let data = server.kill9();

    let server = Server::start(&data, &[]);
    assert_eq!(server.proof("winning-1"), winning_proof);
    let job = server.wait_final("porep-1");
    assert_eq!(job["state"], "done", "{job}");
    assert_eq!(job["attempts"], 2, "{job}");
    verify_porep(&server.proof("porep-1"));
}

#[test]
fn notify_socket_gets_ready_status_watchdog_then_stopping() {
    let _serial = one_at_a_time();
    let dir = tempfile::tempdir().unwrap();
    let socket_path = dir.path().join("notify.sock");
    let socket = UnixDatagram::bind(&socket_path).unwrap();
    socket
        .set_read_timeout(Some(Duration::from_millis(200)))
        .unwrap();
    let mut server = Server::start(
        &dir.path().join("data"),
        &[
            ("NOTIFY_SOCKET", socket_path.to_str().unwrap()),
            ("WATCHDOG_USEC", "1000000"),
            ("CUZK_SERVICE__STATUS_INTERVAL_SECS", "1"),
            (
                "CUZK_API__UNIX_SOCKET",
                dir.path().join("api.sock").to_str().unwrap(),
            ),
        ],
    );
    // The API answers on the unix socket too.
    let mut stream = std::os::unix::net::UnixStream::connect(dir.path().join("api.sock")).unwrap();
    use std::io::Write;
    stream
        .write_all(b"GET /healthz HTTP/1.1\r\nHost: cuzk\r\nConnection: close\r\n\r\n")
        .unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    // `cuzk reload` (the unit's ExecReload) re-reads the configuration: RELOADING=1 with the
    // monotonic clock, READY=1 once applied, and the service carries on.
    let reload = cuzk(&["reload", "--pid", &server.child.id().to_string()]);
    assert!(reload.status.success(), "{}", stderr(&reload));
    let mut messages: Vec<String> = Vec::new();
    let receive_for = |d: Duration, messages: &mut Vec<String>| {
        let until = Instant::now() + d;
        let mut buf = [0u8; 512];
        while Instant::now() < until {
            if let Ok(n) = socket.recv(&mut buf) {
                messages.push(String::from_utf8_lossy(&buf[..n]).into_owned());
            }
        }
    };
    receive_for(Duration::from_secs(3), &mut messages);
    server.signal("TERM");
    let status = server.child.wait().unwrap();
    receive_for(Duration::from_millis(500), &mut messages);
    assert!(status.success(), "exit after SIGTERM: {status}");

    let first = |prefix: &str| {
        messages
            .iter()
            .position(|m| m.starts_with(prefix))
            .unwrap_or_else(|| panic!("no {prefix} in {messages:?}"))
    };
    let (ready, status_line, watchdog, stopping) = (
        first("READY=1"),
        first("STATUS="),
        first("WATCHDOG=1"),
        first("STOPPING=1"),
    );
    assert!(
        ready < status_line && status_line < watchdog && watchdog < stopping,
        "{messages:?}"
    );
    assert_eq!(ready, 0, "nothing before READY=1: {messages:?}");
    let reloading = first("RELOADING=1");
    assert!(
        messages[reloading].contains("MONOTONIC_USEC="),
        "{messages:?}"
    );
    assert!(
        messages[reloading + 1..stopping]
            .iter()
            .any(|m| m.starts_with("READY=1")),
        "READY=1 after RELOADING=1: {messages:?}"
    );
    assert!(messages[status_line].contains("queued"), "{messages:?}");
    assert!(
        server.log_text().contains("configuration reloaded"),
        "{}",
        server.log_text()
    );
    assert!(
        !dir.path().join("api.sock").exists(),
        "the socket is removed at exit"
    );
}

#[test]
fn sighup_names_every_changed_key_that_needs_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("cuzk.toml");
    let write = |depth: u32, max_queued: u32, backend: &str| {
        let text = format!(
            "[api]\nmax_queued_jobs = {max_queued}\n\n[proving]\ndepth = {depth}\nbackend = \"{backend}\"\n"
        );
        std::fs::write(&file, text).unwrap();
    };
    write(2, 5, "cpu");
    let server = Server::start_with(
        &dir.path().join("data"),
        &[],
        &["--config", file.to_str().unwrap()],
    );
    let reloads = |server: &Server| server.log_text().matches("configuration reloaded").count();
    let wait_reload = |server: &Server, n: usize| {
        let deadline = Instant::now() + Duration::from_secs(10);
        while reloads(server) < n {
            assert!(
                Instant::now() < deadline,
                "no reload: {}",
                server.log_text()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    };
    // A live key alone: applied, nothing to restart for.
    write(2, 1, "cpu");
    server.signal("HUP");
    wait_reload(&server, 1);
    assert!(
        !server.log_text().contains("next restart"),
        "{}",
        server.log_text()
    );
    // Two keys that need a restart, beside the live one: both named, the live one not.
    write(3, 7, "auto");
    server.signal("HUP");
    wait_reload(&server, 2);
    let log = server.log_text();
    let line = log
        .lines()
        .find(|l| l.contains("next restart"))
        .unwrap_or_else(|| panic!("no restart warning: {log}"));
    assert!(
        line.contains("proving.backend, proving.depth take effect at the next restart"),
        "{line}"
    );
    assert!(!line.contains("changes to api.max_queued_jobs"), "{line}");
    // /readyz still answers: the service carries on with what it runs.
    assert_eq!(server.get("/readyz").0, 200);
}

#[test]
fn finished_jobs_beyond_the_retention_count_are_deleted() {
    let _serial = one_at_a_time();
    let winning = winning();
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(
        &dir.path().join("data"),
        &[("CUZK_JOBS__RETENTION_COUNT", "1")],
    );
    for id in ["old-1", "new-1"] {
        server.submit(&winning.body(id));
        assert_eq!(server.wait_final(id)["state"], "done");
    }
    // The sweep follows the job's end closely, not atomically.
    let deadline = Instant::now() + Duration::from_secs(10);
    while server.get("/v1/proofs/old-1").0 != 404 {
        assert!(Instant::now() < deadline, "the older job is still there");
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(!dir.path().join("data/jobs/old-1").exists());
    winning.verify(&server.proof("new-1"));
}

#[test]
fn sigterm_lets_a_running_job_finish_before_exit() {
    let _serial = one_at_a_time();
    let winning = winning();
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let mut server = Server::start(&data, &[("CUZK_SERVICE__DRAIN_TIMEOUT_SECS", "300")]);
    server.submit(&winning.body("drained-1"));
    server.wait_running("drained-1");
    let deadline = Instant::now() + Duration::from_secs(60);
    server.signal("TERM");
    // Draining: not ready, and new work is refused while the running job finishes.
    while server.get("/readyz").0 != 503 {
        assert!(Instant::now() < deadline);
        std::thread::sleep(Duration::from_millis(20));
    }
    let (status, p) = server.submit(&winning.body("late-1"));
    assert_eq!(status, 503, "{p}");
    let exit = server.child.wait().unwrap();
    assert!(exit.success(), "{exit}");
    drop(server);

    let server = Server::start(&data, &[]);
    let (_, job) = server.get_json("/v1/proofs/drained-1");
    assert_eq!(job["state"], "done", "{job}");
    assert_eq!(
        job["attempts"], 1,
        "finished before the exit, not re-run: {job}"
    );
    winning.verify(&server.proof("drained-1"));
}

/// `VmHWM` (peak resident set) of a process, bytes.
fn peak_rss(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let kb: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().strip_suffix("kB"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap();
    kb * 1024
}

#[test]
fn three_poreps_and_a_winning_post_under_a_low_budget_queue_verify_and_stay_under_it() {
    let _serial = one_at_a_time();
    let winning = winning();
    let dir = tempfile::tempdir().unwrap();
    // Room for the PoRep parameters (1.1 GB) and one of its partitions (0.79 GB), not two.
    let budget: u64 = 2_000_000_000;
    let margin: u64 = 1 << 30;
    let server = Server::start(
        &dir.path().join("data"),
        &[
            ("CUZK_MEMORY__BUDGET_BYTES", &budget.to_string()),
            ("CUZK_MEMORY__MARGIN_BYTES", &margin.to_string()),
            ("CUZK_PROVING__WORKERS", "4"),
            ("CUZK_PROVING__DEPTH", "4"),
        ],
    );
    let ids = ["porep-a", "porep-b", "porep-c", "winning-a"];
    for id in &ids[..3] {
        assert_eq!(server.submit(&porep_body(id)).0, 202);
    }
    assert_eq!(server.submit(&winning.body(ids[3])).0, 202);

    let (mut most_held, mut saw_waiting) = (0u64, false);
    let deadline = Instant::now() + Duration::from_secs(1200);
    loop {
        let (_, st) = server.get_json("/v1/status");
        let p = &st["pipeline"];
        let held = p["reserved_bytes"].as_u64().unwrap() + p["held_bytes"].as_u64().unwrap();
        let by_purpose: u64 = p["held"]
            .as_array()
            .unwrap()
            .iter()
            .map(|h| h["bytes"].as_u64().unwrap())
            .sum();
        assert_eq!(by_purpose, p["held_bytes"].as_u64().unwrap(), "{p}");
        most_held = most_held.max(held);
        saw_waiting |= p["waiting_partitions"].as_u64().unwrap() > 0;
        let done = ids
            .iter()
            .filter(|id| {
                let (_, job) = server.get_json(&format!("/v1/proofs/{id}"));
                job["state"] == "done" || job["state"] == "failed"
            })
            .count();
        if done == ids.len() {
            break;
        }
        assert!(Instant::now() < deadline, "jobs did not finish: {st}");
        std::thread::sleep(Duration::from_millis(100));
    }
    for id in ids {
        let job = server.wait_final(id);
        assert_eq!(job["state"], "done", "{job}");
    }
    for id in &ids[..3] {
        verify_porep(&server.proof(id));
    }
    winning.verify(&server.proof(ids[3]));

    assert!(saw_waiting, "partitions never had to wait for memory");
    assert!(
        most_held <= budget,
        "{most_held} bytes held, budget {budget}"
    );
    let m = scrape(&server);
    for stage in ["synthesizing", "synthesized", "proving", "finalizing"] {
        assert_eq!(sample(&m, "cuzk_ledger_buffers", ("stage", stage)), 0.0);
        assert_eq!(sample(&m, "cuzk_ledger_bytes", ("stage", stage)), 0.0);
    }
    assert_eq!(plain(&m, "cuzk_memory_reserved_bytes"), 0.0);
    let held: f64 = ["parameters", "pce", "pce-extraction"]
        .iter()
        .map(|p| sample(&m, "cuzk_memory_held_bytes", ("purpose", p)))
        .sum();
    assert!(held <= budget as f64, "{held}");
    // The reservation covers what synthesis made (estimated from the circuit's shape).
    let estimated = m.samples.iter().find(|s| {
        s.metric == "cuzk_partition_bytes"
            && s.labels.get("kind") == Some("porep-c2")
            && s.labels.get("measure") == Some("estimated")
    });
    let synthesized = m.samples.iter().find(|s| {
        s.metric == "cuzk_partition_bytes"
            && s.labels.get("kind") == Some("porep-c2")
            && s.labels.get("measure") == Some("synthesized")
    });
    let value = |s: Option<&prometheus_parse::Sample>| match s.map(|s| &s.value) {
        Some(prometheus_parse::Value::Gauge(v)) => *v,
        other => panic!("no gauge: {other:?}"),
    };
    let (estimated, synthesized) = (value(estimated), value(synthesized));
    assert!(
        synthesized > 1e8 && synthesized <= estimated,
        "{synthesized} > {estimated}"
    );
    let peak = peak_rss(server.child.id());
    eprintln!("peak RSS {peak} bytes, most held {most_held}, budget {budget} + margin {margin}");
    assert!(
        peak < budget + margin,
        "peak RSS {peak} over budget + margin"
    );
}

/// A memory cgroup made for one test beside this process's own (cgroup v1's memory controller,
/// or v2 where the memory controller is delegated), with a limit; removed on drop once empty.
struct MemoryCgroup {
    dir: PathBuf,
    v2: bool,
    /// The limit as the kernel keeps it (rounded to pages).
    limit: u64,
}

impl MemoryCgroup {
    /// None (and why) where this machine does not let the test make one.
    fn new(name: &str, limit: u64) -> Result<MemoryCgroup, String> {
        let membership = std::fs::read_to_string("/proc/self/cgroup").map_err(|e| e.to_string())?;
        let line = |want: &dyn Fn(&str) -> bool| {
            membership.lines().find_map(|l| {
                let mut parts = l.splitn(3, ':');
                let (_, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
                want(controllers).then(|| path.trim_start_matches('/').to_owned())
            })
        };
        let (parent, v2) = match line(&|c| c.split(',').any(|c| c == "memory")) {
            Some(path) => (Path::new("/sys/fs/cgroup/memory").join(path), false),
            None => match line(&|c| c.is_empty()) {
                Some(path) => (Path::new("/sys/fs/cgroup").join(path), true),
                None => return Err("no memory cgroup in /proc/self/cgroup".into()),
            },
        };
        let dir = parent.join(name);
        let limit_file = if v2 {
            "memory.max"
        } else {
            "memory.limit_in_bytes"
        };
        std::fs::create_dir(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let mut group = MemoryCgroup { dir, v2, limit: 0 };
        let file = group.dir.join(limit_file);
        std::fs::write(&file, limit.to_string()).map_err(|e| format!("{limit_file}: {e}"))?;
        group.limit = std::fs::read_to_string(&file)
            .map_err(|e| format!("{limit_file}: {e}"))?
            .trim()
            .parse()
            .map_err(|e| format!("{limit_file}: {e}"))?;
        Ok(group)
    }

    /// A counter from a `key value` file (`memory.events`, `memory.oom_control`).
    fn counter(&self, file: &str, key: &str) -> u64 {
        std::fs::read_to_string(self.dir.join(file))
            .unwrap_or_default()
            .lines()
            .find_map(|l| l.strip_prefix(key)?.trim().parse().ok())
            .unwrap_or(0)
    }

    fn oom_kills(&self) -> u64 {
        let file = if self.v2 {
            "memory.events"
        } else {
            "memory.oom_control"
        };
        self.counter(file, "oom_kill ")
    }

    /// The most the cgroup was charged (resident memory, page cache of files read included).
    fn peak(&self) -> Option<u64> {
        let file = if self.v2 {
            "memory.peak"
        } else {
            "memory.max_usage_in_bytes"
        };
        std::fs::read_to_string(self.dir.join(file))
            .ok()?
            .trim()
            .parse()
            .ok()
    }
}

impl Drop for MemoryCgroup {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir(&self.dir);
    }
}

/// The service under a real cgroup memory limit (what `systemd-run -p MemoryMax=` or the unit's
/// MemoryMax= sets), its page-locked pool counted: it reads its budget from the cgroup, queues
/// what does not fit, proves everything, and is never OOM-killed.
#[test]
fn under_a_cgroup_memory_limit_the_service_budgets_from_it_pool_included_and_is_never_oom_killed() {
    let _serial = one_at_a_time();
    // Room for the PoRep parameters (1.1 GB), a 256 MiB pool and one partition (0.79 GB),
    // not two; the margin is the service's default.
    let margin: u64 = 1 << 30;
    let pool: u64 = 256 << 20;
    let name = format!("cuzk-test-{}", std::process::id());
    let cgroup = match MemoryCgroup::new(&name, 3_300_000_000) {
        Ok(c) => c,
        Err(why) => {
            eprintln!("SKIPPED: cannot make a memory cgroup here ({why})");
            return;
        }
    };
    let limit = cgroup.limit;
    let winning = winning();
    let dir = tempfile::tempdir().unwrap();
    let mut server = Server::start_in_cgroup(
        &dir.path().join("data"),
        &[
            ("CUZK_MEMORY__PINNED_BYTES", &pool.to_string()),
            ("CUZK_PROVING__WORKERS", "4"),
            ("CUZK_PROVING__DEPTH", "4"),
        ],
        &cgroup.dir,
    );
    let (_, st) = server.get_json("/v1/status");
    let budget = &st["budget"];
    assert_eq!(budget["limit_bytes"], limit, "{budget}");
    assert_eq!(budget["total_bytes"], limit - margin, "{budget}");
    assert!(
        budget["source"]["kind"]
            .as_str()
            .is_some_and(|k| k.starts_with("cgroup")),
        "{budget}"
    );
    // The pool is locked (cut to RLIMIT_MEMLOCK where this process may not lock past it) and
    // held from the budget the cgroup gave.
    let locked = st["pinned_pool"]["locked_bytes"].as_u64().unwrap_or(0);
    assert!(locked > 0 && locked <= pool, "{st}");
    let held = st["pipeline"]["held"].as_array().unwrap();
    assert!(
        held.iter()
            .any(|h| h["purpose"] == "pinned-pool" && h["bytes"] == locked),
        "{st}"
    );

    let ids = ["porep-a", "porep-b", "winning-a"];
    for id in &ids[..2] {
        assert_eq!(server.submit(&porep_body(id)).0, 202);
    }
    assert_eq!(server.submit(&winning.body(ids[2])).0, 202);
    let mut saw_waiting = false;
    let deadline = Instant::now() + Duration::from_secs(1200);
    while !ids.iter().all(|id| {
        let (_, job) = server.get_json(&format!("/v1/proofs/{id}"));
        job["state"] == "done" || job["state"] == "failed"
    }) {
        let (_, st) = server.get_json("/v1/status");
        saw_waiting |= st["pipeline"]["waiting_partitions"].as_u64().unwrap() > 0;
        assert!(Instant::now() < deadline, "jobs did not finish: {st}");
        std::thread::sleep(Duration::from_millis(100));
    }
    for id in ids {
        let job = server.wait_final(id);
        assert_eq!(job["state"], "done", "{job}");
    }
    for id in &ids[..2] {
        verify_porep(&server.proof(id));
    }
    winning.verify(&server.proof(ids[2]));
    assert!(saw_waiting, "partitions never had to wait for memory");

    let peak = peak_rss(server.child.id());
    let charged = cgroup.peak();
    eprintln!("cgroup limit {limit}, pool locked {locked}, peak charged {charged:?} (page cache included), service peak RSS {peak}");
    assert_eq!(cgroup.oom_kills(), 0, "the kernel killed in the cgroup");
    assert!(
        server.child.try_wait().unwrap().is_none(),
        "the service died"
    );
    assert!(
        peak < limit,
        "peak RSS {peak} over the cgroup's limit {limit}"
    );
    drop(server);
}

#[test]
fn the_first_porep_extracts_the_pce_and_later_ones_synthesize_through_it_across_restarts() {
    let _serial = one_at_a_time();
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let server = Server::start(&data, &[]);
    let syntheses = |m: &prometheus_parse::Scrape, path: &str| {
        m.samples
            .iter()
            .find(|s| {
                s.metric == "cuzk_syntheses_total"
                    && s.labels.get("kind") == Some("porep-c2")
                    && s.labels.get("path") == Some(path)
            })
            .map_or(0.0, |s| match s.value {
                prometheus_parse::Value::Counter(v) | prometheus_parse::Value::Untyped(v) => v,
                _ => f64::NAN,
            })
    };
    let counter = |m: &prometheus_parse::Scrape, name: &str, result: &str| {
        m.samples
            .iter()
            .find(|s| {
                s.metric == name
                    && s.labels.get("circuit") == Some("porep-2k")
                    && s.labels.get("result") == Some(result)
            })
            .map_or(0.0, |s| match s.value {
                prometheus_parse::Value::Counter(v) | prometheus_parse::Value::Untyped(v) => v,
                _ => f64::NAN,
            })
    };

    // First job: no PCE yet, the full path; the extraction runs beside it.
    assert_eq!(server.submit(&porep_body("first")).0, 202);
    assert_eq!(server.wait_final("first")["state"], "done");
    let deadline = Instant::now() + Duration::from_secs(300);
    loop {
        let m = scrape(&server);
        if counter(&m, "cuzk_pce_extractions_total", "ok") == 1.0 {
            break;
        }
        assert_eq!(counter(&m, "cuzk_pce_extractions_total", "failed"), 0.0);
        assert!(Instant::now() < deadline, "the PCE was never extracted");
        std::thread::sleep(Duration::from_millis(200));
    }
    let pce_file = data.join("pce").join("porep-2k.pce");
    assert!(pce_file.is_file(), "{} missing", pce_file.display());

    // Second job: the PCE path, and the loaded PCE stays resident and held.
    assert_eq!(server.submit(&porep_body("second")).0, 202);
    assert_eq!(server.wait_final("second")["state"], "done");
    let m = scrape(&server);
    assert_eq!(syntheses(&m, "full"), 1.0);
    assert_eq!(syntheses(&m, "pce"), 1.0);
    assert_eq!(counter(&m, "cuzk_pce_lookups_total", "miss"), 1.0);
    assert_eq!(counter(&m, "cuzk_pce_lookups_total", "hit"), 1.0);
    let held = sample(&m, "cuzk_memory_held_bytes", ("purpose", "pce"));
    assert!(
        held >= std::fs::metadata(&pce_file).unwrap().len() as f64,
        "{held}"
    );
    let (_, st) = server.get_json("/v1/status");
    let loaded = &st["caches"]["pces_loaded"];
    assert_eq!(loaded.as_array().map(Vec::len), Some(1), "{st}");
    assert_eq!(st["caches"]["pces_extracting"], json!([]), "{st}");
    for id in ["first", "second"] {
        verify_porep(&server.proof(id));
    }

    // After a restart the file is loaded, not extracted again.
    let data = server.kill9();
    let server = Server::start(&data, &[]);
    assert_eq!(server.submit(&porep_body("third")).0, 202);
    assert_eq!(server.wait_final("third")["state"], "done");
    verify_porep(&server.proof("third"));
    let m = scrape(&server);
    assert_eq!(syntheses(&m, "pce"), 1.0);
    assert_eq!(syntheses(&m, "full"), 0.0);
    assert_eq!(counter(&m, "cuzk_pce_extractions_total", "ok"), 0.0);
}
