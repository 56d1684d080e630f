//! The page-locked pool: one large region mapped and locked once at start (`mmap`, `mlock`;
//! a device backend registers it with its driver once, so transfers from it run at the link's
//! speed with no bounce copy), carved into partition buffers by [`PinnedPool::lease`]. A lease
//! is all of a partition's buffers or none; a buffer goes back to the pool when its lease and
//! every buffer taken from it are dropped. Locked pages are resident and count against the
//! cgroup: the caller holds the pool's bytes from the budget (a [`super::Hold`]) for as long as
//! it exists.
//!
//! [`memlock_limit`] reads RLIMIT_MEMLOCK (raising the soft limit to the hard one where that
//! helps) so that a limit too low for the pool is one clear line at start, not a failure later.

use std::ops::Range;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use nix::sys::mman::{mlock, mmap_anonymous, munmap, MapFlags, ProtFlags};
use nix::sys::resource::{getrlimit, setrlimit, Resource, RLIM_INFINITY};

/// Buffers are carved at this granularity (a huge page): every buffer starts aligned for any
/// device transfer, and the free list stays short.
pub const GRANULE: usize = 2 << 20;

#[derive(Debug, thiserror::Error)]
pub enum PinError {
    #[error("mapping {bytes} bytes for the page-locked pool: {source}")]
    Map { bytes: usize, source: nix::Error },
    #[error("locking {bytes} bytes for the page-locked pool (RLIMIT_MEMLOCK {limit}; LimitMEMLOCK= in the unit): {source}")]
    Lock {
        bytes: usize,
        limit: String,
        source: nix::Error,
    },
}

/// RLIMIT_MEMLOCK after raising the soft limit to the hard one: None for no limit, or none
/// that applies (CAP_IPC_LOCK in this process's effective set locks past it).
pub fn memlock_limit() -> Option<u64> {
    if locks_past_the_limit() {
        return None;
    }
    let Ok((soft, hard)) = getrlimit(Resource::RLIMIT_MEMLOCK) else {
        return None;
    };
    let soft = if soft < hard && setrlimit(Resource::RLIMIT_MEMLOCK, hard, hard).is_ok() {
        hard
    } else {
        soft
    };
    (soft != RLIM_INFINITY).then_some(soft)
}

/// Whether CAP_IPC_LOCK is in this process's effective capabilities (/proc/self/status).
fn locks_past_the_limit() -> bool {
    const CAP_IPC_LOCK: u32 = 14;
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            let caps = status.lines().find_map(|l| l.strip_prefix("CapEff:"))?;
            u64::from_str_radix(caps.trim(), 16).ok()
        })
        .is_some_and(|caps| caps & (1 << CAP_IPC_LOCK) != 0)
}

fn limit_text(limit: Option<u64>) -> String {
    limit.map_or_else(|| "unlimited".to_owned(), |l| format!("{l} bytes"))
}

/// What the pool has lent, for the metrics and the status.
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize)]
pub struct PoolStatus {
    /// Bytes mapped and locked.
    pub locked_bytes: u64,
    /// Bytes lent to partitions now.
    pub leased_bytes: u64,
    /// Seconds the map and lock took at start.
    pub lock_seconds: f64,
}

/// The region: mapped and locked in `new`, unmapped (which unlocks it) when the pool goes.
struct Region {
    ptr: NonNull<u8>,
    len: usize,
}

// SAFETY: plain memory; who writes which part is decided by the pool's lock.
unsafe impl Send for Region {}
unsafe impl Sync for Region {}

impl Drop for Region {
    fn drop(&mut self) {
        // SAFETY: mapped in `PinnedPool::new` with this length; nothing uses it any more (every
        // lease holds the pool).
        let _ = unsafe { munmap(self.ptr.cast(), self.len) };
    }
}

/// Page-locked memory lent out as partition buffers.
pub struct PinnedPool {
    region: Region,
    /// Free byte ranges of the region, sorted and coalesced.
    free: Mutex<Vec<Range<usize>>>,
    leased: AtomicU64,
    lock_time: Duration,
}

