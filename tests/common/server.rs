//! The real `cuzk serve` as a child process on a free port, and a client for it: what the
//! service tests share.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::params_dir;

/// Status, content type and body of a raw HTTP/1.1 answer with a Content-Length.
pub fn parse_http_answer(answer: &[u8]) -> (u16, String, Vec<u8>) {
    let split = answer
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .unwrap_or_else(|| panic!("no end of headers in {:?}", String::from_utf8_lossy(answer)));
    let head = std::str::from_utf8(&answer[..split]).expect("ASCII headers");
    let mut lines = head.split("\r\n");
    let status = lines
        .next()
        .and_then(|l| l.split(' ').nth(1))
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no status line in {head:?}"));
    let header = |name: &str| {
        head.split("\r\n").skip(1).find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.trim()
                .eq_ignore_ascii_case(name)
                .then(|| v.trim().to_owned())
        })
    };
    let length: usize = header("content-length")
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no content-length in {head:?}"));
    let body = &answer[split + 4..];
    assert!(body.len() >= length, "answer cut short: {head:?}");
    (
        status,
        header("content-type").unwrap_or_default(),
        body[..length].to_vec(),
    )
}

/// A client that closes its connection after each request: a readiness probe leaves no
/// kept-alive connection holding one of the service's `api.max_connections`.
fn unpooled() -> ureq::Agent {
    ureq::AgentBuilder::new().max_idle_connections(0).build()
}

pub struct Server {
    pub child: Child,
    pub port: u16,
    pub data: PathBuf,
    pub log: PathBuf,
}

pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Runs `cuzk serve` on `data` expecting it to refuse to start: its exit status and stderr
/// (it must exit within 60 s).
pub fn serve_refused(data: &Path, env: &[(&str, &str)]) -> (std::process::ExitStatus, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_cuzk"))
        .arg("serve")
        .env("CUZK_API__LISTEN", format!("127.0.0.1:{}", free_port()))
        .env("CUZK_JOBS__DATA_DIR", data)
        .env("CUZK_PROVING__PARAMS_DIR", params_dir())
        .env("CUZK_LOG", "info")
        .env("CUZK_MEMORY__PINNED_BYTES", (64u64 << 20).to_string())
        .env_remove("NOTIFY_SOCKET")
        .envs(env.iter().copied())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("starting cuzk serve");
    let deadline = Instant::now() + Duration::from_secs(60);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("cuzk serve was expected to refuse to start and is still running");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    (status, stderr)
}

impl Server {
    /// Starts `cuzk serve` on `data` (kept between restarts) with extra environment.
    pub fn start(data: &Path, env: &[(&str, &str)]) -> Server {
        Server::start_with(data, env, &[])
    }

    /// The same with extra arguments to `cuzk serve`.
    pub fn start_with(data: &Path, env: &[(&str, &str)], args: &[&str]) -> Server {
        Server::spawn(data, env, args, None)
    }

    /// `cuzk serve` started inside the cgroup `dir` (a shell joins it, then becomes the
    /// service: the child's pid is the service's).
    pub fn start_in_cgroup(data: &Path, env: &[(&str, &str)], dir: &Path) -> Server {
        Server::spawn(data, env, &[], Some(dir))
    }

    pub fn spawn(
        data: &Path,
        env: &[(&str, &str)],
        args: &[&str],
        cgroup: Option<&Path>,
    ) -> Server {
        let mut server = Server::launch(data, env, args, cgroup);
        server.wait_ready();
        server
    }

