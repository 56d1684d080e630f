//! The large vectors of a [`super::SynthesizedProof`] (a, b, c and the aux values), on the heap
//! or in memory lent by an owner outside this module: a buffer of the page-locked pool, which a
//! device reads at full link speed and which was counted before it was handed out.
//! [`Buffers`] is how a synthesis asks for them; [`Heap`] gives plain vectors.

use std::mem::MaybeUninit;
use std::ops::{Deref, DerefMut};
use std::ptr::NonNull;

use blstrs::Scalar;

const SCALAR: usize = std::mem::size_of::<Scalar>();

/// Memory lent for scalars: room for `capacity` of them at `ptr`, ours alone until this value
/// is dropped, when `owner` (which gives the memory back) is dropped.
pub struct Lent {
    ptr: NonNull<Scalar>,
    capacity: usize,
    _owner: Box<dyn Send + Sync>,
}

impl Lent {
    /// # Safety
    /// `ptr` is aligned for `Scalar`, valid for reads and writes of `capacity` scalars, and used
    /// by nothing else until `owner` is dropped (after this value is done with it).
    pub unsafe fn new(ptr: NonNull<Scalar>, capacity: usize, owner: Box<dyn Send + Sync>) -> Lent {
        Lent {
            ptr,
            capacity,
            _owner: owner,
        }
    }

    pub fn capacity(&self) -> usize {
        self.capacity
    }
}

enum Repr {
    Heap(Vec<Scalar>),
    /// The first `len` scalars of `lent` are initialized.
    Lent {
        lent: Lent,
        len: usize,
    },
}

/// A vector of scalars. Lent memory has a fixed capacity: a push or resize past it moves the
/// values to the heap ([`Scalars::is_lent`] then says false), so a size misjudged upstream
/// costs a copy, never a wrong result.
pub struct Scalars(Repr);

// SAFETY: a `Lent` buffer is owned exclusively by this value (as a Vec owns its allocation),
// and its owner is Send + Sync.
unsafe impl Send for Scalars {}
unsafe impl Sync for Scalars {}

impl Scalars {
    pub fn new() -> Scalars {
        Scalars(Repr::Heap(Vec::new()))
    }

    /// An empty vector in `lent`.
    pub fn lent(lent: Lent) -> Scalars {
        Scalars(Repr::Lent { lent, len: 0 })
    }

    /// Whether the values are in lent memory (not on the heap).
    pub fn is_lent(&self) -> bool {
        matches!(self.0, Repr::Lent { .. })
    }

