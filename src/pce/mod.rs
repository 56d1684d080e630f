//! PCE, the pre-compiled constraint evaluator: a circuit kind's R1CS matrices A, B, C recorded
//! once ([`record`], from the blank circuit Groth16 parameters are made from), kept in the data
//! directory ([`store`], [`file`]) and reused: synthesis then computes only the witness (a
//! constraint system whose `enforce` does nothing) and a/b/c come from three sparse
//! matrix-vector products ([`Pce::synthesize`]). The result is the same [`SynthesizedProof`]
//! the full path makes, value for value and bit for bit in the densities.

pub mod bits;
mod compact;
pub mod file;
mod record;
pub mod store;

pub use compact::{CompactProof, HoldsPce, Synthesized};
pub use record::record;
pub use store::{Obtained, PceKey, PceStore};

use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::LazyLock;

use bellpepper_core::{
    Circuit, ConstraintSystem, Index, LinearCombination, SynthesisError, Variable,
};
use blstrs::Scalar;
use ff::Field;
use rayon::prelude::*;
use sha2::{Digest, Sha256};

use crate::synth::{
    Buffers, CompactWitness, Density, Heap, HostBytes, Scalars, SynthesizedProof, Vector,
};

/// Column tag of public inputs; other columns are aux variables.
pub(crate) const INPUT_COLUMN: u32 = 1 << 31;

/// The circuit's dimensions, the public input ONE and the input rows included.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shape {
    pub inputs: usize,
    pub aux: usize,
    pub constraints: usize,
}

/// One matrix in CSR form: row r's entries are `row_ptr[r]..row_ptr[r + 1]`, each a column
/// (aux index, or `INPUT_COLUMN | input index`) and an index into the coefficient table.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Matrix {
    pub row_ptr: Vec<u32>,
    pub cols: Vec<u32>,
    pub coeffs: Vec<u32>,
}

/// A matrix's arrays, wherever they live.
#[derive(Clone, Copy)]
pub struct MatrixRef<'a> {
    pub row_ptr: &'a [u32],
    pub cols: &'a [u32],
    pub coeffs: &'a [u32],
}

impl MatrixRef<'_> {
    pub fn nnz(&self) -> usize {
        self.cols.len()
    }
}

/// Where the large arrays are: recorded in memory, or mapped from a PCE file (no copy).
enum Arrays {
    Owned([Matrix; 3]),
    Mapped {
        map: memmap2::Mmap,
        /// Byte ranges of row_ptr, cols and coeffs of A, B and C in `map`.
        sections: [[Range<usize>; 3]; 3],
    },
}

/// A circuit kind's matrices, densities and coefficient table.
pub struct Pce {
    /// This PCE among those the process made or loaded ([`Pce::id`]).
    id: u64,
    shape: Shape,
    arrays: Arrays,
    /// Distinct coefficients; index 0 is ONE and 1 is minus ONE.
    coefficients: Vec<Scalar>,
    a_aux_density: Density,
    b_input_density: Density,
    b_aux_density: Density,
    /// How many aux variables every satisfying witness holds at 0 or 1 ([`bits::proven_bits`]).
    bits: usize,
}

impl std::fmt::Debug for Pce {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pce")
            .field("shape", &self.shape)
            .field("nnz", &self.nnz())
            .field("coefficients", &self.coefficients.len())
            .field("mapped", &matches!(self.arrays, Arrays::Mapped { .. }))
            .finish()
    }
}

/// Why a PCE could not evaluate a witness.
#[derive(Debug, thiserror::Error)]
pub enum PceError {
    #[error("synthesis failed: {0}")]
    Synthesis(#[from] SynthesisError),
    #[error("the witness has {others} values neither 0 nor 1 where the circuit proves all but {most} of its variables bits: it does not satisfy the circuit")]
    NotBits { others: usize, most: usize },
    #[error(
        "a matrix has 2^32 entries or more, or the circuit 2^31 variables: too large for a PCE"
    )]
    TooLarge,
    #[error("the circuit has {inputs} inputs, {aux} aux variables and {constraints} constraints, the PCE records {} (a stale PCE)", format!("{expected:?}"))]
    Shape {
        inputs: usize,
        aux: usize,
        constraints: usize,
        expected: Shape,
    },
}

/// A new [`Pce::id`].
pub(crate) fn next_id() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

impl Pce {
    /// Tells this PCE from every other the process has recorded or loaded: a device may keep
    /// its matrices under it.
    pub fn id(&self) -> u64 {
        self.id
    }

    pub fn shape(&self) -> Shape {
        self.shape
    }

