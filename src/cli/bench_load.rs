//! `cuzk bench load`: the service under many clients at once. A real `cuzk serve` (this binary)
//! is started on a fresh data dir for each phase; WinningPoSt requests of one freshly sealed
//! 2 KiB sector (distinct ids) are submitted by N clients at once, each on its own connection,
//! while a probe reads /healthz and a job's status every 5 ms. Each phase reports the
//! submissions' answers (202, 429, 503; whether every 429 and 503 carried Retry-After), their
//! latency, the probes' latency, and the service's peak RSS. The last phase fills the queue to
//! `--queued` jobs (`api.max_queued_jobs`) and submits past it.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use filecoin_proofs_api::RegisteredSealProof;
use serde_json::{json, Value};

use super::ParamsLocation;
use crate::circuits::samples::sample_request;
use crate::circuits::ProofKind;

#[derive(clap::Args)]
pub struct LoadArgs {
    /// Submissions of each concurrency phase.
    #[arg(long, default_value_t = 300)]
    submissions: usize,
    /// Clients at once: one phase each, on a fresh service.
    #[arg(long, value_delimiter = ',', default_value = "50,300")]
    concurrency: Vec<usize>,
    /// The queue phase: the queue filled to this many jobs (its api.max_queued_jobs), then
    /// --submissions more submitted past it at the largest concurrency (0: no queue phase).
    #[arg(long, default_value_t = 1000)]
    queued: usize,
    /// proving.workers of the service (jobs proved at once while the load runs).
    #[arg(long, default_value_t = 1)]
    workers: usize,
    #[command(flatten)]
    params: ParamsLocation,
}

pub fn run(args: LoadArgs) -> Result<()> {
    let params_dir = args.params.dir()?;
    let work = tempfile::tempdir()?;
    let start = Instant::now();
    let request = sample_request(
        ProofKind::WinningPost,
        RegisteredSealProof::StackedDrg2KiBV1_1,
        1000,
        work.path(),
    )?;
    let body = serde_json::to_value(&request)?;
    tracing::info!(
        secs = start.elapsed().as_secs_f64(),
        "sealed a 2 KiB sector for the requests"
    );
    let mut phases = Vec::new();
    // Room for every submission of a concurrency phase: no 429 there.
    let max_queued = args.submissions.max(1000);
    for &clients in &args.concurrency {
        let service = Service::start(work.path(), &params_dir, args.workers, max_queued)?;
        let ids: Vec<String> = (0..args.submissions)
            .map(|i| format!("load-{clients}-{i}"))
            .collect();
        let phase = service.phase(&body, &ids, clients.max(1))?;
        phases.push(json!({"phase": "concurrency", "clients": clients, "max_queued_jobs": max_queued, "result": phase}));
    }
    if args.queued > 0 {
        let service = Service::start(work.path(), &params_dir, args.workers, args.queued)?;
        let clients = args.concurrency.iter().copied().max().unwrap_or(50).max(1);
        let fill: Vec<String> = (0..args.queued + args.workers)
            .map(|i| format!("fill-{i}"))
            .collect();
        let filled = service.phase(&body, &fill, 50.min(clients))?;
        let queued_after_fill = service.status()?["queued"]["winning-post"].clone();
        let past: Vec<String> = (0..args.submissions).map(|i| format!("past-{i}")).collect();
        let past_cap = service.phase(&body, &past, clients)?;
        phases.push(json!({
            "phase": "queue",
            "max_queued_jobs": args.queued,
            "fill": filled,
            "queued_after_fill": queued_after_fill,
            "past_the_cap": {"clients": clients, "result": past_cap},
        }));
    }
    let out = json!({"bench": "load", "kind": "winning-post", "sector_size": 2048, "workers": args.workers, "phases": phases});
    println!("{}", serde_json::to_string_pretty(&out)?);
    Ok(())
}

/// A `cuzk serve` child on a free port and a fresh data dir; killed when dropped.
struct Service {
    child: Child,
    port: u16,
    _data: tempfile::TempDir,
}

