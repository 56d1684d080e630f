//! A witness kept as it is allocated: each value's 2-bit code (zero, one, or other) and the
//! other values listed with their index. Bits are most of a Filecoin witness (a 2 KiB PoRep's
//! aux values are about half zeros and half ones), so this holds a witness in a few percent of
//! its 32 bytes a value; a device expands it where the values are needed.

use blstrs::Scalar;
use ff::Field;
use rayon::prelude::*;

/// Codes of a value: 2 bits, 32 a word.
const ZERO: u64 = 0;
const ONE: u64 = 1;
const OTHER: u64 = 2;
const CODES_PER_WORD: usize = 32;

/// A witness as 2-bit codes plus the values that are neither 0 nor 1 with their indices (in
/// increasing index order).
#[derive(Clone, Debug)]
pub struct CompactWitness {
    codes: Vec<u64>,
    len: usize,
    ones: usize,
    /// Indices of the other values: a witness has fewer than 2^32 values (checked at push).
    other_index: Vec<u32>,
    other_value: Vec<Scalar>,
    /// The most other values it keeps; past them it keeps only their count (`overflowed`):
    /// a witness of a circuit whose proven bits bound them cannot satisfy it with more.
    most_others: usize,
    overflowed: usize,
}

/// The same values (whatever bound each was made under).
impl PartialEq for CompactWitness {
    fn eq(&self, other: &Self) -> bool {
        (self.len, self.ones, self.overflowed) == (other.len, other.ones, other.overflowed)
            && self.codes == other.codes
            && self.other_index == other.other_index
            && self.other_value == other.other_value
    }
}

impl Eq for CompactWitness {}

impl Default for CompactWitness {
    fn default() -> Self {
        CompactWitness {
            codes: Vec::new(),
            len: 0,
            ones: 0,
            other_index: Vec::new(),
            other_value: Vec::new(),
            most_others: usize::MAX,
            overflowed: 0,
        }
    }
}

impl CompactWitness {
    pub fn new() -> Self {
        Self::default()
    }

    /// Room for `len` values, of which a few percent are neither 0 nor 1.
    pub fn with_capacity(len: usize) -> Self {
        Self::bounded(len, usize::MAX)
    }

    /// Room for `len` values, of which at most `most_others` are kept neither 0 nor 1 (more
    /// are counted, not kept: see [`CompactWitness::overflowed`]).
    pub fn bounded(len: usize, most_others: usize) -> Self {
        let others = (len / 32).min(most_others);
        CompactWitness {
            codes: Vec::with_capacity(len.div_ceil(CODES_PER_WORD)),
            other_index: Vec::with_capacity(others),
            other_value: Vec::with_capacity(others),
            most_others,
            ..Self::default()
        }
    }

    /// The most resident bytes a witness of `len` values, `most_others` of them at most
    /// neither 0 nor 1, takes while it is made: each list of other values copied once as it
    /// grows or is shrunk to fit (the old and the new copy both touched for a moment).
    pub fn most_bytes(len: usize, most_others: usize) -> usize {
        len.div_ceil(CODES_PER_WORD) * 8
            + 2 * most_others.min(len) * (4 + std::mem::size_of::<Scalar>())
    }

    /// Other values pushed past the bound, and not kept: a witness with any is incomplete.
    pub fn overflowed(&self) -> usize {
        self.overflowed
    }

    /// Appends one value.
    ///
    /// # Panics
    /// At the 2^32-th value: no circuit we prove comes near (a 32 GiB PoRep partition has
    /// 1.3·10^8), and the indices are 32-bit for the device.
    pub fn push(&mut self, value: Scalar) {
        let index = u32::try_from(self.len).expect("a witness of fewer than 2^32 values");
        let code = if value == Scalar::ZERO {
            ZERO
        } else if value == Scalar::ONE {
            self.ones += 1;
            ONE
        } else {
            if self.other_index.len() < self.most_others {
                self.other_index.push(index);
                self.other_value.push(value);
            } else {
                self.overflowed += 1;
            }
            OTHER
        };
        let slot = self.len % CODES_PER_WORD;
        if slot == 0 {
            self.codes.push(0);
        }
        *self.codes.last_mut().expect("pushed above") |= code << (2 * slot);
        self.len += 1;
    }

    /// Appends every value of `other`.
    pub fn extend_from(&mut self, other: &CompactWitness) {
        self.extend_from_first(other, other.len);
    }