    pub fn matrix(&self, m: usize) -> MatrixRef<'_> {
        match &self.arrays {
            Arrays::Owned(ms) => MatrixRef {
                row_ptr: &ms[m].row_ptr,
                cols: &ms[m].cols,
                coeffs: &ms[m].coeffs,
            },
            Arrays::Mapped { map, sections } => {
                let [r, c, k] = &sections[m];
                MatrixRef {
                    row_ptr: file::u32s(&map[r.clone()]),
                    cols: file::u32s(&map[c.clone()]),
                    coeffs: file::u32s(&map[k.clone()]),
                }
            }
        }
    }

    /// Non-zero entries of A, B and C.
    pub fn nnz(&self) -> [usize; 3] {
        [0, 1, 2].map(|m| self.matrix(m).nnz())
    }

    /// The most aux values neither 0 nor 1 a satisfying witness has: what a compact witness
    /// of this circuit is reserved for (a witness with more is refused).
    pub fn most_others(&self) -> usize {
        self.shape.aux - self.bits
    }

    /// What a compact partition of this circuit is reserved: [`HostBytes::compact_of`] its
    /// shape and [`Pce::most_others`].
    pub fn compact_bytes(&self) -> u64 {
        HostBytes::compact_of(self.shape.inputs, self.shape.aux, self.most_others())
    }

    pub fn coefficients(&self) -> &[Scalar] {
        &self.coefficients
    }

    /// The section lengths of the parameter set of this PCE's circuit.
    pub fn srs_shape(&self) -> crate::srs::SrsShape {
        let shape = self.shape();
        crate::srs::SrsShape {
            inputs: shape.inputs,
            h: shape.constraints.next_power_of_two() - 1,
            l: shape.aux,
            a: shape.inputs + self.a_aux_density.count(),
            b: self.b_input_density.count() + self.b_aux_density.count(),
        }
    }

    pub fn densities(&self) -> [&Density; 3] {
        [
            &self.a_aux_density,
            &self.b_input_density,
            &self.b_aux_density,
        ]
    }

    /// Bytes this PCE keeps in memory once used (mapped file pages included). The engine holds
    /// the file's length from the budget before loading, a little less than this (the
    /// coefficient table and densities are also copied, kilobytes to a few megabytes).
    pub fn bytes(&self) -> u64 {
        let arrays = match &self.arrays {
            Arrays::Owned(_) => self
                .nnz()
                .iter()
                .map(|n| (2 * n + self.shape.constraints + 1) * 4)
                .sum::<usize>(),
            Arrays::Mapped { map, .. } => map.len(),
        };
        (arrays
            + self.coefficients.len() * 32
            + self
                .densities()
                .iter()
                .map(|d| d.heap_bytes())
                .sum::<usize>()) as u64
    }

    /// Synthesizes `circuit` through this PCE: the witness only, then a/b/c by SpMV.
    pub fn synthesize<C: Circuit<Scalar>>(&self, circuit: C) -> Result<SynthesizedProof, PceError> {
        self.synthesize_into(circuit, &Heap)
    }

    /// [`Pce::synthesize`] with the large vectors taken from `buffers`, each at its known size.
    pub fn synthesize_into<C: Circuit<Scalar>>(
        &self,
        circuit: C,
        buffers: &dyn Buffers,
    ) -> Result<SynthesizedProof, PceError> {
        let start = std::time::Instant::now();
        let aux = buffers.take(Vector::Aux, self.shape.aux);
        let (inputs, aux) = self.witness_into(circuit, aux)?;
        let witness_s = start.elapsed().as_secs_f64();
        let synth = self.evaluate(inputs, aux, buffers);
        tracing::debug!(
            witness_s,
            spmv_s = start.elapsed().as_secs_f64() - witness_s,
            "PCE synthesis"
        );
        Ok(synth)
    }

    /// The witness of `circuit` (inputs, ONE first, and aux), no constraint evaluated.
    pub fn witness<C: Circuit<Scalar>>(
        &self,
        circuit: C,
    ) -> Result<(Vec<Scalar>, Scalars), PceError> {
        self.witness_into(circuit, Scalars::from(Vec::with_capacity(self.shape.aux)))
    }

    /// The witness of `circuit` with its aux values kept as they are allocated, 0 and 1 as
    /// 2-bit codes ([`CompactWitness`]).
    pub fn compact_witness<C: Circuit<Scalar>>(
        &self,
        circuit: C,
    ) -> Result<(Vec<Scalar>, CompactWitness), PceError> {
        let bounded = CompactWitness::bounded(self.shape.aux, self.most_others());
        let (inputs, witness) = self.witness_into(circuit, bounded)?;
        match witness.overflowed() {
            0 => Ok((inputs, witness)),
            _ => Err(PceError::NotBits {
                others: witness.counts().2,
                most: self.most_others(),
            }),
        }
    }

    /// The witness of `circuit`, its aux values into `aux` (room for the whole witness made
    /// up front: no reallocation, and no doubled peak, as it grows).
    fn witness_into<C: Circuit<Scalar>, S: AuxValues>(
        &self,
        circuit: C,
        aux: S,
    ) -> Result<(Vec<Scalar>, S), PceError> {
        let mut cs = WitnessSystem {
            inputs: Vec::with_capacity(self.shape.inputs),
            aux,
            enforced: 0,
        };
        cs.alloc_input(|| "one", || Ok(Scalar::ONE))?;
        circuit.synthesize(&mut cs)?;
        // The recorded rows are the circuit's plus one per input.
        let constraints = cs.enforced + cs.inputs.len();
        if (cs.inputs.len(), cs.aux.len(), constraints)
            != (self.shape.inputs, self.shape.aux, self.shape.constraints)
        {
            return Err(PceError::Shape {
                inputs: cs.inputs.len(),
                aux: cs.aux.len(),
                constraints,
                expected: self.shape,
            });
        }
        Ok((cs.inputs, cs.aux))
    }

    /// The synthesized proof of a witness of this PCE's shape (`witness` checks it):
    /// a/b/c = A·z, B·z, C·z with z = (inputs, aux).
    pub(crate) fn evaluate(
        &self,
        inputs: Vec<Scalar>,
        aux: Scalars,
        buffers: &dyn Buffers,
    ) -> SynthesizedProof {
        let rows = self.shape.constraints;
        let mut abc = [Vector::A, Vector::B, Vector::C].map(|v| buffers.take(v, rows));
        spmv(
            [0, 1, 2].map(|m| self.matrix(m)),
            &self.coefficients,
            &inputs,
            &aux,
            &mut abc,
        );
        let [a, b, c] = abc;
        SynthesizedProof {
            a,
            b,
            c,
            inputs,
            aux,
            a_aux_density: self.a_aux_density.clone(),
            b_input_density: self.b_input_density.clone(),
            b_aux_density: self.b_aux_density.clone(),
        }
    }
}

