//! Configuration: built-in defaults < the TOML file (/etc/cuzk/cuzk.toml, or --config) <
//! `CUZK_<SECTION>__<KEY>` environment variables, read once by figment into [`Config`] (unknown
//! keys and bad values refused, the key named) and turned into [`Settings`] (paths resolved,
//! values checked). Nothing downstream reads the environment or the file again; SIGHUP re-reads
//! them, applies the [`LIVE_KEYS`] and names every other changed key ([`changed_keys`]).

use crate::circuits::params::PARAMETER_CACHE_ENV;
use crate::gpu::BackendChoice;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{bail, Context, Result};
use figment::providers::{Env, Format, Serialized, Toml};
use figment::Figment;
use serde::{Deserialize, Serialize};

/// Where the configuration file is looked up unless --config names one.
pub const DEFAULT_CONFIG_PATH: &str = "/etc/cuzk/cuzk.toml";

/// The prefix of configuration environment variables: `CUZK_API__LISTEN=0.0.0.0:9820`.
pub const ENV_PREFIX: &str = "CUZK_";

/// filecoin-proofs' default parameter directory.
pub const DEFAULT_PARAMS_DIR: &str = "/var/tmp/filecoin-proof-parameters";

/// The keys SIGHUP applies to the running service; a change to any other key takes effect at
/// the next restart (and the reload says which).
pub const LIVE_KEYS: [&str; 3] = [
    "api.max_queued_jobs",
    "jobs.retention_secs",
    "jobs.retention_count",
];

/// Where B in G2 is summed, and how long the prover slot is held (`proving.finish`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Finish {
    /// In the same backend call as the G1 work, the prover slot held for it: a GPU sums it from
    /// the B scalars it gathered for B in G1, beside its other MSMs, and the host's cores are
    /// left to synthesis (measured fastest with one GPU and 16 cores, 1.5x the proofs per hour
    /// of `cpu`: docs/measurements/2026-12-05-h100-streams).
    #[default]
    Held,
    /// On the prover's backend after the G1 work, the slot given back first: the next
    /// partition's device work begins meanwhile (and shares the device with it).
    Prover,
    /// On the host's cores, the slot given back first: the device takes the next partition
    /// while the CPU does B in G2.
    Cpu,
}

impl Finish {
    pub const ALL: [Finish; 3] = [Finish::Held, Finish::Prover, Finish::Cpu];

    pub fn as_str(self) -> &'static str {
        match self {
            Finish::Held => "held",
            Finish::Prover => "prover",
            Finish::Cpu => "cpu",
        }
    }
}

impl std::str::FromStr for Finish {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        Finish::ALL
            .into_iter()
            .find(|f| f.as_str() == s)
            .ok_or_else(|| format!("{s:?} is not a place to finish (held, prover, cpu)"))
    }
}

/// The parameter directory when none is configured: filecoin-proofs' own variable
/// (FIL_PROOFS_PARAMETER_CACHE, as Curio and lotus installations set it), else its default.
pub fn default_params_dir() -> PathBuf {
    std::env::var_os(PARAMETER_CACHE_ENV)
        .filter(|v| !v.is_empty())
        .map_or_else(|| PathBuf::from(DEFAULT_PARAMS_DIR), PathBuf::from)
}

