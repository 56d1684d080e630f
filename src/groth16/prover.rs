//! The prover: one [`SynthesizedProof`] and the SRS in, one Groth16 proof out.
//!
//! π = (A, B, C) with
//!   A = α + Σ a_i·[A_i]₁ + r·δ
//!   B = β + Σ b_i·[B_i]₂ + s·δ
//!   C = Σ aux_i·[L_i]₁ + Σ h_i·[H_i]₁ + s·A + r·B₁ - r·s·δ
//! where a_i, b_i run over the density-compressed assignment.

use std::time::{Duration, Instant};

use blstrs::{G1Projective, G2Projective, Scalar};
use group::{prime::PrimeCurveAffine, Curve};
use serde::Serialize;

use super::msm::MsmStats;
use super::{Assignment, Backend, G1Sums, Proof, ProveError};
use crate::pce::Synthesized;
use crate::srs::Srs;
use crate::synth::{Density, SynthesizedProof};

/// Where one proof's time went, and what its MSMs saw.
#[derive(Clone, Debug, Default, Serialize)]
pub struct ProveTimings {
    #[serde(with = "secs")]
    pub h_ntt: Duration,
    #[serde(with = "secs")]
    pub msm_h: Duration,
    #[serde(with = "secs")]
    pub msm_l: Duration,
    #[serde(with = "secs")]
    pub msm_a: Duration,
    #[serde(with = "secs")]
    pub msm_b_g1: Duration,
    #[serde(with = "secs")]
    pub msm_b_g2: Duration,
    #[serde(with = "secs")]
    pub total: Duration,
    pub l_scalars: MsmStats,
    pub a_scalars: MsmStats,
    pub b_scalars: MsmStats,
}

mod secs {
    pub fn serialize<S: serde::Serializer>(
        d: &std::time::Duration,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        s.serialize_f64(d.as_secs_f64())
    }
}

/// Proves one synthesized circuit with randomness `r`, `s`: [`prove_start`] (B in G2 with the
/// rest) then [`Started::finish`] on the same backend.
pub fn prove(
    backend: &dyn Backend,
    srs: &Srs,
    synth: impl Into<Synthesized>,
    r: Scalar,
    s: Scalar,
) -> Result<(Proof<blstrs::Bls12>, ProveTimings), ProveError> {
    prove_start(backend, srs, synth, r, s, true)?.finish(backend, srs)
}

/// A proof whose G1 work is done (h, and the H, L, A and B MSMs in G1): what is left is B in
/// G2, unless it was summed with them, and the join. It holds at most B's scalars, so the
/// partition's other buffers are already freed, and the prover can take the next partition
/// while this one finishes.
pub struct Started {
    r: Scalar,
    s: Scalar,
    h_sum: G1Projective,
    l_sum: G1Projective,
    a_sum: G1Projective,
    b_g1_sum: G1Projective,
    b_g2: BInG2,
    timings: ProveTimings,
}

/// B in G2 of a started proof: summed with its G1 work, or B's scalars for the finish to sum.
/// One lives per partition in flight, beside G1 sums of the same size: kept inline.
#[allow(clippy::large_enum_variant)]
enum BInG2 {
    Summed(G2Projective),
    Scalars(Vec<Scalar>),
}

impl std::fmt::Debug for Started {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.b_g2 {
            BInG2::Summed(_) => write!(f, "Started(B in G2 summed)"),
            BInG2::Scalars(scalars) => write!(f, "Started({} B scalars)", scalars.len()),
        }
    }
}

