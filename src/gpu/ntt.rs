//! The quotient h on the device (kernels/ntt/, kernels/groth16/h.cu): a, b and c uploaded, each
//! taken to coefficients (inverse NTT), scaled onto the coset g·H and evaluated there (forward
//! NTT); the pointwise (a·b - c)/Z(g); back to coefficients and off the coset. Seven NTTs of a
//! few passes each (radix-2^k stages in shared memory). Inverse transforms are Gentleman-Sande
//! (natural in, bit-reversed out) and forward ones Cooley-Tukey (bit-reversed in, natural out),
//! so the chain never reorders: h ends in bit-reversed order, which the H MSM reads as it is
//! ([`GpuBackend::h_msm_on_device`]); only [`GpuBackend::h_on_device`], which hands h to the
//! host, reverses it.

use std::time::{Duration, Instant};

use blstrs::{G1Affine, G1Projective, Scalar};
use cudarc::driver::{CudaEvent, CudaSlice, DriverError};
use ff::{Field, PrimeField};
use group::Group;

use super::backend::{launch, words, words_mut, GpuBackend, GpuError};
use super::kernels::Kernel;
use super::msm::{msm_working_bytes, DeviceScalars, WindowTable};
use super::resident::BasesKey;
use crate::groth16::domain::DomainTooLarge;
use crate::groth16::msm::MsmStats;
use crate::groth16::{G1Query, ProveError};
use crate::srs::Srs;
use crate::synth::Scalars;

/// Elements one block of `fr_ntt_tiles` holds: 2^10 (32 KiB) and as many twiddles. A pass runs
/// at most this many stages.
const MAX_TILE_LOG: u32 = 10;

/// Columns a block of a strided pass takes side by side, at most: 2^2, so each row of its tile
/// is a 128-byte line.
const MAX_COLS_LOG: u32 = 2;

/// Dynamic shared memory of one `fr_ntt_tiles` block of 2^tile_log elements: the tile and its
/// twiddles (one fewer a column).
const fn tile_shared_bytes(tile_log: u32) -> u32 {
    32 << (tile_log + 1)
}

/// The log2 of the columns a block of the pass (s0, k) takes: as many as fit the tile, up to
/// MAX_COLS_LOG, and only neighbours (one column where the stages are the lowest, s0 = 0).
fn cols_log(s0: u32, k: u32) -> u32 {
    s0.min(MAX_TILE_LOG - k).min(MAX_COLS_LOG)
}

/// The most dynamic shared memory `fr_ntt_tiles` asks for (above the 48 KiB a kernel gets
/// without asking).
pub(super) const NTT_SHARED_MAX: u32 = tile_shared_bytes(MAX_TILE_LOG);

/// Elements `fr_ntt_regs` gives each thread: 2^REGS_LOG, the stages of a group (radix 8).
const REGS_LOG: u32 = 3;

/// The bits of a row and of a column of `fr_bit_reverse`'s square tiles at most: 2^5 x 2^5
/// elements, rows of 1 KiB.
const REVERSE_SIDE_LOG: u32 = 5;

/// `fr_bit_reverse`'s tile side for 2^log_n elements: the index is (row, middle, column) with
/// row and column of this many bits.
fn reverse_side_log(log_n: u32) -> u32 {
    REVERSE_SIDE_LOG.min(log_n / 2)
}

/// Dynamic shared memory of a `fr_bit_reverse` block: two tiles.
const fn reverse_shared_bytes(side_log: u32) -> u32 {
    (2 * 32) << (2 * side_log)
}

/// The most dynamic shared memory `fr_bit_reverse` asks for.
pub(super) const BIT_REVERSE_SHARED_MAX: u32 = reverse_shared_bytes(REVERSE_SIDE_LOG);

/// Device bytes one h call over a domain of `n` needs: a, b, c and the power tables (small,
/// within [`H_SLACK_BYTES`]).
pub(super) fn h_working_bytes(n: usize) -> usize {
    3 * n * 32 + H_SLACK_BYTES
}

/// What h's call may take beyond a, b and c: its power tables, with slack.
pub(super) const H_SLACK_BYTES: usize = 256 << 20;

