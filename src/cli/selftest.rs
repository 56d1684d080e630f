//! `cuzk selftest --gpu`: every GPU kernel against the CPU backend, on random and edge inputs of
//! many sizes. Results must be equal, element for element and point for point.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{bail, Result};
use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
use clap::Args;
use ff::Field;
use group::Curve;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rayon::prelude::*;

use crate::gpu;
use crate::gpu::kernels::FieldCode;
use crate::gpu::GpuBackend;
use crate::groth16::domain::Domain;
use crate::groth16::msm::{msm, MsmCurve};
use crate::groth16::{Assignment, Backend, CpuBackend, G1Query, WitnessSums};
use crate::synth::Density;

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Check {
    Ntt,
    H,
    G1,
    G2,
    /// L, A and B in G1 of a witness, A's and B's scalars gathered by density on the device.
    Queries,
    /// The benchmarks' points: sums of pairs from two tables, made on the device.
    Points,
    /// a, b and c from a PCE and a compact witness expanded on the device.
    Spmv,
    /// Whole proofs of synthetic circuits from their compact witness (a, b and c computed on
    /// the device) against the CPU's from the full path, verified; a changed value refused.
    Compact,
    /// The H query's MSM through its fixed-base table, made on the device from its bases: the
    /// G1 cases (random, witness-like, edge and crowded scalars, repeated points and
    /// identities), the table used wherever its shape pays.
    Table,
}

#[derive(Args)]
pub struct SelftestArgs {
    /// Compare the GPU backend with the CPU backend (the only selftest there is).
    #[arg(long)]
    gpu: bool,
    /// Largest size tested, log2 (NTT length, H domain, MSM points).
    #[arg(long, default_value_t = 24)]
    max_log2: u32,
    /// Which checks to run (default: all).
    #[arg(long, value_enum, value_delimiter = ',')]
    only: Vec<Check>,
    /// Devices to test (default: all).
    #[arg(long, value_delimiter = ',')]
    gpus: Vec<usize>,
    /// Where compiled kernels are cached.
    #[arg(long, default_value = super::DEFAULT_KERNEL_CACHE)]
    kernel_cache: PathBuf,
    /// Kernels with the field arithmetic in portable C++ instead of PTX carry chains (a cubin
    /// of its own): tells a fault of the carry chains from one elsewhere.
    #[arg(long)]
    portable_field: bool,
}

pub fn run(args: SelftestArgs) -> Result<()> {
    if !args.gpu {
        bail!("the selftest compares the GPU backend with the CPU backend: pass --gpu");
    }
    let found = gpu::discover(&args.gpus).map_err(|reason| anyhow::anyhow!("no GPU: {reason}"))?;
    let mut failures = 0;
    let mut checks = 0;
    for g in &found {
        let backend = GpuBackend::new(
            g,
            &args.kernel_cache,
            FieldCode::portable(args.portable_field),
        )?;
        println!(
            "GPU {} {} ({}, {} GiB)",
            g.info.ordinal,
            g.info.name,
            g.info.arch(),
            g.info.memory_bytes >> 30
        );
        let mut t = Tester {
            gpu: &backend,
            failures: 0,
            checks: 0,
        };
        let wanted = |c: Check| args.only.is_empty() || args.only.contains(&c);
        if wanted(Check::Ntt) {
            t.ntt(args.max_log2)?;
        }
        if wanted(Check::H) {
            t.h(args.max_log2)?;
        }
        if wanted(Check::G1) {
            t.msm::<G1Projective>(args.max_log2)?;
        }
        if wanted(Check::G2) {
            t.msm::<G2Projective>(args.max_log2)?;
        }
        if wanted(Check::Queries) {
            t.queries(args.max_log2)?;
        }
        if wanted(Check::Points) {
            t.points::<G1Projective>(args.max_log2)?;
            t.points::<G2Projective>(args.max_log2)?;
        }
        if wanted(Check::Spmv) {
            t.spmv(args.max_log2)?;
        }
        if wanted(Check::Compact) {
            t.compact(args.max_log2)?;
        }
        if wanted(Check::Table) {
            t.table(args.max_log2)?;
        }
        failures += t.failures;
        checks += t.checks;
    }
    println!("{checks} checks, {failures} failed");
    if failures > 0 {
        bail!("{failures} of {checks} GPU checks disagree with the CPU");
    }
    Ok(())
}