/// The first part of a proof: everything but the join, and but B in G2 unless `with_b_g2` (a
/// device backend then sums it from the B scalars it gathered for B in G1, beside its other
/// work). `synth` is consumed and its buffers are freed as they are used. A compact proof's a,
/// b and c are computed by the backend ([`Backend::g1_sums_compact`]).
pub fn prove_start(
    backend: &dyn Backend,
    srs: &Srs,
    synth: impl Into<Synthesized>,
    r: Scalar,
    s: Scalar,
    with_b_g2: bool,
) -> Result<Started, ProveError> {
    let start = Instant::now();
    let vk = &srs.vk;
    if bool::from(vk.delta_g1.is_identity() | vk.delta_g2.is_identity()) {
        return Err(ProveError::DegenerateParameters);
    }
    match synth.into() {
        Synthesized::Full(synth) => {
            let SynthesizedProof {
                a,
                b,
                c,
                inputs,
                aux,
                a_aux_density,
                b_input_density,
                b_aux_density,
            } = synth;
            let densities = [&a_aux_density, &b_input_density, &b_aux_density];
            check_shape(
                srs,
                [a.len(), b.len(), c.len()],
                &inputs,
                aux.len(),
                densities,
            )?;
            let w = Assignment::values(&inputs, &aux, densities);
            let (sums, b_scalars) =
                beside_b_scalars(w, with_b_g2, || backend.g1_sums(srs, a, b, c, w, with_b_g2));
            let started = started(sums?, b_scalars, w, r, s, start);
            drop((inputs, aux));
            tracing::debug!(
                ms = start.elapsed().as_secs_f64() * 1e3,
                "prove: assignment freed"
            );
            Ok(started)
        }
        Synthesized::Compact(proof) => {
            let rows = proof.num_constraints();
            let densities = proof.densities();
            check_shape(
                srs,
                [rows; 3],
                &proof.inputs,
                proof.witness.len(),
                densities,
            )?;
            let w = Assignment::compact(&proof);
            let (sums, b_scalars) = beside_b_scalars(w, with_b_g2, || {
                backend.g1_sums_compact(srs, &proof, with_b_g2)
            });
            Ok(started(sums?, b_scalars, w, r, s, start))
        }
    }
}

/// `sums`, and meanwhile on another core B's scalars, kept for a finish that sums B in G2
/// (unless `with_b_g2`).
fn beside_b_scalars(
    w: Assignment<'_>,
    with_b_g2: bool,
    sums: impl FnOnce() -> Result<G1Sums, ProveError>,
) -> (Result<G1Sums, ProveError>, Option<Vec<Scalar>>) {
    std::thread::scope(|scope| {
        let b_scalars = (!with_b_g2).then(|| scope.spawn(|| w.b_scalars()));
        let sums = sums();
        let b_scalars =
            b_scalars.map(|gather| gather.join().expect("gathering B's scalars does not panic"));
        (sums, b_scalars)
    })
}

/// The started proof of `sums`, B in G2 summed with them or its scalars kept.
fn started(
    sums: G1Sums,
    b_scalars: Option<Vec<Scalar>>,
    w: Assignment<'_>,
    r: Scalar,
    s: Scalar,
    start: Instant,
) -> Started {
    tracing::debug!(ms = start.elapsed().as_secs_f64() * 1e3, "prove: sums back");
    let mut t = ProveTimings::default();
    let b_g2 = match (sums.b_g2, b_scalars) {
        (Some(summed), _) => {
            t.msm_b_g2 = summed.took;
            BInG2::Summed(summed.sum)
        }
        (None, Some(scalars)) => BInG2::Scalars(scalars),
        // A backend that was asked for B in G2 and left it out: the finish sums it.
        (None, None) => BInG2::Scalars(w.b_scalars()),
    };
    (t.h_ntt, t.msm_h) = (sums.h_took, sums.msm_h_took);
    let (h_sum, witness) = (sums.h, sums.witness);
    (t.msm_l, t.l_scalars) = (witness.l.took, witness.l.stats);
    (t.msm_a, t.a_scalars) = (witness.a.took, witness.a.stats);
    (t.msm_b_g1, t.b_scalars) = (witness.b_g1.took, witness.b_g1.stats);
    t.total = start.elapsed();
    Started {
        r,
        s,
        h_sum,
        l_sum: witness.l.sum,
        a_sum: witness.a.sum,
        b_g1_sum: witness.b_g1.sum,
        b_g2,
        timings: t,
    }
}

