//! PCE files in the data directory: `<circuit>.pce`, one extraction per circuit at a time in
//! this process (a flight lock per name) and across processes (an exclusive `flock` on
//! `<circuit>.pce.lock`, held from the second look at the file until the new one is renamed
//! into place). A file that fails to load is logged and removed under that lock, then made again.
//!
//! The store knows circuits only by [`PceKey`] (a name and the hash the file must carry) and
//! records them through the closure its caller passes: what a circuit is belongs to the caller.

use std::collections::HashMap;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use anyhow::{Context, Result};

use super::file::{self, FileError};
use super::Pce;

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

/// A circuit as the store knows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PceKey {
    /// The file's name without `.pce` (a stable circuit name such as `porep-32g`).
    pub name: String,
    /// What the file's header must carry ([`super::circuit_hash`] of the circuit).
    pub hash: [u8; 32],
}

/// `<circuit>.pce.lock` in `dir`: held (flock) by whoever writes that circuit's file.
fn open_lock(dir: &Path, circuit: &str) -> Result<File> {
    crate::persist::lock_file(&dir.join(format!("{circuit}.pce.lock")))
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

    /// The file of the circuit named `name`.
    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.join(format!("{name}.pce"))
    }

    /// The PCE of `key` if its file is present and good; never extracts. A bad file is
    /// reported (and left for an extraction to replace).
    pub fn load(&self, key: &PceKey) -> Result<Option<Pce>, FileError> {
        match file::load(&self.path(&key.name), &key.name, &key.hash) {
            Ok(pce) => Ok(Some(pce)),
            Err(FileError::Missing) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Removes the file of the circuit named `name` (under its lock) after it proved wrong for
    /// the circuit; the next extraction makes it again.
    pub fn discard(&self, name: &str) -> Result<()> {
        let lock_file = open_lock(&self.dir, name)?;
        lock_file.lock()?;
        match std::fs::remove_file(self.path(name)) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e.into()),
            _ => Ok(()),
        }
    }

    /// The PCE of `key`: its file if good, else made by `record` (from the blank circuit),
    /// written atomically and loaded back. `force` records and writes anew even over a good
    /// file.
    pub fn obtain(
        &self,
        key: &PceKey,
        force: bool,
        record: impl FnOnce() -> Result<Pce>,
    ) -> Result<(Pce, Obtained)> {
        let flight = lock(&self.flights)
            .entry(key.name.clone())
            .or_default()
            .clone();
        let _one_extraction = lock(&flight);
        let (name, hash) = (key.name.as_str(), &key.hash);
        let path = self.path(name);
        let look = || file::load(&path, name, hash);
        if !force {
            if let Ok(pce) = look() {
                return Ok((pce, Obtained::Loaded));
            }
        }
        let lock_file = open_lock(&self.dir, name)?;
        lock_file
            .lock()
            .with_context(|| format!("locking the PCE lock of {name}"))?;
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
        let pce = record()?;
        let recorded_s = start.elapsed().as_secs_f64();
        file::write(&path, name, hash, &pce)?;
        drop(pce);
        let pce = file::load(&path, name, hash)
            .with_context(|| format!("reading back {}", path.display()))?;
        tracing::info!(
            circuit = name,
            recorded_s,
            total_s = start.elapsed().as_secs_f64(),
            bytes = pce.bytes(),
            nnz = ?pce.nnz(),
            most_others = pce.most_others(),
            "PCE extracted"
        );
        Ok((pce, Obtained::Extracted))
    }
}