    pub fn len(&self) -> usize {
        match &self.0 {
            Repr::Heap(v) => v.len(),
            Repr::Lent { len, .. } => *len,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn capacity(&self) -> usize {
        match &self.0 {
            Repr::Heap(v) => v.capacity(),
            Repr::Lent { lent, .. } => lent.capacity,
        }
    }

    /// Bytes held on the heap (none for lent memory).
    pub fn heap_bytes(&self) -> usize {
        match &self.0 {
            Repr::Heap(v) => v.capacity() * SCALAR,
            Repr::Lent { .. } => 0,
        }
    }

    /// Bytes of lent memory held (none on the heap).
    pub fn lent_bytes(&self) -> usize {
        match &self.0 {
            Repr::Heap(_) => 0,
            Repr::Lent { lent, .. } => lent.capacity * SCALAR,
        }
    }

    /// Makes room for `additional` more values: in place if they fit, else by moving to the
    /// heap.
    pub fn reserve(&mut self, additional: usize) {
        match &mut self.0 {
            Repr::Heap(v) => v.reserve(additional),
            Repr::Lent { lent, len } => {
                let (len, capacity) = (*len, lent.capacity);
                if len + additional > capacity {
                    let mut v = Vec::with_capacity((len + additional).max(2 * capacity));
                    v.extend_from_slice(&self[..]);
                    // The lent memory is given back here.
                    self.0 = Repr::Heap(v);
                }
            }
        }
    }

    pub fn push(&mut self, value: Scalar) {
        self.reserve(1);
        match &mut self.0 {
            Repr::Heap(v) => v.push(value),
            Repr::Lent { lent, len } => {
                // SAFETY: `reserve` left room for one more.
                unsafe { lent.ptr.as_ptr().add(*len).write(value) };
                *len += 1;
            }
        }
    }

    pub fn extend_from_slice(&mut self, values: &[Scalar]) {
        self.reserve(values.len());
        let len = self.len();
        // SAFETY: `reserve` left room for `values`; they are written before the length grows.
        unsafe {
            let spare = self.spare_capacity_mut();
            std::ptr::copy_nonoverlapping(values.as_ptr(), spare.as_mut_ptr().cast(), values.len());
            self.set_len(len + values.len());
        }
    }

    /// Resizes to `new_len`, filling with `value`.
    pub fn resize(&mut self, new_len: usize, value: Scalar) {
        let len = self.len();
        if new_len <= len {
            self.truncate(new_len);
            return;
        }
        self.reserve(new_len - len);
        for slot in &mut self.spare_capacity_mut()[..new_len - len] {
            slot.write(value);
        }
        // SAFETY: the values up to `new_len` were just written.
        unsafe { self.set_len(new_len) };
    }

    pub fn truncate(&mut self, new_len: usize) {
        match &mut self.0 {
            Repr::Heap(v) => v.truncate(new_len),
            Repr::Lent { len, .. } => *len = (*len).min(new_len),
        }
    }

    /// The room past the values, to be written before [`Scalars::set_len`].
    pub fn spare_capacity_mut(&mut self) -> &mut [MaybeUninit<Scalar>] {
        match &mut self.0 {
            Repr::Heap(v) => v.spare_capacity_mut(),
            Repr::Lent { lent, len } => {
                // SAFETY: the lent memory holds `capacity` scalars; those past `len` are ours
                // to write.
                unsafe {
                    std::slice::from_raw_parts_mut(
                        lent.ptr.as_ptr().add(*len).cast(),
                        lent.capacity - *len,
                    )
                }
            }
        }
    }

    /// # Safety
    /// `new_len` is at most the capacity and the values up to it are initialized.
    pub unsafe fn set_len(&mut self, new_len: usize) {
        match &mut self.0 {
            Repr::Heap(v) => unsafe { v.set_len(new_len) },
            Repr::Lent { len, .. } => *len = new_len,
        }
    }

    /// The values as a `Vec` (a copy when they are in lent memory).
    pub fn into_vec(self) -> Vec<Scalar> {
        match self.0 {
            Repr::Heap(v) => v,
            Repr::Lent { .. } => self.to_vec(),
        }
    }
}

impl Default for Scalars {
    fn default() -> Self {
        Scalars::new()
    }
}

impl From<Vec<Scalar>> for Scalars {
    fn from(v: Vec<Scalar>) -> Self {
        Scalars(Repr::Heap(v))
    }
}

impl Deref for Scalars {
    type Target = [Scalar];

    fn deref(&self) -> &[Scalar] {
        match &self.0 {
            Repr::Heap(v) => v,
            // SAFETY: the first `len` scalars are initialized.
            Repr::Lent { lent, len } => unsafe {
                std::slice::from_raw_parts(lent.ptr.as_ptr(), *len)
            },
        }
    }
}

impl DerefMut for Scalars {
    fn deref_mut(&mut self) -> &mut [Scalar] {
        match &mut self.0 {
            Repr::Heap(v) => v,
            // SAFETY: as in `deref`, and the memory is ours alone.
            Repr::Lent { lent, len } => unsafe {
                std::slice::from_raw_parts_mut(lent.ptr.as_ptr(), *len)
            },
        }
    }
}

/// A copy is on the heap.
impl Clone for Scalars {
    fn clone(&self) -> Self {
        Scalars::from(self.to_vec())
    }
}

/// Equal values, wherever they are.
impl PartialEq for Scalars {
    fn eq(&self, other: &Self) -> bool {
        self[..] == other[..]
    }
}

impl std::fmt::Debug for Scalars {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let place = if self.is_lent() { "lent" } else { "heap" };
        write!(f, "Scalars({} on the {place})", self.len())
    }
}

/// A synthesis's large vectors.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Vector {
    /// A·z, B·z, C·z: one value per constraint, room for the whole domain.
    A,
    B,
    C,
    /// The aux values.
    Aux,
}

impl Vector {
    pub const ALL: [Vector; 4] = [Vector::A, Vector::B, Vector::C, Vector::Aux];

    /// Its place in [`Vector::ALL`].
    pub fn slot(self) -> usize {
        self as usize
    }
}

/// Where a synthesis puts its large vectors.
pub trait Buffers: Sync {
    /// An empty vector for `vector`, with room for at least `len` values where the synthesis
    /// knows its size (0 where it does not: the buffer's own room then).
    fn take(&self, vector: Vector, len: usize) -> Scalars;
}