/// Host vectors whose uploads are queued, to be freed while the device works: returning a
/// large allocation takes milliseconds. Those in the registered pool are read by the device
/// itself: they are freed (lent out again) only once `read` has fired, the event behind their
/// last transfer.
#[must_use]
pub(super) struct Staged {
    pub(super) vectors: Vec<Scalars>,
    pub(super) read: Option<CudaEvent>,
}

impl Staged {
    /// Runs `work` while the vectors are freed, each on a thread of its own, joined before this
    /// returns (the memory is back when the caller's ledger says so).
    pub(super) fn free_beside<R>(self, work: impl FnOnce() -> R) -> R {
        let read = &self.read;
        std::thread::scope(|frees| {
            for host in self.vectors {
                frees.spawn(move || {
                    if let Some(event) = read.as_ref().filter(|_| host.is_lent()) {
                        // On failure the device is lost, and nothing reads the vector.
                        let _ = event.synchronize();
                    }
                    drop(host)
                });
            }
            work()
        })
    }
}

/// The stage label of h's uploads and kernels.
pub(super) fn h_label(log_n: u32) -> String {
    format!("h.uploads and kernels (3 x 2^{log_n}, 7 NTTs)")
}

/// What h's kernels read besides a, b and c ([`GpuBackend::h_plan`]).
pub(super) struct HPlan {
    log_n: u32,
    fwd: Roots,
    inv: Roots,
    coset: Tables,
    uncoset: Tables,
    z_inv: CudaSlice<u32>,
}

/// Powers of one base as the kernels read them: base^i = lo[i mod 2^lo_bits] * hi[i >> lo_bits].
struct Tables {
    lo: CudaSlice<u32>,
    hi: CudaSlice<u32>,
    lo_bits: u32,
}

/// A transform's twiddles: the powers of its root, and as `fr_ntt_tiles` reads them in the pass of
/// the lowest stages (one table for every block, no products): [`low_stage_twiddles`].
struct Roots {
    powers: Tables,
    low: CudaSlice<u32>,
}

/// The order of a transform's stages.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Order {
    /// Cooley-Tukey: bit-reversed input, natural output.
    Dit,
    /// Gentleman-Sande: natural input, bit-reversed output.
    Dif,
}

/// The passes of a transform of 2^log_n: (first stage, stages), as even as MAX_TILE_LOG allows,
/// in the order they run.
fn passes(log_n: u32, order: Order) -> Vec<(u32, u32)> {
    let count = log_n.div_ceil(MAX_TILE_LOG);
    let mut out = Vec::new();
    let mut s0 = 0;
    for p in 0..count {
        let k = log_n / count + u32::from(p < log_n % count);
        out.push((s0, k));
        s0 += k;
    }
    if order == Order::Dif {
        out.reverse();
    }
    out
}

/// How one pass of a transform of 2^log_n (stages s0..s0 + k) is launched.
struct PassLaunch {
    kernel: Kernel,
    threads: usize,
    block: u32,
    shared: u32,
    /// log2 of the neighbouring columns a block takes.
    cols_log: u32,
}

impl PassLaunch {
    fn of(log_n: u32, s0: u32, k: u32) -> PassLaunch {
        let cols_log = cols_log(s0, k);
        // A thread per 8 elements where the pass has a group's 3 stages, else per butterfly.
        let (kernel, per_thread_log) = if k >= REGS_LOG {
            (Kernel::NttRegs, REGS_LOG)
        } else {
            (Kernel::NttTiles, 1)
        };
        PassLaunch {
            kernel,
            threads: 1usize << (log_n - per_thread_log),
            block: 1u32 << (k + cols_log - per_thread_log),
            shared: tile_shared_bytes(k + cols_log),
            cols_log,
        }
    }
}

impl GpuBackend {
    /// The transform of `v` (2^log_n scalars, in place) at `roots`' root's powers, in `order`.
    fn ntt_in_place(
        &self,
        v: &mut CudaSlice<u32>,
        log_n: u32,
        roots: &Roots,
        order: Order,
    ) -> Result<(), DriverError> {
        let t = &roots.powers;
        let dif = u32::from(order == Order::Dif);
        for (s0, k) in passes(log_n, order) {
            let PassLaunch {
                kernel,
                threads,
                block,
                shared,
                cols_log,
            } = PassLaunch::of(log_n, s0, k);
            launch!(self, kernel, threads, block, shared;
                &mut *v, &log_n, &s0, &k, &dif, &t.lo, &t.hi, &t.lo_bits, &roots.low, &cols_log);
        }
        Ok(())
    }

