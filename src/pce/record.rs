//! Recording a circuit's R1CS matrices: a constraint system that keeps every enforced linear
//! combination as a CSR row and never asks for a value, so a blank circuit (the one Groth16
//! parameters are generated from) records the same matrices as a witnessed one.

use std::collections::HashMap;

use bellpepper_core::{
    Circuit, ConstraintSystem, Index, LinearCombination, SynthesisError, Variable,
};
use blstrs::Scalar;
use ff::{Field, PrimeField};

use super::{Arrays, Matrix, Pce, PceError, Shape, INPUT_COLUMN};
use crate::synth::Density;

/// Records `circuit`'s matrices as the proving path lays them out: input ONE first, the
/// circuit's constraints, then one `input * 0 = 0` row per public input.
pub fn record<C: Circuit<Scalar>>(circuit: C) -> Result<Pce, PceError> {
    let mut cs = RecordingSystem::new();
    cs.alloc_input(|| "one", || Ok(Scalar::ONE))?;
    circuit.synthesize(&mut cs)?;
    for i in 0..cs.inputs {
        cs.enforce(
            || "input",
            |lc| lc + Variable::new_unchecked(Index::Input(i)),
            |lc| lc,
            |lc| lc,
        );
    }
    cs.finish()
}

/// Distinct coefficients, each stored once; entries refer to them by index. ONE is index 0 and
/// minus ONE index 1, the two the evaluator special-cases.
struct Coefficients {
    values: Vec<Scalar>,
    index: HashMap<[u8; 32], u32>,
}

impl Coefficients {
    fn new() -> Self {
        let values = vec![Scalar::ONE, -Scalar::ONE];
        let index = values
            .iter()
            .enumerate()
            .map(|(i, v)| (v.to_repr(), i as u32))
            .collect();
        Coefficients { values, index }
    }

    fn intern(&mut self, value: &Scalar) -> u32 {
        if *value == Scalar::ONE {
            return 0;
        }
        let values = &mut self.values;
        *self.index.entry(value.to_repr()).or_insert_with(|| {
            values.push(*value);
            (values.len() - 1) as u32
        })
    }
}

#[derive(Default)]
struct RowsBuilder {
    row_ptr: Vec<u32>,
    cols: Vec<u32>,
    coeffs: Vec<u32>,
}

impl RowsBuilder {
    fn new() -> Self {
        RowsBuilder {
            row_ptr: vec![0],
            ..Default::default()
        }
    }

    /// Appends one linear combination as the next row, setting the variables it touches in
    /// the densities given. False when the matrix outgrows 32-bit offsets.
    fn push(
        &mut self,
        lc: &LinearCombination<Scalar>,
        coefficients: &mut Coefficients,
        mut input_density: Option<&mut Density>,
        mut aux_density: Option<&mut Density>,
    ) -> bool {
        for (&index, coeff) in lc.iter_inputs() {
            if bool::from(coeff.is_zero()) {
                continue;
            }
            self.cols.push(INPUT_COLUMN | index as u32);
            self.coeffs.push(coefficients.intern(coeff));
            if let Some(d) = input_density.as_deref_mut() {
                d.set(index);
            }
        }
        for (&index, coeff) in lc.iter_aux() {
            if bool::from(coeff.is_zero()) {
                continue;
            }
            self.cols.push(index as u32);
            self.coeffs.push(coefficients.intern(coeff));
            if let Some(d) = aux_density.as_deref_mut() {
                d.set(index);
            }
        }
        match u32::try_from(self.cols.len()) {
            Ok(n) => {
                self.row_ptr.push(n);
                true
            }
            Err(_) => false,
        }
    }
}

/// A constraint system that records A, B and C and the query densities, and no values.
pub struct RecordingSystem {
    inputs: usize,
    aux: usize,
    rows: [RowsBuilder; 3],
    coefficients: Coefficients,
    a_aux_density: Density,
    b_input_density: Density,
    b_aux_density: Density,
    /// Set when a matrix outgrows 32-bit offsets: reported by `finish`.
    overflow: bool,
}