/// The configuration as written (defaults are the embedded ones).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields, default)]
pub struct Config {
    pub api: ApiConfig,
    pub jobs: JobsConfig,
    pub memory: MemoryConfig,
    pub proving: ProvingConfig,
    pub service: ServiceConfig,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct MemoryConfig {
    /// Bytes the appliance may hold; 0 derives it from the cgroup limit (or MemTotal).
    pub budget_bytes: u64,
    /// Left to the rest of the system when the budget is derived.
    pub margin_bytes: u64,
    /// Lock a pool of host memory at start that partitions' vectors are lent from.
    pub pinned: bool,
    /// The pool's bytes, held from the budget; 0 derives a quarter of the budget.
    pub pinned_bytes: u64,
}

impl Default for MemoryConfig {
    fn default() -> Self {
        MemoryConfig {
            budget_bytes: 0,
            margin_bytes: 1 << 30,
            pinned: true,
            pinned_bytes: 0,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ApiConfig {
    /// TCP address of the REST API.
    pub listen: String,
    /// Also serve the API on this unix socket ("" for none).
    pub unix_socket: String,
    /// Largest request body accepted, bytes (a 64 GiB sector's C1 output is about 80 MiB).
    pub max_body_bytes: u64,
    /// Jobs queued (not yet running) beyond which submissions get 429.
    pub max_queued_jobs: usize,
    /// A file (mode 0600, owned by the service's user) holding the bearer token every request on
    /// `listen` must carry (`Authorization: Bearer ...`), /healthz and /readyz aside; required
    /// when `listen` is not a loopback address ("" for none). The unix socket is guarded by its
    /// mode (0660) instead.
    pub token_file: String,
    /// Connections served at once on each listener; more wait in the kernel's backlog.
    pub max_connections: usize,
    /// A connection with no byte read or written for this long is closed (seconds). A
    /// long-poll (`?wait=`) is answered before it.
    pub idle_timeout_secs: u64,
    /// A request's head (request line and headers) must arrive within this long of its first
    /// byte, or of the previous answer on a kept-alive connection, or the connection is closed
    /// (seconds): a client that sends a header a minute holds no connection.
    pub header_timeout_secs: u64,
    /// Request bodies read and checked at once, bytes (their declared lengths; at least
    /// `max_body_bytes`): a body past it is answered 503 with Retry-After before a byte of it
    /// is read.
    pub max_inflight_body_bytes: u64,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct JobsConfig {
    /// Where jobs, results and caches live.
    pub data_dir: PathBuf,
    /// Finished jobs older than this are deleted (seconds).
    pub retention_secs: u64,
    /// At most this many finished jobs are kept (the oldest go first).
    pub retention_count: usize,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ProvingConfig {
    /// Directory of Groth16 .params/.vk files ("": FIL_PROOFS_PARAMETER_CACHE, else
    /// filecoin-proofs' default /var/tmp/filecoin-proof-parameters).
    pub params_dir: String,
    /// Jobs in progress at once; their partitions share the memory budget and the prover
    /// (0: derived from cores and GPUs, see `engine::Concurrency`).
    pub workers: usize,
    /// Partitions holding memory ahead of the prover, synthesizing or waiting for it (0: derived).
    pub depth: usize,
    /// Partitions proved at once on each device (each GPU, or the CPU).
    pub provers: usize,
    /// auto (every GPU found, else the CPU), cpu, or gpu (refuse to start without one).
    pub backend: BackendChoice,
    /// GPU ordinals to prove on (empty: all).
    pub gpus: Vec<usize>,
    /// Where a partition's B in G2 and the join run: cpu (the host, after the prover slot is
    /// given back), prover (its backend, after the slot is given back), held (its backend, the
    /// slot held).
    pub finish: Finish,
    /// Synthesize through pre-compiled constraint evaluators (<data_dir>/pce), extracted in the
    /// background the first time a circuit is proved.
    pub pce: bool,
    /// Where every GPU can hold a circuit's PCE, keep each partition as its compact witness
    /// until the prover, and compute a, b and c on the GPU (else by the host's SpMV right
    /// after the witness). On by default (checked on a device by `cuzk selftest --gpu --only
    /// spmv,compact` and `cuzk bench prove --compact`); without a GPU it changes nothing.
    pub compact_witness: bool,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ServiceConfig {
    /// On SIGTERM, how long running jobs may take to finish before the process exits anyway
    /// (they stay on disk and run again at the next start).
    pub drain_timeout_secs: u64,
    /// How often the one-line STATUS= summary is sent to systemd.
    pub status_interval_secs: u64,
}

impl Default for ApiConfig {
    fn default() -> Self {
        ApiConfig {
            listen: "127.0.0.1:9820".into(),
            unix_socket: String::new(),
            max_body_bytes: 256 << 20,
            max_queued_jobs: 1000,
            token_file: String::new(),
            max_connections: 256,
            idle_timeout_secs: 330,
            header_timeout_secs: 30,
            max_inflight_body_bytes: 1 << 30,
        }
    }
}

impl Default for JobsConfig {
    fn default() -> Self {
        JobsConfig {
            data_dir: PathBuf::from("/var/lib/cuzk"),
            retention_secs: 7 * 24 * 3600,
            retention_count: 10_000,
        }
    }
}

impl Default for ProvingConfig {
    fn default() -> Self {
        ProvingConfig {
            params_dir: String::new(),
            workers: 0,
            depth: 0,
            provers: 1,
            backend: BackendChoice::Auto,
            gpus: Vec::new(),
            finish: Finish::default(),
            pce: true,
            compact_witness: true,
        }
    }
}

impl Default for ServiceConfig {
    fn default() -> Self {
        ServiceConfig {
            drain_timeout_secs: 60,
            status_interval_secs: 5,
        }
    }
}

/// The checked configuration the service runs with.
#[derive(Clone, Debug)]
pub struct Settings {
    pub listen: SocketAddr,
    pub unix_socket: Option<PathBuf>,
    /// `api.token_file`.
    pub token_file: Option<PathBuf>,
    pub max_body_bytes: usize,
    pub max_queued_jobs: usize,
    pub max_connections: usize,
    pub idle_timeout: Duration,
    /// `api.header_timeout_secs`.
    pub header_timeout: Duration,
    pub max_inflight_body_bytes: u64,
    pub data_dir: PathBuf,
    /// Where PCE files are kept: `<data_dir>/pce`.
    pub pce_dir: PathBuf,
    /// Where compiled GPU kernels are cached: `<data_dir>/kernels`.
    pub kernel_dir: PathBuf,
    pub budget_bytes: u64,
    pub margin_bytes: u64,
    /// The page-locked pool's bytes: None for no pool, Some(0) for a quarter of the budget.
    pub pinned_bytes: Option<u64>,
    pub retention: Duration,
    pub retention_count: usize,
    pub params_dir: PathBuf,
    pub workers: usize,
    pub depth: usize,
    pub provers: usize,
    pub backend: BackendChoice,
    pub gpus: Vec<usize>,
    pub finish: Finish,
    pub pce: bool,
    pub compact_witness: bool,
    pub drain_timeout: Duration,
    pub status_interval: Duration,
}

/// The layered configuration source, kept to say where each value came from.
pub struct Loaded {
    pub config: Config,
    pub figment: Figment,
}

/// Reads defaults, the file (`path`, or the default path when it exists) and the environment.
pub fn load(path: Option<&Path>) -> Result<Loaded> {
    let file = match path {
        Some(p) => {
            if !p.is_file() {
                bail!("configuration file {} does not exist", p.display());
            }
            p.to_path_buf()
        }
        None => PathBuf::from(DEFAULT_CONFIG_PATH),
    };
    let figment = Figment::from(Serialized::defaults(Config::default()))
        .merge(Toml::file(&file))
        // Only sectioned variables are configuration: CUZK_LOG and the like are not.
        .merge(
            Env::prefixed(ENV_PREFIX)
                .filter(|key| key.as_str().contains("__"))
                .split("__"),
        );
    let config: Config = figment
        .extract()
        .map_err(|e| anyhow::anyhow!("configuration: {}", one_line(&e)))?;
    Ok(Loaded { config, figment })
}

/// figment's error, one line per problem joined, naming the key and where it came from.
fn one_line(e: &figment::Error) -> String {
    e.clone()
        .into_iter()
        .map(|e| {
            let key = e.path.join(".");
            let source = e
                .metadata
                .as_ref()
                .map(|m| match &m.source {
                    Some(src) => format!(" ({} {src})", m.name),
                    None => format!(" ({})", m.name),
                })
                .unwrap_or_default();
            if key.is_empty() {
                format!("{}{source}", e.kind)
            } else {
                format!("key {key}: {}{source}", e.kind)
            }
        })
        .collect::<Vec<_>>()
        .join("; ")
}

impl Config {
    /// Checks every value and resolves what the service needs.
    pub fn settings(&self) -> Result<Settings> {
        let listen: SocketAddr = self.api.listen.parse().with_context(|| {
            format!(
                "key api.listen: {:?} is not an address:port",
                self.api.listen
            )
        })?;
        let positive = |key: &str, v: u64| -> Result<()> {
            if v == 0 {
                bail!("key {key}: must be greater than 0");
            }
            Ok(())
        };
        positive("api.max_body_bytes", self.api.max_body_bytes)?;
        positive("api.max_queued_jobs", self.api.max_queued_jobs as u64)?;
        positive("api.max_connections", self.api.max_connections as u64)?;
        if self.api.max_inflight_body_bytes < self.api.max_body_bytes {
            bail!("key api.max_inflight_body_bytes: must be at least api.max_body_bytes");
        }
        if self.api.idle_timeout_secs < 2 {
            bail!("key api.idle_timeout_secs: must be at least 2");
        }
        positive("api.header_timeout_secs", self.api.header_timeout_secs)?;
        positive("jobs.retention_count", self.jobs.retention_count as u64)?;
        positive("proving.provers", self.proving.provers as u64)?;
        positive(
            "service.status_interval_secs",
            self.service.status_interval_secs,
        )?;
        let mut seen = std::collections::HashSet::new();
        if let Some(dup) = self.proving.gpus.iter().find(|g| !seen.insert(**g)) {
            bail!("key proving.gpus: device {dup} is listed twice");
        }
        if !self.jobs.data_dir.is_absolute() {
            bail!(
                "key jobs.data_dir: {} is not an absolute path",
                self.jobs.data_dir.display()
            );
        }
        let path_or_none = |s: &str| (!s.is_empty()).then(|| PathBuf::from(s));
        let token_file = path_or_none(&self.api.token_file);
        if !listen.ip().is_loopback() && token_file.is_none() {
            bail!(
                "key api.listen: {listen} is reachable beyond this host; set api.token_file (a file of mode 0600 holding a bearer token) to serve there"
            );
        }
        Ok(Settings {
            listen,
            unix_socket: path_or_none(&self.api.unix_socket),
            token_file,
            max_body_bytes: usize::try_from(self.api.max_body_bytes)
                .context("key api.max_body_bytes: too large")?,
            max_queued_jobs: self.api.max_queued_jobs,
            max_connections: self.api.max_connections,
            idle_timeout: Duration::from_secs(self.api.idle_timeout_secs),
            header_timeout: Duration::from_secs(self.api.header_timeout_secs),
            max_inflight_body_bytes: self.api.max_inflight_body_bytes,
            data_dir: self.jobs.data_dir.clone(),
            pce_dir: self.jobs.data_dir.join("pce"),
            kernel_dir: self.jobs.data_dir.join("kernels"),
            budget_bytes: self.memory.budget_bytes,
            margin_bytes: self.memory.margin_bytes,
            pinned_bytes: self.memory.pinned.then_some(self.memory.pinned_bytes),
            retention: Duration::from_secs(self.jobs.retention_secs),
            retention_count: self.jobs.retention_count,
            params_dir: path_or_none(&self.proving.params_dir).unwrap_or_else(default_params_dir),
            workers: self.proving.workers,
            depth: self.proving.depth,
            provers: self.proving.provers,
            backend: self.proving.backend,
            gpus: self.proving.gpus.clone(),
            finish: self.proving.finish,
            pce: self.proving.pce,
            compact_witness: self.proving.compact_witness,
            drain_timeout: Duration::from_secs(self.service.drain_timeout_secs),
            status_interval: Duration::from_secs(self.service.status_interval_secs),
        })
    }
}

/// The keys (`section.key`) whose values differ between `old` and `new`.
pub fn changed_keys(old: &Config, new: &Config) -> Vec<String> {
    let (old, new) = (flat(old), flat(new));
    new.iter()
        .filter(|(key, value)| old.get(*key) != Some(*value))
        .map(|(key, _)| key.clone())
        .collect()
}

/// Every key of a configuration with its value, in order.
fn flat(config: &Config) -> std::collections::BTreeMap<String, serde_json::Value> {
    let value = serde_json::to_value(config).unwrap_or_default();
    let mut out = std::collections::BTreeMap::new();
    for (section, keys) in value.as_object().into_iter().flatten() {
        for (key, v) in keys.as_object().into_iter().flatten() {
            out.insert(format!("{section}.{key}"), v.clone());
        }
    }
    out
}

impl Loaded {
    /// Every key with its effective value and where it came from (`default`, the file, or the
    /// environment variable), one `key = value  # source` line each.
    pub fn show(&self) -> Result<String> {
        let value = serde_json::to_value(&self.config)?;
        let mut out = String::new();
        let Some(sections) = value.as_object() else {
            bail!("the configuration is not a table");
        };
        for (section, keys) in sections {
            out.push_str(&format!("[{section}]\n"));
            for (key, v) in keys.as_object().into_iter().flatten() {
                let path = format!("{section}.{key}");
                let source = match self.figment.find_metadata(&path) {
                    Some(m) if m.name.contains("environment") => {
                        let var = format!("{ENV_PREFIX}{section}__{key}").to_uppercase();
                        format!("environment {var}")
                    }
                    Some(m) => match &m.source {
                        Some(figment::Source::File(path)) => path.display().to_string(),
                        _ => "default".into(),
                    },
                    None => "default".into(),
                };
                let toml_value = toml_literal(v);
                out.push_str(&format!("{key} = {toml_value}  # {source}\n"));
            }
            out.push('\n');
        }
        Ok(out)
    }
}

fn toml_literal(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::String(s) => format!("{s:?}"),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with_file(text: &str) -> Result<Loaded> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("cuzk.toml");
        std::fs::write(&path, text).unwrap();
        load(Some(&path))
    }

    #[test]
    fn file_values_override_defaults_and_say_where_they_came_from() {
        let loaded = with_file("[api]\nlisten = \"127.0.0.1:1\"\n").unwrap();
        assert_eq!(loaded.config.api.listen, "127.0.0.1:1");
        assert_eq!(loaded.config.jobs, JobsConfig::default());
        let shown = loaded.show().unwrap();
        assert!(shown.contains("listen = \"127.0.0.1:1\"  # "), "{shown}");
        assert!(shown.contains("cuzk.toml"), "{shown}");
        assert!(shown.contains("workers = 0  # default"), "{shown}");
        loaded.config.settings().unwrap();
    }

    #[test]
    fn unknown_keys_and_bad_values_are_refused_by_name() {
        let err = |text: &str| match with_file(text) {
            Ok(l) => l.config.settings().map(|_| ()).unwrap_err().to_string(),
            Err(e) => e.to_string(),
        };
        assert!(err("[api]\nlisen = \"x\"\n").contains("lisen"));
        assert!(err("[apis]\n").contains("apis"));
        let bad_type = err("[proving]\nworkers = \"many\"\n");
        assert!(bad_type.contains("proving.workers"), "{bad_type}");
        assert!(err("[api]\nlisten = \"nowhere\"\n").contains("api.listen"));
        assert!(err("[proving]\nprovers = 0\n").contains("proving.provers"));
        assert!(err("[proving]\ngpus = [0, 1, 0]\n").contains("device 0 is listed twice"));
        assert!(err("[jobs]\ndata_dir = \"relative\"\n").contains("jobs.data_dir"));
        assert!(load(Some(Path::new("/nonexistent/cuzk.toml"))).is_err());
    }

    #[test]
    fn a_reload_names_exactly_the_keys_that_changed() {
        let old = Config::default();
        let mut new = Config::default();
        assert!(changed_keys(&old, &new).is_empty());
        new.proving.depth = 3;
        new.proving.backend = BackendChoice::Cpu;
        new.jobs.retention_count = 5;
        new.api.listen = "127.0.0.1:1".into();
        assert_eq!(
            changed_keys(&old, &new),
            [
                "api.listen",
                "jobs.retention_count",
                "proving.backend",
                "proving.depth"
            ]
        );
        // Every live key is a key of the configuration.
        let keys = flat(&old);
        for live in LIVE_KEYS {
            assert!(keys.contains_key(live), "{live}");
        }
    }

    #[test]
    fn an_empty_parameter_directory_means_filecoin_proofs_default() {
        let settings = Config::default().settings().unwrap();
        assert_eq!(settings.params_dir, default_params_dir());
        let mut config = Config::default();
        config.proving.params_dir = "/srv/params".into();
        assert_eq!(
            config.settings().unwrap().params_dir,
            PathBuf::from("/srv/params")
        );
    }

    #[test]
    fn shipped_config_file_lists_every_key_with_its_default() {
        let shipped = include_str!("../../etc/cuzk/cuzk.toml");
        // Uncommenting every `# key = value` line gives the defaults back.
        let uncommented: String = shipped
            .lines()
            .map(|l| {
                l.strip_prefix("# ")
                    .filter(|r| r.contains(" = ") || r.starts_with('['))
                    .unwrap_or(l)
            })
            .map(|l| format!("{l}\n"))
            .collect();
        let loaded = with_file(&uncommented).unwrap();
        assert_eq!(loaded.config, Config::default());
        let keys = serde_json::to_value(Config::default()).unwrap();
        for (section, table) in keys.as_object().unwrap() {
            for key in table.as_object().unwrap().keys() {
                assert!(
                    uncommented.contains(&format!("\n{key} = ")),
                    "{section}.{key} missing from etc/cuzk/cuzk.toml"
                );
            }
        }
    }
}