#[cfg(test)]
impl Pce {
    /// This PCE with every C coefficient made minus ONE: the same shape, the wrong circuit.
    pub(crate) fn tampered(mut self) -> Pce {
        self.id = next_id();
        if let Arrays::Owned(ms) = &mut self.arrays {
            ms[2].coeffs.iter_mut().for_each(|k| *k = 1);
        }
        self
    }
}

/// Rows per parallel task of the SpMV.
const ROWS_PER_TASK: usize = 1 << 12;

/// A, B and C times z in one parallel pass: each task takes a block of rows and evaluates it
/// in A, then B, then C (the three matrices' rows of a block touch the same witness values).
/// Most terms need no multiplication: coefficients ONE and minus ONE, and witness values 0 and
/// 1 (bits are most of a Filecoin witness). `out`'s three vectors get the rows (their room is
/// made first).
fn spmv(
    matrices: [MatrixRef<'_>; 3],
    coefficients: &[Scalar],
    inputs: &[Scalar],
    aux: &[Scalar],
    out: &mut [Scalars; 3],
) {
    let rows = matrices[0].row_ptr.len() - 1;
    for v in out.iter_mut() {
        v.truncate(0);
        v.reserve(rows);
    }
    let [ca, cb, cc] = out.each_mut().map(|v| {
        v.spare_capacity_mut()[..rows]
            .chunks_mut(ROWS_PER_TASK)
            .collect::<Vec<_>>()
    });
    ca.into_par_iter()
        .zip(cb)
        .zip(cc)
        .enumerate()
        .for_each(|(task, ((ca, cb), cc))| {
            let first = task * ROWS_PER_TASK;
            for (m, chunk) in [ca, cb, cc].into_iter().enumerate() {
                let matrix = matrices[m];
                for (i, out) in chunk.iter_mut().enumerate() {
                    out.write(row(matrix, first + i, coefficients, inputs, aux));
                }
            }
        });
    for v in out.iter_mut() {
        // SAFETY: the tasks above wrote every one of the first `rows` elements.
        unsafe { v.set_len(rows) };
    }
}

#[inline]
fn row(
    m: MatrixRef<'_>,
    row: usize,
    coefficients: &[Scalar],
    inputs: &[Scalar],
    aux: &[Scalar],
) -> Scalar {
    let entries = m.row_ptr[row] as usize..m.row_ptr[row + 1] as usize;
    let mut acc = Scalar::ZERO;
    for (&col, &k) in m.cols[entries.clone()].iter().zip(&m.coeffs[entries]) {
        let value = if col & INPUT_COLUMN == 0 {
            &aux[col as usize]
        } else {
            &inputs[(col & !INPUT_COLUMN) as usize]
        };
        match k {
            0 => acc += value,
            1 => acc -= value,
            // Branches on witness values, as bellperson's prover does (zeros and ones skipped in
            // its MSMs): proving is not constant-time.
            _ if *value == Scalar::ZERO => {}
            k if *value == Scalar::ONE => acc += &coefficients[k as usize],
            k => acc += *value * coefficients[k as usize],
        }
    }
    acc
}

/// Where a witness system keeps its aux values: 32 bytes each, or compact.
trait AuxValues: Send + Sized {
    /// An empty one, for a sub-system.
    fn empty() -> Self;
    fn push(&mut self, value: Scalar);
    fn len(&self) -> usize;
    fn extend_from(&mut self, other: &Self);
}

impl AuxValues for Scalars {
    fn empty() -> Self {
        Scalars::new()
    }
    fn push(&mut self, value: Scalar) {
        Scalars::push(self, value)
    }
    fn len(&self) -> usize {
        Scalars::len(self)
    }
    fn extend_from(&mut self, other: &Self) {
        self.extend_from_slice(other)
    }
}

impl AuxValues for CompactWitness {
    fn empty() -> Self {
        CompactWitness::new()
    }
    fn push(&mut self, value: Scalar) {
        CompactWitness::push(self, value)
    }
    fn len(&self) -> usize {
        CompactWitness::len(self)
    }
    fn extend_from(&mut self, other: &Self) {
        CompactWitness::extend_from(self, other)
    }
}

/// A constraint system that computes the witness and nothing else: `enforce` does not even
/// build its linear combinations.
struct WitnessSystem<S> {
    inputs: Vec<Scalar>,
    aux: S,
    /// `enforce` calls, counted: the cheap check that the PCE has the circuit's rows.
    enforced: usize,
}

impl<S: AuxValues> ConstraintSystem<Scalar> for WitnessSystem<S> {
    type Root = Self;

    fn new() -> Self {
        WitnessSystem {
            inputs: Vec::new(),
            aux: S::empty(),
            enforced: 0,
        }
    }

    fn alloc<F, A, AR>(&mut self, _: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.aux.push(f()?);
        Ok(Variable::new_unchecked(Index::Aux(self.aux.len() - 1)))
    }

    fn alloc_input<F, A, AR>(&mut self, _: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.inputs.push(f()?);
        Ok(Variable::new_unchecked(Index::Input(self.inputs.len() - 1)))
    }

    fn enforce<A, AR, LA, LB, LC>(&mut self, _: A, _: LA, _: LB, _: LC)
    where
        A: FnOnce() -> AR,
        AR: Into<String>,
        LA: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LB: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LC: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
    {
        self.enforced += 1;
    }

    crate::synth::flat_extensible_root!();

    /// As `synth::ProvingSystem::extend`: the sub-system's ONE is ours.
    fn extend(&mut self, other: &Self) {
        self.inputs.extend_from_slice(&other.inputs[1..]);
        self.aux.extend_from(&other.aux);
        self.enforced += other.enforced;
    }
}

/// What invalidates a PCE file when it changes: our file format, the parameter set's cache
/// identifier (the circuit's public parameters: sector size, challenges, layers, ...) and the
/// versions of the crates that define the circuits and their gadgets. A change in what the
/// recorder writes must bump `file::FORMAT_VERSION`.
pub fn circuit_hash(parameter_id: &str) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update(b"cuzk-pce-circuit\0");
    h.update(file::FORMAT_VERSION.to_le_bytes());
    h.update(parameter_id.as_bytes());
    h.update([0]);
    h.update(CIRCUIT_CRATES.as_bytes());
    h.finalize().into()
}