    /// Puts the 2^log_n scalars of `v` in bit-reversed order, in place.
    pub(super) fn bit_reverse(
        &self,
        v: &mut CudaSlice<u32>,
        log_n: u32,
    ) -> Result<(), DriverError> {
        if log_n < 2 {
            return Ok(()); // 1 and 2 elements are their own reversal
        }
        let a = reverse_side_log(log_n);
        let blocks = 1usize << (log_n - 2 * a);
        launch!(self, Kernel::BitReverse, blocks * 256, 256, reverse_shared_bytes(a);
            &mut *v, &log_n, &a);
        Ok(())
    }

    /// v[i] *= the tables' power of i, or of bitrev(i) over `rev_bits` bits.
    fn scale(
        &self,
        v: &mut CudaSlice<u32>,
        n: u32,
        rev_bits: u32,
        t: &Tables,
    ) -> Result<(), DriverError> {
        launch!(self, Kernel::ScalePowers, n as usize, 256; &mut *v, &n, &rev_bits, &t.lo, &t.hi, &t.lo_bits);
        Ok(())
    }

    /// Uploads lo/hi power tables of `base` covering exponents < 2^count_log, times `scale`.
    fn tables(&self, base: Scalar, count_log: u32, scale: Scalar) -> Result<Tables, DriverError> {
        let lo_bits = count_log.div_ceil(2);
        let lo: Vec<Scalar> = powers(base, 1 << lo_bits, Scalar::ONE);
        let step = base.pow_vartime([1u64 << lo_bits]);
        let hi: Vec<Scalar> = powers(step, 1usize << (count_log - lo_bits), scale);
        Ok(Tables {
            lo: self.stream.clone_htod(words(&lo))?,
            hi: self.stream.clone_htod(words(&hi))?,
            lo_bits,
        })
    }

    /// The twiddles of a transform of 2^log_n at `omega`, a primitive 2^log_n-th root of unity.
    fn roots(&self, omega: Scalar, log_n: u32) -> Result<Roots, DriverError> {
        Ok(Roots {
            powers: self.tables(omega, log_n - 1, Scalar::ONE)?,
            low: self
                .stream
                .clone_htod(words(&low_stage_twiddles(omega, log_n)))?,
        })
    }

    /// What h's kernels need on the device besides a, b and c, for a domain of 2^log_n: the
    /// power tables of the transforms and cosets, and 1/Z(g).
    pub(super) fn h_plan(&self, log_n: u32) -> Result<HPlan, DriverError> {
        let n = 1usize << log_n;
        let omega = root_of_unity(log_n);
        let omega_inv = omega.invert().expect("non-zero");
        let g = Scalar::MULTIPLICATIVE_GENERATOR;
        let g_inv = g.invert().expect("non-zero");
        let n_inv = Scalar::from(n as u64).invert().expect("n < r");
        let z_inv = (g.pow_vartime([n as u64]) - Scalar::ONE)
            .invert()
            .expect("g is not in the domain, so Z(g) != 0");
        Ok(HPlan {
            log_n,
            fwd: self.roots(omega, log_n)?,
            inv: self.roots(omega_inv, log_n)?,
            coset: self.tables(g, log_n, n_inv)?,
            uncoset: self.tables(g_inv, log_n, n_inv)?,
            z_inv: self.stream.clone_htod(words(&[z_inv]))?,
        })
    }

    /// One of a, b, c (evaluations over the domain, 2^log_n on the device): to coefficients
    /// (bit-reversed), onto the coset, evaluations there (natural).
    pub(super) fn h_transform(
        &self,
        v: &mut CudaSlice<u32>,
        plan: &HPlan,
    ) -> Result<(), DriverError> {
        let log_n = plan.log_n;
        self.ntt_in_place(v, log_n, &plan.inv, Order::Dif)?;
        self.scale(v, 1 << log_n, log_n, &plan.coset)?;
        self.ntt_in_place(v, log_n, &plan.fwd, Order::Dit)
    }

