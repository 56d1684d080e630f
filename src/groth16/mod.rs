//! Groth16 proving, as in the paper: the quotient polynomial h by NTT ([`domain`]), the MSMs over
//! the SRS ([`msm`]), and randomization with r and s ([`prover`]). Hardware implements
//! [`Backend`]: the CPU here ([`cpu`]), GPUs in [`crate::gpu`]; [`prove`] is the one algorithm
//! that drives them.

pub mod cpu;
pub mod domain;
pub mod msm;
mod prover;

pub use bellperson::groth16::Proof;
pub use cpu::CpuBackend;
pub use prover::{prove, prove_start, ProveTimings, Started};

use std::time::{Duration, Instant};

use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar};

use msm::MsmStats;

use crate::pce::CompactProof;
use crate::srs::Srs;
use crate::synth::{CompactWitness, Density, Heap, Scalars};

/// Time and bytes of one stage of a backend's device work (a transfer, a group of kernels).
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct StageTime {
    pub stage: String,
    pub seconds: f64,
    pub bytes: u64,
}

/// A G1 base query of a parameter set.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum G1Query {
    H,
    L,
    A,
    BG1,
}

impl G1Query {
    pub fn bases(self, srs: &Srs) -> &[G1Affine] {
        match self {
            G1Query::H => &srs.h,
            G1Query::L => &srs.l,
            G1Query::A => &srs.a,
            G1Query::BG1 => &srs.b_g1,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            G1Query::H => "h",
            G1Query::L => "l",
            G1Query::A => "a",
            G1Query::BG1 => "b_g1",
        }
    }
}

/// One partition's assignment as the witness's G1 queries read it: L sums over every aux value,
/// A over every input then the aux values in A's density, B over the inputs and the aux values
/// in B's densities (the densities are as long as what they select from; the prover checks).
#[derive(Clone, Copy)]
pub struct Assignment<'a> {
    pub inputs: &'a [Scalar],
    pub aux: Aux<'a>,
    pub a_aux_density: &'a Density,
    pub b_input_density: &'a Density,
    pub b_aux_density: &'a Density,
}

