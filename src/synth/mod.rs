//! Synthesis: running a circuit to get its witness and the A, B, C evaluations per constraint.
//!
//! [`SynthesizedProof`] is the narrow waist of the pipeline: every synthesis path produces it and
//! every prover backend consumes it. [`synthesize`] records exactly what bellperson's prover
//! records (input ONE first, then one `input * 0 = 0` row per public input after the circuit), so
//! that a proof made from it with the same r and s is byte-identical to bellperson's.
//! [`synthetic`] is a circuit of any size for tests and benchmarks that need no Filecoin
//! parameters.

mod compact;
mod density;
mod scalars;
pub mod synthetic;

pub use compact::CompactWitness;
pub use density::Density;
#[cfg(test)]
pub(crate) use scalars::testing::VecLender;
pub use scalars::{Buffers, Heap, Lent, Scalars, SizedHeap, Vector};

use bellpepper_core::{
    Circuit, ConstraintSystem, Index, LinearCombination, SynthesisError, Variable,
};
use blstrs::Scalar;
use ff::Field;

/// The witness and constraint evaluations of one circuit (one partition), ready to prove.
#[derive(Clone, Debug, PartialEq)]
pub struct SynthesizedProof {
    /// A·z, B·z, C·z, one entry per constraint (input rows included).
    pub a: Scalars,
    pub b: Scalars,
    pub c: Scalars,
    /// Public inputs, ONE first.
    pub inputs: Vec<Scalar>,
    /// Private (auxiliary) assignment.
    pub aux: Scalars,
    /// Aux variables with a non-zero coefficient somewhere in A.
    pub a_aux_density: Density,
    /// Inputs with a non-zero coefficient somewhere in B.
    pub b_input_density: Density,
    /// Aux variables with a non-zero coefficient somewhere in B.
    pub b_aux_density: Density,
}

impl SynthesizedProof {
    pub fn num_constraints(&self) -> usize {
        self.a.len()
    }

    /// Rows where a * b != c: zero for a satisfied circuit.
    pub fn unsatisfied_rows(&self) -> usize {
        use rayon::prelude::*;
        self.a
            .par_iter()
            .zip(&self.b[..])
            .zip(&self.c[..])
            .filter(|((a, b), c)| **a * **b != **c)
            .count()
    }

    /// Heap bytes held by the buffers: what a memory reservation for it must cover.
    pub fn heap_bytes(&self) -> usize {
        self.large().map(|v| v.heap_bytes()).sum::<usize>()
            + self.inputs.capacity() * std::mem::size_of::<Scalar>()
            + self.a_aux_density.heap_bytes()
            + self.b_input_density.heap_bytes()
            + self.b_aux_density.heap_bytes()
    }

    /// Bytes of lent memory (the page-locked pool's buffers) held by a, b, c and aux.
    pub fn lent_bytes(&self) -> usize {
        self.large().map(|v| v.lent_bytes()).sum()
    }

    /// Whether a, b, c and aux are all in lent memory.
    pub fn all_lent(&self) -> bool {
        self.large().all(|v| v.is_lent())
    }

    /// a, b, c and aux.
    fn large(&self) -> impl Iterator<Item = &Scalars> {
        [&self.a, &self.b, &self.c, &self.aux].into_iter()
    }
}

/// The parts of `ConstraintSystem` every system of ours shares: it is its own root, keeps no
/// namespaces and is extensible (circuits then synthesize parts in sub-systems, in parallel).
macro_rules! flat_extensible_root {
    () => {
        fn push_namespace<NR, N>(&mut self, _: N)
        where
            NR: Into<String>,
            N: FnOnce() -> NR,
        {
        }

        fn pop_namespace(&mut self) {}

        fn get_root(&mut self) -> &mut Self::Root {
            self
        }

        fn is_extensible() -> bool {
            true
        }
    };
}
pub(crate) use flat_extensible_root;

/// Appends a sub-system's densities (A over aux, B over inputs, B over aux) to ours, as
/// bellperson coalesces sub-systems: the sub-system's ONE is ours.
pub(crate) fn extend_densities(ours: [&mut Density; 3], theirs: [&Density; 3]) {
    let [a_aux, b_input, b_aux] = ours;
    a_aux.extend_from(theirs[0], 0);
    if b_input.is_empty() {
        b_input.extend_from(theirs[1], 0);
    } else {
        if theirs[1].get(0) {
            b_input.set(0);
        }
        b_input.extend_from(theirs[1], 1);
    }
    b_aux.extend_from(theirs[2], 0);
}

