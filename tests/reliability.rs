//! The service as a careless operator, a full disk and a hostile client would meet it: a second
//! instance on the same data dir or socket, a file where the socket goes, a full file system at
//! start and at submission, a corrupt job record, a damaged proof file, a full queue, and
//! requests that are wrong before the body is read. Each test here failed before its fix.

mod common;

use std::io::{Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use common::server::*;
use common::*;
use cuzk::circuits::samples::{randomness, seal, winning_post_request};
use cuzk::circuits::ProofKind;
use cuzk::jobs::{DataDirLock, JobRecord, JobState, JobStore, ProofDigest};
use serde_json::{json, Value};

/// A WinningPoSt request of one sealed 2 KiB sector (valid, so it passes the full check a new
/// job gets) with `id`.
fn winning_body(id: &str) -> Value {
    use std::sync::OnceLock;
    static REQUEST: OnceLock<Value> = OnceLock::new();
    let request = REQUEST.get_or_init(|| {
        params_dir();
        let dir = tempfile::tempdir().unwrap();
        let sector = seal(PROOF, MINER_ID, 1, 1, false, dir.path()).unwrap();
        let request = winning_post_request(&[sector], MINER_ID, randomness(50)).unwrap();
        serde_json::to_value(&request).unwrap()
    });
    let mut v = request.clone();
    v["id"] = json!(id);
    v
}

/// A PoRep C2 request of the sealed 2 KiB sector.
fn porep_body(id: &str) -> Value {
    json!({
        "id": id,
        "kind": "porep-c2",
        "c1": serde_json::to_value(sealed_c1()).unwrap(),
        "miner_id": MINER_ID,
        "sector_number": SECTOR_NUMBER,
    })
}

/// The store of `data` opened by the test itself (no service running on it).
fn store_of(data: &Path) -> JobStore {
    JobStore::open(DataDirLock::take(data).unwrap()).unwrap()
}

/// A job that reads done, with `proof` stored and its digest recorded.
fn stored_done_job(data: &Path, id: &str, proof: &[u8]) {
    let store = store_of(data);
    let mut record = JobRecord::new(id, ProofKind::WinningPost, "00".into());
    store.create(&record, b"{}").unwrap();
    record.state = JobState::Done;
    record.finished_at_ms = Some(record.submitted_at_ms);
    record.proof = Some(store.save_proof(id, proof).unwrap());
    assert_eq!(record.proof, Some(ProofDigest::of(proof)));
    store.save(&record).unwrap();
}

/// HTTP/1.1 over the unix socket at `path`: the status of `GET path`.
fn unix_get_status(socket: &Path, path: &str) -> u16 {
    let mut stream = UnixStream::connect(socket).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nhost: cuzk\r\nconnection: close\r\n\r\n"
    )
    .unwrap();
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).unwrap();
    parse_http_answer(&answer).0
}

/// Raw HTTP on the server's port: sends `head` (request line and headers, no body) and reads
/// whatever comes back until the server closes or 10 s pass.
fn raw_exchange(server: &Server, head: &str) -> Vec<u8> {
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", server.port)).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    stream.write_all(head.as_bytes()).unwrap();
    let mut answer = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        match stream.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => {
                answer.extend_from_slice(&chunk[..n]);
                // One whole answer is enough (the server may keep the connection open).
                if answer.windows(4).any(|w| w == b"\r\n\r\n") {
                    let (_, _, body) = std::panic::catch_unwind(|| parse_http_answer(&answer))
                        .unwrap_or((0, String::new(), Vec::new()));
                    if !body.is_empty() {
                        break;
                    }
                }
            }
            Err(e) => panic!(
                "reading the answer: {e}; so far {:?}",
                String::from_utf8_lossy(&answer)
            ),
        }
    }
    answer
}

fn problem_type(body: &[u8]) -> String {
    let v: Value = serde_json::from_slice(body)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {:?}", String::from_utf8_lossy(body)));
    v["type"].as_str().unwrap_or_default().to_owned()
}

/// A tmpfs of `bytes` mounted at a new directory, unmounted when dropped; None (the test says
/// SKIPPED) where mounting is not allowed.
struct Tmpfs {
    dir: tempfile::TempDir,
}