impl PinnedPool {
    /// Maps and locks `bytes` (rounded up to [`GRANULE`]).
    pub fn new(bytes: usize) -> Result<Arc<PinnedPool>, PinError> {
        let len = bytes.max(1).next_multiple_of(GRANULE);
        let start = Instant::now();
        let size = std::num::NonZeroUsize::new(len).expect("at least one granule");
        // SAFETY: a fresh anonymous private mapping: no file, no aliasing.
        let ptr = unsafe {
            mmap_anonymous(
                None,
                size,
                ProtFlags::PROT_READ | ProtFlags::PROT_WRITE,
                MapFlags::MAP_PRIVATE,
            )
        }
        .map_err(|source| PinError::Map { bytes: len, source })?;
        let region = Region {
            ptr: ptr.cast(),
            len,
        };
        // Huge pages where the kernel gives them: fewer pages to lock and to register.
        // SAFETY: advice on our own mapping.
        let _ =
            unsafe { nix::sys::mman::madvise(ptr, len, nix::sys::mman::MmapAdvise::MADV_HUGEPAGE) };
        // SAFETY: locking our own mapping (it faults every page in).
        unsafe { mlock(ptr, len) }.map_err(|source| PinError::Lock {
            bytes: len,
            limit: limit_text(memlock_limit()),
            source,
        })?;
        Ok(Arc::new(PinnedPool {
            region,
            free: Mutex::new(std::iter::once(0..len).collect()),
            leased: AtomicU64::new(0),
            lock_time: start.elapsed(),
        }))
    }

    /// The locked region (start, bytes), for a device driver to register.
    pub fn region(&self) -> (NonNull<u8>, usize) {
        (self.region.ptr, self.region.len)
    }