    /// h from the transformed a, b, c: (a·b - c)/Z(g) pointwise, back to coefficients and off
    /// the coset, in a's buffer (bit-reversed, the last coefficient zero).
    pub(super) fn h_quotient(
        &self,
        [mut a, b, c]: [CudaSlice<u32>; 3],
        plan: &HPlan,
    ) -> Result<CudaSlice<u32>, DriverError> {
        let (log_n, n32) = (plan.log_n, 1u32 << plan.log_n);
        launch!(self, Kernel::HPointwise, n32 as usize, 256; &mut a, &b, &c, &n32, &plan.z_inv);
        drop((b, c));
        self.ntt_in_place(&mut a, log_n, &plan.inv, Order::Dif)?;
        self.scale(&mut a, n32, log_n, &plan.uncoset)?;
        Ok(a)
    }

    /// h over the smallest power-of-two domain of more than one point holding a, b and c
    /// (checked by the callers), on the device: seven NTTs and the pointwise step, each vector's
    /// transforms queued as soon as its upload (on the copy stream) is, so the next vector's
    /// host copy and transfer run beside them. `then` runs once everything is queued, while the
    /// device works (a caller's next upload). h's 2^log_n coefficients are left in bit-reversed
    /// order, the last (position 2^log_n - 1 either way) zero; a, b and c come back to be freed
    /// beside the caller's next work. The caller holds the device and has made room.
    pub(super) fn h_kernels<T>(
        &self,
        abc: [Scalars; 3],
        log_n: u32,
        then: impl FnOnce() -> Result<T, GpuError>,
    ) -> Result<(CudaSlice<u32>, T, Staged), GpuError> {
        let n = 1usize << log_n;
        let clock = Instant::now();
        let bytes = (3 * abc[0].len() * 32) as u64;
        let plan = self.h_plan(log_n)?;
        let ms = |since: Instant| since.elapsed().as_secs_f64() * 1e3;
        tracing::debug!(ms = ms(clock), "h: tables on the device");
        let mut bufs = Vec::with_capacity(3);
        for v in abc.iter() {
            bufs.push(self.device_for(v.len() * 8, n * 8)?);
        }
        // Every upload below may start now: its buffer exists, nothing else waits.
        self.copy.join(&self.stream)?;
        // The host vectors are kept until every upload of the call is staged (unmapping pages
        // while other threads fill the staging halves halved their speed) and handed back.
        let mut staged = Vec::with_capacity(3);
        let mut read = None;
        for (i, (v, host)) in bufs.iter_mut().zip(abc).enumerate() {
            self.upload_on_copy(&host, v)?;
            tracing::debug!(ms = ms(clock), vector = i, "h: vector staged");
            staged.push(host);
            let arrived = self.copy.record_event(None)?;
            self.stream.wait(&arrived)?;
            read = Some(arrived);
            self.h_transform(v, &plan)?;
        }
        let h = self.h_quotient(bufs.try_into().expect("three vectors"), &plan)?;
        let after = then()?;
        tracing::debug!(ms = ms(clock), "h: queued");
        self.record(h_label(log_n), clock, bytes)?;
        let staged = Staged {
            vectors: staged,
            read,
        };
        Ok((h, after, staged))
    }

    /// The log2 of h's domain for evaluations of `len` points.
    pub(super) fn h_domain(len: usize) -> Result<u32, GpuError> {
        let log_n = len.max(1).next_power_of_two().trailing_zeros();
        if log_n > Scalar::S {
            return Err(GpuError::Domain(DomainTooLarge { log_n }));
        }
        Ok(log_n)
    }

    /// Whether h over a domain of 2^`log_n` is summed in one call with its MSM over `srs`'s H
    /// bases: there is an h to speak of, and the bases cover it.
    pub(super) fn h_in_one_call(srs: &Srs, log_n: u32) -> bool {
        log_n > 0 && srs.h.len() >= (1 << log_n) - 1
    }