impl Tmpfs {
    fn mount(bytes: u64) -> Option<Tmpfs> {
        let dir = tempfile::tempdir().unwrap();
        let ok = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={bytes}"), "tmpfs"])
            .arg(dir.path())
            .status()
            .is_ok_and(|s| s.success());
        ok.then_some(Tmpfs { dir })
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Fills the file system up with one file, which `free` removes.
    fn fill(&self) -> PathBuf {
        let filler = self.path().join("filler");
        let mut f = std::fs::File::create(&filler).unwrap();
        let block = vec![0xa5u8; 64 << 10];
        while f.write_all(&block).is_ok() {}
        let _ = f.sync_all();
        // The last partial block, byte by byte.
        while f.write_all(&[0]).is_ok() {}
        filler
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(self.dir.path()).status();
    }
}

#[test]
fn a_second_serve_on_a_live_data_dir_stops_before_touching_its_jobs() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let first = Server::start(&data, &[]);
    // What the first instance has in flight: a job directory it is making right now.
    let making = data.join("jobs/.new-sector-9-4242");
    std::fs::create_dir_all(&making).unwrap();
    std::fs::write(making.join("request.json"), b"{}").unwrap();

    let (status, stderr) = serve_refused(&data, &[]);
    assert!(!status.success());
    let pid = first.child.id();
    assert!(
        stderr.contains(&format!("is in use by another cuzk (pid {pid})")),
        "{stderr}"
    );
    assert!(
        making.join("request.json").exists(),
        "the live instance's creation was removed"
    );
    assert_eq!(first.get("/readyz").0, 200);
}

#[test]
fn a_second_serve_on_a_live_socket_is_refused_and_the_first_keeps_it() {
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("cuzk.sock");
    let socket_env = socket.to_str().unwrap();
    let first = Server::start(
        &dir.path().join("one"),
        &[("CUZK_API__UNIX_SOCKET", socket_env)],
    );
    assert_eq!(unix_get_status(&socket, "/healthz"), 200);
    let mode = std::fs::metadata(&socket).unwrap().permissions().mode() & 0o777;
    assert_eq!(
        mode, 0o660,
        "the socket is for the service's user and group"
    );

    let (status, stderr) = serve_refused(
        &dir.path().join("two"),
        &[("CUZK_API__UNIX_SOCKET", socket_env)],
    );
    assert!(!status.success());
    assert!(
        stderr.contains("another process is serving on this socket"),
        "{stderr}"
    );
    assert_eq!(
        unix_get_status(&socket, "/healthz"),
        200,
        "the first lost its socket"
    );

    // Stopped, the first removes its own socket.
    first.signal("TERM");
    let mut first = first;
    first.child.wait().unwrap();
    assert!(!socket.exists());
}

#[test]
fn a_file_at_the_socket_path_is_refused_and_kept_and_a_stale_socket_is_replaced() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cuzk.sock");
    std::fs::write(&path, b"operator notes").unwrap();
    let (status, stderr) = serve_refused(
        &dir.path().join("data"),
        &[("CUZK_API__UNIX_SOCKET", path.to_str().unwrap())],
    );
    assert!(!status.success());
    assert!(
        stderr.contains("exists and is not a socket; not removed"),
        "{stderr}"
    );
    assert_eq!(std::fs::read(&path).unwrap(), b"operator notes");

    // A dead instance's socket: the file is there, nobody answers.
    std::fs::remove_file(&path).unwrap();
    drop(std::os::unix::net::UnixListener::bind(&path).unwrap());
    assert!(path.exists());
    let server = Server::start(
        &dir.path().join("data"),
        &[("CUZK_API__UNIX_SOCKET", path.to_str().unwrap())],
    );
    assert_eq!(unix_get_status(&path, "/readyz"), 200);
    drop(server);
}

/// The data dir on a full file system: the service starts (a job that was queued included),
/// serves what is stored, refuses new jobs with 507 and no host path, logs the cause, and takes
/// jobs again once there is room.
#[test]
fn on_a_full_disk_the_service_starts_serves_proofs_and_refuses_submissions_with_507() {
    let Some(fs) = Tmpfs::mount(8 << 20) else {
        eprintln!("SKIPPED: cannot mount a tmpfs here (not root?)");
        return;
    };
    // The data dir is the file system's root (the server's log goes beside it, elsewhere).
    let data = fs.path().to_owned();
    stored_done_job(&data, "done-1", &[7; 192]);
    {
        let store = store_of(&data);
        let mut request = winning_body("queued-1");
        request.as_object_mut().unwrap().remove("id");
        let body = serde_json::to_vec(&request).unwrap();
        store
            .create(
                &JobRecord::new("queued-1", ProofKind::WinningPost, "11".into()),
                &body,
            )
            .unwrap();
    }
    let filler = fs.fill();

    let server = Server::start(&data, &[]);
    let (status, job) = server.get_json("/v1/proofs/done-1");
    assert_eq!(
        (status, job["state"].as_str()),
        (200, Some("done")),
        "{job} {}",
        server.log_text()
    );
    assert_eq!(server.proof("done-1"), vec![7; 192]);
    let (status, job) = server.get_json("/v1/proofs/queued-1");
    assert_eq!(status, 200, "{job}");

    let (status, problem) = server.submit(&winning_body("new-1"));
    assert_eq!(status, 507, "{problem}");
    assert_eq!(problem["type"], "urn:cuzk:problem:insufficient-storage");
    let detail = problem["detail"].as_str().unwrap();
    assert!(!detail.contains('/'), "a host path in the answer: {detail}");
    assert!(
        server.log_text().contains("answered with a server error"),
        "the 5xx is not logged: {}",
        server.log_text()
    );
    assert_eq!(server.get("/v1/proofs/new-1").0, 404, "nothing half-stored");

    std::fs::remove_file(filler).unwrap();
    let (status, job) = server.submit(&winning_body("new-1"));
    assert_eq!(status, 202, "{job}");
}

