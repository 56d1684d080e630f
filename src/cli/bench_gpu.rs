//! `cuzk bench gpu`: our GPU kernels timed on random inputs of a chosen size, with bases made on
//! the device (sums of pairs from two small host tables of random points: no parameter file,
//! seconds at 2^27 where the host took minutes): one MSM, one NTT, h into its MSM, or a whole synthetic
//! partition shaped like a PoRep's (domain 2^log2, aux 97% of it, A over every aux variable, B
//! over a quarter, witness 51% zeros / 47% ones), or the upload of a, b and c from the heap
//! (through the staging halves) and from the page-locked pool. Bases stay resident as a parameter
//! set's do; a warm-up run uploads them. Each run reports its wall time and the device's stage
//! times. With `--pinned`, h's and the partition's a, b, c and witness are in the page-locked pool,
//! as the service's synthesis leaves them.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use anyhow::{anyhow, Result};
use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
use clap::ValueEnum;
use ff::Field;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rayon::prelude::*;
use serde_json::{json, Value};

use super::selftest::{random_bases, random_density, random_scalars};
use crate::gpu::kernels::FieldCode;
use crate::gpu::{self, GpuBackend};
use crate::groth16::{Assignment, Backend, G1Query, ProveError};
use crate::memory::{PinnedPool, GRANULE};
use crate::srs::{Srs, SrsId};
use crate::synth::{Density, Lent, Scalars};

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum GpuOp {
    /// One MSM over 2^log2 points of --curve.
    Msm,
    /// One forward NTT of 2^log2 scalars, natural order in and out.
    Ntt,
    /// One forward NTT of 2^log2 scalars as h runs its transforms: natural order in,
    /// bit-reversed out (no reorder pass).
    NttBitReversed,
    /// h over a domain of 2^log2 (seven NTTs) into its MSM, h never leaving the device.
    H,
    /// A synthetic PoRep-shaped partition over a domain of 2^log2: h and H, L, A, B in G1 and G2.
    Partition,
    /// Three vectors of 2^log2 scalars (a, b, c) uploaded from the heap and from the
    /// page-locked pool, one after the other.
    Transfer,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ScalarShape {
    /// Uniform in Fr.
    Random,
    /// As a real witness: 51% zeros, 47% ones, 2% uniform.
    Witness,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Curve {
    G1,
    G2,
}

#[derive(clap::Args)]
pub struct GpuBenchArgs {
    #[arg(long, value_enum, default_value = "msm")]
    op: GpuOp,
    /// log2 of the size: MSM points, NTT length, h's or the partition's domain (16..=27).
    #[arg(long, default_value_t = 22, value_parser = clap::value_parser!(u32).range(1..=27))]
    log2: u32,
    /// The MSM's scalars (--op msm).
    #[arg(long, value_enum, default_value = "random")]
    scalars: ScalarShape,
    /// The MSM's curve (--op msm).
    #[arg(long, value_enum, default_value = "g1")]
    curve: Curve,
    /// Timed runs after the warm-up.
    #[arg(long, default_value_t = 3)]
    runs: usize,
    /// The device.
    #[arg(long, default_value_t = 0)]
    gpu: usize,
    /// Where compiled kernels are cached.
    #[arg(long, default_value = super::DEFAULT_KERNEL_CACHE)]
    kernel_cache: PathBuf,
    /// Kernels with the field arithmetic in portable C++ instead of PTX carry chains (a cubin
    /// of its own): tells a fault of the carry chains from one elsewhere.
    #[arg(long)]
    portable_field: bool,
    /// h's and the partition's vectors in the page-locked pool, registered with the device
    /// (--op h, partition; --op transfer always uses it).
    #[arg(long)]
    pinned: bool,
    /// The MSM (--op msm, G1: the H query) and h's MSM (--op h, partition) without the fixed-base
    /// table (to measure the difference).
    #[arg(long)]
    no_window_tables: bool,
}

pub fn run(args: GpuBenchArgs) -> Result<()> {
    let found = gpu::discover(&[args.gpu]).map_err(|reason| anyhow!("no GPU: {reason}"))?;
    let g = found
        .first()
        .ok_or_else(|| anyhow!("GPU {} not found", args.gpu))?;
    let backend = GpuBackend::new(
        g,
        &args.kernel_cache,
        FieldCode::portable(args.portable_field),
    )?;
    backend.window_tables(!args.no_window_tables);
    let n = 1usize << args.log2;
    let clock = Instant::now();
    let mut work = Work::new(&args, n, &backend)?;
    if args.pinned || args.op == GpuOp::Transfer {
        work.pool = Some(pinned_pool(&backend, n)?);
    }
    let setup_s = clock.elapsed().as_secs_f64();
    backend.record_stages(true);
    let mut runs = Vec::new();
    for _ in 0..=args.runs {
        let clock = Instant::now();
        let parts = work.run(&backend)?;
        let seconds = clock.elapsed().as_secs_f64();
        runs.push(json!({
            "seconds": seconds,
            "parts": parts,
            "stages": backend.stage_times(),
        }));
    }
    let warmup = runs.remove(0);
    let mut secs: Vec<f64> = runs.iter().filter_map(|r| r["seconds"].as_f64()).collect();
    secs.sort_by(f64::total_cmp);
    println!(
        "{}",
        json!({
            "bench": "gpu",
            "op": format!("{:?}", args.op).to_lowercase(),
            "log2": args.log2,
            "scalars": format!("{:?}", args.scalars).to_lowercase(),
            "curve": format!("{:?}", args.curve).to_lowercase(),
            "gpu": g.info.name,
            "window_tables": !args.no_window_tables,
            "setup_s": setup_s,
            "pinned": work.pool.as_ref().map(|(pool, registered_s)| json!({
                "locked_bytes": pool.status().locked_bytes,
                "lock_s": pool.status().lock_seconds,
                "register_s": registered_s,
            })),
            "min_s": secs.first(),
            "median_s": secs.get(secs.len() / 2),
            "max_s": secs.last(),
            "warmup": warmup,
            "runs": runs,
        })
    );
    Ok(())
}

/// The inputs of one benchmark, made once.
struct Work {
    op: GpuOp,
    srs: Srs,
    /// MSM scalars, an NTT's input, or h's a.
    s1: Vec<Scalar>,
    /// h's b and c.
    s2: Vec<Scalar>,
    s3: Vec<Scalar>,
    /// The partition's witness (L and A over all of it) and B's aux density.
    aux: Vec<Scalar>,
    b_density: Density,
    full: Density,
    curve: Curve,
    /// The page-locked pool the vectors are copied into before each run (not timed), and how
    /// long registering it with the device took.
    pool: Option<(Arc<PinnedPool>, f64)>,
}

/// A page-locked pool for four vectors of `n` scalars, registered with `gpu`.
fn pinned_pool(gpu: &GpuBackend, n: usize) -> Result<(Arc<PinnedPool>, f64)> {
    let pool = PinnedPool::new(4 * (n * 32).next_multiple_of(GRANULE))?;
    let took = gpu.register_pool(&pool)?.unwrap_or_default();
    Ok((pool, took.as_secs_f64()))
}

/// `vectors` copied into buffers of `pool` (each its own lease, given back when it is dropped).
fn lent_copies<const K: usize>(
    pool: &Arc<PinnedPool>,
    vectors: [&[Scalar]; K],
) -> Result<[Scalars; K]> {
    let mut out = Vec::with_capacity(K);
    for v in vectors {
        let lease = pool
            .lease(&[v.len() * 32])
            .ok_or_else(|| anyhow!("no room in the page-locked pool"))?;
        let (ptr, bytes, taken) = lease.take(0).expect("a fresh lease");
        // SAFETY: the lease's one buffer, lent to this vector alone until `taken` is dropped.
        let mut lent = Scalars::lent(unsafe { Lent::new(ptr.cast(), bytes / 32, Box::new(taken)) });
        lent.extend_from_slice(v);
        out.push(lent);
    }
    Ok(out.try_into().unwrap_or_else(|_| unreachable!("K vectors")))
}

impl Work {
    fn new(args: &GpuBenchArgs, n: usize, gpu: &GpuBackend) -> Result<Work> {
        let scalars = |len: usize, seed: u64| match args.scalars {
            ScalarShape::Random => random_scalars(len, seed),
            ScalarShape::Witness => witness(len, seed),
        };
        let mut w = Work {
            op: args.op,
            srs: srs(Vec::new(), Vec::new()),
            s1: Vec::new(),
            s2: Vec::new(),
            s3: Vec::new(),
            aux: Vec::new(),
            b_density: Density::new(),
            full: Density::new(),
            curve: args.curve,
            pool: None,
        };
        match args.op {
            GpuOp::Msm => {
                w.s1 = scalars(n, 1);
                w.srs = match args.curve {
                    Curve::G1 => srs(g1_points(gpu, n, 11)?, Vec::new()),
                    Curve::G2 => srs(Vec::new(), g2_points(gpu, n, 12)?),
                };
            }
            GpuOp::Ntt | GpuOp::NttBitReversed => w.s1 = random_scalars(n, 2),
            GpuOp::Transfer => {
                w.s1 = random_scalars(n, 3);
                w.s2 = random_scalars(n, 4);
                w.s3 = random_scalars(n, 5);
            }
            GpuOp::H | GpuOp::Partition => {
                // Constraints fill 97% of the domain, as a 32 GiB PoRep's fill 2^27.
                let constraints = n / 100 * 97;
                w.s1 = random_scalars(constraints, 3);
                w.s2 = random_scalars(constraints, 4);
                w.s3 = random_scalars(constraints, 5);
                let g1 = g1_points(gpu, n - 1, 13)?;
                if args.op == GpuOp::Partition {
                    w.aux = witness(constraints, 6);
                    w.full = Density::full(constraints);
                    w.b_density = random_density(constraints, 25, 7);
                    let b_len = w.b_density.count();
                    let mut s = srs(g1, g2_points(gpu, b_len, 14)?);
                    s.l = s.h[..constraints].to_vec();
                    s.a = s.l.clone();
                    s.b_g1 = s.h[..b_len].to_vec();
                    w.srs = s;
                } else {
                    w.srs = srs(g1, Vec::new());
                }
            }
        }
        Ok(w)
    }

    /// One run; the seconds of its parts.
    fn run(&self, gpu: &GpuBackend) -> Result<Value> {
        let srs = &self.srs;
        Ok(match self.op {
            GpuOp::Msm => json!({ "msm": match self.curve {
                Curve::G1 => timed(|| gpu.msm_g1_query(srs, G1Query::H, &self.s1))?,
                Curve::G2 => timed(|| gpu.msm_b_g2(srs, &self.s1))?,
            }}),
            GpuOp::Ntt => {
                let v = self.s1.clone();
                json!({ "ntt": timed(|| gpu.ntt(v, false))? })
            }
            GpuOp::NttBitReversed => {
                let v = self.s1.clone();
                json!({ "ntt": timed(|| gpu.ntt_bit_reversed(v))? })
            }
            GpuOp::H => json!({ "h_msm": self.h(gpu)? }),
            GpuOp::Transfer => self.transfers(gpu)?,
            GpuOp::Partition => {
                // As the prover runs it with the finish on the device: every sum in one call
                // (a, b and c cross beside the witness's MSMs; B in G2 from the B scalars
                // gathered on the device).
                let [a, b, c, aux] = self.vectors([&self.s1, &self.s2, &self.s3, &self.aux])?;
                let w = Assignment {
                    inputs: &[],
                    aux: aux[..].into(),
                    a_aux_density: &self.full,
                    b_input_density: &Density::new(),
                    b_aux_density: &self.b_density,
                };
                let clock = Instant::now();
                let sums = gpu.g1_sums(srs, a, b, c, w, true)?;
                let all = clock.elapsed().as_secs_f64();
                let witness = &sums.witness;
                let b_g2 = sums.b_g2.as_ref().map(|s| s.took.as_secs_f64());
                json!({
                    "sums": all,
                    "h": sums.h_took.as_secs_f64(),
                    "msm_h": sums.msm_h_took.as_secs_f64(),
                    "l": witness.l.took.as_secs_f64(),
                    "a": witness.a.took.as_secs_f64(),
                    "b_g1": witness.b_g1.took.as_secs_f64(),
                    "b_g2": b_g2,
                })
            }
        })
    }

    fn h(&self, gpu: &GpuBackend) -> Result<f64> {
        let [a, b, c] = self.vectors([&self.s1, &self.s2, &self.s3])?;
        timed(|| gpu.h_msm(&self.srs, a, b, c))
    }

    /// Copies of `vectors`: in the page-locked pool with `--pinned`, else on the heap.
    fn vectors<const K: usize>(&self, vectors: [&[Scalar]; K]) -> Result<[Scalars; K]> {
        match &self.pool {
            Some((pool, _)) => lent_copies(pool, vectors),
            None => Ok(vectors.map(|v| Scalars::from(v.to_vec()))),
        }
    }

    /// a, b and c uploaded from the heap, then from the pool: seconds and GB/s of each.
    fn transfers(&self, gpu: &GpuBackend) -> Result<Value> {
        let vectors = [&self.s1[..], &self.s2, &self.s3];
        let bytes = (3 * self.s1.len() * 32) as f64;
        let heap_s = gpu.upload_seconds(&vectors)?;
        let (pool, _) = self.pool.as_ref().expect("--op transfer makes the pool");
        let lent = lent_copies(pool, vectors)?;
        let pinned_s = gpu.upload_seconds(&[&lent[0][..], &lent[1], &lent[2]])?;
        Ok(json!({
            "bytes": bytes,
            "heap_s": heap_s,
            "heap_gb_s": bytes / heap_s / 1e9,
            "pinned_s": pinned_s,
            "pinned_gb_s": bytes / pinned_s / 1e9,
        }))
    }
}

/// `n` random G1 points made on the device from two tables of about √n host-made points.
fn g1_points(gpu: &GpuBackend, n: usize, seed: u64) -> Result<Vec<G1Affine>> {
    let (r, s) = tables(n);
    let r_points = random_bases::<G1Projective>(r, seed);
    let s_points = random_bases::<G1Projective>(s, seed ^ 0x5eed);
    Ok(gpu.pair_sums_g1(&r_points, &s_points, n)?)
}

/// [`g1_points`] in G2.
fn g2_points(gpu: &GpuBackend, n: usize, seed: u64) -> Result<Vec<G2Affine>> {
    let (r, s) = tables(n);
    let r_points = random_bases::<G2Projective>(r, seed);
    let s_points = random_bases::<G2Projective>(s, seed ^ 0x5eed);
    Ok(gpu.pair_sums_g2(&r_points, &s_points, n)?)
}

/// The tables' lengths for `n` pair sums: a power of two near √n, and enough rows.
pub(super) fn tables(n: usize) -> (usize, usize) {
    let r = 1usize << (n.max(1).ilog2().div_ceil(2));
    (r, n.div_ceil(r).max(1))
}

/// Seconds `f` took.
fn timed<T>(f: impl FnOnce() -> Result<T, ProveError>) -> Result<f64> {
    let clock = Instant::now();
    f()?;
    Ok(clock.elapsed().as_secs_f64())
}

/// A parameter set made in memory: `h` (also the G1 bases of single MSMs) and `b_g2`.
pub(super) fn srs(h: Vec<G1Affine>, b_g2: Vec<G2Affine>) -> Srs {
    Srs {
        id: SrsId::in_memory(h.len() as u64 ^ (b_g2.len() as u64) << 32),
        vk: crate::srs::placeholder_vk(0),
        h,
        l: Vec::new(),
        a: Vec::new(),
        b_g1: Vec::new(),
        b_g2,
    }
}

/// A witness-shaped vector: 51% zeros, 47% ones, 2% uniform.
fn witness(n: usize, seed: u64) -> Vec<Scalar> {
    (0..n)
        .into_par_iter()
        .chunks(1 << 14)
        .flat_map_iter(|chunk| {
            let mut rng = ChaCha8Rng::seed_from_u64(seed ^ ((chunk[0] as u64) << 20));
            chunk.into_iter().map(move |_| match rng.gen_range(0..100) {
                0..=50 => Scalar::ZERO,
                51..=97 => Scalar::ONE,
                _ => Scalar::random(&mut rng),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_cover_every_size_with_about_root_n_points() {
        for n in [1usize, 2, 3, 31, 1000, (1 << 22) - 1, 1 << 22, 1 << 27] {
            let (r, s) = tables(n);
            assert!(r.is_power_of_two(), "{n}");
            assert!(r * s >= n, "{n}");
            assert!(
                r + s <= 4 * (n as f64).sqrt() as usize + 4,
                "{n}: {r} + {s}"
            );
        }
    }
}