    /// h's n - 1 coefficients, on the host.
    pub(super) fn h_on_device(
        &self,
        a: Scalars,
        b: Scalars,
        c: Scalars,
    ) -> Result<Vec<Scalar>, GpuError> {
        let log_n = Self::h_domain(a.len())?;
        let n = 1usize << log_n;
        if n == 1 {
            return Ok(Vec::new());
        }
        let _busy = self.occupy();
        self.room_for_call(h_working_bytes(n), None)?;
        let (mut h, (), staged) = self.h_kernels([a, b, c], log_n, || Ok(()))?;
        staged.free_beside(|| {
            let clock = Instant::now();
            self.bit_reverse(&mut h, log_n)?;
            let mut out = vec![Scalar::ZERO; n - 1];
            self.stream
                .memcpy_dtoh(&h.slice(0..(n - 1) * 8), words_mut(&mut out))?;
            self.record(
                format!("h.download (2^{log_n})"),
                clock,
                ((n - 1) * 32) as u64,
            )?;
            Ok(out)
        })
    }

    /// Σ h_i·bases[i] with h computed on the device and left there for the MSM; with `key`,
    /// `bases` is that whole query and stays resident. Also returns how long h took.
    pub(super) fn h_msm_on_device(
        &self,
        bases: &[G1Affine],
        key: Option<BasesKey>,
        a: Scalars,
        b: Scalars,
        c: Scalars,
    ) -> Result<(G1Projective, MsmStats, Duration), GpuError> {
        let log_n = Self::h_domain(a.len())?;
        let n = 1usize << log_n;
        if n == 1 {
            return Ok((
                G1Projective::identity(),
                MsmStats::default(),
                Duration::ZERO,
            ));
        }
        if bases.len() < n - 1 {
            return Err(GpuError::Shape(format!(
                "h has {} bases, the domain needs {}",
                bases.len(),
                n - 1
            )));
        }
        let _busy = self.occupy();
        let start = Instant::now();
        let working = h_working_bytes(n) + msm_working_bytes::<G1Projective>(n - 1, true);
        let db = self.call_bases::<G1Projective>(bases, n - 1, key, working)?;
        let table = self.window_table::<G1Projective>(key, &db, n - 1)?;
        let (h, (), staged) = self.h_kernels([a, b, c], log_n, || Ok(()))?;
        staged.free_beside(|| {
            // h's time is the device's: wait for it (one wait a proof).
            self.stream.synchronize()?;
            let h_took = start.elapsed();
            let (sum, stats) = self.msm_of_h(&db, table.as_ref(), &h, log_n)?;
            Ok((sum, stats, h_took))
        })
    }

    /// The H MSM of h left on the device by [`GpuBackend::h_kernels`] (2^log_n positions,
    /// bit-reversed, the last one not a point's), through `table` where H has one.
    pub(super) fn msm_of_h(
        &self,
        bases: &CudaSlice<u32>,
        table: Option<&WindowTable>,
        h: &CudaSlice<u32>,
        log_n: u32,
    ) -> Result<(G1Projective, MsmStats), GpuError> {
        let n = 1usize << log_n;
        let scalars = DeviceScalars {
            buf: h,
            positions: n,
            points: n - 1,
            rev_bits: log_n,
        };
        let label = format!("msm_g1 {} ({} points)", G1Query::H.name(), n - 1);
        self.lane()
            .msm_kernels::<G1Projective>(bases, table, scalars, &label, Instant::now())
    }

    /// The NTT of `v` (a power-of-two length) over its domain: evaluations at omega^i, or with
    /// `inverse` the coefficients back (scaled by 1/n). For `cuzk selftest`.
    pub fn ntt(&self, mut v: Vec<Scalar>, inverse: bool) -> Result<Vec<Scalar>, ProveError> {
        self.ntt_on_device(&mut v, inverse, true)
            .map_err(|e| e.on(&self.info))?;
        Ok(v)
    }

    /// The forward NTT of `v` as h runs its transforms: natural order in, bit-reversed order
    /// out, no reorder pass. For `cuzk selftest` and `cuzk bench gpu`.
    pub fn ntt_bit_reversed(&self, mut v: Vec<Scalar>) -> Result<Vec<Scalar>, ProveError> {
        self.ntt_on_device(&mut v, false, false)
            .map_err(|e| e.on(&self.info))?;
        Ok(v)
    }