#[test]
fn a_corrupt_job_record_is_quarantined_and_its_id_can_be_used_again() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    stored_done_job(&data, "torn", &[1; 192]);
    std::fs::write(data.join("jobs/torn/state.json"), b"{\"id\": \"to").unwrap();

    let server = Server::start(&data, &[]);
    assert_eq!(server.get("/v1/proofs/torn").0, 404);
    let (_, status) = server.get_json("/v1/status");
    let quarantined = status["quarantined_jobs"].as_array().unwrap();
    assert_eq!(quarantined.len(), 1, "{status}");
    let aside = quarantined[0].as_str().unwrap();
    assert!(aside.starts_with("torn-"), "{aside}");
    assert!(data
        .join("quarantine")
        .join(aside)
        .join("proof.bin")
        .exists());
    let (status, job) = server.submit(&winning_body("torn"));
    assert_eq!(status, 202, "{job}");
}

#[test]
fn a_proof_file_that_is_not_the_recorded_one_is_never_served() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    stored_done_job(&data, "cut", &[3; 192]);
    stored_done_job(&data, "gone", &[4; 192]);
    std::fs::write(data.join("jobs/cut/proof.bin"), [3; 5]).unwrap();
    std::fs::remove_file(data.join("jobs/gone/proof.bin")).unwrap();

    let server = Server::start(&data, &[]);
    for id in ["cut", "gone"] {
        let (status, content_type, body) = server.get(&format!("/v1/proofs/{id}/proof"));
        assert_eq!(status, 500, "{id}: {}", String::from_utf8_lossy(&body));
        assert_eq!(content_type, "application/problem+json");
        assert_eq!(problem_type(&body), "urn:cuzk:problem:proof-damaged");
        assert!(!String::from_utf8_lossy(&body).contains(&*data.to_string_lossy()));
    }
}