impl Service {
    fn start(work: &Path, params_dir: &Path, workers: usize, max_queued: usize) -> Result<Service> {
        let data = tempfile::tempdir_in(work)?;
        let port = std::net::TcpListener::bind("127.0.0.1:0")?
            .local_addr()?
            .port();
        let log = std::fs::File::create(data.path().with_extension("log"))?;
        let child = Command::new(std::env::current_exe()?)
            .arg("serve")
            .env("CUZK_API__LISTEN", format!("127.0.0.1:{port}"))
            .env("CUZK_JOBS__DATA_DIR", data.path().join("data"))
            .env("CUZK_PROVING__PARAMS_DIR", params_dir)
            .env("CUZK_PROVING__WORKERS", workers.to_string())
            .env("CUZK_API__MAX_QUEUED_JOBS", max_queued.to_string())
            .env(
                "CUZK_JOBS__RETENTION_COUNT",
                (max_queued + 10_000).to_string(),
            )
            .env("CUZK_LOG", "warn")
            .env_remove("NOTIFY_SOCKET")
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .context("starting cuzk serve")?;
        let service = Service {
            child,
            port,
            _data: data,
        };
        let deadline = Instant::now() + Duration::from_secs(60);
        while !get(port, "/readyz").is_ok_and(|a| a.status == 200) {
            if Instant::now() > deadline {
                bail!("cuzk serve did not get ready in 60 s");
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        Ok(service)
    }

    fn status(&self) -> Result<Value> {
        let answer = get(self.port, "/v1/status")?;
        Ok(serde_json::from_slice(&answer.body)?)
    }

    /// `ids` submitted by `clients` at once (each takes the next id until none is left), while
    /// a probe reads /healthz and the first id's status every 5 ms.
    fn phase(&self, body: &Value, ids: &[String], clients: usize) -> Result<Value> {
        let next = AtomicUsize::new(0);
        let done = AtomicBool::new(false);
        let answers: Mutex<Vec<(u16, Option<String>, Duration)>> = Mutex::new(Vec::new());
        let errors = AtomicUsize::new(0);
        let start = Instant::now();
        let probes = std::thread::scope(|s| {
            let probe = s.spawn(|| {
                let (mut health, mut status) = (Vec::new(), Vec::new());
                let first = format!("/v1/proofs/{}", ids[0]);
                while !done.load(Ordering::Relaxed) {
                    for (path, into) in [("/healthz", &mut health), (first.as_str(), &mut status)] {
                        let t = Instant::now();
                        if get(self.port, path).is_ok() {
                            into.push(t.elapsed());
                        }
                    }
                    std::thread::sleep(Duration::from_millis(5));
                }
                (health, status)
            });
            let senders: Vec<_> = (0..clients.min(ids.len()))
                .map(|_| {
                    s.spawn(|| loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        let Some(id) = ids.get(i) else { break };
                        let mut request = body.clone();
                        request["id"] = json!(id);
                        let bytes = serde_json::to_vec(&request).expect("a JSON value");
                        let t = Instant::now();
                        match post(self.port, "/v1/proofs", &bytes) {
                            Ok(a) => {
                                answers
                                    .lock()
                                    .unwrap()
                                    .push((a.status, a.retry_after, t.elapsed()))
                            }
                            Err(e) => {
                                tracing::warn!(error = %format!("{e:#}"), "a submission failed");
                                errors.fetch_add(1, Ordering::Relaxed);
                            }
                        }
                    })
                })
                .collect();
            for sender in senders {
                sender.join().expect("a client thread");
            }
            done.store(true, Ordering::Relaxed);
            probe.join().expect("the probe thread")
        });
        let elapsed = start.elapsed();
        let answers = answers.into_inner().unwrap();
        let mut statuses = std::collections::BTreeMap::<String, usize>::new();
        for (status, _, _) in &answers {
            *statuses.entry(status.to_string()).or_default() += 1;
        }
        let refused: Vec<_> = answers
            .iter()
            .filter(|a| a.0 == 429 || a.0 == 503)
            .collect();
        let retry_after: Vec<u64> = refused
            .iter()
            .filter_map(|a| a.1.as_deref().and_then(|v| v.parse().ok()))
            .collect();
        let latencies: Vec<Duration> = answers.iter().map(|a| a.2).collect();
        let accepted: Vec<Duration> = answers.iter().filter(|a| a.0 == 202).map(|a| a.2).collect();
        let refusals: Vec<Duration> = refused.iter().map(|a| a.2).collect();
        let (health, status) = probes;
        Ok(json!({
            "submissions": ids.len(),
            "clients": clients,
            "elapsed_s": elapsed.as_secs_f64(),
            "statuses": statuses,
            "transport_errors": errors.load(Ordering::Relaxed),
            "refused_with_retry_after": retry_after.len(),
            "refused_without_retry_after": refused.len() - retry_after.len(),
            "retry_after_s": {"min": retry_after.iter().min(), "max": retry_after.iter().max()},
            "submit_ms": percentiles(latencies),
            "accepted_ms": percentiles(accepted),
            "refused_ms": percentiles(refusals),
            "healthz_ms": percentiles(health),
            "job_status_ms": percentiles(status),
            "service": self.memory()?,
        }))
    }

    /// The service's peak and current RSS (/proc/PID/status), its page-locked pool, its queue.
    fn memory(&self) -> Result<Value> {
        let text = std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))?;
        let kb = |key: &str| {
            text.lines()
                .find_map(|l| l.strip_prefix(key))
                .and_then(|v| v.split_whitespace().next()?.parse::<u64>().ok())
                .map(|kb| kb << 10)
        };
        let status = self.status()?;
        Ok(json!({
            "peak_rss_bytes": kb("VmHWM:"),
            "rss_bytes": kb("VmRSS:"),
            // Locked at start and part of the RSS: the page-locked pool (memory.pinned_bytes).
            "pinned_pool_bytes": status["pinned_pool"]["locked_bytes"],
            "queued": status["queued"]["winning-post"],
            "running": status["running"],
        }))
    }
}