impl RecordingSystem {
    fn finish(self) -> Result<Pce, PceError> {
        if self.overflow
            || self.aux >= INPUT_COLUMN as usize
            || self.inputs >= INPUT_COLUMN as usize
        {
            return Err(PceError::TooLarge);
        }
        let [a, b, c] = self.rows.map(|r| Matrix {
            row_ptr: r.row_ptr,
            cols: r.cols,
            coeffs: r.coeffs,
        });
        let mut pce = Pce {
            id: super::next_id(),
            shape: Shape {
                inputs: self.inputs,
                aux: self.aux,
                constraints: a.row_ptr.len() - 1,
            },
            arrays: Arrays::Owned([a, b, c]),
            coefficients: self.coefficients.values,
            a_aux_density: self.a_aux_density,
            b_input_density: self.b_input_density,
            b_aux_density: self.b_aux_density,
            bits: 0,
        };
        let start = std::time::Instant::now();
        pce.bits = super::bits::proven_bits(&pce).len();
        tracing::debug!(
            seconds = start.elapsed().as_secs_f64(),
            bits = pce.bits,
            aux = pce.shape.aux,
            "proven bits"
        );
        Ok(pce)
    }
}

impl ConstraintSystem<Scalar> for RecordingSystem {
    type Root = Self;

    fn new() -> Self {
        RecordingSystem {
            inputs: 0,
            aux: 0,
            rows: [RowsBuilder::new(), RowsBuilder::new(), RowsBuilder::new()],
            coefficients: Coefficients::new(),
            a_aux_density: Density::new(),
            b_input_density: Density::new(),
            b_aux_density: Density::new(),
            overflow: false,
        }
    }

    fn alloc<F, A, AR>(&mut self, _: A, _: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.aux += 1;
        self.a_aux_density.push();
        self.b_aux_density.push();
        Ok(Variable::new_unchecked(Index::Aux(self.aux - 1)))
    }

    fn alloc_input<F, A, AR>(&mut self, _: A, _: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.inputs += 1;
        self.b_input_density.push();
        Ok(Variable::new_unchecked(Index::Input(self.inputs - 1)))
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
        // The densities the proving path tracks (synth::ProvingSystem::enforce): aux in A,
        // inputs and aux in B, nothing in C.
        let [ra, rb, rc] = &mut self.rows;
        let co = &mut self.coefficients;
        let fits = ra.push(&a, co, None, Some(&mut self.a_aux_density))
            & rb.push(
                &b,
                co,
                Some(&mut self.b_input_density),
                Some(&mut self.b_aux_density),
            )
            & rc.push(&c, co, None, None);
        self.overflow |= !fits;
    }

    crate::synth::flat_extensible_root!();

    /// Appends a sub-system recorded on its own, as `synth::ProvingSystem::extend` appends its
    /// values: the sub-system's ONE is ours, its other inputs and its aux follow ours.
    fn extend(&mut self, other: &Self) {
        let (inputs, aux) = (self.inputs as u32, self.aux as u32);
        let remap: Vec<u32> = other
            .coefficients
            .values
            .iter()
            .map(|v| self.coefficients.intern(v))
            .collect();
        for (rows, theirs) in self.rows.iter_mut().zip(&other.rows) {
            let base = *rows.row_ptr.last().expect("row_ptr starts with 0");
            for &end in &theirs.row_ptr[1..] {
                match base.checked_add(end) {
                    Some(n) => rows.row_ptr.push(n),
                    None => self.overflow = true,
                }
            }
            rows.cols.extend(theirs.cols.iter().map(|&col| {
                if col & INPUT_COLUMN == 0 {
                    col + aux
                } else if col == INPUT_COLUMN {
                    col
                } else {
                    col + inputs - 1
                }
            }));
            rows.coeffs
                .extend(theirs.coeffs.iter().map(|&i| remap[i as usize]));
        }
        crate::synth::extend_densities(
            [
                &mut self.a_aux_density,
                &mut self.b_input_density,
                &mut self.b_aux_density,
            ],
            [
                &other.a_aux_density,
                &other.b_input_density,
                &other.b_aux_density,
            ],
        );
        // Every system has its ONE first (the full path panics on one without); as there, the
        // sub-system's is ours.
        debug_assert!(self.inputs >= 1 && other.inputs >= 1);
        self.inputs += other.inputs.saturating_sub(1);
        self.aux += other.aux;
        self.overflow |= other.overflow;
    }
}
