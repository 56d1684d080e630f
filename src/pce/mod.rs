//! PCE, the pre-compiled constraint evaluator: a circuit kind's R1CS matrices A, B, C recorded
//! once ([`record`], from the blank circuit Groth16 parameters are made from), kept in the data
//! directory ([`store`], [`file`]) and reused: synthesis then computes only the witness (a
//! constraint system whose `enforce` does nothing) and a/b/c come from three sparse
//! matrix-vector products ([`Pce::synthesize`]). The result is the same [`SynthesizedProof`]
//! the full path makes, value for value and bit for bit in the densities.

pub mod file;
mod record;
pub mod store;

pub use record::record;
pub use store::PceStore;

use std::ops::Range;
use std::sync::LazyLock;

use bellpepper_core::{
    Circuit, ConstraintSystem, Index, LinearCombination, SynthesisError, Variable,
};
use blstrs::Scalar;
use ff::Field;
use rayon::prelude::*;
use sha2::{Digest, Sha256};

use crate::synth::{Density, SynthesizedProof};

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
    shape: Shape,
    arrays: Arrays,
    /// Distinct coefficients; index 0 is ONE and 1 is minus ONE.
    coefficients: Vec<Scalar>,
    a_aux_density: Density,
    b_input_density: Density,
    b_aux_density: Density,
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
    #[error(
        "a matrix has 2^32 entries or more, or the circuit 2^31 variables: too large for a PCE"
    )]
    TooLarge,
    #[error("the circuit allocated {inputs} inputs and {aux} aux variables, the PCE records {expected_inputs} and {expected_aux} (a stale PCE)")]
    Shape {
        inputs: usize,
        aux: usize,
        expected_inputs: usize,
        expected_aux: usize,
    },
}

impl Pce {
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

    pub fn coefficients(&self) -> &[Scalar] {
        &self.coefficients
    }

    pub fn densities(&self) -> [&Density; 3] {
        [
            &self.a_aux_density,
            &self.b_input_density,
            &self.b_aux_density,
        ]
    }

    /// Bytes this PCE keeps in memory (mapped file pages included): what the budget holds.
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
        let mut cs = WitnessSystem::with_capacity(self.shape);
        cs.alloc_input(|| "one", || Ok(Scalar::ONE))?;
        circuit.synthesize(&mut cs)?;
        self.evaluate(cs.inputs, cs.aux)
    }

    /// The synthesized proof of a witness: a/b/c = A·z, B·z, C·z with z = (inputs, aux).
    pub fn evaluate(
        &self,
        inputs: Vec<Scalar>,
        aux: Vec<Scalar>,
    ) -> Result<SynthesizedProof, PceError> {
        if inputs.len() != self.shape.inputs || aux.len() != self.shape.aux {
            return Err(PceError::Shape {
                inputs: inputs.len(),
                aux: aux.len(),
                expected_inputs: self.shape.inputs,
                expected_aux: self.shape.aux,
            });
        }
        let [a, b, c] = [0, 1, 2].map(|m| spmv(self.matrix(m), &self.coefficients, &inputs, &aux));
        Ok(SynthesizedProof {
            a,
            b,
            c,
            inputs,
            aux,
            a_aux_density: self.a_aux_density.clone(),
            b_input_density: self.b_input_density.clone(),
            b_aux_density: self.b_aux_density.clone(),
        })
    }
}

/// Rows per parallel task of the SpMV.
const ROWS_PER_TASK: usize = 1 << 12;

/// One matrix times z, row by row in parallel. ONE and minus ONE need no multiplication.
fn spmv(
    m: MatrixRef<'_>,
    coefficients: &[Scalar],
    inputs: &[Scalar],
    aux: &[Scalar],
) -> Vec<Scalar> {
    let rows = m.row_ptr.len() - 1;
    let mut out = vec![Scalar::ZERO; rows];
    out.par_chunks_mut(ROWS_PER_TASK)
        .enumerate()
        .for_each(|(task, chunk)| {
            let first = task * ROWS_PER_TASK;
            for (i, out) in chunk.iter_mut().enumerate() {
                let row = first + i;
                let entries = m.row_ptr[row] as usize..m.row_ptr[row + 1] as usize;
                let mut acc = Scalar::ZERO;
                for (&col, &k) in m.cols[entries.clone()].iter().zip(&m.coeffs[entries]) {
                    let value = if col & INPUT_COLUMN == 0 {
                        aux[col as usize]
                    } else {
                        inputs[(col & !INPUT_COLUMN) as usize]
                    };
                    acc += match k {
                        0 => value,
                        1 => -value,
                        k => value * coefficients[k as usize],
                    };
                }
                *out = acc;
            }
        });
    out
}

/// A constraint system that computes the witness and nothing else: `enforce` does not even
/// build its linear combinations.
struct WitnessSystem {
    inputs: Vec<Scalar>,
    aux: Vec<Scalar>,
}

impl WitnessSystem {
    /// Room for the whole witness up front: no reallocation (and no doubled peak) as it grows.
    fn with_capacity(shape: Shape) -> Self {
        WitnessSystem {
            inputs: Vec::with_capacity(shape.inputs),
            aux: Vec::with_capacity(shape.aux),
        }
    }
}

impl ConstraintSystem<Scalar> for WitnessSystem {
    type Root = Self;

    fn new() -> Self {
        WitnessSystem {
            inputs: Vec::new(),
            aux: Vec::new(),
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
    }

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

    /// As `synth::ProvingSystem::extend`: the sub-system's ONE is ours.
    fn extend(&mut self, other: &Self) {
        self.inputs
            .extend_from_slice(other.inputs.get(1..).unwrap_or_default());
        self.aux.extend_from_slice(&other.aux);
    }
}

/// What invalidates a PCE file when it changes: our file format, the parameter set's cache
/// identifier (the circuit's public parameters: sector size, challenges, layers, ...) and the
/// versions of the crates that define the circuits and their gadgets.
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
    use crate::circuits::synthetic::SyntheticCircuit;
    use crate::synth::synthesize;

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

    #[test]
    fn pce_path_equals_full_path_through_extended_subsystems() {
        let parts = |seed: u64| {
            Extended(
                (0..3)
                    .map(|i| SyntheticCircuit::new(i as usize + 1, 300 + i as usize, seed + i))
                    .collect(),
            )
        };
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
    fn a_witness_of_another_shape_is_refused() {
        let pce = record(SyntheticCircuit::new(1, 10, 1)).unwrap();
        let err = pce.synthesize(SyntheticCircuit::new(1, 11, 1)).unwrap_err();
        assert!(matches!(err, PceError::Shape { .. }), "{err}");
    }
}