    /// `cuzk serve` started, not waited for.
    pub fn launch(
        data: &Path,
        env: &[(&str, &str)],
        args: &[&str],
        cgroup: Option<&Path>,
    ) -> Server {
        let port = free_port();
        let log = data.with_extension(format!("{port}.log"));
        let cuzk = env!("CARGO_BIN_EXE_cuzk");
        let mut command = match cgroup {
            None => Command::new(cuzk),
            Some(dir) => {
                let mut c = Command::new("sh");
                c.args([
                    "-c",
                    r#"d=$1; shift; echo $$ > "$d/cgroup.procs" && exec "$@""#,
                    "sh",
                ])
                .arg(dir)
                .arg(cuzk);
                c
            }
        };
        let child = command
            .arg("serve")
            .args(args)
            .env("CUZK_API__LISTEN", format!("127.0.0.1:{port}"))
            .env("CUZK_JOBS__DATA_DIR", data)
            .env("CUZK_PROVING__PARAMS_DIR", params_dir())
            .env("CUZK_LOG", "info")
            // A small page-locked pool: tests run side by side on a small machine.
            .env("CUZK_MEMORY__PINNED_BYTES", (64u64 << 20).to_string())
            .env_remove("NOTIFY_SOCKET")
            .envs(env.iter().copied())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .expect("starting cuzk serve");
        Server {
            child,
            port,
            data: data.to_path_buf(),
            log,
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    pub fn wait_ready(&mut self) {
        assert!(
            self.ready_or_exited(),
            "cuzk serve exited before it got ready: {}",
            self.log_text()
        );
    }

    /// Waits until the service is ready (true) or has exited (false).
    pub fn ready_or_exited(&mut self) -> bool {
        let deadline = Instant::now() + Duration::from_secs(60);
        while Instant::now() < deadline {
            if self.child.try_wait().unwrap().is_some() {
                return false;
            }
            if let Ok(r) = unpooled().get(&self.url("/readyz")).call() {
                if r.status() == 200 {
                    return true;
                }
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!(
            "cuzk serve neither got ready nor exited: {}",
            self.log_text()
        );
    }

    pub fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Any request; 4xx and 5xx come back as answers, not errors.
    pub fn call(&self, req: ureq::Request, body: Option<&[u8]>) -> (u16, String, Vec<u8>) {
        let result = match body {
            Some(b) => req.send_bytes(b),
            None => req.call(),
        };
        let response = match result {
            Ok(r) => r,
            Err(ureq::Error::Status(_, r)) => r,
            Err(e) => panic!("HTTP: {e}"),
        };
        let status = response.status();
        let content_type = response.header("content-type").unwrap_or("").to_owned();
        let mut bytes = Vec::new();
        response.into_reader().read_to_end(&mut bytes).unwrap();
        (status, content_type, bytes)
    }

    /// A POST over a plain socket whose body is written on its own thread while the answer is
    /// read: a server may answer (413) and close before the client has written everything, which a
    /// client that writes the whole body before reading reports as a broken pipe.
    pub fn post_early_answer(&self, body: Vec<u8>, content_type: &str) -> (u16, String, Vec<u8>) {
        use std::io::Write;
        let mut stream = std::net::TcpStream::connect(("127.0.0.1", self.port)).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(60)))
            .unwrap();
        let head = format!(
            "POST /v1/proofs HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: {content_type}\r\n\
             content-length: {}\r\nconnection: close\r\n\r\n",
            body.len()
        );
        let mut writer = stream.try_clone().unwrap();
        let sender = std::thread::spawn(move || {
            // Write errors are expected once the server has answered and closed.
            let _ = writer
                .write_all(head.as_bytes())
                .and_then(|()| writer.write_all(&body));
        });
        let mut answer = Vec::new();
        let mut chunk = [0u8; 8192];
        loop {
            match stream.read(&mut chunk) {
                Ok(0) => break,
                Ok(n) => answer.extend_from_slice(&chunk[..n]),
                // The reset that follows a close with unread input ends a complete answer.
                Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset && !answer.is_empty() => {
                    break
                }
                Err(e) => panic!("reading the answer: {e}"),
            }
        }
        let _ = stream.shutdown(std::net::Shutdown::Both);
        sender.join().unwrap();
        parse_http_answer(&answer)
    }

    pub fn get(&self, path: &str) -> (u16, String, Vec<u8>) {
        self.call(ureq::get(&self.url(path)), None)
    }

    pub fn get_json(&self, path: &str) -> (u16, Value) {
        let (status, _, body) = self.get(path);
        (status, serde_json::from_slice(&body).unwrap())
    }

    /// /metrics, parsed.
    pub fn scrape(&self) -> prometheus_parse::Scrape {
        let (status, content_type, body) = self.get("/metrics");
        assert_eq!(status, 200);
        assert!(content_type.starts_with("text/plain"), "{content_type}");
        let text = String::from_utf8(body).unwrap();
        prometheus_parse::Scrape::parse(text.lines().map(|l| Ok(l.to_owned())))
            .expect("Prometheus text")
    }

    pub fn submit(&self, body: &Value) -> (u16, Value) {
        let req = ureq::post(&self.url("/v1/proofs")).set("content-type", "application/json");
        let (status, _, bytes) = self.call(req, Some(&serde_json::to_vec(body).unwrap()));
        (status, serde_json::from_slice(&bytes).unwrap())
    }

    pub fn delete(&self, path: &str) -> (u16, Value) {
        let (status, _, bytes) = self.call(ureq::delete(&self.url(path)), None);
        (status, serde_json::from_slice(&bytes).unwrap())
    }

    /// Long-polls a job until it is final.
    pub fn wait_final(&self, id: &str) -> Value {
        let deadline = Instant::now() + Duration::from_secs(600);
        loop {
            let (status, job) = self.get_json(&format!("/v1/proofs/{id}?wait=30s"));
            assert_eq!(status, 200, "{job}");
            if ["done", "failed", "cancelled"].contains(&job["state"].as_str().unwrap()) {
                return job;
            }
            assert!(Instant::now() < deadline, "job {id} did not end: {job}");
        }
    }

    /// Polls a job until it runs (60 s at most).
    pub fn wait_running(&self, id: &str) {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let (_, job) = self.get_json(&format!("/v1/proofs/{id}"));
            if job["state"] == "running" {
                return;
            }
            assert!(Instant::now() < deadline, "job {id} did not start: {job}");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    pub fn proof(&self, id: &str) -> Vec<u8> {
        let (status, content_type, bytes) = self.get(&format!("/v1/proofs/{id}/proof"));
        assert_eq!(status, 200);
        assert_eq!(content_type, "application/octet-stream");
        bytes
    }

    pub fn signal(&self, name: &str) {
        let ok = Command::new("kill")
            .args([format!("-{name}"), self.child.id().to_string()])
            .status()
            .unwrap()
            .success();
        assert!(ok);
    }

    pub fn kill9(mut self) -> PathBuf {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
        self.data.clone()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