/// `witness` with its last value changed (every synthetic circuit's value is in a row of its
/// own, which then no longer holds).
fn last_value_changed(witness: &crate::synth::CompactWitness) -> crate::synth::CompactWitness {
    let mut values = witness.expand();
    if let Some(last) = values.last_mut() {
        *last += Scalar::from(3u64);
    }
    let mut changed = crate::synth::CompactWitness::with_capacity(values.len());
    values.iter().for_each(|v| changed.push(*v));
    changed
}

/// A named MSM input: bases and scalars.
type Case<A> = (&'static str, Vec<A>, Vec<Scalar>);

struct Tester<'a> {
    gpu: &'a GpuBackend,
    failures: usize,
    checks: usize,
}

impl Tester<'_> {
    /// A synthetic circuit's a, b and c (bits, products, sums with coefficient two, inputs in
    /// B) from its PCE and its compact witness on the device, against the host's SpMV, up to
    /// 2^min(max, 20) rows.
    fn spmv(&mut self, max_log2: u32) -> Result<()> {
        use crate::synth::synthetic::SyntheticCircuit;
        let mut logs = vec![2, 4, 10, 16, max_log2.min(20)];
        logs.retain(|&l| l <= max_log2.max(2));
        logs.dedup();
        for log in logs {
            let rows = (1usize << log).saturating_sub(8).max(1);
            // Recording asks for no value: another seed records the same matrices.
            let pce = std::sync::Arc::new(crate::pce::record(SyntheticCircuit::new(
                3,
                rows,
                1000 + log as u64,
            ))?);
            let circuit = SyntheticCircuit::new(3, rows, log as u64);
            let (inputs, compact) = pce.compact_witness(circuit.clone())?;
            let clock = Instant::now();
            let (got, unsatisfied) = self.gpu.pce_evaluations(&pce, &inputs, &compact)?;
            let gpu_s = clock.elapsed().as_secs_f64();
            let clock = Instant::now();
            let want = pce.synthesize(circuit)?;
            let cpu_s = clock.elapsed().as_secs_f64();
            let ok = got[0] == want.a[..]
                && got[1] == want.b[..]
                && got[2] == want.c[..]
                && unsatisfied == 0;
            let (zeros, ones, others) = compact.counts();
            self.report(
                ok,
                format!(
                    "spmv rows {} ({zeros}/{ones}/{others} 0/1/other)",
                    pce.shape().constraints
                ),
                gpu_s,
                cpu_s,
            );
            // One value changed: the rows that read it no longer hold, on both sides.
            let wrong = last_value_changed(&compact);
            let clock = Instant::now();
            let (_, unsatisfied) = self.gpu.pce_evaluations(&pce, &inputs, &wrong)?;
            let gpu_s = clock.elapsed().as_secs_f64();
            let clock = Instant::now();
            let host = crate::pce::CompactProof {
                pce: pce.clone(),
                inputs: inputs.clone(),
                witness: wrong,
            }
            .expand(&crate::synth::Heap)
            .unsatisfied_rows();
            let cpu_s = clock.elapsed().as_secs_f64();
            self.report(
                unsatisfied > 0 && unsatisfied as usize == host,
                format!(
                    "spmv rows {}: one value changed, {unsatisfied} rows unsatisfied",
                    pce.shape().constraints
                ),
                gpu_s,
                cpu_s,
            );
        }
        Ok(())
    }

    /// A synthetic circuit of 2^10 and 2^min(max, 14) rows proved from its compact witness on
    /// the device and from its full synthesis on the CPU, with the same r and s and random
    /// parameters made for it: the same proof bytes, and it verifies. Then the witness with one
    /// value changed: refused as unsatisfied, no proof.
    fn compact(&mut self, max_log2: u32) -> Result<()> {
        use crate::groth16::{prove, ProveError};
        use crate::pce::{CompactProof, HoldsPce};
        use crate::synth::synthetic::SyntheticCircuit;
        use bellperson::groth16::{
            generate_random_parameters, prepare_verifying_key, verify_proof,
        };
        let mut logs = vec![10, max_log2.clamp(10, 14)];
        logs.dedup();
        for log in logs {
            let rows = (1usize << log) - 8;
            let circuit = SyntheticCircuit::new(3, rows, log as u64);
            let mut rng = ChaCha8Rng::seed_from_u64(log as u64);
            let params =
                generate_random_parameters::<blstrs::Bls12, _, _>(circuit.clone(), &mut rng)?;
            let dir = tempfile::tempdir()?;
            let path = dir.path().join("synthetic.params");
            let mut bytes = Vec::new();
            params.write(&mut bytes)?;
            crate::persist::write_atomic(&path, &bytes)?;
            let srs = crate::srs::Srs::read(&path)?;
            let pce: std::sync::Arc<dyn HoldsPce> = std::sync::Arc::new(crate::pce::record(
                SyntheticCircuit::new(3, rows, 1000 + log as u64),
            )?);
            let full = crate::synth::synthesize(circuit.clone())?;
            let compact = CompactProof::synthesize(pce, circuit.clone())?;
            let (r, s) = (Scalar::random(&mut rng), Scalar::random(&mut rng));
            let proof_bytes = |p: &crate::groth16::Proof<blstrs::Bls12>| {
                let mut v = Vec::new();
                p.write(&mut v).map(|()| v)
            };
            let clock = Instant::now();
            let (want, _) = prove(&CpuBackend, &srs, full, r, s)?;
            let cpu_s = clock.elapsed().as_secs_f64();
            // Twice: the first call also makes the PCE resident.
            prove(self.gpu, &srs, compact.clone(), r, s)?;
            let clock = Instant::now();
            let (got, _) = prove(self.gpu, &srs, compact.clone(), r, s)?;
            let gpu_s = clock.elapsed().as_secs_f64();
            let pvk = prepare_verifying_key(&params.vk);
            let ok = proof_bytes(&got)? == proof_bytes(&want)?
                && verify_proof(&pvk, &got, &circuit.inputs)?;
            self.report(
                ok,
                format!("compact proof, {rows} rows: the CPU's, verified"),
                gpu_s,
                cpu_s,
            );
            let mut wrong = compact;
            wrong.witness = last_value_changed(&wrong.witness);
            let clock = Instant::now();
            let refused = prove(self.gpu, &srs, wrong, r, s);
            let gpu_s = clock.elapsed().as_secs_f64();
            self.report(
                matches!(refused, Err(ProveError::Unsatisfied { rows }) if rows > 0),
                format!("compact proof, {rows} rows, one value changed: refused"),
                gpu_s,
                0.0,
            );
        }
        Ok(())
    }

    fn report(&mut self, ok: bool, what: String, gpu_s: f64, cpu_s: f64) {
        self.checks += 1;
        if !ok {
            self.failures += 1;
        }
        println!(
            "{} {what:<48} gpu {gpu_s:>8.4} s  cpu {cpu_s:>8.4} s",
            if ok { "ok  " } else { "FAIL" }
        );
    }

    fn ntt(&mut self, max_log2: u32) -> Result<()> {
        let logs = sizes(max_log2, &[0, 1, 2, 3, 5, 8, 11, 16, 20, 22, 24]);
        for log_n in logs {
            let n = 1usize << log_n;
            for (name, v) in [
                ("random", random_scalars(n, log_n as u64)),
                ("edge", edge_scalars(n)),
            ] {
                for inverse in [false, true] {
                    let domain = Domain::get(log_n)?;
                    let clock = Instant::now();
                    let got = self.gpu.ntt(v.clone(), inverse)?;
                    let gpu_s = clock.elapsed().as_secs_f64();
                    let mut want = v.clone();
                    let clock = Instant::now();
                    if inverse {
                        domain.ifft(&mut want);
                    } else {
                        domain.fft(&mut want);
                    }
                    let cpu_s = clock.elapsed().as_secs_f64();
                    let what =
                        format!("{} 2^{log_n} {name}", if inverse { "intt" } else { "ntt " });
                    self.report(got == want, what, gpu_s, cpu_s);
                    if !inverse {
                        // As h runs it: the same evaluations, left in bit-reversed order.
                        let clock = Instant::now();
                        let got = self.gpu.ntt_bit_reversed(v.clone())?;
                        let gpu_s = clock.elapsed().as_secs_f64();
                        let reversed = (0..n).map(|i| want[bit_reversed(i, log_n)]);
                        let same = got.len() == n && got.iter().copied().eq(reversed);
                        let what = format!("ntt 2^{log_n} {name}, bit-reversed out");
                        self.report(same, what, gpu_s, cpu_s);
                    }
                }
            }
        }
        Ok(())
    }

    fn h(&mut self, max_log2: u32) -> Result<()> {
        let mut lens: Vec<usize> = vec![1, 2, 3, 5, 1000, 1025];
        for log in sizes(max_log2, &[12, 16, 20, 22, 24]) {
            lens.push(1 << log);
            lens.push((1 << log) - 3);
        }
        let largest = lens
            .iter()
            .filter(|&&l| l <= 1 << 22)
            .max()
            .copied()
            .unwrap_or(1);
        let h_bases = random_bases::<G1Projective>(largest.next_power_of_two(), 3);
        for (i, len) in lens.into_iter().enumerate() {
            let seed = 100 + i as u64;
            let (a, b, c) = if i % 3 == 2 {
                (
                    edge_scalars(len),
                    random_scalars(len, seed),
                    edge_scalars(len),
                )
            } else {
                (
                    random_scalars(len, seed),
                    random_scalars(len, seed + 1),
                    random_scalars(len, seed + 2),
                )
            };
            let (a2, b2, c2) = (a.clone(), b.clone(), c.clone());
            let clock = Instant::now();
            let got =
                self.gpu
                    .h_coefficients(a.clone().into(), b.clone().into(), c.clone().into())?;
            let gpu_s = clock.elapsed().as_secs_f64();
            let clock = Instant::now();
            let want = CpuBackend.h_coefficients(a.into(), b.into(), c.into())?;
            let cpu_s = clock.elapsed().as_secs_f64();
            self.report(got == want, format!("h    len {len}"), gpu_s, cpu_s);
            // h straight into its MSM on the device (h in bit-reversed order there).
            if len <= 1 << 22 {
                let bases = &h_bases[..want.len()];
                let clock = Instant::now();
                let got = self.gpu.h_msm_g1(bases, a2.into(), b2.into(), c2.into())?;
                let gpu_s = clock.elapsed().as_secs_f64();
                let clock = Instant::now();
                let (want, _) = msm::<G1Projective>(bases, &want);
                let cpu_s = clock.elapsed().as_secs_f64();
                self.report(got == want, format!("h -> msm len {len}"), gpu_s, cpu_s);
            }
        }
        Ok(())
    }

    fn msm<C: TestCurve>(&mut self, max_log2: u32) -> Result<()> {
        let lens = msm_lens(max_log2);
        let max = *lens.iter().max().unwrap_or(&1);
        let bases = random_bases::<C>(max, 7);
        for (i, &n) in lens.iter().enumerate() {
            for (name, b, s) in msm_cases::<C>(&bases, n, i as u64) {
                let clock = Instant::now();
                let (got, _) = C::gpu_msm(self.gpu, &b, &s)?;
                let gpu_s = clock.elapsed().as_secs_f64();
                let clock = Instant::now();
                let (want, _) = msm::<C>(&b, &s);
                let cpu_s = clock.elapsed().as_secs_f64();
                self.report(
                    got == want,
                    format!("msm {} n {n} {name}", C::NAME),
                    gpu_s,
                    cpu_s,
                );
            }
        }
        Ok(())
    }

    /// The G1 MSM cases through the H query of a parameter set of their bases and a few more
    /// (a call sums fewer points than the query holds, as a proof's h does), whose fixed-base
    /// table the backend makes on the device over the whole query; from 2^16 points on (where a
    /// table pays) it must have been used whenever scalars past 1 went through Pippenger.
    fn table(&mut self, max_log2: u32) -> Result<()> {
        let lens = msm_lens(max_log2);
        let max = *lens.iter().max().unwrap_or(&1);
        let bases = random_bases::<G1Projective>(max, 7);
        self.gpu.record_stages(true);
        for (i, &n) in lens.iter().enumerate() {
            for (k, (name, b, s)) in msm_cases::<G1Projective>(&bases, n, i as u64)
                .into_iter()
                .enumerate()
            {
                let query = b.iter().chain(&bases[..n.min(3)]).copied().collect();
                let mut srs = super::bench_gpu::srs(query, Vec::new());
                srs.id = crate::srs::SrsId::in_memory(5000 + 100 * i as u64 + k as u64);
                self.gpu.stage_times();
                let clock = Instant::now();
                let (got, stats) = self.gpu.msm_g1_query(&srs, G1Query::H, &s)?;
                let gpu_s = clock.elapsed().as_secs_f64();
                let table = self
                    .gpu
                    .stage_times()
                    .iter()
                    .any(|t| t.stage.contains(", table,"));
                let clock = Instant::now();
                let (want, _) = msm::<G1Projective>(&srs.h[..n], &s);
                let cpu_s = clock.elapsed().as_secs_f64();
                let table_expected = n > 1 << 16 && stats.others > 0;
                self.report(
                    got == want && (table || !table_expected),
                    format!("msm g1 n {n} {name} (H query, table used: {table})"),
                    gpu_s,
                    cpu_s,
                );
                drop(srs);
                self.gpu.keep_bases(false);
                self.gpu.keep_bases(true);
            }
        }
        self.gpu.record_stages(false);
        Ok(())
    }
}

