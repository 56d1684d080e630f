//! PCE files in the data directory: `<circuit id>.pce`, one extraction per circuit at a time in
//! this process (a flight lock per id) and across processes (an exclusive `flock` on
//! `<circuit id>.pce.lock`, held from the second look at the file until the new one is renamed
//! into place). A file that fails to load is logged and removed under that lock, then made again.

use std::collections::HashMap;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use anyhow::{Context, Result};

use super::file::{self, FileError};
use super::{circuit_hash, Pce};
use crate::circuits::{params, CircuitId};

/// How a PCE was obtained.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Obtained {
    /// Its file was there and good.
    Loaded,
    /// Recorded from the blank circuit and written now.
    Extracted,
}

pub struct PceStore {
    dir: PathBuf,
    flights: Mutex<HashMap<String, Arc<Mutex<()>>>>,
}

impl std::fmt::Debug for PceStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PceStore").field("dir", &self.dir).finish()
    }
}

/// The hash a circuit's PCE file must carry.
pub fn hash_of(circuit: &CircuitId) -> Result<[u8; 32]> {
    let parameters = params::cache_identifier(circuit.kind(), circuit.sector_size())?;
    Ok(circuit_hash(&parameters))
}

/// `<circuit>.pce.lock` in `dir`: held (flock) by whoever writes that circuit's file.
fn open_lock(dir: &Path, circuit: &str) -> Result<File> {
    let path = dir.join(format!("{circuit}.pce.lock"));
    File::options()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .with_context(|| format!("opening {}", path.display()))
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl PceStore {
    /// The store in `dir` (created if missing). Temporary files left by writers that died are
    /// removed: those of this circuit's files whose lock nobody holds (a live writer holds it
    /// from before it creates its temporary file until after the rename).
    pub fn open(dir: &Path) -> Result<PceStore> {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        for entry in std::fs::read_dir(dir)?.flatten() {
            let name = entry.file_name();
            let Some(circuit) = name
                .to_str()
                .and_then(|n| n.strip_prefix('.'))
                .and_then(|n| n.rsplit_once(".pce.tmp-"))
                .map(|(circuit, _)| circuit.to_owned())
            else {
                continue;
            };
            if open_lock(dir, &circuit).is_ok_and(|l| l.try_lock().is_ok()) {
                tracing::info!(path = %entry.path().display(), "removing a dead writer's temporary PCE file");
                let _ = std::fs::remove_file(entry.path());
            }
        }
        Ok(PceStore {
            dir: dir.to_owned(),
            flights: Mutex::new(HashMap::new()),
        })
    }

    pub fn path(&self, circuit: &CircuitId) -> PathBuf {
        self.dir.join(format!("{circuit}.pce"))
    }

    /// The PCE of `circuit` if its file is present and good; never extracts. A bad file is
    /// reported (and left for an extraction to replace).
    pub fn load(&self, circuit: &CircuitId) -> Result<Option<Pce>, FileError> {
        let hash =
            hash_of(circuit).map_err(|e| FileError::Io(std::io::Error::other(format!("{e:#}"))))?;
        match file::load(&self.path(circuit), circuit.as_str(), &hash) {
            Ok(pce) => Ok(Some(pce)),
            Err(FileError::Missing) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Removes `circuit`'s file (under its lock) after it proved wrong for the circuit; the
    /// next extraction makes it again.
    pub fn discard(&self, circuit: &CircuitId) -> Result<()> {
        let lock_file = open_lock(&self.dir, circuit.as_str())?;
        lock_file.lock()?;
        match std::fs::remove_file(self.path(circuit)) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e.into()),
            _ => Ok(()),
        }
    }

    /// The PCE of `circuit`: its file if good, else recorded from the blank circuit, written
    /// atomically and loaded back. `force` records and writes anew even over a good file.
    pub fn obtain(&self, circuit: &CircuitId, force: bool) -> Result<(Pce, Obtained)> {
        let flight = lock(&self.flights)
            .entry(circuit.to_string())
            .or_default()
            .clone();
        let _one_extraction = lock(&flight);
        let hash = hash_of(circuit)?;
        let path = self.path(circuit);
        let look = || file::load(&path, circuit.as_str(), &hash);
        if !force {
            if let Ok(pce) = look() {
                return Ok((pce, Obtained::Loaded));
            }
        }
        let lock_file = open_lock(&self.dir, circuit.as_str())?;
        lock_file
            .lock()
            .with_context(|| format!("locking the PCE lock of {circuit}"))?;
        // Another process may have made it while this one waited for the lock.
        if !force {
            match look() {
                Ok(pce) => return Ok((pce, Obtained::Loaded)),
                Err(FileError::Missing) => {}
                // Not the file's fault (descriptors, memory, permissions): it stays.
                Err(FileError::Io(e)) => {
                    return Err(e).with_context(|| format!("reading {}", path.display()))
                }
                Err(e) => {
                    tracing::warn!(path = %path.display(), error = %e, "discarding a PCE file; it is made again");
                    std::fs::remove_file(&path)
                        .with_context(|| format!("removing {}", path.display()))?;
                }
            }
        }
        let start = Instant::now();
        let pce = params::record_blank(circuit.kind(), circuit.sector_size())?;
        let recorded_s = start.elapsed().as_secs_f64();
        file::write(&path, circuit.as_str(), &hash, &pce)?;
        drop(pce);
        let pce = file::load(&path, circuit.as_str(), &hash)
            .with_context(|| format!("reading back {}", path.display()))?;
        tracing::info!(
            circuit = %circuit,
            recorded_s,
            total_s = start.elapsed().as_secs_f64(),
            bytes = pce.bytes(),
            nnz = ?pce.nnz(),
            "PCE extracted"
        );
        Ok((pce, Obtained::Extracted))
    }
}