/// `name version` of each circuit-defining crate in Cargo.lock, one per line.
static CIRCUIT_CRATES: LazyLock<String> = LazyLock::new(|| {
    const DEFINING: [&str; 7] = [
        "storage-proofs-",
        "filecoin-proofs",
        "filecoin-hashers",
        "bellpe",
        "neptune",
        "fr32",
        "sha2raw",
    ];
    let mut lines = Vec::new();
    for package in include_str!("../../Cargo.lock").split("[[package]]") {
        let field = |key: &str| {
            package.lines().find_map(|l| {
                l.strip_prefix(key)
                    .and_then(|v| v.trim().strip_prefix('='))
                    .map(|v| v.trim().trim_matches('"').to_owned())
            })
        };
        if let (Some(name), Some(version)) = (field("name "), field("version ")) {
            if DEFINING.iter().any(|d| name.starts_with(d)) {
                lines.push(format!("{name} {version}"));
            }
        }
    }
    lines.sort();
    lines.join("\n")
});

#[cfg(test)]
mod tests {
    use super::*;
    use crate::synth::synthesize;
    use crate::synth::synthetic::SyntheticCircuit;

    /// SyntheticCircuits synthesized in sub-systems extended into the root, as Filecoin's
    /// circuits do on extensible constraint systems.
    struct Extended(Vec<SyntheticCircuit>);

