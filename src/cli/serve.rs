//! `cuzk serve`: the service systemd runs. Wiring only: configuration, job store, engine, API,
//! systemd notifications and signals.
//!
//! Start-up: READY=1 is sent once the API is bound and the engine is up. SIGTERM (or SIGINT):
//! STOPPING=1, submissions refused, running jobs given `service.drain_timeout_secs` to finish
//! (what does not finish stays stored and runs again at the next start), then exit. SIGHUP:
//! the configuration is read again and what can change at runtime is applied.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use tokio::signal::unix::{signal, SignalKind};

use crate::api::{router, App};
use crate::config::{self, Settings};
use crate::engine::pipeline::Pipeline;
use crate::engine::{Concurrency, Engine, Limits, Proving};
use crate::jobs::JobStore;
use crate::memory::{Budget, System};
use crate::metrics::Metrics;
use crate::systemd::Notifier;

#[derive(clap::Args)]
pub struct ServeArgs {
    /// Configuration file (default /etc/cuzk/cuzk.toml, when it exists).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
}

fn limits(s: &Settings) -> Limits {
    Limits {
        max_queued_jobs: s.max_queued_jobs,
        retention: s.retention,
        retention_count: s.retention_count,
    }
}

pub fn run(args: ServeArgs) -> Result<()> {
    let loaded = config::load(args.config.as_deref())?;
    let settings = loaded.config.settings()?;
    if let Some(dir) = &settings.params_dir {
        if !dir.is_dir() {
            anyhow::bail!(
                "key proving.params_dir: {} is not a directory",
                dir.display()
            );
        }
        // SAFETY (of set_var): no other thread runs yet.
        std::env::set_var(crate::circuits::params::PARAMETER_CACHE_ENV, dir);
    }
    std::fs::create_dir_all(&settings.data_dir)
        .with_context(|| format!("creating data dir {}", settings.data_dir.display()))?;
    let store = JobStore::open(&settings.data_dir)?;
    let budget = Budget::detect(
        &System::default(),
        settings.budget_bytes,
        settings.margin_bytes,
    )
    .context("reading the memory limits")?;
    tracing::info!(
        budget_bytes = budget.total_bytes,
        limit_bytes = budget.limit_bytes,
        source = %budget.source,
        "memory budget"
    );
    let metrics = Arc::new(Metrics::new());
    metrics.budget_bytes.set(budget.total_bytes as i64);
    metrics.memory_limit_bytes.set(budget.limit_bytes as i64);
    let notifier = Notifier::from_env().map(Arc::new);
    let provers = crate::groth16::select(
        settings.backend,
        &settings.gpus,
        &settings.data_dir.join("kernels"),
    )?;
    let slots = settings.provers * provers.backends.len();
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let concurrency =
        Concurrency::derive(settings.workers, settings.depth, cores, provers.gpus.len());
    tracing::info!(
        workers = concurrency.workers,
        depth = concurrency.depth,
        prover_slots = slots,
        backend = provers.name(),
        cores,
        "concurrency (0 in proving.workers/depth: derived)"
    );
    let pipeline = Pipeline::new(budget.total_bytes, concurrency.depth, slots);
    let pce = if settings.pce {
        Some(Arc::new(crate::pce::PceStore::open(
            &settings.data_dir.join("pce"),
        )?))
    } else {
        None
    };
    let engine = Engine::start(
        store,
        metrics.clone(),
        Proving {
            pipeline,
            provers,
            finish: settings.finish,
            workers: concurrency.workers,
            pce,
        },
        limits(&settings),
        notifier.clone(),
        crate::systemd::watchdog_interval(),
    )?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("cuzk-api")
        .enable_all()
        .build()?;
    runtime.block_on(serve(
        App::new(engine, metrics, settings, budget),
        notifier,
        args.config,
    ))
}

async fn serve(
    app: Arc<App>,
    notifier: Option<Arc<Notifier>>,
    config_path: Option<PathBuf>,
) -> Result<()> {
    let notify = |state: &str| {
        if let Some(n) = &notifier {
            n.notify(state);
        }
    };
    let settings = app.settings.clone();
    let tcp = tokio::net::TcpListener::bind(settings.listen)
        .await
        .with_context(|| format!("binding {} (key api.listen)", settings.listen))?;
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let mut servers = tokio::task::JoinSet::new();
    spawn_server(&mut servers, tcp, router(app.clone()), stop_rx.clone());
    if let Some(path) = &settings.unix_socket {
        let _ = std::fs::remove_file(path);
        let unix = tokio::net::UnixListener::bind(path)
            .with_context(|| format!("binding {} (key api.unix_socket)", path.display()))?;
        spawn_server(&mut servers, unix, router(app.clone()), stop_rx.clone());
    }
    tracing::info!(listen = %settings.listen, unix_socket = ?settings.unix_socket, "API listening");
    app.set_ready();
    notify("READY=1");
    notify(&format!("STATUS={}", app.engine.summary()));
    // Watchdog pings start only now, after READY=1.
    app.engine.set_ready();

    let status_app = app.clone();
    let status_notifier = notifier.clone();
    let status_task = tokio::spawn(async move {
        let mut tick = tokio::time::interval(settings.status_interval);
        loop {
            tick.tick().await;
            if let Some(n) = &status_notifier {
                n.notify(&format!("STATUS={}", status_app.engine.summary()));
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
            _ = hup.recv() => reload(&app, config_path.as_deref()),
        }
    }

    tracing::info!("stopping: new submissions are refused, running jobs drain");
    notify("STOPPING=1");
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
    if let Some(path) = &settings.unix_socket {
        let _ = std::fs::remove_file(path);
    }
    tracing::info!(drained, "stopped");
    Ok(())
}

/// Serves `router` on `listener` until `stop` turns true (then lets open requests finish).
fn spawn_server<L>(
    servers: &mut tokio::task::JoinSet<std::io::Result<()>>,
    listener: L,
    router: axum::Router,
    mut stop: tokio::sync::watch::Receiver<bool>,
) where
    L: axum::serve::Listener,
    L::Addr: std::fmt::Debug,
{
    servers.spawn(async move {
        axum::serve(listener, router)
            .with_graceful_shutdown(async move {
                let _ = stop.wait_for(|s| *s).await;
            })
            .await
    });
}

/// SIGHUP: applies the limits and retention of a freshly read configuration; other keys need a
/// restart (logged).
fn reload(app: &App, path: Option<&std::path::Path>) {
    match config::load(path).and_then(|l| l.config.settings()) {
        Ok(new) => {
            app.engine.set_limits(limits(&new));
            let old = &app.settings;
            if new.listen != old.listen
                || new.unix_socket != old.unix_socket
                || new.data_dir != old.data_dir
                || new.params_dir != old.params_dir
                || new.workers != old.workers
                || new.max_body_bytes != old.max_body_bytes
            {
                tracing::warn!("configuration reloaded; changes to api.listen, api.unix_socket, api.max_body_bytes, jobs.data_dir, proving.* take effect at the next restart");
            } else {
                tracing::info!("configuration reloaded");
            }
        }
        Err(e) => {
            tracing::error!(error = %format!("{e:#}"), "configuration reload failed; the running configuration stays")
        }
    }
}