/// i with its low `bits` bits reversed.
fn bit_reversed(i: usize, bits: u32) -> usize {
    match bits {
        0 => i,
        _ => i.reverse_bits() >> (usize::BITS - bits),
    }
}

/// The MSM sizes the selftest checks up to 2^max_log2.
fn msm_lens(max_log2: u32) -> Vec<usize> {
    let mut lens: Vec<usize> = vec![1, 2, 3, 7, 100, 1000, 1025, 4097, 65537];
    lens.extend(
        sizes(max_log2, &[20, 22, 24])
            .into_iter()
            .map(|l| 1usize << l),
    );
    lens
}

/// The MSM cases of `n` of `bases`: random and witness-like scalars always; up to 2^20 points
/// also repeated points with identities, all zeros, all ones, crowded buckets and one scalar
/// repeated. `i` seeds the scalars.
fn msm_cases<C: TestCurve>(bases: &[C::Affine], n: usize, i: u64) -> Vec<Case<C::Affine>> {
    let mut cases: Vec<Case<C::Affine>> = vec![
        ("random", bases[..n].to_vec(), random_scalars(n, 500 + i)),
        (
            "witness-like (0, 1, r-1)",
            bases[..n].to_vec(),
            witness_scalars(n, i),
        ),
    ];
    if n <= 1 << 20 {
        // One point repeated (bucket doublings) with identities mixed in.
        let p = bases[0];
        let mut repeated: Vec<C::Affine> = vec![p; n];
        for k in (0..n).step_by(5) {
            repeated[k] = C::identity_affine();
        }
        cases.push(("repeated point + identities", repeated, edge_scalars(n)));
        cases.push((
            "all zero scalars",
            bases[..n].to_vec(),
            vec![Scalar::ZERO; n],
        ));
        cases.push(("all one scalars", bases[..n].to_vec(), vec![Scalar::ONE; n]));
        // Few distinct digits: a handful of buckets hold every entry, across many chunks.
        let small = (0..n).map(|k| Scalar::from(2 + (k % 8) as u64)).collect();
        cases.push(("scalars 2..9 (crowded buckets)", bases[..n].to_vec(), small));
        let one = random_scalars(1, 900 + i)[0];
        cases.push((
            "one random scalar repeated",
            bases[..n].to_vec(),
            vec![one; n],
        ));
    }
    cases
}