impl Started {
    /// Bytes this proof still holds on the heap (B's scalars, unless B in G2 is summed).
    pub fn heap_bytes(&self) -> usize {
        match &self.b_g2 {
            BInG2::Summed(_) => 0,
            BInG2::Scalars(scalars) => scalars.capacity() * std::mem::size_of::<Scalar>(),
        }
    }

    /// B in G2 on `backend` unless it is summed, then the proof. `srs` must be the set the
    /// proof was started with. The timings' total counts both parts, not the wait between
    /// them.
    pub fn finish(
        self,
        backend: &dyn Backend,
        srs: &Srs,
    ) -> Result<(Proof<blstrs::Bls12>, ProveTimings), ProveError> {
        let Started {
            r,
            s,
            h_sum,
            l_sum,
            a_sum,
            b_g1_sum,
            b_g2,
            mut timings,
        } = self;
        let vk = &srs.vk;
        let begun = Instant::now();
        let b_g2_sum = match b_g2 {
            BInG2::Summed(sum) => sum,
            BInG2::Scalars(scalars) => {
                let (sum, _) = backend.msm_b_g2(srs, &scalars)?;
                drop(scalars);
                timings.msm_b_g2 = begun.elapsed();
                sum
            }
        };

        let rs = r * s;
        let g_a: G1Projective = vk.delta_g1 * r + vk.alpha_g1 + a_sum;
        let g_b: G2Projective = vk.delta_g2 * s + vk.beta_g2 + b_g2_sum;
        let g_c: G1Projective = a_sum * s
            + b_g1_sum * r
            + vk.delta_g1 * rs
            + vk.alpha_g1 * s
            + vk.beta_g1 * r
            + h_sum
            + l_sum;
        timings.total += begun.elapsed();
        tracing::debug!(
            finish_ms = begun.elapsed().as_secs_f64() * 1e3,
            "prove: finished"
        );
        Ok((
            Proof {
                a: g_a.to_affine(),
                b: g_b.to_affine(),
                c: g_c.to_affine(),
            },
            timings,
        ))
    }
}

/// The parameters fit a proof of `abc` evaluations, `inputs`, `aux` values and `densities`
/// (A's aux, B's inputs, B's aux).
fn check_shape(
    srs: &Srs,
    abc: [usize; 3],
    inputs: &[Scalar],
    aux: usize,
    densities: [&Density; 3],
) -> Result<(), ProveError> {
    let mismatch = |what: &str, have: usize, want: usize| {
        Err(ProveError::ShapeMismatch(format!(
            "{what}: parameters have {have}, circuit needs {want}"
        )))
    };
    let [a_aux_density, b_input_density, b_aux_density] = densities;
    if abc[0] != abc[1] || abc[0] != abc[2] {
        return mismatch("a/b/c evaluations", abc[1], abc[0]);
    }
    if srs.vk.ic.len() != inputs.len() {
        return mismatch("public inputs (ic)", srs.vk.ic.len(), inputs.len());
    }
    if srs.l.len() != aux {
        return mismatch("aux variables (l)", srs.l.len(), aux);
    }
    let a_len = inputs.len() + a_aux_density.count();
    if srs.a.len() != a_len {
        return mismatch("A query bases (a)", srs.a.len(), a_len);
    }
    let b_len = b_input_density.count() + b_aux_density.count();
    if srs.b_g1.len() != b_len || srs.b_g2.len() != b_len {
        return mismatch(
            "B query bases (b_g1/b_g2)",
            srs.b_g1.len().min(srs.b_g2.len()),
            b_len,
        );
    }
    if a_aux_density.len() != aux
        || b_aux_density.len() != aux
        || b_input_density.len() != inputs.len()
    {
        return mismatch("density lengths", a_aux_density.len(), aux);
    }
    Ok(())
}