impl<'a> Assignment<'a> {
    /// An assignment of aux values 32 bytes each, with A's aux, B's input and B's aux densities.
    pub fn values(inputs: &'a [Scalar], aux: &'a [Scalar], densities: [&'a Density; 3]) -> Self {
        let [a_aux_density, b_input_density, b_aux_density] = densities;
        Assignment {
            inputs,
            aux: Aux::Values(aux),
            a_aux_density,
            b_input_density,
            b_aux_density,
        }
    }

    /// The assignment of a compact proof: its inputs, its compact witness, its PCE's densities.
    pub fn compact(proof: &'a CompactProof) -> Assignment<'a> {
        let [a_aux_density, b_input_density, b_aux_density] = proof.densities();
        Assignment {
            inputs: &proof.inputs,
            aux: Aux::Compact(&proof.witness),
            a_aux_density,
            b_input_density,
            b_aux_density,
        }
    }

    /// A's scalars: every input, then the aux values in A's density.
    pub fn a_scalars(&self) -> Vec<Scalar> {
        concat_dense(self.inputs, None, self.aux, self.a_aux_density)
    }

    /// B's scalars: the inputs in B's input density, then the aux values in its aux density.
    pub fn b_scalars(&self) -> Vec<Scalar> {
        concat_dense(
            self.inputs,
            Some(self.b_input_density),
            self.aux,
            self.b_aux_density,
        )
    }

    /// Scalars of A, and of B.
    pub fn query_lengths(&self) -> (usize, usize) {
        (
            self.inputs.len() + self.a_aux_density.count(),
            self.b_input_density.count() + self.b_aux_density.count(),
        )
    }
}

/// The aux values of an [`Assignment`]: each one, or the compact witness (a device expands it
/// where it sums; the host where it must).
#[derive(Clone, Copy)]
pub enum Aux<'a> {
    Values(&'a [Scalar]),
    Compact(&'a CompactWitness),
}

impl<'a> From<&'a [Scalar]> for Aux<'a> {
    fn from(values: &'a [Scalar]) -> Self {
        Aux::Values(values)
    }
}

impl Aux<'_> {
    pub fn len(&self) -> usize {
        match self {
            Aux::Values(v) => v.len(),
            Aux::Compact(w) => w.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Every value: the slice itself, or the compact witness expanded here.
    pub fn values(&self) -> std::borrow::Cow<'_, [Scalar]> {
        match self {
            Aux::Values(v) => std::borrow::Cow::Borrowed(v),
            Aux::Compact(w) => std::borrow::Cow::Owned(w.expand()),
        }
    }
}

/// The scalars of a density-compressed query: inputs (all, or those in `input_density`), then the
/// aux values whose bit is set in `aux_density`.
fn concat_dense(
    inputs: &[Scalar],
    input_density: Option<&Density>,
    aux: Aux<'_>,
    aux_density: &Density,
) -> Vec<Scalar> {
    let n_inputs = input_density.map_or(inputs.len(), Density::count);
    let mut out = Vec::with_capacity(n_inputs + aux_density.count());
    match input_density {
        None => out.extend_from_slice(inputs),
        Some(d) => out.extend(d.iter_ones().map(|i| inputs[i])),
    }
    match aux {
        Aux::Values(aux) => out.extend(aux_density.iter_ones().map(|i| aux[i])),
        Aux::Compact(w) => w.gather_into(aux_density.iter_ones(), &mut out),
    }
    out
}

/// [`Backend::g1_sums`] of `proof` expanded on the heap (a, b and c by the host's SpMV), its
/// rows checked first: what a backend that does not compute them itself does.
pub fn g1_sums_expanded<B: Backend + ?Sized>(
    backend: &B,
    srs: &Srs,
    proof: &CompactProof,
    b_g2: bool,
) -> Result<G1Sums, ProveError> {
    let full = proof.expand(&Heap);
    match full.unsatisfied_rows() {
        0 => {}
        rows => return Err(ProveError::Unsatisfied { rows }),
    }
    let crate::synth::SynthesizedProof {
        a,
        b,
        c,
        inputs,
        aux,
        a_aux_density,
        b_input_density,
        b_aux_density,
    } = full;
    let w = Assignment::values(
        &inputs,
        &aux,
        [&a_aux_density, &b_input_density, &b_aux_density],
    );
    backend.g1_sums(srs, a, b, c, w, b_g2)
}

/// One query's sum, what its scalars were, and how long it took (its scalars gathered, summed).
#[derive(Clone, Debug)]
pub struct QuerySum {
    pub sum: G1Projective,
    pub stats: MsmStats,
    pub took: Duration,
}

/// The sums of the witness's three G1 queries.
#[derive(Clone, Debug)]
pub struct WitnessSums {
    pub l: QuerySum,
    pub a: QuerySum,
    pub b_g1: QuerySum,
}

/// Every G1 sum of a proof: Σ h·[H]₁ with h from a, b and c, and the witness's queries.
#[derive(Clone, Debug)]
pub struct G1Sums {
    pub h: G1Projective,
    /// h itself (its NTTs; on a device, with the transfers they wait for).
    pub h_took: Duration,
    /// The MSM of h over H.
    pub msm_h_took: Duration,
    pub witness: WitnessSums,
    /// B in G2, when the call was asked for it ([`Backend::g1_sums`]).
    pub b_g2: Option<G2Sum>,
}

/// B's sum in G2 and how long it took.
#[derive(Clone, Debug)]
pub struct G2Sum {
    pub sum: G2Projective,
    pub took: Duration,
}

/// The heavy arithmetic of a proof. Implementations must be exact: the proof they help make is
/// checked byte for byte against bellperson's.
pub trait Backend: Send + Sync {
    fn name(&self) -> &'static str;

    /// Coefficients of h(X) = (A(X)·B(X) - C(X)) / Z(X) from the evaluations of A, B, C over the
    /// smallest power-of-two domain holding them (shorter inputs are zero-padded): n - 1 values.
    fn h_coefficients(&self, a: Scalars, b: Scalars, c: Scalars) -> Result<Scalars, ProveError>;

    /// Σ h_i·[H_i]₁ over the H query of `srs`, h being [`Backend::h_coefficients`] of a, b, c;
    /// and how long h took. A device backend keeps h where it computed it.
    fn h_msm(
        &self,
        srs: &Srs,
        a: Scalars,
        b: Scalars,
        c: Scalars,
    ) -> Result<(G1Projective, Duration), ProveError> {
        let clock = Instant::now();
        let h = self.h_coefficients(a, b, c)?;
        let h_took = clock.elapsed();
        if srs.h.len() < h.len() {
            return Err(ProveError::ShapeMismatch(format!(
                "h has {} bases, the domain needs {}",
                srs.h.len(),
                h.len()
            )));
        }
        let (sum, _) = self.msm_g1_query(srs, G1Query::H, &h)?;
        Ok((sum, h_took))
    }

    /// Σ scalars[i]·bases[i] in G1.
    fn msm_g1(
        &self,
        bases: &[G1Affine],
        scalars: &[Scalar],
    ) -> Result<(G1Projective, MsmStats), ProveError>;

    /// Σ scalars[i]·bases[i] in G2.
    fn msm_g2(
        &self,
        bases: &[G2Affine],
        scalars: &[Scalar],
    ) -> Result<(G2Projective, MsmStats), ProveError>;

    /// Σ scalars[i]·bases[i] over `query` of `srs`, in G1. A backend may keep those bases
    /// where it computes between proofs (keyed by [`Srs::id`]); by default [`Backend::msm_g1`].
    fn msm_g1_query(
        &self,
        srs: &Srs,
        query: G1Query,
        scalars: &[Scalar],
    ) -> Result<(G1Projective, MsmStats), ProveError> {
        self.msm_g1(query.bases(srs), scalars)
    }

    /// [`G1Sums`]: [`Backend::h_msm`] then [`Backend::witness_msms_g1`] and, with `b_g2`, B in
    /// G2 ([`Backend::msm_b_g2`] over B's scalars gathered here) by default. A device backend
    /// moves the vectors across beside its MSMs and sums B in G2 from the scalars it gathered
    /// there for B in G1.
    fn g1_sums(
        &self,
        srs: &Srs,
        a: Scalars,
        b: Scalars,
        c: Scalars,
        w: Assignment<'_>,
        b_g2: bool,
    ) -> Result<G1Sums, ProveError> {
        let clock = Instant::now();
        let (h, h_took) = self.h_msm(srs, a, b, c)?;
        let msm_h_took = clock.elapsed().saturating_sub(h_took);
        let witness = self.witness_msms_g1(srs, w)?;
        let b_g2 = if b_g2 {
            let clock = Instant::now();
            let (sum, _) = self.msm_b_g2(srs, &w.b_scalars())?;
            Some(G2Sum {
                sum,
                took: clock.elapsed(),
            })
        } else {
            None
        };
        Ok(G1Sums {
            h,
            h_took,
            msm_h_took,
            witness,
            b_g2,
        })
    }

    /// Whether this backend computes a, b and c of `pce`'s circuits itself, where it sums
    /// ([`Backend::g1_sums_compact`]): then the engine synthesizes their witnesses alone.
    fn evaluates(&self, _pce: &crate::pce::Pce) -> bool {
        false
    }

    /// [`Backend::g1_sums`] of a compact proof: a, b and c computed from its PCE, and its
    /// rows checked (a·b = c, else [`ProveError::Unsatisfied`]). By default on the host: the
    /// proof expanded on the heap.
    fn g1_sums_compact(
        &self,
        srs: &Srs,
        proof: &CompactProof,
        b_g2: bool,
    ) -> Result<G1Sums, ProveError> {
        g1_sums_expanded(self, srs, proof, b_g2)
    }

    /// L, A and B in G1 over `w` ([`Assignment`]). By default each query's scalars are
    /// gathered on the host and summed by [`Backend::msm_g1_query`]; a device backend moves the
    /// assignment across once and gathers there.
    fn witness_msms_g1(&self, srs: &Srs, w: Assignment<'_>) -> Result<WitnessSums, ProveError> {
        // Each query's time counts from before its scalars are gathered.
        let timed = |query: G1Query, since: Instant, scalars: &[Scalar]| {
            let (sum, stats) = self.msm_g1_query(srs, query, scalars)?;
            Ok::<_, ProveError>(QuerySum {
                sum,
                stats,
                took: since.elapsed(),
            })
        };
        let l = timed(G1Query::L, Instant::now(), &w.aux.values())?;
        let clock = Instant::now();
        let a = timed(G1Query::A, clock, &w.a_scalars())?;
        let clock = Instant::now();
        let b_g1 = timed(G1Query::BG1, clock, &w.b_scalars())?;
        Ok(WitnessSums { l, a, b_g1 })
    }

    /// Σ scalars[i]·bases[i] over B's G2 bases of `srs`, likewise.
    fn msm_b_g2(
        &self,
        srs: &Srs,
        scalars: &[Scalar],
    ) -> Result<(G2Projective, MsmStats), ProveError> {
        self.msm_g2(&srs.b_g2, scalars)
    }

    /// Device stage times (transfers, kernels) recorded since the last call; empty on the CPU.
    fn stage_times(&self) -> Vec<StageTime> {
        Vec::new()
    }

    /// Starts (or stops) keeping device stage times for [`Backend::stage_times`].
    fn record_stages(&self, _on: bool) {}

    /// Whether parameter-set bases may stay on the device between proofs (on by default; off
    /// only to measure the difference).
    fn keep_bases(&self, _on: bool) {}

    /// Whether fixed-base tables of the H query's bases are made and used where device memory
    /// allows (on by default; off only to measure the difference).
    fn window_tables(&self, _on: bool) {}

    /// Host bytes this backend keeps page-locked while it exists (a GPU's upload staging):
    /// part of the memory budget.
    fn locked_bytes(&self) -> u64 {
        0
    }

    /// Registers the page-locked pool with the device's driver, so that uploads from its
    /// buffers go straight to the device; how long that took (zero if it already was). None
    /// where there is nothing to register (the CPU).
    fn register_pool(
        &self,
        _pool: &std::sync::Arc<crate::memory::PinnedPool>,
    ) -> Result<Option<Duration>, ProveError> {
        Ok(None)
    }

    /// Device bytes of parameter-set bases and PCE matrices kept resident between proofs; None
    /// on the CPU.
    fn device_resident_bytes(&self) -> Option<u64> {
        None
    }

    /// How long the device has been doing this backend's work since it started; None on the
    /// CPU, which has no device to keep busy.
    fn device_busy(&self) -> Option<Duration> {
        None
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ProveError {
    #[error("parameters do not fit the circuit: {0}")]
    ShapeMismatch(String),
    #[error(transparent)]
    Domain(#[from] domain::DomainTooLarge),
    #[error("the verifying key's delta is the identity: parameters are malformed")]
    DegenerateParameters,
    #[error("device error: {0}")]
    Device(String),
    /// a·b ≠ c in some rows of a witness whose a, b and c the prover computed from its PCE:
    /// the PCE is wrong for the circuit (or the witness is).
    #[error("{rows} rows of the witness through its PCE are unsatisfied")]
    Unsatisfied { rows: usize },
}
