//! Durable writes. Every file the appliance keeps goes through here: written to a temporary
//! file in the target's directory, fsynced, renamed over the target, and the directory fsynced,
//! so a crash leaves either the old file or the new one, never a torn one.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

/// Atomically replaces `path` with `bytes`.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    write_with(path, |f| {
        f.write_all(bytes)
            .with_context(|| format!("writing {}", temp_path(path).display()))
    })
}

/// Atomically replaces `path` with what `write` writes into a new temporary file (its
/// `temp_path`); on failure the temporary file is removed and `path` is left as it was.
pub fn write_with(path: &Path, write: impl FnOnce(&mut File) -> Result<()>) -> Result<()> {
    let tmp = temp_path(path);
    let written = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .open(&tmp)
        .with_context(|| format!("creating {}", tmp.display()))
        .and_then(|mut f| write(&mut f));
    let result = written.and_then(|()| publish(&tmp, path));
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

/// Opens (or makes, empty) the lock file at `path` for `File::lock` and its kin: its content
/// is never what is kept, so it is neither truncated nor written atomically.
pub fn lock_file(path: &Path) -> Result<File> {
    OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)
        .with_context(|| format!("opening {}", path.display()))
}

/// `.NAME.tmp-PID` beside `path`: where its new content is written before `publish`.
pub fn temp_path(path: &Path) -> PathBuf {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    parent(path).join(format!(".{name}.tmp-{}", std::process::id()))
}

/// Makes a finished file at `from` durable and moves it to `to` (same filesystem).
pub fn publish(from: &Path, to: &Path) -> Result<()> {
    File::open(from)
        .and_then(|f| f.sync_all())
        .with_context(|| format!("syncing {}", from.display()))?;
    std::fs::rename(from, to)
        .with_context(|| format!("renaming {} to {}", from.display(), to.display()))?;
    File::open(parent(to))
        .and_then(|d| d.sync_all())
        .with_context(|| format!("syncing directory of {}", to.display()))
}

fn parent(path: &Path) -> &Path {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn write_atomic_replaces_existing_file_and_leaves_no_temp() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("proof.bin");
        write_atomic(&p, b"old").unwrap();
        write_atomic(&p, b"new").unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"new");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }
}