    impl Circuit<Scalar> for Extended {
        fn synthesize<CS: ConstraintSystem<Scalar>>(
            self,
            cs: &mut CS,
        ) -> Result<(), SynthesisError> {
            assert!(CS::is_extensible());
            for part in self.0 {
                let mut sub = CS::new();
                sub.alloc_input(|| "one", || Ok(Scalar::ONE))?;
                part.synthesize(&mut sub)?;
                cs.extend(&sub);
            }
            Ok(())
        }
    }

    #[test]
    fn circuit_hash_names_the_circuit_crates() {
        assert!(
            CIRCUIT_CRATES.contains("storage-proofs-porep "),
            "{}",
            *CIRCUIT_CRATES
        );
        assert!(CIRCUIT_CRATES.contains("bellperson "));
        assert!(CIRCUIT_CRATES.contains("neptune "));
        assert_ne!(circuit_hash("a"), circuit_hash("b"));
    }

    #[test]
    fn pce_path_equals_full_path_on_synthetic_circuits() {
        for (inputs, constraints, seed) in [(0, 1, 1), (1, 100, 2), (3, 5000, 3)] {
            // Recording asks for no value: another seed records the same matrices.
            let pce = record(SyntheticCircuit::new(inputs, constraints, seed + 100)).unwrap();
            let circuit = SyntheticCircuit::new(inputs, constraints, seed);
            let full = synthesize(circuit.clone()).unwrap();
            let fast = pce.synthesize(circuit).unwrap();
            assert_eq!(fast, full, "{constraints} constraints");
            assert_eq!(pce.shape().constraints, full.num_constraints());
            assert_eq!(fast.unsatisfied_rows(), 0);
        }
    }

    /// Three synthetic circuits of different shapes, synthesized in sub-systems.
    fn parts(seed: u64) -> Extended {
        Extended(
            (0..3)
                .map(|i| SyntheticCircuit::new(i as usize + 1, 300 + i as usize, seed + i))
                .collect(),
        )
    }

    #[test]
    fn pce_path_equals_full_path_through_extended_subsystems() {
        let pce = record(parts(50)).unwrap();
        let full = synthesize(parts(7)).unwrap();
        assert_eq!(full.inputs.len(), 1 + 1 + 2 + 3);
        assert_eq!(pce.synthesize(parts(7)).unwrap(), full);
        // Coefficients are shared across the sub-systems' tables.
        let distinct = pce.coefficients().len();
        assert!(
            (2..10).contains(&distinct),
            "{distinct} distinct coefficients"
        );
    }

    #[test]
    fn the_compact_witness_is_the_witness() {
        let pce = record(parts(50)).unwrap();
        let (inputs, aux) = pce.witness(parts(9)).unwrap();
        let (compact_inputs, compact) = pce.compact_witness(parts(9)).unwrap();
        assert_eq!(compact_inputs, inputs);
        assert_eq!(compact.len(), aux.len());
        assert_eq!(compact.expand(), aux.to_vec());
        let single = record(SyntheticCircuit::new(2, 2000, 1)).unwrap();
        let (_, aux) = single.witness(SyntheticCircuit::new(2, 2000, 4)).unwrap();
        let (_, compact) = single
            .compact_witness(SyntheticCircuit::new(2, 2000, 4))
            .unwrap();
        assert_eq!(compact.expand(), aux.to_vec());
    }

    #[test]
    fn a_witness_of_another_shape_is_refused() {
        let pce = record(SyntheticCircuit::new(1, 10, 1)).unwrap();
        let err = pce.synthesize(SyntheticCircuit::new(1, 11, 1)).unwrap_err();
        assert!(matches!(err, PceError::Shape { .. }), "{err}");
    }
}