#[test]
fn a_full_queue_is_refused_before_the_request_is_checked_and_says_when_to_retry() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(
        &dir.path().join("data"),
        &[
            ("CUZK_API__MAX_QUEUED_JOBS", "1"),
            ("CUZK_PROVING__WORKERS", "1"),
        ],
    );
    // A PoRep runs (a minute on two cores) and a WinningPoSt waits behind it: the queue is full.
    assert_eq!(server.submit(&porep_body("running")).0, 202);
    for file in ["request.json", "state.json"] {
        let path = dir.path().join("data/jobs/running").join(file);
        let mode = std::fs::metadata(path).unwrap().permissions().mode() & 0o777;
        assert_eq!(
            mode, 0o640,
            "{file}: data files are for the service's user and group"
        );
    }
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while server.get_json("/v1/proofs/running").1["state"] != "running" {
        assert!(
            std::time::Instant::now() < deadline,
            "the PoRep did not start"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(server.submit(&winning_body("waiting")).0, 202);
    // Not a valid request: only a free queue would get it checked.
    let req = ureq::post(&server.url("/v1/proofs")).set("content-type", "application/json");
    let (status, _, body) = server.call(req, Some(br#"{"id": "x", "kind": "porep-c2"}"#));
    assert_eq!(status, 429, "{}", String::from_utf8_lossy(&body));
    assert_eq!(problem_type(&body), "urn:cuzk:problem:queue-full");
    let answer = raw_exchange(
        &server,
        "POST /v1/proofs HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: 10\r\n\r\n{\"id\":\"y\"}",
    );
    let head = String::from_utf8_lossy(&answer).to_lowercase();
    let retry: u64 = head
        .lines()
        .find_map(|l| l.strip_prefix("retry-after:"))
        .unwrap_or_else(|| panic!("no Retry-After: {head}"))
        .trim()
        .parse()
        .unwrap();
    assert!((1..=600).contains(&retry), "{retry}");
}

#[test]
fn malformed_requests_get_problem_json_and_oversized_bodies_are_refused_unread() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(
        &dir.path().join("data"),
        &[("CUZK_API__MAX_BODY_BYTES", "1000000")],
    );
    for (path, status, kind) in [
        ("/v1/proofs/%FF", 400, "bad-path"),
        ("/v1/proofs/%FF/proof", 400, "bad-path"),
        ("/v1/proofs/x?wait=1s&wait=2s", 400, "bad-query"),
    ] {
        let (got, content_type, body) = server.get(path);
        assert_eq!(got, status, "{path}: {}", String::from_utf8_lossy(&body));
        assert_eq!(content_type, "application/problem+json", "{path}");
        assert_eq!(problem_type(&body), format!("urn:cuzk:problem:{kind}"));
    }
    let req = ureq::post(&server.url("/v1/proofs")).set("content-type", "application/json");
    let (status, _, body) = server.call(req, Some(b"[1, 2]"));
    assert_eq!(status, 422);
    let problem: Value = serde_json::from_slice(&body).unwrap();
    assert!(
        problem.get("field").is_none(),
        "a non-object body blames a field: {problem}"
    );
    for id in ["-rf", "a..b"] {
        let (status, problem) = server.submit(&json!({"id": id}));
        assert_eq!(
            (status, problem["field"].as_str()),
            (422, Some("id")),
            "{problem}"
        );
    }

    // 10 GB declared, nothing sent: the answer comes at once.
    let answer = raw_exchange(
        &server,
        "POST /v1/proofs HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: 10000000000\r\n\r\n",
    );
    let (status, content_type, body) = parse_http_answer(&answer);
    assert_eq!(
        (status, content_type.as_str()),
        (413, "application/problem+json")
    );
    assert_eq!(problem_type(&body), "urn:cuzk:problem:body-too-large");
    // Over the limit with Expect: 100-continue: refused without a 100 first.
    let answer = raw_exchange(
        &server,
        "POST /v1/proofs HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: 2000000\r\nexpect: 100-continue\r\n\r\n",
    );
    let text = String::from_utf8_lossy(&answer);
    assert!(text.starts_with("HTTP/1.1 413"), "{text}");
}

#[test]
fn with_a_token_file_every_request_on_tcp_needs_the_token_and_the_socket_does_not() {
    let dir = tempfile::tempdir().unwrap();
    let token_file = dir.path().join("token");
    std::fs::write(&token_file, "s3cret-token-0123456789\n").unwrap();
    std::fs::set_permissions(&token_file, std::fs::Permissions::from_mode(0o644)).unwrap();
    let token_env = token_file.to_str().unwrap();
    let (status, stderr) = serve_refused(
        &dir.path().join("data"),
        &[("CUZK_API__TOKEN_FILE", token_env)],
    );
    assert!(!status.success());
    assert!(
        stderr.contains("lets others read it; chmod 600 it"),
        "{stderr}"
    );
    // Beyond loopback only with a token.
    let (status, stderr) = serve_refused(
        &dir.path().join("data"),
        &[("CUZK_API__LISTEN", "0.0.0.0:0")],
    );
    assert!(!status.success());
    assert!(stderr.contains("set api.token_file"), "{stderr}");

    std::fs::set_permissions(&token_file, std::fs::Permissions::from_mode(0o600)).unwrap();
    let socket = dir.path().join("cuzk.sock");
    let server = Server::start(
        &dir.path().join("data"),
        &[
            ("CUZK_API__TOKEN_FILE", token_env),
            ("CUZK_API__UNIX_SOCKET", socket.to_str().unwrap()),
        ],
    );
    let (status, _, body) = server.get("/v1/status");
    assert_eq!(status, 401, "{}", String::from_utf8_lossy(&body));
    assert_eq!(problem_type(&body), "urn:cuzk:problem:unauthorized");
    let wrong =
        ureq::get(&server.url("/v1/status")).set("authorization", "Bearer s3cret-token-0123456788");
    assert_eq!(server.call(wrong, None).0, 401);
    let right =
        ureq::get(&server.url("/v1/status")).set("authorization", "Bearer s3cret-token-0123456789");
    assert_eq!(server.call(right, None).0, 200);
    let cancel = ureq::delete(&server.url("/v1/proofs/x"));
    assert_eq!(
        server.call(cancel, None).0,
        401,
        "a cancel without the token"
    );
    assert_eq!(server.get("/healthz").0, 200, "probes need no token");
    assert_eq!(
        unix_get_status(&socket, "/v1/status"),
        200,
        "the socket's mode guards it"
    );
}

/// Issue 19 (connections): at `api.max_connections` the next connections are let in on a
/// reserve kept for health checks (/healthz answered at once, anything else 503 with
/// Retry-After); past the reserve the next waits unserved until one closes; a connection that
/// sends nothing, or half a request, is closed after `api.idle_timeout_secs`; a long-poll is
/// answered before that timeout.
#[test]
fn connections_past_the_cap_wait_and_idle_ones_are_closed() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(
        &dir.path().join("data"),
        &[
            ("CUZK_API__MAX_CONNECTIONS", "2"),
            ("CUZK_API__IDLE_TIMEOUT_SECS", "4"),
            ("CUZK_PROVING__WORKERS", "1"),
        ],
    );
    // The readiness probe's connection closed by now.
    std::thread::sleep(Duration::from_millis(300));
    let addr = format!("127.0.0.1:{}", server.port);
    let connect = || {
        let s = std::net::TcpStream::connect(&addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        s
    };
    let ask = |path: &str| {
        let mut c = connect();
        let started = std::time::Instant::now();
        c.write_all(
            format!("GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").as_bytes(),
        )
        .unwrap();
        let mut answer = Vec::new();
        c.read_to_end(&mut answer).unwrap();
        (answer, started.elapsed())
    };
    // Both connections of the cap held: one silent, one with half a request.
    let silent = connect();
    let mut slow = connect();
    slow.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")
        .unwrap();
    std::thread::sleep(Duration::from_millis(300));
    // Past the cap: health checks answered at once on the reserve, anything else refused.
    let (answer, took) = ask("/healthz");
    assert_eq!(parse_http_answer(&answer).0, 200);
    assert!(
        took < Duration::from_secs(1),
        "/healthz took {took:?} at the cap"
    );
    let (answer, _) = ask("/v1/status");
    let (status, content_type, body) = parse_http_answer(&answer);
    assert_eq!(
        (status, content_type.as_str()),
        (503, "application/problem+json")
    );
    assert!(String::from_utf8_lossy(&body).contains("api.max_connections"));
    let head = String::from_utf8_lossy(&answer).to_ascii_lowercase();
    assert!(head.contains("retry-after: 1"), "{head}");
    // The reserve held too: the next connection waits until the held ones time out.
    let reserve: Vec<_> = (0..16).map(|_| connect()).collect();
    std::thread::sleep(Duration::from_millis(300));
    let (answer, waited) = ask("/healthz");
    assert_eq!(parse_http_answer(&answer).0, 200);
    assert!(
        waited >= Duration::from_secs(2),
        "served after {waited:?}, before the held connections timed out"
    );
    drop(reserve);
    for (name, mut held) in [("silent", silent), ("half a request", slow)] {
        let mut rest = Vec::new();
        let closed = held.read_to_end(&mut rest);
        assert!(
            closed.is_err() || rest.is_empty() || parse_http_answer(&rest).0 >= 400,
            "{name}: still open, or answered {:?}",
            String::from_utf8_lossy(&rest)
        );
    }
    // A long-poll longer than the idle timeout is answered, not cut off.
    assert_eq!(server.submit(&porep_body("polled")).0, 202);
    let started = std::time::Instant::now();
    let (status, job) = server.get_json("/v1/proofs/polled?wait=60s");
    assert_eq!(status, 200, "{job}");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
}

/// Issue 19 (item 2): a request is read without a JSON value of it; two 48 MB bodies at once
/// raise the service's peak RSS by less than 4x their bytes. (The bodies are PoRep requests
/// whose C1 output is 12M numbers of no C1 shape: read, stored in canonical form, refused when
/// the C1 output is parsed.)
#[test]
fn two_concurrent_48_mb_bodies_raise_peak_rss_by_less_than_4x_their_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(&dir.path().join("data"), &[]);
    let pid = server.child.id();
    let status_kb = |key: &str| -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
        let line = status.lines().find(|l| l.starts_with(key)).unwrap();
        line.split_whitespace().nth(1).unwrap().parse().unwrap()
    };
    let mut body =
        br#"{"kind": "porep-c2", "miner_id": 1000, "sector_number": 1, "c1": {"junk": ["#.to_vec();
    while body.len() < 48 << 20 {
        body.extend_from_slice(b"123,");
    }
    body.extend_from_slice(b"0]}}");
    // The peak from here on (writing 5 to clear_refs resets VmHWM to the current RSS).
    std::fs::write(format!("/proc/{pid}/clear_refs"), "5").unwrap();
    let before = status_kb("VmRSS:");
    let answers: Vec<u16> = std::thread::scope(|s| {
        let sends: Vec<_> = (0..2)
            .map(|_| {
                s.spawn(|| {
                    let req = ureq::post(&server.url("/v1/proofs"))
                        .set("content-type", "application/json");
                    server.call(req, Some(&body)).0
                })
            })
            .collect();
        sends.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert_eq!(
        answers,
        [422, 422],
        "both read in full and refused for their C1 output"
    );
    let growth = (status_kb("VmHWM:") - before) << 10;
    let bodies = 2 * body.len() as u64;
    eprintln!(
        "two bodies of {} bytes: peak RSS growth {growth} bytes ({:.2}x)",
        body.len(),
        growth as f64 / bodies as f64
    );
    assert!(
        growth < 4 * bodies,
        "peak RSS grew {growth} bytes for {bodies} bytes of bodies"
    );
}

/// A preloaded library (tests/shims/slowsync.c, built with cc) that makes every fsync and
/// fdatasync of the process it is loaded into take `delay_ms` first (a slow disk where
/// dm-delay or FUSE cannot be had).
fn slow_sync_library(dir: &Path, delay_ms: u32) -> PathBuf {
    let library = dir.join("slowsync.so");
    let built = Command::new("cc")
        .args(["-shared", "-fPIC", "-O1", "-Wall", "-Werror"])
        .arg(format!("-DCUZK_SLOW_SYNC_MS={delay_ms}"))
        .arg("-o")
        .arg(&library)
        .arg(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/shims/slowsync.c"
        ))
        .arg("-ldl")
        .status()
        .expect("cc (build-essential) builds the slow-disk library");
    assert!(built.success());
    library
}

/// With every fsync 0.4 s (a slow disk, `fake_slow_disk`: a preloaded library delays them),
/// submissions take seconds each, and /healthz, /metrics and a job's status answer meanwhile
/// without waiting for any of them: nothing they read waits on the job store's I/O.
#[test]
fn health_metrics_and_status_answer_while_submissions_wait_on_a_slow_disk_fake_slow_disk() {
    let dir = tempfile::tempdir().unwrap();
    let library = slow_sync_library(dir.path(), 400);
    let library = library.to_str().unwrap();
    let server = Server::start(
        &dir.path().join("data"),
        &[("LD_PRELOAD", library), ("CUZK_PROVING__WORKERS", "1")],
    );
    let bodies: Vec<Vec<u8>> = (0..6)
        .map(|i| serde_json::to_vec(&winning_body(&format!("slow-{i}"))).unwrap())
        .collect();
    assert_eq!(server.submit(&winning_body("first")).0, 202);
    let (submits, probes) = std::thread::scope(|s| {
        let sends: Vec<_> = bodies
            .iter()
            .map(|body| {
                s.spawn(|| {
                    let start = std::time::Instant::now();
                    let req = ureq::post(&server.url("/v1/proofs"))
                        .set("content-type", "application/json");
                    let status = server.call(req, Some(body)).0;
                    (status, start.elapsed())
                })
            })
            .collect();
        // Probes while the submissions are in flight.
        let mut probes: Vec<(&str, Duration)> = Vec::new();
        std::thread::sleep(Duration::from_millis(100));
        while !sends.iter().all(|h| h.is_finished()) {
            for path in ["/healthz", "/metrics", "/v1/proofs/first"] {
                let start = std::time::Instant::now();
                let (status, _, _) = server.get(path);
                assert_eq!(status, 200, "{path}");
                probes.push((path, start.elapsed()));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let submits: Vec<_> = sends.into_iter().map(|h| h.join().unwrap()).collect();
        (submits, probes)
    });
    assert!(
        submits.iter().all(|(status, _)| *status == 202),
        "{submits:?}"
    );
    let slowest_submit = submits.iter().map(|s| s.1).max().unwrap();
    assert!(
        slowest_submit >= Duration::from_millis(800),
        "the slow disk is not slow: the slowest submission took {slowest_submit:?}"
    );
    for path in ["/healthz", "/metrics", "/v1/proofs/first"] {
        let mut times: Vec<Duration> = probes.iter().filter(|p| p.0 == path).map(|p| p.1).collect();
        times.sort();
        assert!(times.len() >= 5, "{path}: {} probes", times.len());
        let (p50, p99) = (times[times.len() / 2], times[times.len() * 99 / 100]);
        eprintln!(
            "{path}: {} probes during {} submissions (slowest {slowest_submit:?}): p50 {p50:?}, p99 {p99:?}, max {:?}",
            times.len(),
            submits.len(),
            times.last().unwrap()
        );
        // Anything waiting behind one fsync would take 0.4 s.
        assert!(
            *times.last().unwrap() < Duration::from_millis(300),
            "{path} waited on the disk: {times:?}"
        );
    }
}

/// A PoRep request of exactly `len` bytes whose C1 output is a long array of numbers: JSON
/// that is read whole and then refused (422).
fn junk_porep_body(len: usize) -> Vec<u8> {
    let mut body =
        br#"{"kind": "porep-c2", "miner_id": 1000, "sector_number": 1, "c1": {"junk": ["#.to_vec();
    while body.len() < len - 4 {
        body.extend_from_slice(b"1,");
    }
    body.truncate(len - 4);
    if body.ends_with(b",") {
        body.pop();
        body.push(b'0');
    }
    body.extend_from_slice(b"0]}}");
    body
}

/// The head of a submission of `len` bytes that waits for the server's word before its body.
fn expecting_head(len: usize) -> String {
    format!(
        "POST /v1/proofs HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: {len}\r\nexpect: 100-continue\r\n\r\n"
    )
}

/// A connection that has sent the head of a submission of `len` bytes and a few of them, and
/// sends no more until it is dropped.
fn trickle(server: &Server, len: usize) -> std::net::TcpStream {
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", server.port)).unwrap();
    let head = format!(
        "POST /v1/proofs HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: {len}\r\n\r\n{{\"kind\": "
    );
    stream.write_all(head.as_bytes()).unwrap();
    std::thread::sleep(Duration::from_millis(300));
    stream
}

/// Bytes held from the memory budget for `purpose`, as /v1/status says.
fn held_for(server: &Server, purpose: &str) -> u64 {
    let (_, st) = server.get_json("/v1/status");
    st["pipeline"]["held"]
        .as_array()
        .unwrap()
        .iter()
        .find(|h| h["purpose"] == purpose)
        .unwrap_or_else(|| panic!("no {purpose} in {st}"))["bytes"]
        .as_u64()
        .unwrap()
}

/// The answer to a submission of `len` bytes that comes before its body is sent: the status,
/// the problem's type, and the whole answer (head and problem) in lower case.
fn early_answer(server: &Server, len: usize) -> (u16, String, String) {
    let answer = raw_exchange(server, &expecting_head(len));
    let (status, _, problem) = parse_http_answer(&answer);
    let text = String::from_utf8_lossy(&answer).to_lowercase();
    (status, problem_type(&problem), text)
}

/// A small submission is still read and checked (422 for what it says), and /healthz answers.
fn small_bodies_still_pass(server: &Server) {
    let req = ureq::post(&server.url("/v1/proofs")).set("content-type", "application/json");
    let (status, _, small) = server.call(req, Some(br#"{"kind": "porep-c2"}"#));
    assert_eq!(status, 422, "{}", String::from_utf8_lossy(&small));
    assert_eq!(server.get("/healthz").0, 200);
}

/// A body being read holds three times its declared length from the memory budget (what
/// checking it takes at most), shown as `request-bodies` in /v1/status, from the moment its
/// head is read: in a 250 MB budget, beside a trickled 50 MB body (150 MB held), a 40 MB one is
/// answered 503 with Retry-After before a byte of it is read, a 90 MB one (270 MB) is refused
/// for good with 413, and once the trickle is cut its bytes are given back and the 40 MB body
/// is read (and refused for what it says, 422).
#[test]
fn request_bodies_are_held_from_the_memory_budget_while_they_are_read() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(
        &dir.path().join("data"),
        &[
            ("CUZK_MEMORY__BUDGET_BYTES", "250000000"),
            ("CUZK_MEMORY__PINNED", "false"),
        ],
    );
    let trickling = trickle(&server, 50_000_000);
    assert_eq!(held_for(&server, "request-bodies"), 150_000_000);
    let (status, problem, text) = early_answer(&server, 40_000_000);
    assert_eq!(status, 503, "{text}");
    assert_eq!(problem, "urn:cuzk:problem:unavailable");
    assert!(text.contains("memory budget"), "{text}");
    assert!(text.contains("retry-after: 2"), "{text}");
    let (status, problem, text) = early_answer(&server, 90_000_000);
    assert_eq!(status, 413, "{text}");
    assert_eq!(problem, "urn:cuzk:problem:body-too-large");
    assert!(text.contains("memory budget of 250000000 bytes"), "{text}");
    small_bodies_still_pass(&server);
    drop(trickling);
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while held_for(&server, "request-bodies") != 0 {
        assert!(
            std::time::Instant::now() < deadline,
            "the body's bytes were never given back"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let sent = ureq::post(&server.url("/v1/proofs"))
        .set("content-type", "application/json")
        .send_bytes(&junk_porep_body(40_000_000));
    assert!(
        matches!(sent, Err(ureq::Error::Status(422, _))),
        "{:?}",
        sent.map(|r| r.status())
    );
}

/// Bodies being read count against `api.max_inflight_body_bytes` by their declared length from
/// the moment their head is read: while a client trickles a 40 MB body, a 30 MB one is answered 503 with
/// Retry-After before a byte of it is read, a small one is served, and once the trickle is
/// cut the 30 MB one is read (and refused for what it says, 422).
#[test]
fn bodies_past_the_in_flight_cap_wait_with_503_and_retry_after_until_room_returns() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(
        &dir.path().join("data"),
        &[
            ("CUZK_API__MAX_BODY_BYTES", "50000000"),
            ("CUZK_API__MAX_INFLIGHT_BODY_BYTES", "60000000"),
        ],
    );
    let trickling = trickle(&server, 40_000_000);
    let body = junk_porep_body(30_000_000);
    let (status, problem, text) = early_answer(&server, body.len());
    assert_eq!(status, 503, "{text}");
    assert_eq!(problem, "urn:cuzk:problem:unavailable");
    assert!(text.contains("api.max_inflight_body_bytes"), "{text}");
    assert!(text.contains("retry-after: 2"), "{text}");
    small_bodies_still_pass(&server);
    drop(trickling);
    // The room comes back once the trickling request is gone (until then a 503 may cut the
    // upload short: the answer comes before the body is read).
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let sent = ureq::post(&server.url("/v1/proofs"))
            .set("content-type", "application/json")
            .send_bytes(&body);
        match sent {
            Err(ureq::Error::Status(422, _)) => break,
            Err(ureq::Error::Status(503, _)) | Err(ureq::Error::Transport(_)) => {}
            other => panic!("{:?}", other.map(|r| r.status())),
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the room never came back"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// `cuzk bench load` at a small scale: every submission of its concurrency phase accepted and
/// answered, the queue filled to its cap, every submission past it refused with 429 and a
/// Retry-After, /healthz probed meanwhile (the figures themselves are the benchmark's, in
/// docs/measurements).
#[test]
fn bench_load_fills_the_queue_and_every_submission_past_it_gets_429_with_retry_after() {
    let params = params_dir();
    let out = Command::new(env!("CARGO_BIN_EXE_cuzk"))
        .args(["bench", "load", "--submissions", "12", "--concurrency", "6"])
        .args(["--queued", "10", "--params-dir"])
        .arg(&params)
        .env("CUZK_LOG", "warn")
        .env("CUZK_MEMORY__PINNED_BYTES", (64u64 << 20).to_string())
        .output()
        .expect("running cuzk bench load");
    assert!(out.status.success(), "{}", stderr(&out));
    let report: Value = serde_json::from_slice(&out.stdout).expect("JSON on stdout");
    let phases = report["phases"].as_array().unwrap();
    let concurrency = &phases[0]["result"];
    assert_eq!(concurrency["statuses"], json!({"202": 12}), "{report}");
    assert!(
        concurrency["healthz_ms"]["count"].as_u64().unwrap() >= 1,
        "{report}"
    );
    // The one worker may take or end a job while the phases run: counts by what the queue held.
    let queue = &phases[1];
    let count = |v: &Value, status: &str| v["statuses"][status].as_u64().unwrap_or(0);
    assert!(count(&queue["fill"], "202") >= 10, "{report}");
    let queued = queue["queued_after_fill"].as_u64().unwrap();
    assert!((8..=10).contains(&queued), "{report}");
    let past = &queue["past_the_cap"]["result"];
    assert!(count(past, "429") >= 10, "{report}");
    assert_eq!(count(past, "202") + count(past, "429"), 12, "{report}");
    assert_eq!(past["refused_without_retry_after"], 0, "{report}");
    assert_eq!(past["transport_errors"], 0, "{report}");
}

/// Issue 19 (item 4, header timeout): a request head that trickles in (a header line every
/// 400 ms, so the idle timeout never fires) is cut off once `api.header_timeout_secs` has
/// passed since its first byte; a whole request on the next connection is served.
#[test]
fn a_request_head_that_trickles_in_is_cut_off_at_the_header_timeout() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(
        &dir.path().join("data"),
        &[
            ("CUZK_API__HEADER_TIMEOUT_SECS", "2"),
            ("CUZK_API__IDLE_TIMEOUT_SECS", "60"),
        ],
    );
    let mut slow = std::net::TcpStream::connect(("127.0.0.1", server.port)).unwrap();
    slow.set_read_timeout(Some(Duration::from_millis(400)))
        .unwrap();
    let started = std::time::Instant::now();
    slow.write_all(b"GET /healthz HTTP/1.1\r\n").unwrap();
    let mut answer = Vec::new();
    let cut = loop {
        let mut chunk = [0u8; 1024];
        match slow.read(&mut chunk) {
            Ok(0) => break started.elapsed(),
            Ok(n) => answer.extend_from_slice(&chunk[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => break started.elapsed(),
            Err(_) => {} // the read timeout: another header line
        }
        assert!(
            started.elapsed() < Duration::from_secs(15),
            "the trickling head is still open after {:?}",
            started.elapsed()
        );
        if slow.write_all(b"X-Slow: 1\r\n").is_err() {
            break started.elapsed();
        }
    };
    assert!(
        cut >= Duration::from_millis(1800) && cut < Duration::from_secs(6),
        "cut after {cut:?}"
    );
    let answer = String::from_utf8_lossy(&answer);
    assert!(
        !answer.contains(" 200 "),
        "the trickled request was served: {answer}"
    );
    assert_eq!(server.get("/healthz").0, 200);
}