impl Tester<'_> {
    /// The benchmarks' points (sums of table pairs, made on the device) against the host's
    /// sums, with tables that hold infinity, a point of the other table (a doubling) and its
    /// negation (a sum at infinity).
    fn points<C: TestCurve>(&mut self, max_log2: u32) -> Result<()> {
        let mut lens: Vec<usize> = vec![1, 31, 32, 33, 1000, 4097];
        lens.extend(sizes(max_log2, &[16, 20]).into_iter().map(|l| 1usize << l));
        for (i, n) in lens.into_iter().enumerate() {
            let (r_len, s_len) = super::bench_gpu::tables(n);
            let mut r = random_bases::<C>(r_len.max(4), 600 + i as u64);
            r.truncate(r_len);
            let mut s = random_bases::<C>(s_len.max(2), 700 + i as u64);
            s.truncate(s_len);
            if r_len >= 4 {
                r[1] = C::identity_affine();
                r[2] = s[0];
                r[3] = (-C::from(s[0])).to_affine();
            }
            if s_len >= 2 {
                s[1] = C::identity_affine();
            }
            let clock = Instant::now();
            let got = C::gpu_pair_sums(self.gpu, &r, &s, n)?;
            let gpu_s = clock.elapsed().as_secs_f64();
            let clock = Instant::now();
            let log_r = r_len.trailing_zeros();
            let sums: Vec<C> = (0..n)
                .into_par_iter()
                .map(|i| C::from(r[i & (r_len - 1)]) + C::from(s[i >> log_r]))
                .collect();
            let cpu_s = clock.elapsed().as_secs_f64();
            let same = got.len() == n && got.par_iter().zip(&sums).all(|(g, w)| C::from(*g) == *w);
            self.report(
                same,
                format!("points {} n {n} (tables {r_len} x {s_len})", C::NAME),
                gpu_s,
                cpu_s,
            );
        }
        Ok(())
    }

    /// The witness's G1 queries (L, A, B) on the device against the CPU: random densities of
    /// several fills, and the empty and full ones.
    fn queries(&mut self, max_log2: u32) -> Result<()> {
        let mut shapes: Vec<(usize, usize)> = vec![(1, 1), (1, 2), (3, 100), (5, 4097)];
        shapes.extend(
            sizes(max_log2, &[16, 20, 22])
                .into_iter()
                .map(|l| (40, 1usize << l)),
        );
        let max_aux = shapes.iter().map(|s| s.1).max().unwrap_or(1);
        let bases = random_bases::<G1Projective>(max_aux.next_power_of_two() + 64, 21);
        for (i, (n_in, n_aux)) in shapes.into_iter().enumerate() {
            let seed = 1000 + 10 * i as u64;
            let inputs = random_scalars(n_in, seed);
            let aux = witness_scalars(n_aux, seed + 1);
            let fills: [(&str, u32, u32, u32); 3] = [
                ("densities 60/50/25%", 60, 50, 25),
                ("densities empty", 0, 0, 0),
                ("densities full", 100, 100, 100),
            ];
            for (k, (name, a_fill, b_in_fill, b_aux_fill)) in fills.into_iter().enumerate() {
                let a_aux_density = random_density(n_aux, a_fill, seed + 2 + k as u64);
                let b_input_density = random_density(n_in, b_in_fill, seed + 5 + k as u64);
                let b_aux_density = random_density(n_aux, b_aux_fill, seed + 8 + k as u64);
                let w = Assignment {
                    inputs: &inputs,
                    aux: aux[..].into(),
                    a_aux_density: &a_aux_density,
                    b_input_density: &b_input_density,
                    b_aux_density: &b_aux_density,
                };
                let (a_len, b_len) = w.query_lengths();
                let mut srs = super::bench_gpu::srs(Vec::new(), Vec::new());
                srs.id = crate::srs::SrsId::in_memory(seed + k as u64);
                srs.l = bases[..n_aux].to_vec();
                srs.a = bases[1..1 + a_len].to_vec();
                srs.b_g1 = bases[2..2 + b_len].to_vec();
                let clock = Instant::now();
                let got = self.gpu.witness_msms_g1(&srs, w)?;
                let gpu_s = clock.elapsed().as_secs_f64();
                let clock = Instant::now();
                let want = CpuBackend.witness_msms_g1(&srs, w)?;
                let cpu_s = clock.elapsed().as_secs_f64();
                self.report(
                    same_sums(&got, &want),
                    format!("queries {n_in} in {n_aux} aux {name}"),
                    gpu_s,
                    cpu_s,
                );
                if k == 0 {
                    // Every sum of a proof in one call: h from a, b, c beside the witness, and
                    // B in G2 from the B scalars gathered on the device.
                    let abc = [1, 2, 3].map(|j| random_scalars(n_aux, seed + 20 + j));
                    srs.h = bases[3..3 + n_aux.next_power_of_two()].to_vec();
                    srs.b_g2 = random_bases::<G2Projective>(b_len, seed + 30);
                    let [a, b, c] = abc.clone();
                    let clock = Instant::now();
                    let got = self
                        .gpu
                        .g1_sums(&srs, a.into(), b.into(), c.into(), w, true)?;
                    let gpu_s = clock.elapsed().as_secs_f64();
                    let [a, b, c] = abc;
                    let clock = Instant::now();
                    let want = CpuBackend.g1_sums(&srs, a.into(), b.into(), c.into(), w, true)?;
                    let cpu_s = clock.elapsed().as_secs_f64();
                    let b_g2 = |sums: &crate::groth16::G1Sums| sums.b_g2.as_ref().map(|s| s.sum);
                    self.report(
                        got.h == want.h
                            && same_sums(&got.witness, &want.witness)
                            && b_g2(&got).is_some()
                            && b_g2(&got) == b_g2(&want),
                        format!("g1 sums and B in G2 {n_in} in {n_aux} aux (h beside)"),
                        gpu_s,
                        cpu_s,
                    );
                }
                drop(srs);
                self.gpu.keep_bases(false);
                self.gpu.keep_bases(true);
            }
        }
        Ok(())
    }
}