/// Which synthesis path made a [`SynthesizedProof`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SynthPath {
    /// Every constraint's linear combinations built and evaluated ([`synthesize`]).
    Full,
    /// The witness only, then a/b/c from the circuit's PCE ([`crate::pce`]).
    Pce,
    /// The PCE's result was refused (unsatisfied rows, a shape that does not fit, a panic) and
    /// the full path, tried next, succeeded: the PCE is wrong for this circuit.
    FullAfterPce,
    /// The witness only, kept compact: a/b/c are computed where the proof is made.
    Compact,
}

impl SynthPath {
    pub fn as_str(self) -> &'static str {
        match self {
            SynthPath::Full | SynthPath::FullAfterPce => "full",
            SynthPath::Pce => "pce",
            SynthPath::Compact => "compact",
        }
    }
}

/// What one partition of a circuit's shape holds on the host from the start of its synthesis
/// until its prover has taken its vectors, by path: upper bounds, reserved from the budget
/// before synthesis starts. Each includes [`HostBytes::WORKING`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HostBytes {
    /// The full path, and the PCE path (which falls back to the full path in place when its
    /// result is refused): a, b, c and the H quotient over the evaluation domain (4 vectors),
    /// the witness with its MSM scalars (3 per variable), 32 bytes each.
    pub full: u64,
    /// The compact witness and the inputs, every aux value neither 0 nor 1 at worst (a
    /// refused compact synthesis is done again on the full path under a reservation of its
    /// own). Where the circuit's PCE is known, `Pce::compact_bytes` bounds it closer.
    pub compact: u64,
}

impl HostBytes {
    /// What synthesizing a circuit takes beside its vectors, whatever its size: the gadgets'
    /// temporaries, the circuit's own inputs, the allocator's arenas (measured with `cuzk
    /// bench synth`: docs/measurements/2026-12-06-h100-compact; a test holds every path's peak
    /// under its estimate).
    pub const WORKING: u64 = 16 << 20;

    /// For a circuit with `inputs` and `aux` variables over an evaluation domain of `domain`.
    pub fn new(domain: usize, inputs: usize, aux: usize) -> HostBytes {
        let scalar = std::mem::size_of::<Scalar>() as u64;
        HostBytes {
            full: scalar * (4 * domain as u64 + 3 * (inputs + aux) as u64) + Self::WORKING,
            compact: Self::compact_of(inputs, aux, aux),
        }
    }

    /// A compact partition of a circuit with `inputs` and `aux` variables, at most
    /// `most_others` of which are neither 0 nor 1 in a witness that satisfies it (its PCE's
    /// `most_others`: a witness with more is refused before it outgrows this).
    pub fn compact_of(inputs: usize, aux: usize, most_others: usize) -> u64 {
        (std::mem::size_of::<Scalar>() * inputs + CompactWitness::most_bytes(aux, most_others))
            as u64
            + Self::WORKING
    }

    /// What a partition synthesized `path` is reserved.
    pub fn on(&self, path: SynthPath) -> u64 {
        match path {
            SynthPath::Compact => self.compact,
            SynthPath::Full | SynthPath::Pce | SynthPath::FullAfterPce => self.full,
        }
    }
}

/// Synthesizes `circuit` with the full (enforce-evaluating) path, on the heap.
pub fn synthesize<C: Circuit<Scalar>>(circuit: C) -> Result<SynthesizedProof, SynthesisError> {
    synthesize_into(circuit, &Heap)
}

/// Synthesizes `circuit` with the full path, its large vectors taken from `buffers` (with
/// their own room: the circuit's size is known only at the end).
pub fn synthesize_into<C: Circuit<Scalar>>(
    circuit: C,
    buffers: &dyn Buffers,
) -> Result<SynthesizedProof, SynthesisError> {
    let mut cs = ProvingSystem::with_buffers(buffers);
    cs.alloc_input(|| "one", || Ok(Scalar::ONE))?;
    circuit.synthesize(&mut cs)?;
    for i in 0..cs.proof.inputs.len() {
        cs.enforce(
            || "input",
            |lc| lc + Variable::new_unchecked(Index::Input(i)),
            |lc| lc,
            |lc| lc,
        );
    }
    Ok(cs.proof)
}

