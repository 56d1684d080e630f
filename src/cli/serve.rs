//! `cuzk serve`: the service systemd runs. Wiring only: configuration, the appliance
//! ([`super::appliance`], shared with the benchmarks), the API listeners, systemd notifications
//! and signals.
//!
//! Start-up, in this order: the data directory's lock (a second instance on it stops here, having
//! touched nothing), the API's listeners bound (a second instance on the same address or
//! socket stops here), then the engine and its jobs; READY=1 once both are up. A unix socket
//! path is taken over only from a dead instance (a socket nobody answers on), never from a live
//! one or a file that is not a socket, and removed at exit only if it is still ours. SIGTERM (or SIGINT):
//! STOPPING=1, submissions refused, running jobs given `service.drain_timeout_secs` to finish
//! (what does not finish stays stored and runs again at the next start), then exit. SIGHUP:
//! the configuration is read again and what can change at runtime is applied.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use tokio::signal::unix::{signal, SignalKind};

use super::appliance::{assemble, limits};
use crate::api::{serve_on, App, Token};
use crate::config::{self, Config};
use crate::jobs::DataDirLock;
use crate::systemd::Notifier;

#[derive(clap::Args)]
pub struct ServeArgs {
    /// Configuration file (default /etc/cuzk/cuzk.toml, when it exists).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
}

pub fn run(args: ServeArgs) -> Result<()> {
    if crate::faults::ENABLED {
        tracing::warn!(
            "this build has the test fault switches (--features faults): not for production"
        );
        let wrong = std::env::var(crate::faults::WRONG_PROOFS).ok();
        if let Some(count) = wrong.and_then(|v| v.trim().parse().ok()) {
            crate::faults::arm_wrong_proofs(count);
        }
    }
    let loaded = config::load(args.config.as_deref())?;
    let settings = loaded.config.settings()?;
    if !loaded.config.proving.params_dir.is_empty() && !settings.params_dir.is_dir() {
        anyhow::bail!(
            "key proving.params_dir: {} is not a directory",
            settings.params_dir.display()
        );
    }
    // Data files 0640, directories 0750 (the unit says so too, UMask=0027).
    // SAFETY: umask only sets this process's file mode mask.
    unsafe { libc::umask(0o027) };
    let token = match &settings.token_file {
        Some(path) => Some(read_token(path)?),
        None => None,
    };
    let owner = DataDirLock::take(&settings.data_dir)?;
    let tcp = std::net::TcpListener::bind(settings.listen)
        .with_context(|| format!("binding {} (key api.listen)", settings.listen))?;
    let unix = match &settings.unix_socket {
        Some(path) => Some(OwnSocket::bind(path)?),
        None => None,
    };
    let notifier = Notifier::from_env().map(Arc::new);
    let appliance = assemble(
        &settings,
        owner,
        notifier.clone(),
        crate::systemd::watchdog_interval(),
    )?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("cuzk-api")
        .enable_all()
        .build()?;
    runtime.block_on(serve(
        App::new(
            appliance.engine,
            appliance.metrics,
            settings,
            appliance.budget,
            token,
        ),
        (tcp, unix),
        notifier,
        args.config,
        loaded.config,
    ))
}

/// The bearer token of `api.token_file`: the file must be readable by its owner alone (a
/// token others can read guards nothing) and hold one non-empty line.
fn read_token(path: &Path) -> Result<Token> {
    use std::os::unix::fs::PermissionsExt;
    let key = || format!("{} (key api.token_file)", path.display());
    let mode = std::fs::metadata(path)
        .with_context(|| format!("reading {}", key()))?
        .permissions()
        .mode();
    if mode & 0o077 != 0 {
        anyhow::bail!(
            "{}: mode {:o} lets others read it; chmod 600 it",
            key(),
            mode & 0o777
        );
    }
    let text = std::fs::read_to_string(path).with_context(|| format!("reading {}", key()))?;
    let secret = text.trim();
    if secret.len() < 16 || secret.contains(char::is_whitespace) {
        anyhow::bail!(
            "{}: give one token of at least 16 characters, no spaces",
            key()
        );
    }
    Ok(Token::new(secret))
}

/// The API's unix socket, bound by this process: (device, inode) say whether the path is still
/// ours at exit.
struct OwnSocket {
    listener: std::os::unix::net::UnixListener,
    path: PathBuf,
    identity: (u64, u64),
}