/// The same sums and scalar counts for L, A and B (their times aside).
fn same_sums(got: &WitnessSums, want: &WitnessSums) -> bool {
    [
        (&got.l, &want.l),
        (&got.a, &want.a),
        (&got.b_g1, &want.b_g1),
    ]
    .iter()
    .all(|(g, w)| g.sum == w.sum && g.stats == w.stats)
}

/// `len` bits, each set with probability `percent`/100.
pub(super) fn random_density(len: usize, percent: u32, seed: u64) -> Density {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut d = Density::new();
    for i in 0..len {
        d.push();
        if rng.gen_range(0..100) < percent {
            d.set(i);
        }
    }
    d
}

fn sizes(max_log2: u32, logs: &[u32]) -> Vec<u32> {
    logs.iter().copied().filter(|&l| l <= max_log2).collect()
}

pub(super) fn random_scalars(n: usize, seed: u64) -> Vec<Scalar> {
    (0..n)
        .into_par_iter()
        .chunks(1 << 14)
        .flat_map_iter(|chunk| {
            let mut rng = ChaCha8Rng::seed_from_u64(seed ^ ((chunk[0] as u64) << 20));
            chunk.into_iter().map(move |_| Scalar::random(&mut rng))
        })
        .collect()
}

/// `n` distinct points: chunks of 2^12 consecutive points of a walk from a random start with a
/// random step, each chunk made on its own thread and taken to affine form with one inversion.
pub(super) fn random_bases<C: MsmCurve>(n: usize, seed: u64) -> Vec<C::Affine> {
    const CHUNK: usize = 1 << 12;
    let mut out = vec![C::Affine::default(); n];
    out.par_chunks_mut(CHUNK).enumerate().for_each(|(c, dst)| {
        let mut rng = ChaCha8Rng::seed_from_u64(seed ^ ((c as u64) << 32));
        let mut p = C::random(&mut rng);
        let step = C::random(&mut rng);
        let walk: Vec<C> = dst
            .iter()
            .map(|_| {
                p += step;
                p
            })
            .collect();
        C::batch_to_affine(&walk, dst);
    });
    out
}