    /// With `natural`, the output in natural order; else the forward transform's is left
    /// bit-reversed.
    fn ntt_on_device(
        &self,
        v: &mut [Scalar],
        inverse: bool,
        natural: bool,
    ) -> Result<(), GpuError> {
        let n = v.len();
        if !n.is_power_of_two() {
            return Err(GpuError::Shape(format!(
                "NTT of {n} points: not a power of two"
            )));
        }
        let log_n = n.trailing_zeros();
        if log_n > Scalar::S {
            return Err(GpuError::Domain(DomainTooLarge { log_n }));
        }
        if n == 1 {
            return Ok(());
        }
        let _busy = self.occupy();
        let clock = Instant::now();
        let mut d = self.upload(v, n * 8)?;
        let clock = self.record(format!("ntt.upload (2^{log_n})"), clock, (n * 32) as u64)?;
        let omega = root_of_unity(log_n);
        let base = if inverse {
            omega.invert().expect("non-zero")
        } else {
            omega
        };
        let roots = self.roots(base, log_n)?;
        if inverse {
            // Natural in, bit-reversed out; scaled by 1/n in bit-reversed order, then reordered.
            self.ntt_in_place(&mut d, log_n, &roots, Order::Dif)?;
            let n_inv = Scalar::from(n as u64).invert().expect("n < r");
            let scale = self.tables(Scalar::ONE, log_n, n_inv)?;
            self.scale(&mut d, n as u32, log_n, &scale)?;
            self.bit_reverse(&mut d, log_n)?;
        } else if natural {
            self.bit_reverse(&mut d, log_n)?;
            self.ntt_in_place(&mut d, log_n, &roots, Order::Dit)?;
        } else {
            self.ntt_in_place(&mut d, log_n, &roots, Order::Dif)?;
        }
        let clock = self.record(format!("ntt.kernels (2^{log_n})"), clock, 0)?;
        self.stream.memcpy_dtoh(&d, words_mut(v))?;
        self.record(format!("ntt.download (2^{log_n})"), clock, (n * 32) as u64)?;
        Ok(())
    }
}

/// The primitive 2^log_n-th root of unity the CPU's domain uses.
fn root_of_unity(log_n: u32) -> Scalar {
    let mut omega = Scalar::ROOT_OF_UNITY;
    for _ in log_n..Scalar::S {
        omega = omega.square();
    }
    omega
}

/// The twiddles of the pass of a transform's lowest stages (the first of a DIT transform, the
/// last of a DIF one), the same for every block: stage ts < MAX_TILE_LOG takes the 2^ts powers of
/// the 2^(ts+1)-th root omega^(2^(log_n-ts-1)), at 2^ts - 1 + below; ones fill the table to
/// 2^MAX_TILE_LOG entries (stages the transform does not have, and the one entry past them).
fn low_stage_twiddles(omega: Scalar, log_n: u32) -> Vec<Scalar> {
    let mut out = Vec::with_capacity(1 << MAX_TILE_LOG);
    for ts in 0..MAX_TILE_LOG.min(log_n) {
        let root = omega.pow_vartime([1u64 << (log_n - ts - 1)]);
        out.extend(powers(root, 1 << ts, Scalar::ONE));
    }
    out.resize(1 << MAX_TILE_LOG, Scalar::ONE);
    out
}

