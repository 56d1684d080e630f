//! Which aux variables every satisfying witness holds at 0 or 1, read from the matrices alone.
//!
//! A row of the form x·(1 − x) = 0 makes x a bit. A row whose one variable not yet known to be
//! a bit appears linearly (a·b = c with it in one factor or in c) determines it from the rest:
//! where the rest are bits, every assignment of them is tried (at most [`MOST_BITS`]) and the
//! variable is a bit when the row gives it 0 or 1 in each. The rows are read in order, again
//! until nothing changes: bits feed the rows after them (SHA-256's XOR and AND outputs, the
//! carries of its additions).
//!
//! What this is for: a compact witness stores a value that is neither 0 nor 1 in 36 bytes and
//! a bit in 2 bits, so the number of aux variables not proved bits bounds what a partition's
//! witness can take. A witness that breaks the bound does not satisfy the circuit (the
//! synthesis refuses it and the full path, which checks every row, says why).

use ff::Field;

use super::{MatrixRef, Pce, INPUT_COLUMN};
use blstrs::Scalar;

/// The most bits one row's determination enumerates (2^MOST_BITS assignments).
pub const MOST_BITS: usize = 6;

/// Passes over the rows at most: each finds the bits whose rows come before the rows that use
/// them; the circuits we prove settle in two.
const MOST_PASSES: usize = 8;

/// A set of aux variables.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AuxSet {
    words: Vec<u64>,
    len: usize,
}

impl AuxSet {
    pub fn contains(&self, i: usize) -> bool {
        self.words[i / 64] >> (i % 64) & 1 == 1
    }

    /// How many variables are in the set.
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

/// A variable of a row: the constant ONE (input 0), another input, or an aux variable.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Var {
    One,
    Input,
    Aux(usize),
}

fn var(col: u32) -> Var {
    match col {
        c if c == INPUT_COLUMN => Var::One,
        c if c & INPUT_COLUMN != 0 => Var::Input,
        c => Var::Aux(c as usize),
    }
}

/// The aux variables of `pce` that are 0 or 1 in every witness that satisfies it. The rows
/// are read in parallel blocks, each in order; a pass finds what the rows after a bit's own
/// row make of it within a block, the next pass what other blocks make of it, until a pass
/// finds nothing (the result is the same whatever the blocks: a row proves its variable from
/// the bits it reads alone).
pub fn proven_bits(pce: &Pce) -> AuxSet {
    use rayon::prelude::*;
    use std::sync::atomic::{AtomicU64, Ordering};
    const ROWS_PER_TASK: usize = 1 << 16;
    let matrices = [0, 1, 2].map(|m| pce.matrix(m));
    let coefficients = pce.coefficients();
    let rows = pce.shape().constraints;
    let words: Vec<AtomicU64> = (0..pce.shape().aux.div_ceil(64))
        .map(|_| AtomicU64::new(0))
        .collect();
    let known = |i: usize| words[i / 64].load(Ordering::Relaxed) >> (i % 64) & 1 == 1;
    let mut len = 0;
    for _ in 0..MOST_PASSES {
        let found: usize = (0..rows.div_ceil(ROWS_PER_TASK))
            .into_par_iter()
            .map(|task| {
                let mut row = Row::default();
                let mut found = 0;
                for r in task * ROWS_PER_TASK..rows.min((task + 1) * ROWS_PER_TASK) {
                    row.read(&matrices, coefficients, r);
                    let Some(x) = row.makes_a_bit(&known) else {
                        continue;
                    };
                    let bit = 1u64 << (x % 64);
                    found += (words[x / 64].fetch_or(bit, Ordering::Relaxed) & bit == 0) as usize;
                }
                found
            })
            .sum();
        len += found;
        if found == 0 {
            break;
        }
    }
    AuxSet {
        words: words.into_iter().map(AtomicU64::into_inner).collect(),
        len,
    }
}

/// One row's three linear combinations, as (variable, coefficient) terms.
#[derive(Default)]
struct Row {
    terms: [Vec<(Var, Scalar)>; 3],
    /// The distinct bits the row reads, and its one unknown.
    known: Vec<usize>,
}