    pub fn status(&self) -> PoolStatus {
        PoolStatus {
            locked_bytes: self.region.len as u64,
            leased_bytes: self.leased.load(Ordering::Relaxed),
            lock_seconds: self.lock_time.as_secs_f64(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Vec<Range<usize>>> {
        self.free.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Buffers of `sizes` bytes (each rounded up to [`GRANULE`]), all or none: None when the
    /// free ranges cannot hold them all now.
    pub fn lease(self: &Arc<Self>, sizes: &[usize]) -> Option<Lease> {
        let mut free = self.lock();
        let mut taken: Vec<Range<usize>> = Vec::with_capacity(sizes.len());
        for &size in sizes {
            let len = size.max(1).next_multiple_of(GRANULE);
            match carve(&mut free, len) {
                Some(range) => taken.push(range),
                None => {
                    for range in taken {
                        give_back(&mut free, range);
                    }
                    return None;
                }
            }
        }
        drop(free);
        let bytes: usize = taken.iter().map(|r| r.len()).sum();
        self.leased.fetch_add(bytes as u64, Ordering::Relaxed);
        Some(Lease(Arc::new(LeaseInner {
            pool: self.clone(),
            slots: Mutex::new(
                taken
                    .into_iter()
                    .map(|range| Slot {
                        range,
                        taken: false,
                    })
                    .collect(),
            ),
        })))
    }
}

/// The first free range of at least `len` bytes, cut from the front of it.
fn carve(free: &mut Vec<Range<usize>>, len: usize) -> Option<Range<usize>> {
    let i = free.iter().position(|r| r.len() >= len)?;
    let start = free[i].start;
    free[i].start += len;
    if free[i].is_empty() {
        free.remove(i);
    }
    Some(start..start + len)
}

/// Returns `range` to the sorted free list, joined with its neighbours.
fn give_back(free: &mut Vec<Range<usize>>, range: Range<usize>) {
    let i = free.partition_point(|r| r.start < range.start);
    free.insert(i, range);
    if i + 1 < free.len() && free[i].end == free[i + 1].start {
        free[i].end = free[i + 1].end;
        free.remove(i + 1);
    }
    if i > 0 && free[i - 1].end == free[i].start {
        free[i - 1].end = free[i].end;
        free.remove(i);
    }
}

struct Slot {
    range: Range<usize>,
    taken: bool,
}

struct LeaseInner {
    pool: Arc<PinnedPool>,
    slots: Mutex<Vec<Slot>>,
}

impl LeaseInner {
    fn slots(&self) -> MutexGuard<'_, Vec<Slot>> {
        self.slots.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Drop for LeaseInner {
    fn drop(&mut self) {
        let slots = std::mem::take(&mut *self.slots());
        let bytes: usize = slots.iter().map(|s| s.range.len()).sum();
        let mut free = self.pool.lock();
        for slot in slots {
            give_back(&mut free, slot.range);
        }
        self.pool.leased.fetch_sub(bytes as u64, Ordering::Relaxed);
    }
}

/// A partition's buffers in the pool: slot i is the i-th size asked for.
pub struct Lease(Arc<LeaseInner>);

impl Lease {
    /// Slot `i`'s memory (start, bytes) while the returned guard lives, unless it is out now.
    /// A slot whose guard is dropped can be taken again (a synthesis that is retried).
    pub fn take(&self, i: usize) -> Option<(NonNull<u8>, usize, Taken)> {
        let mut slots = self.0.slots();
        let slot = slots.get_mut(i).filter(|s| !s.taken)?;
        slot.taken = true;
        // SAFETY: the slot's range lies inside the region.
        let ptr = unsafe { self.0.pool.region.ptr.add(slot.range.start) };
        Some((
            ptr,
            slot.range.len(),
            Taken {
                lease: self.0.clone(),
                slot: i,
            },
        ))
    }

    /// Bytes of the lease.
    pub fn bytes(&self) -> u64 {
        self.0.slots().iter().map(|s| s.range.len() as u64).sum()
    }
}

/// One slot of a lease, out: the slot (and its lease's memory) stays lent until it is dropped.
pub struct Taken {
    lease: Arc<LeaseInner>,
    slot: usize,
}

impl Drop for Taken {
    fn drop(&mut self) {
        if let Some(slot) = self.lease.slots().get_mut(self.slot) {
            slot.taken = false;
        }
    }
}

#[cfg(test)]
#[allow(clippy::single_range_in_vec_init)]
mod tests {
    use super::*;

    #[test]
    fn the_free_list_stays_sorted_and_joined() {
        let mut free = vec![0..100];
        let a = carve(&mut free, 30).unwrap();
        let b = carve(&mut free, 30).unwrap();
        let c = carve(&mut free, 30).unwrap();
        assert_eq!((a.clone(), b.clone(), c.clone()), (0..30, 30..60, 60..90));
        assert_eq!(carve(&mut free, 11), None);
        give_back(&mut free, b);
        assert_eq!(free, [30..60, 90..100]);
        give_back(&mut free, a);
        assert_eq!(free, [0..60, 90..100]);
        give_back(&mut free, c);
        assert_eq!(free, [0..100]);
    }

    /// A real locked mapping (a few MiB: within the default RLIMIT_MEMLOCK of a root shell or
    /// of the unit; skipped where the limit is lower).
    fn pool(granules: usize) -> Option<Arc<PinnedPool>> {
        match PinnedPool::new(granules * GRANULE) {
            Ok(pool) => Some(pool),
            Err(e @ PinError::Lock { .. }) => {
                eprintln!("skipped: {e}");
                None
            }
            Err(e) => panic!("{e}"),
        }
    }

    #[test]
    fn leases_are_all_or_nothing_and_come_back_when_their_buffers_go() {
        let Some(pool) = pool(4) else { return };
        assert_eq!(pool.status().locked_bytes, 4 * GRANULE as u64);
        let lease = pool.lease(&[1, GRANULE + 1]).expect("three granules fit");
        assert_eq!(lease.bytes(), 3 * GRANULE as u64);
        assert!(
            pool.lease(&[GRANULE, GRANULE]).is_none(),
            "one granule left"
        );
        assert_eq!(
            pool.status().leased_bytes,
            3 * GRANULE as u64,
            "nothing half-taken"
        );
        let (ptr, len, taken) = lease.take(1).unwrap();
        assert_eq!(len, 2 * GRANULE);
        assert!(lease.take(1).is_none(), "out");
        // The memory is ours to write, locked and mapped.
        // SAFETY: the slot is lent to this test.
        unsafe { std::ptr::write_bytes(ptr.as_ptr(), 0xa5, len) };
        drop(lease);
        assert_eq!(
            pool.status().leased_bytes,
            3 * GRANULE as u64,
            "a buffer is out"
        );
        drop(taken);
        assert_eq!(pool.status().leased_bytes, 0);
        assert!(pool.lease(&[4 * GRANULE]).is_some(), "joined again");
    }

    #[test]
    fn a_dropped_buffer_can_be_taken_again_from_its_lease() {
        let Some(pool) = pool(1) else { return };
        let lease = pool.lease(&[100]).unwrap();
        drop(lease.take(0).unwrap());
        assert!(lease.take(0).is_some());
    }
}