/// A constraint system that evaluates every constraint as it is enforced.
pub struct ProvingSystem {
    proof: SynthesizedProof,
}

impl ProvingSystem {
    fn with_buffers(buffers: &dyn Buffers) -> Self {
        let mut cs = ProvingSystem::new();
        let p = &mut cs.proof;
        [p.a, p.b, p.c, p.aux] = Vector::ALL.map(|v| buffers.take(v, 0));
        cs
    }
}

fn eval(
    lc: &LinearCombination<Scalar>,
    inputs: &[Scalar],
    aux: &[Scalar],
    mut input_density: Option<&mut Density>,
    mut aux_density: Option<&mut Density>,
) -> Scalar {
    let mut acc = Scalar::ZERO;
    for (&index, coeff) in lc.iter_inputs() {
        if bool::from(coeff.is_zero()) {
            continue;
        }
        acc += term(inputs[index], coeff);
        if let Some(d) = input_density.as_deref_mut() {
            d.set(index);
        }
    }
    for (&index, coeff) in lc.iter_aux() {
        if bool::from(coeff.is_zero()) {
            continue;
        }
        acc += term(aux[index], coeff);
        if let Some(d) = aux_density.as_deref_mut() {
            d.set(index);
        }
    }
    acc
}

#[inline]
fn term(value: Scalar, coeff: &Scalar) -> Scalar {
    if *coeff == Scalar::ONE {
        value
    } else {
        value * coeff
    }
}

impl ConstraintSystem<Scalar> for ProvingSystem {
    type Root = Self;

    fn new() -> Self {
        ProvingSystem {
            proof: SynthesizedProof {
                a: Scalars::new(),
                b: Scalars::new(),
                c: Scalars::new(),
                inputs: Vec::new(),
                aux: Scalars::new(),
                a_aux_density: Density::new(),
                b_input_density: Density::new(),
                b_aux_density: Density::new(),
            },
        }
    }

    fn alloc<F, A, AR>(&mut self, _: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        let p = &mut self.proof;
        p.aux.push(f()?);
        p.a_aux_density.push();
        p.b_aux_density.push();
        Ok(Variable::new_unchecked(Index::Aux(p.aux.len() - 1)))
    }

    fn alloc_input<F, A, AR>(&mut self, _: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        let p = &mut self.proof;
        p.inputs.push(f()?);
        p.b_input_density.push();
        Ok(Variable::new_unchecked(Index::Input(p.inputs.len() - 1)))
    }

    fn enforce<A, AR, LA, LB, LC>(&mut self, _: A, a: LA, b: LB, c: LC)
    where
        A: FnOnce() -> AR,
        AR: Into<String>,
        LA: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LB: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LC: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
    {
        let a = a(LinearCombination::zero());
        let b = b(LinearCombination::zero());
        let c = c(LinearCombination::zero());
        let p = &mut self.proof;
        // Inputs have full density in A (every input gets an `input * 0 = 0` row), so only aux
        // variables are tracked there; C has no query of its own.
        let a_val = eval(&a, &p.inputs, &p.aux, None, Some(&mut p.a_aux_density));
        let b_val = eval(
            &b,
            &p.inputs,
            &p.aux,
            Some(&mut p.b_input_density),
            Some(&mut p.b_aux_density),
        );
        let c_val = eval(&c, &p.inputs, &p.aux, None, None);
        p.a.push(a_val);
        p.b.push(b_val);
        p.c.push(c_val);
    }

    crate::synth::flat_extensible_root!();

    /// Appends a sub-system synthesized on its own (its first input is its own ONE and is skipped).
    fn extend(&mut self, other: &Self) {
        let p = &mut self.proof;
        let o = &other.proof;
        extend_densities(
            [
                &mut p.a_aux_density,
                &mut p.b_input_density,
                &mut p.b_aux_density,
            ],
            [&o.a_aux_density, &o.b_input_density, &o.b_aux_density],
        );
        p.a.extend_from_slice(&o.a);
        p.b.extend_from_slice(&o.b);
        p.c.extend_from_slice(&o.c);
        p.inputs.extend_from_slice(&o.inputs[1..]);
        p.aux.extend_from_slice(&o.aux);
    }
}