impl Row {
    fn read(&mut self, matrices: &[MatrixRef<'_>; 3], coefficients: &[Scalar], r: usize) {
        for (terms, m) in self.terms.iter_mut().zip(matrices) {
            let span = m.row_ptr[r] as usize..m.row_ptr[r + 1] as usize;
            terms.clear();
            terms.extend(
                m.cols[span.clone()]
                    .iter()
                    .zip(&m.coeffs[span])
                    .map(|(&c, &k)| (var(c), coefficients[k as usize])),
            );
        }
    }

    /// The aux variable this row proves a bit, given the bits `known`: its one variable not known
    /// (no input but ONE), 0 or 1 under every assignment of the bits it reads.
    fn makes_a_bit(&mut self, known: &impl Fn(usize) -> bool) -> Option<usize> {
        let mut unknown = None;
        self.known.clear();
        for &(v, _) in self.terms.iter().flatten() {
            match v {
                Var::One => {}
                Var::Input => return None,
                Var::Aux(i) if known(i) => {
                    if !self.known.contains(&i) {
                        self.known.push(i);
                    }
                }
                Var::Aux(i) => match unknown {
                    None => unknown = Some(i),
                    Some(u) if u == i => {}
                    Some(_) => return None,
                },
            }
        }
        let u = unknown?;
        if self.known.len() > MOST_BITS {
            return None;
        }
        let values = |assignment: usize| {
            self.terms.each_ref().map(|terms| {
                // (the unknown's coefficient, the rest's value)
                terms
                    .iter()
                    .fold((Scalar::ZERO, Scalar::ZERO), |(k, rest), &(v, c)| match v {
                        Var::Aux(i) if i == u => (k + c, rest),
                        Var::Aux(i) => {
                            let b = self.known.iter().position(|&j| j == i).expect("a bit");
                            match assignment >> b & 1 {
                                1 => (k, rest + c),
                                _ => (k, rest),
                            }
                        }
                        _ => (k, rest + c),
                    })
            })
        };
        let always = (0..1usize << self.known.len()).all(|assignment| {
            let [(a_u, a), (b_u, b), (c_u, c)] = values(assignment);
            // (a_u·u + a)(b_u·u + b) = c_u·u + c, as α·u² + β·u + γ = 0.
            let (alpha, beta, gamma) = (a_u * b_u, a_u * b + b_u * a - c_u, a * b - c);
            roots_are_bits(alpha, beta, gamma)
        });
        always.then_some(u)
    }
}

/// Whether α·u² + β·u + γ = 0 holds for some u and only for u in {0, 1}.
fn roots_are_bits(alpha: Scalar, beta: Scalar, gamma: Scalar) -> bool {
    if alpha == Scalar::ZERO {
        // β·u + γ = 0: one root, -γ/β.
        return beta != Scalar::ZERO && (gamma == Scalar::ZERO || gamma == -beta);
    }
    // α·u·(u − 1), α·u² or α·(u − 1)².
    (gamma == Scalar::ZERO && (beta == -alpha || beta == Scalar::ZERO))
        || (beta == -alpha.double() && gamma == alpha)
}

#[cfg(test)]
mod tests {
    use super::*;
    use bellperson::gadgets::boolean::{AllocatedBit, Boolean};
    use bellperson::gadgets::num::AllocatedNum;
    use bellperson::gadgets::sha256::sha256;
    use bellperson::{Circuit, ConstraintSystem, SynthesisError};

    fn bits_of<C: Circuit<Scalar>>(circuit: C) -> (AuxSet, usize) {
        let pce = crate::pce::record(circuit).expect("records");
        (proven_bits(&pce), pce.shape().aux)
    }

    #[test]
    fn roots_in_zero_and_one_only() {
        let (one, two) = (Scalar::ONE, Scalar::ONE.double());
        // u(u - 1), u², (u - 1)², u - 1, u, 2u - 2
        assert!(roots_are_bits(one, -one, Scalar::ZERO));
        assert!(roots_are_bits(one, Scalar::ZERO, Scalar::ZERO));
        assert!(roots_are_bits(one, -two, one));
        assert!(roots_are_bits(Scalar::ZERO, one, -one));
        assert!(roots_are_bits(Scalar::ZERO, one, Scalar::ZERO));
        assert!(roots_are_bits(Scalar::ZERO, two, -two));
        // u - 2, u(u - 2), 0 = 0 (any u), 0 = 1 (none)
        assert!(!roots_are_bits(Scalar::ZERO, one, -two));
        assert!(!roots_are_bits(one, -two, Scalar::ZERO));
        assert!(!roots_are_bits(Scalar::ZERO, Scalar::ZERO, Scalar::ZERO));
        assert!(!roots_are_bits(Scalar::ZERO, Scalar::ZERO, one));
    }