/// Plain heap vectors.
pub struct Heap;

impl Buffers for Heap {
    fn take(&self, _: Vector, len: usize) -> Scalars {
        Scalars::from(Vec::with_capacity(len))
    }
}

/// Heap vectors with room from the start for a circuit's whole vectors (values per vector, in
/// [`Vector::ALL`] order: its shape gives them), even where the synthesis does not know its
/// size: they never grow by copying, so a synthesis touches no more than it keeps.
pub struct SizedHeap(pub [usize; 4]);

impl Buffers for SizedHeap {
    fn take(&self, vector: Vector, len: usize) -> Scalars {
        Scalars::from(Vec::with_capacity(len.max(self.0[vector.slot()])))
    }
}

/// Lent memory for tests where no page-locked pool can exist: each vector lent from a Vec of
/// its own, counted while it is out.
#[cfg(test)]
pub(crate) mod testing {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    /// Memory lent from a Vec; `returned` counts it when it is given back.
    pub(crate) fn lent(capacity: usize, returned: &Arc<AtomicUsize>) -> Scalars {
        struct Owner(#[allow(dead_code)] Vec<Scalar>, Arc<AtomicUsize>);
        impl Drop for Owner {
            fn drop(&mut self) {
                self.1.fetch_add(1, Ordering::SeqCst);
            }
        }
        let mut v = Vec::with_capacity(capacity);
        let ptr = NonNull::new(v.as_mut_ptr()).unwrap();
        // SAFETY: the Vec's allocation lives in the owner, untouched by anything else.
        Scalars::lent(unsafe { Lent::new(ptr, capacity, Box::new(Owner(v, returned.clone()))) })
    }

    /// Lends every vector asked for, with room for `room` values at least; counts loans.
    #[derive(Default)]
    pub(crate) struct VecLender {
        pub(crate) room: usize,
        pub(crate) lent: AtomicUsize,
        pub(crate) returned: Arc<AtomicUsize>,
    }

    impl Buffers for VecLender {
        fn take(&self, _: Vector, len: usize) -> Scalars {
            self.lent.fetch_add(1, Ordering::SeqCst);
            lent(len.max(self.room), &self.returned)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::testing::lent;
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    fn values(n: u64) -> Vec<Scalar> {
        (0..n).map(Scalar::from).collect()
    }

    #[test]
    fn lent_memory_holds_the_values_and_is_given_back_once() {
        let returned = Arc::new(AtomicUsize::new(0));
        let mut s = lent(8, &returned);
        s.push(Scalar::from(7));
        s.extend_from_slice(&values(3));
        assert!(s.is_lent());
        assert_eq!(s[..], [Scalar::from(7), 0.into(), 1.into(), 2.into()]);
        s.resize(8, Scalar::from(9));
        assert!(s.is_lent());
        assert_eq!((s.len(), s[7]), (8, Scalar::from(9)));
        assert_eq!((s.lent_bytes(), s.heap_bytes()), (8 * SCALAR, 0));
        s.truncate(2);
        assert_eq!(s.len(), 2);
        assert_eq!(s.clone().into_vec(), s.to_vec());
        drop(s);
        assert_eq!(returned.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn growing_past_lent_memory_moves_to_the_heap_with_the_values() {
        for grow in [0, 1, 2] {
            let returned = Arc::new(AtomicUsize::new(0));
            let mut s = lent(4, &returned);
            s.extend_from_slice(&values(3));
            match grow {
                0 => (0..3).for_each(|i| s.push(Scalar::from(3 + i))),
                1 => s.extend_from_slice(&values(6)[3..]),
                _ => s.resize(6, Scalar::from(1)),
            }
            assert!(!s.is_lent(), "{grow}");
            assert_eq!(returned.load(Ordering::SeqCst), 1, "given back at the move");
            assert_eq!(s.len(), 6);
            assert_eq!(s[..3], values(3)[..], "{grow}");
            assert!(s.heap_bytes() >= 6 * SCALAR);
        }
    }

    #[test]
    fn heap_vectors_behave_as_vecs() {
        let mut s = Heap.take(Vector::A, 3);
        assert!(!s.is_lent() && s.capacity() >= 3 && s.is_empty());
        s.extend_from_slice(&values(5));
        s.resize(7, Scalar::from(1));
        assert_eq!(s.into_vec()[..5], values(5)[..]);
        assert_eq!(Scalars::from(values(2)), Scalars::from(values(2)));
    }
}
