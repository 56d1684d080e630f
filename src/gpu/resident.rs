//! Device memory: the bases of parameter sets, and the matrices of PCEs, kept resident between
//! proofs, and room for every call's working memory.
//!
//! A query's bases are keyed by the set's file ([`SrsId`]) and the query's name, a PCE's
//! matrices by its [`crate::pce::Pce::id`]. As many stay as
//! fit while the working memory of the largest call (an h over the largest query's domain and an
//! MSM over its points) stays free; the least recently used go first. Every call first makes
//! room for its own working memory, letting resident bases go (never the ones it uses). A query
//! that cannot fit is uploaded for its call alone, as bases outside a parameter set always are.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

use blstrs::{G1Projective, G2Projective};
use cudarc::driver::{CudaSlice, DriverError};

use super::backend::{lock, words, GpuBackend};
use super::msm::{msm_working_bytes, GpuCurve};
use super::ntt::h_working_bytes;
use crate::srs::SrsId;

/// What resident words belong to: a parameter set, or a PCE.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Owner {
    Srs(SrsId),
    Pce(u64),
}

impl From<SrsId> for Owner {
    fn from(id: SrsId) -> Owner {
        Owner::Srs(id)
    }
}

/// A query of a parameter set (or a PCE's matrices), as the device keeps it.
pub(super) type BasesKey = (Owner, &'static str);

/// Device copies of parameter-set bases.
#[derive(Default)]
pub(super) struct Resident {
    entries: Vec<ResidentBases>,
    /// Counts lookups: the least recently used entry has the smallest `used`.
    clock: u64,
    /// Points of the largest query seen: the working memory kept free is sized from it.
    largest: usize,
    /// Extras let go for room: not made again (until the store is cleared), so that an extra
    /// whose room other work needs is not remade and let go at every call.
    given_up: Vec<BasesKey>,
}

struct ResidentBases {
    key: BasesKey,
    buf: Arc<CudaSlice<u32>>,
    bytes: usize,
    used: u64,
    /// Made from other resident words to speed a call up (a fixed-base table), not needed:
    /// kept only in free memory, and let go before anything else.
    extra: bool,
}

impl Resident {
    pub(super) fn clear(&mut self) {
        self.entries.clear();
        self.given_up.clear();
    }

    /// Notes that the entry under `key` was let go for room: an extra is not made again.
    fn let_go_for_room(&mut self, key: BasesKey, extra: bool) {
        if extra && !self.given_up.contains(&key) {
            self.given_up.push(key);
        }
    }

    /// Whether the extra under `key` may be made (it was never let go for room since the store
    /// was last cleared).
    fn may_make_extra(&self, key: BasesKey) -> bool {
        !self.given_up.contains(&key)
    }

    /// Lets every extra (fixed-base tables) go.
    pub(super) fn let_go_extras(&mut self) {
        self.entries.retain(|e| !e.extra);
    }

    /// Device bytes of the bases kept.
    pub(super) fn bytes(&self) -> usize {
        self.entries.iter().map(|e| e.bytes).sum()
    }
}

/// A resident entry as [`next_to_let_go`] weighs it.
struct Candidate<K> {
    key: K,
    /// When it was last used (the resident clock).
    used: u64,
    /// A call in flight holds it.
    held: bool,
    /// An extra (a fixed-base table): goes before any needed entry.
    extra: bool,
}

/// Which of the resident entries to let go next: an extra before anything needed, then the
/// least recently used; never `keep`, nor one a call in flight holds (letting those go would
/// free nothing until the call ends, and lose them for the next).
fn next_to_let_go<K: PartialEq>(
    entries: impl Iterator<Item = Candidate<K>>,
    keep: Option<K>,
) -> Option<usize> {
    entries
        .enumerate()
        .filter(|(_, c)| !c.held && keep.as_ref() != Some(&c.key))
        .min_by_key(|(_, c)| (!c.extra, c.used))
        .map(|(i, _)| i)
}

/// Device bytes kept free beside resident bases when the largest query has `points` points:
/// an h over its domain and an MSM over its points (one call runs at a time; the sum leaves
/// room for frees still in flight on the stream).
fn kept_free(points: usize) -> usize {
    let domain = (points + 1).next_power_of_two();
    let msm = msm_working_bytes::<G1Projective>(points, true)
        .max(msm_working_bytes::<G2Projective>(points, true));
    h_working_bytes(domain) + msm
}

impl GpuBackend {
    /// The device copy of `bases` (a whole query) under `key`, uploaded now if missing; None if
    /// bases are not kept (`keep_bases`) or cannot fit beside the working memory even after the
    /// other entries are let go.
    pub(super) fn resident<C: GpuCurve>(
        &self,
        key: BasesKey,
        bases: &[C::Affine],
    ) -> Result<Option<Arc<CudaSlice<u32>>>, DriverError> {
        let bytes = std::mem::size_of_val(bases);
        self.resident_words(key, bases.len(), bytes, || {
            self.upload(bases, words(bases).len())
        })
    }

    /// The device buffer under `key`, made by `upload` (`bytes` of it, for a query of `points`
    /// points or rows) if missing and it fits; None if nothing is kept (`keep_bases`) or it
    /// cannot fit beside the working memory even after the other entries are let go.
    pub(super) fn resident_words(
        &self,
        key: BasesKey,
        points: usize,
        bytes: usize,
        upload: impl FnOnce() -> Result<CudaSlice<u32>, DriverError>,
    ) -> Result<Option<Arc<CudaSlice<u32>>>, DriverError> {
        self.keep_resident(key, points, bytes, false, upload)
    }

    /// [`GpuBackend::resident_words`] for an extra, made from resident words to speed a call
    /// up (a fixed-base table): made only where it fits in the memory free now beside the
    /// working memory, never by letting anything go, and the first to go when room is needed;
    /// once let go, not made again (a table remade at every call would cost more than it
    /// saves: 0.41 s to make a 2^22 H table, 5 ms saved a proof).
    pub(super) fn resident_extra(
        &self,
        key: BasesKey,
        points: usize,
        bytes: usize,
        make: impl FnOnce() -> Result<CudaSlice<u32>, DriverError>,
    ) -> Result<Option<Arc<CudaSlice<u32>>>, DriverError> {
        self.keep_resident(key, points, bytes, true, make)
    }

    fn keep_resident(
        &self,
        key: BasesKey,
        points: usize,
        bytes: usize,
        extra: bool,
        upload: impl FnOnce() -> Result<CudaSlice<u32>, DriverError>,
    ) -> Result<Option<Arc<CudaSlice<u32>>>, DriverError> {
        if !self.keep_bases.load(Ordering::Relaxed) {
            return Ok(None);
        }
        let mut r = lock(&self.resident);
        r.clock += 1;
        let now = r.clock;
        if let Some(e) = r.entries.iter_mut().find(|e| e.key == key) {
            e.used = now;
            return Ok(Some(e.buf.clone()));
        }
        if extra && !r.may_make_extra(key) {
            return Ok(None);
        }
        r.largest = r.largest.max(points);
        let keep_free = kept_free(r.largest);
        if extra && self.spare_bytes()? < bytes + keep_free {
            tracing::debug!(
                gpu = self.info.ordinal,
                query = key.1,
                bytes,
                "not made: the device's free memory does not hold it beside the working memory"
            );
            return Ok(None);
        }
        if !self.make_room(&mut r, bytes + keep_free, None)? {
            tracing::info!(
                gpu = self.info.ordinal,
                query = key.1,
                bytes,
                "does not fit on the device beside the working memory: uploaded per call"
            );
            return Ok(None);
        }
        let clock = Instant::now();
        let buf = Arc::new(upload()?);
        let what = match (key.0, extra) {
            (Owner::Srs(_), false) => "bases",
            (Owner::Srs(_), true) => "table",
            (Owner::Pce(_), _) => "pce",
        };
        let how = if extra { "made" } else { "upload" };
        self.record(
            format!("{what} {} (resident).{how}", key.1),
            clock,
            bytes as u64,
        )?;
        tracing::info!(
            gpu = self.info.ordinal,
            query = key.1,
            bytes,
            "resident on the device"
        );
        r.entries.push(ResidentBases {
            key,
            buf: buf.clone(),
            bytes,
            used: now,
            extra,
        });
        Ok(Some(buf))
    }

    /// Lets resident bases go, least recently used first and never `keep` or bases a call in
    /// flight still holds, until `needed` bytes are free on the device; whether they are.
    fn make_room(
        &self,
        r: &mut Resident,
        needed: usize,
        keep: Option<BasesKey>,
    ) -> Result<bool, DriverError> {
        loop {
            let (free, _) = self.stream.context().mem_get_info()?;
            if free >= needed {
                return Ok(true);
            }
            // Memory our pool keeps for the next call counts as free: handed back, it is.
            if free + self.pool.idle_bytes()? >= needed {
                self.stream.synchronize()?;
                self.pool.release_idle()?;
                return Ok(true);
            }
            let candidates = r.entries.iter().map(|e| Candidate {
                key: e.key,
                used: e.used,
                held: Arc::strong_count(&e.buf) > 1,
                extra: e.extra,
            });
            let Some(lru) = next_to_let_go(candidates, keep) else {
                return Ok(false);
            };
            let gone = r.entries.swap_remove(lru);
            r.let_go_for_room(gone.key, gone.extra);
            tracing::info!(
                gpu = self.info.ordinal,
                query = gone.key.1,
                bytes = gone.bytes,
                free,
                needed,
                "resident bases let go for room"
            );
            drop(gone);
            // Frees are ordered on the stream: let them land before asking again.
            self.stream.synchronize()?;
        }
    }

    /// Device bytes a call can have without letting resident bases go: free, and idle in our
    /// pool.
    pub(super) fn spare_bytes(&self) -> Result<usize, DriverError> {
        let (free, _) = self.stream.context().mem_get_info()?;
        Ok(free + self.pool.idle_bytes()?)
    }

    /// Room for one call's working memory, the pool's idle memory handed back or resident bases
    /// (but `keep`) let go if needed. A call
    /// that still does not fit (another process holds the memory) fails at its allocation.
    pub(super) fn room_for_call(
        &self,
        needed: usize,
        keep: Option<BasesKey>,
    ) -> Result<(), DriverError> {
        let mut r = lock(&self.resident);
        self.make_room(&mut r, needed, keep).map(|_| ())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_memory_kept_free_grows_with_the_largest_query() {
        let small = kept_free(1 << 20);
        let large = kept_free(1 << 22);
        // Per point: three domain-sized vectors for h; an MSM's scalar, split and entries.
        assert!(
            large - small >= (3 * 32 + 72) * (3 << 20),
            "{small} {large}"
        );
        assert!(small > 256 << 20, "{small}");
    }

    fn candidates(entries: &[(u32, u64, bool, bool)]) -> impl Iterator<Item = Candidate<u32>> + '_ {
        entries.iter().map(|&(key, used, held, extra)| Candidate {
            key,
            used,
            held,
            extra,
        })
    }

    #[test]
    fn bases_let_go_are_the_least_recently_used_that_nothing_holds() {
        let entries = [
            (1, 5, false, false),
            (2, 3, true, false),
            (3, 4, false, false),
            (4, 9, false, false),
        ];
        // 2 is older but held by a call in flight.
        assert_eq!(next_to_let_go(candidates(&entries), None), Some(2));
        assert_eq!(next_to_let_go(candidates(&entries), Some(3)), Some(0));
        let held = [(1, 1, true, false), (2, 2, true, true)];
        assert_eq!(next_to_let_go(candidates(&held), None), None);
        assert_eq!(
            next_to_let_go(candidates(&[(7, 1, false, false)]), Some(7)),
            None
        );
    }

    #[test]
    fn an_extra_let_go_for_room_is_not_made_again_until_the_store_is_cleared() {
        let mut r = Resident::default();
        let id = crate::srs::SrsId::in_memory(1);
        let (table, bases) = ((Owner::Srs(id), "h windows"), (Owner::Srs(id), "h"));
        assert!(r.may_make_extra(table));
        // Needed bases let go come back at their next call; an extra does not.
        r.let_go_for_room(bases, false);
        assert!(r.may_make_extra(bases));
        r.let_go_for_room(table, true);
        r.let_go_for_room(table, true);
        assert!(!r.may_make_extra(table));
        assert_eq!(r.given_up.len(), 1);
        r.clear();
        assert!(r.may_make_extra(table));
    }

    #[test]
    fn an_extra_goes_before_any_needed_entry_however_recently_used() {
        let entries = [
            (1, 2, false, false),
            (2, 9, false, true),
            (3, 1, false, false),
            (4, 8, true, true),
        ];
        // 2 is the most recently used but an extra; 4 is an extra a call holds.
        assert_eq!(next_to_let_go(candidates(&entries), None), Some(1));
        assert_eq!(next_to_let_go(candidates(&entries), Some(2)), Some(2));
    }
}