    /// Bits, their XOR and AND, a number packed from bits, and a free number: the bits and
    /// what the rows make of them are proven, the numbers are not.
    struct Mixed;
    impl Circuit<Scalar> for Mixed {
        fn synthesize<CS: ConstraintSystem<Scalar>>(
            self,
            cs: &mut CS,
        ) -> Result<(), SynthesisError> {
            let a = AllocatedBit::alloc(cs.namespace(|| "a"), Some(true))?;
            let b = AllocatedBit::alloc(cs.namespace(|| "b"), Some(false))?;
            AllocatedBit::xor(cs.namespace(|| "xor"), &a, &b)?;
            AllocatedBit::and(cs.namespace(|| "and"), &a, &b)?;
            AllocatedBit::and_not(cs.namespace(|| "and not"), &a, &b)?;
            AllocatedBit::nor(cs.namespace(|| "nor"), &a, &b)?;
            // A number equal to 2a + b: determined by bits, but 2 is not a bit.
            let n = AllocatedNum::alloc(cs.namespace(|| "n"), || Ok(Scalar::from(2)))?;
            cs.enforce(
                || "n = 2a + b",
                |lc| lc + a.get_variable() + a.get_variable() + b.get_variable(),
                |lc| lc + CS::one(),
                |lc| lc + n.get_variable(),
            );
            AllocatedNum::alloc(cs.namespace(|| "free"), || Ok(Scalar::from(7)))?;
            Ok(())
        }
    }

    #[test]
    fn bits_and_what_rows_make_of_them_are_proven_numbers_are_not() {
        let (bits, aux) = bits_of(Mixed);
        assert_eq!(aux, 8);
        assert_eq!(
            (0..aux).filter(|&i| bits.contains(i)).collect::<Vec<_>>(),
            [0, 1, 2, 3, 4, 5]
        );
        assert_eq!(bits.len(), 6);
    }

    /// SHA-256 of 512 bits: every message bit is allocated as a bit; every variable the
    /// gadget makes is a bit or an addition's packed sum, none of which the analysis may
    /// call a bit, and the bits it misses are counted.
    struct Sha;
    impl Circuit<Scalar> for Sha {
        fn synthesize<CS: ConstraintSystem<Scalar>>(
            self,
            cs: &mut CS,
        ) -> Result<(), SynthesisError> {
            let input = (0..512)
                .map(|i| {
                    AllocatedBit::alloc(cs.namespace(|| format!("m{i}")), Some(i % 3 == 0))
                        .map(Boolean::from)
                })
                .collect::<Result<Vec<_>, _>>()?;
            sha256(cs.namespace(|| "sha"), &input)?;
            Ok(())
        }
    }

    #[test]
    fn sha256s_variables_are_all_proven_bits_but_its_sums() {
        let pce = crate::pce::record(Sha).expect("records");
        let (bits, aux) = (proven_bits(&pce), pce.shape().aux);
        // Every proven bit is 0 or 1 in the real witness.
        let (_, values) = pce.witness(Sha).expect("a witness");
        assert_eq!(values.len(), aux);
        for i in 0..aux {
            if bits.contains(i) {
                assert!(
                    values[i] == Scalar::ZERO || values[i] == Scalar::ONE,
                    "aux {i}"
                );
            }
        }
        let others = values
            .iter()
            .filter(|v| **v != Scalar::ZERO && **v != Scalar::ONE)
            .count();
        eprintln!(
            "sha256: {aux} aux, {} proven bits, {others} others in the witness",
            bits.len()
        );
        assert!(aux - bits.len() >= others);
        assert!(bits.len() * 100 >= aux * 90, "{} of {aux}", bits.len());
    }

    /// x·(1 − x) = 0 with x given `x`, and a free number: one proven bit.
    struct OneBit(u64);
    impl Circuit<Scalar> for OneBit {
        fn synthesize<CS: ConstraintSystem<Scalar>>(
            self,
            cs: &mut CS,
        ) -> Result<(), SynthesisError> {
            let x = cs.alloc(|| "x", || Ok(Scalar::from(self.0)))?;
            cs.enforce(
                || "x is a bit",
                |lc| lc + x,
                |lc| lc + CS::one() - x,
                |lc| lc,
            );
            AllocatedNum::alloc(cs.namespace(|| "free"), || Ok(Scalar::from(7)))?;
            Ok(())
        }
    }

    #[test]
    fn a_compact_witness_with_more_others_than_the_circuit_allows_is_refused() {
        let pce = crate::pce::record(OneBit(1)).expect("records");
        assert_eq!(pce.most_others(), 1);
        let (_, witness) = pce.compact_witness(OneBit(1)).expect("x = 1 satisfies it");
        assert_eq!(witness.counts(), (0, 1, 1));
        let refused = pce.compact_witness(OneBit(5)).expect_err("x = 5 does not");
        assert!(
            matches!(
                refused,
                crate::pce::PceError::NotBits { others: 2, most: 1 }
            ),
            "{refused}"
        );
        // Reserved: the codes, one other value twice over, nothing per value beyond.
        let most = pce.compact_bytes() - crate::synth::HostBytes::WORKING;
        assert_eq!(most, 32 + 8 + 2 * 36);
    }
}
