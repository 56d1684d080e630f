//! A partition's large vectors (a, b, c and the aux values) in the page-locked pool: the lease
//! is taken when the partition is admitted (before its synthesis, for the sizes its parameter
//! set gives), and every synthesis path takes its vectors from it ([`PoolBuffers`]). A vector
//! that does not fit its buffer, or a partition admitted with no lease (no pool, or the pool
//! full), is on the heap, with room for the whole vector from the start: counted as unpooled
//! (`cuzk_synthesis_buffer_bytes_total{place="heap"}`), which stays flat while the pool is
//! sized right.

use std::ptr::NonNull;

use blstrs::Scalar;

use crate::memory::{Lease, PinnedPool};
use crate::srs::Srs;
use crate::synth::{Buffers, Lent, Scalars, SizedHeap, Vector};

const SCALAR: usize = std::mem::size_of::<Scalar>();

/// Bytes of the pool buffers a partition of `srs`'s circuit takes, in [`Vector::ALL`]'s
/// order: a, b and c over the whole domain (the CPU backend transforms them in place), the aux
/// values.
pub fn pooled_sizes(srs: &Srs) -> [usize; 4] {
    let domain = (srs.h.len() + 1) * SCALAR;
    [domain, domain, domain, srs.l.len() * SCALAR]
}

/// A lease for one partition, or None (no pool, or no room in it now).
pub(super) fn lease(
    pool: Option<&std::sync::Arc<PinnedPool>>,
    sizes: &[usize; 4],
) -> Option<Lease> {
    let pool = pool?;
    let lease = pool.lease(sizes);
    if lease.is_none() {
        tracing::debug!(
            bytes = sizes.iter().sum::<usize>(),
            leased = pool.status().leased_bytes,
            locked = pool.status().locked_bytes,
            "no room in the page-locked pool: a partition's vectors go on the heap"
        );
    }
    lease
}

/// Vectors from a partition's lease; the heap where it has none that fits, with room for
/// the sizes the lease would have given.
pub struct PoolBuffers<'a> {
    lease: Option<&'a Lease>,
    heap: SizedHeap,
}

impl<'a> PoolBuffers<'a> {
    /// `lease`'s buffers, or heap vectors of `sizes` (bytes, as [`pooled_sizes`] gives them).
    pub fn new(lease: Option<&'a Lease>, sizes: &[usize; 4]) -> Self {
        PoolBuffers {
            lease,
            heap: SizedHeap(sizes.map(|bytes| bytes / SCALAR)),
        }
    }
}

impl Buffers for PoolBuffers<'_> {
    fn take(&self, vector: Vector, len: usize) -> Scalars {
        match self.lease.and_then(|lease| lease.take(vector.slot())) {
            Some((ptr, bytes, taken)) if bytes / SCALAR >= len => {
                let ptr: NonNull<Scalar> = ptr.cast();
                // SAFETY: the slot is granule-aligned memory of `bytes` bytes, lent to this
                // vector alone until `taken` (its owner) is dropped.
                Scalars::lent(unsafe { Lent::new(ptr, bytes / SCALAR, Box::new(taken)) })
            }
            _ => self.heap.take(vector, len),
        }
    }
}