/// 0, 1, r - 1, 2, r - 2 and small powers of two, cycling.
fn edge_scalars(n: usize) -> Vec<Scalar> {
    let edges = [
        Scalar::ZERO,
        Scalar::ONE,
        -Scalar::ONE,
        Scalar::from(2),
        -Scalar::from(2),
        Scalar::from(1 << 15),
        Scalar::from(u64::MAX),
    ];
    (0..n).map(|i| edges[i % edges.len()]).collect()
}

/// Mostly 0 and 1, some r - 1 and some random, as in real witnesses.
fn witness_scalars(n: usize, seed: u64) -> Vec<Scalar> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    (0..n)
        .map(|_| match rng.gen_range(0..100) {
            0..=49 => Scalar::ZERO,
            50..=89 => Scalar::ONE,
            90..=92 => -Scalar::ONE,
            _ => Scalar::random(&mut rng),
        })
        .collect()
}

pub(super) trait TestCurve:
    MsmCurve
    + Curve<AffineRepr = <Self as MsmCurve>::Affine>
    + From<<Self as MsmCurve>::Affine>
    + PartialEq
{
    fn identity_affine() -> <Self as MsmCurve>::Affine;
    const NAME: &'static str;
    fn gpu_msm(
        gpu: &GpuBackend,
        bases: &[<Self as MsmCurve>::Affine],
        scalars: &[Scalar],
    ) -> Result<(Self, crate::groth16::msm::MsmStats)>;
    fn gpu_pair_sums(
        gpu: &GpuBackend,
        r: &[<Self as MsmCurve>::Affine],
        s: &[<Self as MsmCurve>::Affine],
        n: usize,
    ) -> Result<Vec<<Self as MsmCurve>::Affine>>;
}

macro_rules! test_curve {
    ($proj:ty, $affine:ty, $name:literal, $msm:ident, $pair_sums:ident) => {
        impl TestCurve for $proj {
            const NAME: &'static str = $name;
            fn identity_affine() -> $affine {
                <$affine>::default()
            }
            fn gpu_msm(
                gpu: &GpuBackend,
                bases: &[$affine],
                scalars: &[Scalar],
            ) -> Result<(Self, crate::groth16::msm::MsmStats)> {
                Ok(gpu.$msm(bases, scalars)?)
            }
            fn gpu_pair_sums(
                gpu: &GpuBackend,
                r: &[$affine],
                s: &[$affine],
                n: usize,
            ) -> Result<Vec<$affine>> {
                Ok(gpu.$pair_sums(r, s, n)?)
            }
        }
    };
}

test_curve!(G1Projective, G1Affine, "g1", msm_g1, pair_sums_g1);
test_curve!(G2Projective, G2Affine, "g2", msm_g2, pair_sums_g2);
