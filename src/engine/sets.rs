//! Loaded sets shared by the jobs that use them (parameter sets, PCEs), keyed by file path. A set
//! lives while some job holds it; the last one loaded of each kind stays resident for the next
//! job, unless a load waits for budget (an idle set kept for a cache could keep that load from
//! ever fitting).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, Weak};

use crate::memory::Hold;
use crate::pce::{HoldsPce, Pce};

/// A loaded set and the budget it holds, given back when the last user drops it.
pub struct Loaded<T> {
    pub value: T,
    pub held: Hold,
}

/// A compact proof keeps the loaded PCE, and with it the budget it holds, until it is proved.
impl HoldsPce for Loaded<Pce> {
    fn pce(&self) -> &Pce {
        &self.value
    }
}

struct Inner<T> {
    live: HashMap<PathBuf, Weak<Loaded<T>>>,
    resident: Option<Arc<Loaded<T>>>,
}

pub struct Sets<T> {
    inner: Mutex<Inner<T>>,
}

impl<T> Default for Sets<T> {
    fn default() -> Self {
        Sets::new()
    }
}

impl<T> Sets<T> {
    pub fn new() -> Self {
        Sets {
            inner: Mutex::new(Inner {
                live: HashMap::new(),
                resident: None,
            }),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Inner<T>> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The set loaded from `key`, if some job (or the resident slot) has it.
    pub fn get(&self, key: &Path) -> Option<Arc<Loaded<T>>> {
        self.lock().live.get(key).and_then(Weak::upgrade)
    }

    /// The set at `key` if loaded; else runs `waiting` (registering a load that will wait for
    /// budget) and empties the resident slot, both under this lock, so that a load finishing
    /// meanwhile sees the waiter and keeps nothing resident.
    pub fn get_or_wait(&self, key: &Path, waiting: impl FnOnce()) -> Option<Arc<Loaded<T>>> {
        let mut inner = self.lock();
        if let Some(set) = inner.live.get(key).and_then(Weak::upgrade) {
            return Some(set);
        }
        waiting();
        inner.resident = None;
        None
    }

    /// Registers a set just loaded from `key`; it stays resident if `keep()` says so (asked
    /// under this lock).
    pub fn insert(&self, key: &Path, set: &Arc<Loaded<T>>, keep: impl FnOnce() -> bool) {
        let mut inner = self.lock();
        inner.live.retain(|_, w| w.strong_count() > 0);
        inner.live.insert(key.to_path_buf(), Arc::downgrade(set));
        if keep() {
            inner.resident = Some(set.clone());
        }
    }

    /// Empties the resident slot (its set goes when its last user does).
    pub fn drop_resident(&self) {
        self.lock().resident = None;
    }

    /// Forgets the set at `key` (jobs using it keep it until they end): the next job loads anew.
    pub fn forget(&self, key: &Path) {
        let mut inner = self.lock();
        if let Some(gone) = inner.live.remove(key) {
            if inner
                .resident
                .as_ref()
                .is_some_and(|r| std::ptr::eq(Arc::as_ptr(r), gone.as_ptr()))
            {
                inner.resident = None;
            }
        }
    }

    /// Empties the resident slot if `set` is in it.
    pub fn evict(&self, set: &Arc<Loaded<T>>) {
        let mut inner = self.lock();
        if inner.resident.as_ref().is_some_and(|r| Arc::ptr_eq(r, set)) {
            inner.resident = None;
        }
    }

    /// Paths and held bytes of the sets loaded now.
    pub fn loaded(&self) -> Vec<(PathBuf, u64)> {
        let mut out: Vec<(PathBuf, u64)> = self
            .lock()
            .live
            .iter()
            .filter_map(|(p, w)| w.upgrade().map(|s| (p.clone(), s.held.bytes())))
            .collect();
        out.sort();
        out
    }
}
