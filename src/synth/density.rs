//! Which variables a query touches, one bit per variable.
//!
//! bellperson leaves variables with no non-zero coefficient in A (resp. B) out of the A (resp. B)
//! bases, so a proof's MSMs walk the assignment and this bit set side by side.

/// A growable bit set with a running count of set bits.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Density {
    words: Vec<u64>,
    len: usize,
    ones: usize,
}

impl Density {
    pub fn new() -> Self {
        Self::default()
    }

    /// A density with `len` bits, all set: used for queries that cover every variable.
    pub fn full(len: usize) -> Self {
        let mut words = vec![u64::MAX; len.div_ceil(64)];
        if !len.is_multiple_of(64) {
            if let Some(last) = words.last_mut() {
                *last = (1u64 << (len % 64)) - 1;
            }
        }
        Self {
            words,
            len,
            ones: len,
        }
    }

    /// Appends one unset bit (a newly allocated variable).
    pub fn push(&mut self) {
        if self.len.is_multiple_of(64) {
            self.words.push(0);
        }
        self.len += 1;
    }

    /// Sets bit `index`; a bit already set stays counted once.
    pub fn set(&mut self, index: usize) {
        debug_assert!(index < self.len);
        let word = &mut self.words[index / 64];
        let mask = 1u64 << (index % 64);
        if *word & mask == 0 {
            *word |= mask;
            self.ones += 1;
        }
    }

    pub fn get(&self, index: usize) -> bool {
        index < self.len && self.words[index / 64] & (1u64 << (index % 64)) != 0
    }

    /// Number of variables (bits).
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Number of set bits: the length of the density-compressed bases.
    pub fn count(&self) -> usize {
        self.ones
    }

    /// Appends `other`'s bits, skipping its first `skip` bits.
    pub fn extend_from(&mut self, other: &Density, skip: usize) {
        for i in skip..other.len {
            self.push();
            if other.get(i) {
                let last = self.len - 1;
                self.set(last);
            }
        }
    }

    /// Iterates over the set bits' indices in increasing order.
    pub fn iter_ones(&self) -> impl Iterator<Item = usize> + '_ {
        self.words.iter().enumerate().flat_map(|(w, &bits)| {
            let mut bits = bits;
            std::iter::from_fn(move || {
                if bits == 0 {
                    return None;
                }
                let tz = bits.trailing_zeros() as usize;
                bits &= bits - 1;
                Some(w * 64 + tz)
            })
        })
    }

    /// The bits, 64 to a word, least significant first.
    pub fn words(&self) -> &[u64] {
        &self.words
    }

    /// A density of `len` bits from its words; None unless there are exactly enough words and
    /// the bits past `len` are clear.
    pub fn from_words(words: Vec<u64>, len: usize) -> Option<Density> {
        if words.len() != len.div_ceil(64) {
            return None;
        }
        if !len.is_multiple_of(64) && words.last().is_some_and(|w| w >> (len % 64) != 0) {
            return None;
        }
        let ones = words.iter().map(|w| w.count_ones() as usize).sum();
        Some(Density { words, len, ones })
    }

    /// Approximate heap bytes held.
    pub fn heap_bytes(&self) -> usize {
        self.words.capacity() * 8
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_each_bit_once_and_iterates_in_order() {
        let mut d = Density::new();
        for _ in 0..130 {
            d.push();
        }
        for i in [0, 3, 64, 3, 129, 128] {
            d.set(i);
        }
        assert_eq!(d.count(), 5);
        assert_eq!(d.iter_ones().collect::<Vec<_>>(), vec![0, 3, 64, 128, 129]);
        assert!(!d.get(1) && d.get(129) && !d.get(130));
    }

    #[test]
    fn full_density_sets_exactly_len_bits() {
        for len in [0, 1, 63, 64, 65, 200] {
            let d = Density::full(len);
            assert_eq!(d.count(), len);
            assert_eq!(d.iter_ones().count(), len);
        }
    }

    #[test]
    fn words_round_trip_and_stray_bits_are_refused() {
        let mut d = Density::new();
        for i in 0..70 {
            d.push();
            if i % 3 == 0 {
                d.set(i);
            }
        }
        assert_eq!(Density::from_words(d.words().to_vec(), 70), Some(d.clone()));
        assert_eq!(Density::from_words(d.words().to_vec(), 200), None);
        let mut stray = d.words().to_vec();
        stray[1] |= 1 << 10;
        assert_eq!(Density::from_words(stray, 70), None);
    }

    #[test]
    fn extend_skips_leading_bits() {
        let mut a = Density::new();
        a.push();
        a.set(0);
        let mut b = Density::new();
        for _ in 0..3 {
            b.push();
        }
        b.set(0);
        b.set(2);
        a.extend_from(&b, 1);
        assert_eq!(a.len(), 3);
        assert_eq!(a.iter_ones().collect::<Vec<_>>(), vec![0, 2]);
    }
}
