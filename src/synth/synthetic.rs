//! A synthetic circuit of any size, for tests and benchmarks that need no Filecoin parameters.
//!
//! Its rows mimic the mix of real Filecoin circuits: boolean constraints on fresh bits (aux
//! values 0 and 1), products of earlier values, and linear sums. Every row is satisfied, inputs
//! appear in B, and some aux variables appear only in C, so density-compressed bases matter.

use bellpepper_core::{Circuit, ConstraintSystem, SynthesisError, Variable};
use blstrs::Scalar;
use ff::Field;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

#[derive(Clone, Debug)]
pub struct SyntheticCircuit {
    /// Public input values (ONE is added by the prover).
    pub inputs: Vec<Scalar>,
    /// Rows the circuit enforces (the prover adds one per input, ONE included).
    pub constraints: usize,
    /// Seed of the private values.
    pub seed: u64,
}

impl SyntheticCircuit {
    pub fn new(num_inputs: usize, constraints: usize, seed: u64) -> Self {
        let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0x5eed);
        SyntheticCircuit {
            inputs: (0..num_inputs).map(|_| Scalar::random(&mut rng)).collect(),
            constraints,
            seed,
        }
    }
}

impl Circuit<Scalar> for SyntheticCircuit {
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        let mut rng = ChaCha8Rng::seed_from_u64(self.seed);
        let inputs: Vec<(Variable, Scalar)> = self
            .inputs
            .iter()
            .enumerate()
            .map(|(i, &v)| Ok((cs.alloc_input(|| format!("input {i}"), || Ok(v))?, v)))
            .collect::<Result<_, SynthesisError>>()?;
        let mut prev = {
            let v = Scalar::random(&mut rng);
            (cs.alloc(|| "seed 0", || Ok(v))?, v)
        };
        let mut prev2 = {
            let v = Scalar::random(&mut rng);
            (cs.alloc(|| "seed 1", || Ok(v))?, v)
        };
        // A variable only C mentions: zero density in both A and B.
        let c_only = cs.alloc(|| "c only", || Ok(prev.1))?;
        cs.enforce(
            || "c only",
            |lc| lc + prev.0,
            |lc| lc + CS::one(),
            |lc| lc + c_only,
        );
        let mut bit = (CS::one(), Scalar::ONE);
        for i in 0..self.constraints {
            match i % 4 {
                0 | 3 => {
                    let v = if rng.gen::<bool>() {
                        Scalar::ONE
                    } else {
                        Scalar::ZERO
                    };
                    let var = cs.alloc(|| format!("bit {i}"), || Ok(v))?;
                    cs.enforce(
                        || format!("boolean {i}"),
                        |lc| lc + var,
                        |lc| lc + CS::one() - var,
                        |lc| lc,
                    );
                    bit = (var, v);
                }
                1 => {
                    let (input, input_value) = inputs
                        .get(i % inputs.len().max(1))
                        .copied()
                        .unwrap_or((CS::one(), Scalar::ONE));
                    let v = prev.1 * (prev2.1 + input_value);
                    let var = cs.alloc(|| format!("product {i}"), || Ok(v))?;
                    cs.enforce(
                        || format!("product {i}"),
                        |lc| lc + prev.0,
                        |lc| lc + prev2.0 + input,
                        |lc| lc + var,
                    );
                    prev2 = prev;
                    prev = (var, v);
                }
                _ => {
                    let two = Scalar::from(2u64);
                    let v = prev.1 + two * bit.1;
                    let var = cs.alloc(|| format!("sum {i}"), || Ok(v))?;
                    cs.enforce(
                        || format!("sum {i}"),
                        |lc| lc + prev.0 + (two, bit.0),
                        |lc| lc + CS::one(),
                        |lc| lc + var,
                    );
                    prev2 = prev;
                    prev = (var, v);
                }
            }
        }
        Ok(())
    }
}