impl Drop for Service {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Count, p50, p99 and max in milliseconds.
fn percentiles(mut times: Vec<Duration>) -> Value {
    if times.is_empty() {
        return json!({"count": 0});
    }
    times.sort();
    let at = |q: usize| times[(times.len() * q / 100).min(times.len() - 1)].as_secs_f64() * 1e3;
    json!({"count": times.len(), "p50": at(50), "p99": at(99), "max": at(100)})
}

/// An HTTP answer: status, Retry-After, body.
struct Answer {
    status: u16,
    retry_after: Option<String>,
    body: Vec<u8>,
}

fn get(port: u16, path: &str) -> Result<Answer> {
    exchange(
        port,
        &format!("GET {path} HTTP/1.1\r\nhost: 127.0.0.1\r\nconnection: close\r\n\r\n"),
        &[],
    )
}

fn post(port: u16, path: &str, body: &[u8]) -> Result<Answer> {
    let head = format!(
        "POST {path} HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n\
         content-length: {}\r\nconnection: close\r\n\r\n",
        body.len()
    );
    exchange(port, &head, body)
}

/// One request on its own connection, read to its end (the service closes it: `connection:
/// close`).
fn exchange(port: u16, head: &str, body: &[u8]) -> Result<Answer> {
    let mut stream = TcpStream::connect(("127.0.0.1", port))?;
    stream.set_read_timeout(Some(Duration::from_secs(300)))?;
    stream.write_all(head.as_bytes())?;
    stream.write_all(body)?;
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer)?;
    let split = answer
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .context("an answer without the end of its headers")?;
    let head = std::str::from_utf8(&answer[..split])?;
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .context("an answer without a status line")?;
    let retry_after = head.split("\r\n").skip(1).find_map(|l| {
        let (k, v) = l.split_once(':')?;
        k.trim()
            .eq_ignore_ascii_case("retry-after")
            .then(|| v.trim().to_owned())
    });
    Ok(Answer {
        status,
        retry_after,
        body: answer[split + 4..].to_vec(),
    })
}