/// scale * base^i for i in 0..count.
fn powers(base: Scalar, count: usize, scale: Scalar) -> Vec<Scalar> {
    let mut out = Vec::with_capacity(count);
    let mut w = scale;
    for _ in 0..count {
        out.push(w);
        w *= base;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A 32 GiB PoRep partition's 130,278,869 constraints take the 2^27 domain; its
    /// transforms' launches (a thread per 8 elements or per butterfly) and h's working memory
    /// are counted past 32 bits where they must be.
    #[test]
    fn a_32gib_partitions_h_takes_a_2_27_domain_and_its_launches_fit() {
        let log_n = GpuBackend::h_domain(130_278_869).unwrap();
        assert_eq!(log_n, 27);
        for order in [Order::Dit, Order::Dif] {
            for (s0, k) in passes(log_n, order) {
                let pass = PassLaunch::of(log_n, s0, k);
                let config = super::super::backend::grid(pass.threads, pass.block);
                assert!(config.grid_dim.0 < i32::MAX as u32, "{s0} {k}");
            }
        }
        // Three vectors of 2^27 scalars and the tables: past 4 GiB, in usize.
        assert!(h_working_bytes(1 << 27) >= 3 * (32usize << 27));
    }

    #[test]
    fn passes_cover_every_stage_once_in_order() {
        for log_n in 1..=28 {
            for order in [Order::Dit, Order::Dif] {
                let p = passes(log_n, order);
                assert!(p.iter().all(|&(_, k)| (1..=MAX_TILE_LOG).contains(&k)));
                assert_eq!(p.len() as u32, log_n.div_ceil(MAX_TILE_LOG));
                let mut stages: Vec<u32> = p.iter().flat_map(|&(s0, k)| s0..s0 + k).collect();
                if order == Order::Dif {
                    assert!(p.windows(2).all(|w| w[0].0 > w[1].0), "{log_n}: high first");
                    stages.sort();
                }
                assert_eq!(stages, (0..log_n).collect::<Vec<_>>(), "{log_n}");
            }
        }
        assert_eq!(passes(22, Order::Dit), vec![(0, 8), (8, 7), (15, 7)]);
    }

    #[test]
    fn low_stage_twiddles_are_each_stages_roots_in_order() {
        for log_n in [1, 5, 10, 22, 27] {
            let omega = root_of_unity(log_n);
            let t = low_stage_twiddles(omega, log_n);
            assert_eq!(t.len(), 1 << MAX_TILE_LOG);
            for ts in 0..MAX_TILE_LOG.min(log_n) {
                let at = (1usize << ts) - 1;
                assert_eq!(t[at], Scalar::ONE, "{log_n}: stage {ts} starts at w^0");
                // Stage ts's root has order 2^(ts+1): its 2^ts-th power is -1.
                let root = if ts == 0 { -Scalar::ONE } else { t[at + 1] };
                assert_eq!(
                    root.pow_vartime([1u64 << ts]),
                    -Scalar::ONE,
                    "{log_n}: {ts}"
                );
                for below in 1..(1usize << ts).min(8) {
                    assert_eq!(t[at + below], t[at + below - 1] * root);
                }
            }
            let used = (1usize << MAX_TILE_LOG.min(log_n)) - 1;
            assert!(t[used..].iter().all(|&x| x == Scalar::ONE), "{log_n}");
        }
    }

    #[test]
    fn a_block_takes_neighbouring_columns_that_fit_its_tile() {
        for log_n in 1..=28 {
            for (s0, k) in passes(log_n, Order::Dit) {
                let c = cols_log(s0, k);
                assert!(
                    k + c <= MAX_TILE_LOG,
                    "{log_n}: the tile fits the shared memory"
                );
                assert!(
                    c <= s0,
                    "{log_n}: columns are neighbours below the stages' bits"
                );
                assert!(k + c <= log_n, "{log_n}: whole blocks");
            }
        }
        let cols: Vec<u32> = passes(22, Order::Dit)
            .iter()
            .map(|&(s0, k)| cols_log(s0, k))
            .collect();
        assert_eq!(
            cols,
            vec![0, 2, 2],
            "the strided passes of 2^22 read whole lines"
        );
        let cols: Vec<u32> = passes(27, Order::Dit)
            .iter()
            .map(|&(s0, k)| cols_log(s0, k))
            .collect();
        assert_eq!(cols, vec![0, 1, 1]);
    }

    #[test]
    fn the_register_pass_bounds_its_blocks_to_the_largest_tile() {
        let ntt = include_str!("../../kernels/ntt/ntt.cu");
        let threads = 1u32 << (MAX_TILE_LOG - REGS_LOG);
        assert!(ntt.contains(&format!(
            "#define NTT_REGS_BOUNDS __launch_bounds__({threads})\n"
        )));
    }

    /// The groups of `fr_ntt_regs` (kernels/ntt/ntt.cu) as the kernel computes them: group g's
    /// stages [lo, hi) and the lowest bit t of the thread's three row bits.
    fn regs_group(k: u32, dif: bool, g: u32) -> (u32, u32, u32) {
        let (lo, hi) = if dif {
            let hi = k - 3 * g;
            (hi.saturating_sub(3), hi)
        } else {
            (3 * g, (3 * g + 3).min(k))
        };
        (lo, hi, lo.min(k - REGS_LOG))
    }

    #[test]
    fn a_register_pass_runs_every_butterfly_once_in_stage_order() {
        // A model of fr_ntt_regs' threads: within a group they hold every element of the tile
        // once, and over the groups every butterfly of every stage runs once, stages in order.
        for k in REGS_LOG..=MAX_TILE_LOG {
            for cols_log in 0..=(MAX_TILE_LOG - k).min(MAX_COLS_LOG) {
                for dif in [false, true] {
                    let (cols, size) = (1u32 << cols_log, 1u32 << (k + cols_log));
                    let mut ran = Vec::new(); // (stage, row0, col)
                    let mut order: Vec<u32> = Vec::new(); // the groups' stages, as each thread runs them
                    for g in 0..k.div_ceil(3) {
                        let (lo, hi, t) = regs_group(k, dif, g);
                        let want: Vec<u32> = if dif {
                            (lo..hi).rev().collect()
                        } else {
                            (lo..hi).collect()
                        };
                        order.extend(&want);
                        let mut held = vec![0u32; size as usize];
                        for tid in 0..size >> REGS_LOG {
                            let mut stages = Vec::new();
                            let (col, b) = (tid & (cols - 1), tid >> cols_log);
                            let base = (b & ((1 << t) - 1)) | ((b >> t) << (t + 3));
                            for m in 0..8 {
                                held[(((base + (m << t)) << cols_log) | col) as usize] += 1;
                            }
                            for s in 0..3 {
                                let u = if dif { 2 - s } else { s };
                                let ts = t + u;
                                if ts < lo || ts >= hi {
                                    continue;
                                }
                                stages.push(ts);
                                for m0 in (0..8).filter(|m| m & (1 << u) == 0) {
                                    ran.push((ts, base + (m0 << t), col));
                                }
                            }
                            assert_eq!(stages, want, "{k} {cols_log} {dif} {g} {tid}");
                        }
                        assert!(held.iter().all(|&h| h == 1), "{k} {cols_log} {dif} {g}");
                    }
                    let want: Vec<u32> = if dif {
                        (0..k).rev().collect()
                    } else {
                        (0..k).collect()
                    };
                    assert_eq!(order, want, "{k} {cols_log} {dif}: stages in order");
                    ran.sort();
                    let mut all = Vec::new();
                    for ts in 0..k {
                        for row0 in (0..1u32 << k).filter(|r| r & (1 << ts) == 0) {
                            for col in 0..cols {
                                all.push((ts, row0, col));
                            }
                        }
                    }
                    assert_eq!(ran, all, "{k} {cols_log} {dif}: every butterfly once");
                }
            }
        }
    }

    #[test]
    fn tiled_bit_reversal_moves_every_element_once_to_its_place() {
        // A model of fr_bit_reverse's blocks: block `mid` (with rev(mid) >= mid) writes the
        // element read at (h, mid, l) to (rev(l), rev(mid), rev(h)), and the other tile's back.
        let rev = |x: u32, bits: u32| {
            if bits == 0 {
                0
            } else {
                x.reverse_bits() >> (32 - bits)
            }
        };
        for log_n in 2..=14u32 {
            let a = reverse_side_log(log_n);
            assert!(reverse_shared_bytes(a) <= BIT_REVERSE_SHARED_MAX);
            let mid_bits = log_n - 2 * a;
            let mut written = vec![None; 1 << log_n];
            for mid in 0..1u32 << mid_bits {
                let mid_r = rev(mid, mid_bits);
                if mid_r < mid {
                    continue;
                }
                let tiles = if mid == mid_r {
                    vec![(mid, mid_r)]
                } else {
                    vec![(mid, mid_r), (mid_r, mid)]
                };
                for (from, to) in tiles {
                    for h2 in 0..1u32 << a {
                        for l2 in 0..1u32 << a {
                            let (h, l) = (rev(l2, a), rev(h2, a));
                            let src = (h << (log_n - a)) | (from << a) | l;
                            let dst = (h2 << (log_n - a)) | (to << a) | l2;
                            assert!(written[dst as usize].is_none(), "{log_n}: {dst} twice");
                            written[dst as usize] = Some(src);
                        }
                    }
                }
            }
            for (dst, src) in written.iter().enumerate() {
                assert_eq!(*src, Some(rev(dst as u32, log_n)), "{log_n}: {dst}");
            }
        }
    }
}
