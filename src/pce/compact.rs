//! The compact form of the narrow waist: a partition synthesized through its PCE as its
//! witness alone ([`CompactProof`]: the public inputs and the aux values as 2-bit codes plus
//! the few that are neither 0 nor 1). a, b and c are left to the prover, which computes them
//! where it proves: on a device from the PCE's matrices resident there, or on the host just
//! before ([`CompactProof::expand`]). Between synthesis and the prover a partition then holds a
//! few percent of what its a, b, c and aux would (a 32 GiB PoRep partition: about 0.2 GB, not
//! 16.7 GB). [`Synthesized`] is what the engine carries from synthesis to the prover: either
//! form.

use std::sync::Arc;

use blstrs::Scalar;
use ff::Field;

use bellpepper_core::Circuit;

use super::{Pce, PceError};
use crate::synth::{Buffers, CompactWitness, Density, SynthesizedProof, Vector};

/// What keeps a PCE for the proofs made through it: the PCE itself, or a loaded copy with the
/// memory it holds from the budget (the engine's), so that it outlives them.
pub trait HoldsPce: Send + Sync {
    fn pce(&self) -> &Pce;
}

impl HoldsPce for Pce {
    fn pce(&self) -> &Pce {
        self
    }
}

/// A partition's witness through its PCE, a, b and c not computed.
#[derive(Clone)]
pub struct CompactProof {
    pub pce: Arc<dyn HoldsPce>,
    /// Public inputs, ONE first.
    pub inputs: Vec<Scalar>,
    /// The aux values.
    pub witness: CompactWitness,
}

impl std::fmt::Debug for CompactProof {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CompactProof")
            .field("pce", self.pce())
            .field("inputs", &self.inputs.len())
            .field("witness", &self.witness.counts())
            .finish()
    }
}

impl CompactProof {
    /// Synthesizes `circuit` through `pce` as its witness alone, 0 and 1 as 2-bit codes.
    pub fn synthesize<C: Circuit<Scalar>>(
        pce: Arc<dyn HoldsPce>,
        circuit: C,
    ) -> Result<CompactProof, PceError> {
        let (inputs, mut witness) = pce.pce().compact_witness(circuit)?;
        // It waits for the prover as it is: no room kept that nothing will use.
        witness.shrink_to_fit();
        Ok(CompactProof {
            pce,
            inputs,
            witness,
        })
    }

    pub fn pce(&self) -> &Pce {
        self.pce.pce()
    }

    pub fn num_constraints(&self) -> usize {
        self.pce().shape().constraints
    }

    /// A's aux density, B's input density, B's aux density (the PCE's).
    pub fn densities(&self) -> [&Density; 3] {
        self.pce().densities()
    }

    /// Heap bytes held (the PCE is shared, and held apart).
    pub fn heap_bytes(&self) -> usize {
        self.inputs.capacity() * std::mem::size_of::<Scalar>() + self.witness.heap_bytes()
    }

    /// The full form: the aux values expanded and a, b, c by the host's SpMV, each vector
    /// taken from `buffers`.
    pub fn expand(&self, buffers: &dyn Buffers) -> SynthesizedProof {
        let len = self.witness.len();
        let mut aux = buffers.take(Vector::Aux, len);
        aux.resize(len, Scalar::ZERO);
        self.witness.expand_into(&mut aux);
        self.pce().evaluate(self.inputs.clone(), aux, buffers)
    }
}

/// A synthesized partition as the engine carries it to the prover.
#[derive(Debug)]
pub enum Synthesized {
    /// a, b, c and every aux value, on the host.
    Full(SynthesizedProof),
    /// The witness alone: the prover computes a, b and c.
    Compact(CompactProof),
}

impl From<SynthesizedProof> for Synthesized {
    fn from(p: SynthesizedProof) -> Self {
        Synthesized::Full(p)
    }
}

impl From<CompactProof> for Synthesized {
    fn from(p: CompactProof) -> Self {
        Synthesized::Compact(p)
    }
}

impl Synthesized {
    /// Heap bytes held: what a memory reservation for it must cover.
    pub fn heap_bytes(&self) -> usize {
        match self {
            Synthesized::Full(p) => p.heap_bytes(),
            Synthesized::Compact(p) => p.heap_bytes(),
        }
    }

    /// The public inputs, ONE first.
    pub fn inputs(&self) -> &[Scalar] {
        match self {
            Synthesized::Full(p) => &p.inputs,
            Synthesized::Compact(p) => &p.inputs,
        }
    }

    /// Bytes of lent memory (the page-locked pool's buffers) held.
    pub fn lent_bytes(&self) -> usize {
        match self {
            Synthesized::Full(p) => p.lent_bytes(),
            Synthesized::Compact(_) => 0,
        }
    }

    /// The full form (a compact one expanded on the heap).
    pub fn into_full(self) -> SynthesizedProof {
        match self {
            Synthesized::Full(p) => p,
            Synthesized::Compact(p) => p.expand(&crate::synth::Heap),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::synth::synthetic::SyntheticCircuit;
    use crate::synth::{synthesize, VecLender};

    #[test]
    fn a_compact_proof_expands_to_the_full_paths_result_in_lent_buffers_and_holds_less() {
        let pce = Arc::new(crate::pce::record(SyntheticCircuit::new(3, 5000, 1)).unwrap());
        let circuit = SyntheticCircuit::new(3, 5000, 2);
        let compact = CompactProof::synthesize(pce, circuit.clone()).unwrap();
        let want = synthesize(circuit).unwrap();
        assert_eq!(compact.num_constraints(), want.num_constraints());
        assert_eq!(compact.inputs, want.inputs);
        let lender = VecLender::default();
        let full = compact.expand(&lender);
        assert!(full.all_lent());
        assert_eq!(full, want);
        assert!(compact.heap_bytes() < want.heap_bytes());
        assert_eq!(Synthesized::from(compact).into_full(), want);
    }
}