    /// Appends the first `n` values of `other` (all of them where it has fewer).
    ///
    /// # Panics
    /// If `other` is incomplete ([`CompactWitness::overflowed`]).
    pub fn extend_from_first(&mut self, other: &CompactWitness, n: usize) {
        assert_eq!(other.overflowed, 0, "an incomplete witness is not copied");
        // Its other values come in index order: walk them beside the codes.
        let mut others = other.other_value.iter();
        for i in 0..n.min(other.len) {
            self.push(match other.code(i) {
                ZERO => Scalar::ZERO,
                ONE => Scalar::ONE,
                _ => *others.next().expect("every value coded other is listed"),
            });
        }
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    fn code(&self, index: usize) -> u64 {
        (self.codes[index / CODES_PER_WORD] >> (2 * (index % CODES_PER_WORD))) & 3
    }

    /// Value `index` (< len).
    pub fn get(&self, index: usize) -> Scalar {
        assert!(
            index < self.len,
            "value {index} of a witness of {}",
            self.len
        );
        match self.code(index) {
            ZERO => Scalar::ZERO,
            ONE => Scalar::ONE,
            _ => {
                let k = self
                    .other_index
                    .binary_search(&(index as u32))
                    .expect("every value coded other is listed");
                self.other_value[k]
            }
        }
    }

    /// Gives back the room reserved and not used (the other values' lists are reserved for a
    /// few percent of the values up front).
    pub fn shrink_to_fit(&mut self) {
        self.codes.shrink_to_fit();
        self.other_index.shrink_to_fit();
        self.other_value.shrink_to_fit();
    }

    /// (zeros, ones, others).
    pub fn counts(&self) -> (usize, usize, usize) {
        let others = self.other_index.len() + self.overflowed;
        (self.len - self.ones - others, self.ones, others)
    }

    /// The 2-bit codes, 32 a word (value i at bits 2(i mod 32) of word i / 32: 0 zero, 1 one,
    /// 2 other), and the other values with their indices: what a device expands.
    pub fn parts(&self) -> (&[u64], &[u32], &[Scalar]) {
        (&self.codes, &self.other_index, &self.other_value)
    }

    /// The witness as 32-byte values, expanded on every core.
    pub fn expand(&self) -> Vec<Scalar> {
        let mut out = vec![Scalar::ZERO; self.len];
        self.expand_into(&mut out);
        out
    }

    /// The witness as 32-byte values into `out` (as long as the witness), on every core.
    pub fn expand_into(&self, out: &mut [Scalar]) {
        assert_eq!(
            out.len(),
            self.len,
            "expanded into a slice of another length"
        );
        out.par_chunks_mut(CODES_PER_WORD)
            .zip(&self.codes)
            .for_each(|(values, &word)| {
                for (slot, v) in values.iter_mut().enumerate() {
                    *v = match (word >> (2 * slot)) & 3 {
                        ONE => Scalar::ONE,
                        _ => Scalar::ZERO,
                    };
                }
            });
        for (&i, &v) in self.other_index.iter().zip(&self.other_value) {
            out[i as usize] = v;
        }
    }

    /// Appends the values at `indices` (increasing) to `out`: one walk of the codes and the
    /// other values' list.
    pub fn gather_into(&self, indices: impl Iterator<Item = usize>, out: &mut Vec<Scalar>) {
        let mut k = 0;
        for i in indices {
            out.push(match self.code(i) {
                ZERO => Scalar::ZERO,
                ONE => Scalar::ONE,
                _ => {
                    while self.other_index[k] < i as u32 {
                        k += 1;
                    }
                    self.other_value[k]
                }
            });
        }
    }

    /// Heap bytes held.
    pub fn heap_bytes(&self) -> usize {
        self.codes.capacity() * 8
            + self.other_index.capacity() * 4
            + self.other_value.capacity() * std::mem::size_of::<Scalar>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    fn mixed(n: usize, seed: u64) -> Vec<Scalar> {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        (0..n)
            .map(|_| match rng.gen_range(0..100) {
                0..=50 => Scalar::ZERO,
                51..=97 => Scalar::ONE,
                _ => Scalar::random(&mut rng),
            })
            .collect()
    }

    fn compact(values: &[Scalar]) -> CompactWitness {
        let mut w = CompactWitness::with_capacity(values.len());
        for &v in values {
            w.push(v);
        }
        w
    }

    #[test]
    fn every_value_comes_back_by_index_and_expanded() {
        for n in [0, 1, 31, 32, 33, 1000, 4099] {
            let values = mixed(n, n as u64);
            let w = compact(&values);
            assert_eq!(w.len(), n);
            assert_eq!(w.expand(), values, "{n}");
            for (i, v) in values.iter().enumerate() {
                assert_eq!(w.get(i), *v, "{n}: value {i}");
            }
            let zeros = values.iter().filter(|v| **v == Scalar::ZERO).count();
            let ones = values.iter().filter(|v| **v == Scalar::ONE).count();
            assert_eq!(w.counts(), (zeros, ones, n - zeros - ones));
        }
    }

    #[test]
    fn gathering_by_increasing_index_and_expanding_over_old_values_give_the_values() {
        let values = mixed(1000, 9);
        let w = compact(&values);
        let picked: Vec<usize> = (0..1000).filter(|i| i % 3 != 1).collect();
        let mut out = vec![Scalar::from(5u64)];
        w.gather_into(picked.iter().copied(), &mut out);
        let want: Vec<Scalar> = std::iter::once(Scalar::from(5u64))
            .chain(picked.iter().map(|&i| values[i]))
            .collect();
        assert_eq!(out, want);
        let mut dirty = vec![Scalar::from(7u64); 1000];
        w.expand_into(&mut dirty);
        assert_eq!(dirty, values);
    }

    #[test]
    fn the_codes_are_laid_out_as_documented() {
        let two = Scalar::from(2u64);
        let w = compact(&[Scalar::ONE, Scalar::ZERO, two, Scalar::ONE]);
        let (codes, index, value) = w.parts();
        assert_eq!(codes, &[0b01_10_00_01]);
        assert_eq!((index, value), (&[2u32][..], &[two][..]));
    }

    #[test]
    fn extending_appends_in_order() {
        let (x, y) = (mixed(45, 1), mixed(70, 2));
        let mut w = compact(&x);
        w.extend_from(&compact(&y));
        let both: Vec<Scalar> = x.into_iter().chain(y).collect();
        assert_eq!(w, compact(&both));
    }

    #[test]
    fn a_bit_heavy_witness_takes_a_few_percent_of_its_dense_size() {
        let n = 1 << 16;
        let w = compact(&mixed(n, 3));
        let dense = n * std::mem::size_of::<Scalar>();
        // 2 bits a value and 36 bytes for each of the ~2% others: under 1/10 of 32 bytes a value.
        assert!(w.heap_bytes() * 10 < dense, "{} of {dense}", w.heap_bytes());
    }
}