impl OwnSocket {
    /// Binds `path` at mode 0660 (the service's user and group), replacing a stale socket (one
    /// nobody answers on: a dead instance's); refuses a live one and anything not a socket.
    fn bind(path: &Path) -> Result<OwnSocket> {
        use std::os::unix::fs::{FileTypeExt, MetadataExt, PermissionsExt};
        let key = || format!("{} (key api.unix_socket)", path.display());
        match std::fs::symlink_metadata(path) {
            Ok(m) if m.file_type().is_socket() => {
                if std::os::unix::net::UnixStream::connect(path).is_ok() {
                    anyhow::bail!("{}: another process is serving on this socket", key());
                }
                std::fs::remove_file(path)
                    .with_context(|| format!("removing the stale socket {}", key()))?;
                tracing::info!(path = %path.display(), "stale unix socket replaced");
            }
            Ok(_) => anyhow::bail!("{}: exists and is not a socket; not removed", key()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(e).with_context(|| format!("inspecting {}", key())),
        }
        let listener = std::os::unix::net::UnixListener::bind(path)
            .with_context(|| format!("binding {}", key()))?;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o660))
            .with_context(|| format!("setting the mode of {}", key()))?;
        let m = std::fs::metadata(path)?;
        Ok(OwnSocket {
            listener,
            path: path.to_owned(),
            identity: (m.dev(), m.ino()),
        })
    }

    /// Removes the socket file if it is still the one this process bound.
    fn remove(&self) {
        use std::os::unix::fs::MetadataExt;
        let ours = std::fs::symlink_metadata(&self.path)
            .is_ok_and(|m| (m.dev(), m.ino()) == self.identity);
        if ours {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

async fn serve(
    app: Arc<App>,
    (tcp, unix): (std::net::TcpListener, Option<OwnSocket>),
    notifier: Option<Arc<Notifier>>,
    config_path: Option<PathBuf>,
    running: Config,
) -> Result<()> {
    let settings = app.settings.clone();
    tcp.set_nonblocking(true)?;
    let tcp = tokio::net::TcpListener::from_std(tcp)?;
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let mut servers = tokio::task::JoinSet::new();
    serve_on(&mut servers, tcp, app.clone(), true, stop_rx.clone());
    if let Some(own) = &unix {
        own.listener.set_nonblocking(true)?;
        let listener = tokio::net::UnixListener::from_std(own.listener.try_clone()?)?;
        // Its mode (0660) says who may connect.
        serve_on(&mut servers, listener, app.clone(), false, stop_rx.clone());
    }
    tracing::info!(listen = %settings.listen, unix_socket = ?settings.unix_socket, "API listening");
    app.set_ready();
    if let Some(n) = &notifier {
        n.ready();
        n.status(&app.engine.summary());
    }
    // Watchdog pings start only now, after READY=1.
    app.engine.set_ready();

    let status_app = app.clone();
    let status_notifier = notifier.clone();
    let status_task = tokio::spawn(async move {
        let mut tick = tokio::time::interval(settings.status_interval);
        loop {
            tick.tick().await;
            if let Some(n) = &status_notifier {
                n.status(&status_app.engine.summary());
            }
        }
    });

    let mut term = signal(SignalKind::terminate())?;
    let mut int = signal(SignalKind::interrupt())?;
    let mut hup = signal(SignalKind::hangup())?;
    loop {
        tokio::select! {
            _ = term.recv() => break,
            _ = int.recv() => break,
            _ = hup.recv() => {
                if let Some(n) = &notifier {
                    n.reloading();
                }
                reload(&app, config_path.as_deref(), &running);
                if let Some(n) = &notifier {
                    n.ready();
                }
            }
        }
    }

    tracing::info!("stopping: new submissions are refused, running jobs drain");
    if let Some(n) = &notifier {
        n.stopping();
    }
    app.set_draining();
    status_task.abort();
    let engine = app.engine.clone();
    let drain = settings.drain_timeout;
    let drained = tokio::task::spawn_blocking(move || engine.drain(drain)).await?;
    let _ = stop_tx.send(true);
    // Long polls may hold connections: they get a moment, not the whole wait.
    let _ = tokio::time::timeout(Duration::from_secs(2), async {
        while servers.join_next().await.is_some() {}
    })
    .await;
    if let Some(own) = &unix {
        own.remove();
    }
    tracing::info!(drained, "stopped");
    Ok(())
}

#[derive(clap::Args)]
pub struct ReloadArgs {
    /// The running service's process id (systemd's $MAINPID).
    #[arg(long)]
    pub pid: i32,
}

/// `cuzk reload --pid PID`: SIGHUP to the service (the unit's ExecReload, so that reloading needs
/// no other package's `kill`). Under systemd the service answers RELOADING=1, then READY=1 once
/// the configuration is applied, and `systemctl reload` returns then.
pub fn reload_running(args: ReloadArgs) -> Result<()> {
    anyhow::ensure!(args.pid > 0, "--pid {}: not a process id", args.pid);
    // SAFETY: kill(2) with a positive pid signals that one process; no memory is involved.
    if unsafe { libc::kill(args.pid, libc::SIGHUP) } != 0 {
        let e = std::io::Error::last_os_error();
        anyhow::bail!("signalling process {}: {e}", args.pid);
    }
    Ok(())
}

/// SIGHUP: reads the configuration again, applies the [`config::LIVE_KEYS`], and names every
/// other key whose value now differs from the one the service runs with (`running`: read at
/// start): those take effect at the next restart.
fn reload(app: &App, path: Option<&std::path::Path>, running: &Config) {
    let read = config::load(path).and_then(|l| l.config.settings().map(|s| (l.config, s)));
    match read {
        Ok((new, settings)) => {
            app.engine.set_limits(limits(&settings));
            let restart: Vec<String> = config::changed_keys(running, &new)
                .into_iter()
                .filter(|k| !config::LIVE_KEYS.contains(&k.as_str()))
                .collect();
            if restart.is_empty() {
                tracing::info!(applied = ?config::LIVE_KEYS, "configuration reloaded");
            } else {
                tracing::warn!(
                    applied = ?config::LIVE_KEYS,
                    "configuration reloaded; changes to {} take effect at the next restart",
                    restart.join(", ")
                );
            }
        }
        Err(e) => {
            tracing::error!(error = %format!("{e:#}"), "configuration reload failed; the running configuration stays")
        }
    }
}
