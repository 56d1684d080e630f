//! The GPU backend: our kernels (kernels/*.cu) on one device, driven through cudarc.
//!
//! Host buffers go to the device as they are: blstrs keeps scalars and points in Montgomery form
//! with blst's limb order, which is the kernels' layout. One call's work runs on a device at a
//! time; stages are timed (transfers and kernels apart) when `cuzk bench prove` asks.
//!
//! The bases of a parameter set's queries stay resident on the device between proofs, keyed by
//! the set's file ([`SrsId`]), as many sets as fit beside the working memory of the largest
//! call; the least recently used go first. A query that does not fit is uploaded for its call
//! alone, as bases outside a parameter set always are.

use std::sync::{Arc, Mutex};
use std::time::Instant;

use blstrs::{Fp, Fp2, G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
use cudarc::driver::{
    CudaFunction, CudaSlice, CudaStream, DriverError, LaunchConfig, PushKernelArg,
};
use cudarc::nvrtc::Ptx;
use ff::{Field, PrimeField};
use group::Group;
use serde::Serialize;

use super::msm::MsmStats;
use super::{Backend, G1Query, ProveError};
use crate::gpu::{kernels, Gpu, GpuInfo};
use crate::srs::{Srs, SrsId};

/// A query of a parameter set, as the device keeps it.
type BasesKey = (SrsId, &'static str);

/// Device copies of parameter-set bases.
#[derive(Default)]
struct Resident {
    entries: Vec<ResidentBases>,
    /// Counts lookups: the least recently used entry has the smallest `used`.
    clock: u64,
    /// Points of the largest query seen: the working memory kept free is sized from it.
    largest: usize,
}

struct ResidentBases {
    key: BasesKey,
    buf: Arc<CudaSlice<u32>>,
    bytes: usize,
    used: u64,
}

/// Device bytes kept free per point of the largest query: H's three domain-sized vectors, an
/// MSM's scalars and digits, and the power tables.
const WORKING_BYTES_PER_POINT: usize = 192;
/// Plus the MSM buckets (about 1.6 GB at most) and slack.
const WORKING_BYTES_FIXED: usize = 2 << 30;

/// Time and bytes of one stage of the device work.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct StageTime {
    pub stage: String,
    pub seconds: f64,
    pub bytes: u64,
}

struct Kernels {
    bit_reverse: CudaFunction,
    ntt_stage: CudaFunction,
    scale_powers: CudaFunction,
    h_pointwise: CudaFunction,
    digits: CudaFunction,
    buckets_g1: CudaFunction,
    buckets_g2: CudaFunction,
    reduce_g1: CudaFunction,
    reduce_g2: CudaFunction,
}

/// Launches kernel `$f` over `$threads` threads in blocks of `$block`, with the arguments in
/// the order and types the kernel declares.
macro_rules! launch {
    ($self:ident, $f:expr, $threads:expr, $block:expr; $($arg:expr),* $(,)?) => {{
        let threads: usize = $threads;
        if threads > 0 {
            let mut b = $self.stream.launch_builder($f);
            $( b.arg($arg); )*
            // SAFETY: each call site passes its kernel's parameters in order, with buffers as
            // long as `threads` implies.
            unsafe { b.launch(grid(threads, $block)) }?;
        }
    }};
}

fn grid(threads: usize, block: u32) -> LaunchConfig {
    let blocks = u32::try_from(threads.div_ceil(block as usize)).expect("grid fits in u32");
    LaunchConfig {
        grid_dim: (blocks, 1, 1),
        block_dim: (block, 1, 1),
        shared_mem_bytes: 0,
    }
}

pub struct GpuBackend {
    info: GpuInfo,
    stream: Arc<CudaStream>,
    k: Kernels,
    /// One call's device work at a time.
    busy: Mutex<()>,
    /// Nanoseconds `busy` has been held: the device's occupancy.
    busy_ns: std::sync::atomic::AtomicU64,
    /// Stage times are kept only when asked (`cuzk bench`, `cuzk selftest`): the service
    /// proves forever and must not accumulate them.
    recording: std::sync::atomic::AtomicBool,
    stages: Mutex<Vec<StageTime>>,
    resident: Mutex<Resident>,
    keep_bases: std::sync::atomic::AtomicBool,
}

impl GpuBackend {
    /// Loads the kernels onto `gpu`, from the cubin cache in `cache_dir` or compiled there.
    pub fn new(gpu: &Gpu, cache_dir: &std::path::Path) -> anyhow::Result<GpuBackend> {
        let arch = gpu.info.arch();
        let (cubin, origin, took) = kernels::load(cache_dir, &arch)?;
        tracing::info!(
            gpu = gpu.info.ordinal,
            name = %gpu.info.name,
            arch,
            cubin_bytes = cubin.len(),
            source = ?origin,
            seconds = took.as_secs_f64(),
            "GPU kernels ready"
        );
        let module = gpu.ctx.load_module(Ptx::from_binary(cubin))?;
        let f = |name: &str| module.load_function(name);
        let k = Kernels {
            bit_reverse: f("fr_bit_reverse")?,
            ntt_stage: f("fr_ntt_stage")?,
            scale_powers: f("fr_scale_powers")?,
            h_pointwise: f("fr_h_pointwise")?,
            digits: f("msm_digits")?,
            buckets_g1: f("msm_buckets_g1")?,
            buckets_g2: f("msm_buckets_g2")?,
            reduce_g1: f("msm_reduce_g1")?,
            reduce_g2: f("msm_reduce_g2")?,
        };
        Ok(GpuBackend {
            info: gpu.info.clone(),
            stream: gpu.ctx.new_stream()?,
            k,
            busy: Mutex::new(()),
            busy_ns: std::sync::atomic::AtomicU64::new(0),
            recording: std::sync::atomic::AtomicBool::new(false),
            stages: Mutex::new(Vec::new()),
            resident: Mutex::new(Resident::default()),
            keep_bases: std::sync::atomic::AtomicBool::new(true),
        })
    }

    pub fn info(&self) -> &GpuInfo {
        &self.info
    }

    /// The device for one call's work; its time counts as busy.
    fn occupy(&self) -> Occupied<'_> {
        Occupied {
            _guard: self.busy.lock().unwrap_or_else(|e| e.into_inner()),
            since: Instant::now(),
            busy_ns: &self.busy_ns,
        }
    }

    fn record(&self, stage: String, since: Instant, bytes: u64) -> Result<Instant, DriverError> {
        self.stream.synchronize()?;
        let now = Instant::now();
        if !self.recording.load(std::sync::atomic::Ordering::Relaxed) {
            return Ok(now);
        }
        self.stages
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(StageTime {
                stage,
                seconds: (now - since).as_secs_f64(),
                bytes,
            });
        Ok(now)
    }

    fn upload<T: Words>(
        &self,
        host: &[T],
        len_words: usize,
    ) -> Result<CudaSlice<u32>, DriverError> {
        let words = words(host);
        let mut dev = if words.len() == len_words {
            // SAFETY: fully overwritten by the copy below.
            unsafe { self.stream.alloc::<u32>(len_words) }?
        } else {
            self.stream.alloc_zeros::<u32>(len_words)?
        };
        if !words.is_empty() {
            self.stream
                .memcpy_htod(words, &mut dev.slice_mut(0..words.len()))?;
        }
        Ok(dev)
    }

    /// In place over `v` (2^log_n scalars): evaluations at `tables`' root's powers.
    fn ntt_in_place(
        &self,
        v: &mut CudaSlice<u32>,
        log_n: u32,
        t: &Tables,
    ) -> Result<(), DriverError> {
        let n = 1usize << log_n;
        launch!(self, &self.k.bit_reverse, n, 256; &mut *v, &log_n);
        for stage in 0..log_n {
            launch!(self, &self.k.ntt_stage, n / 2, 256; &mut *v, &log_n, &stage, &t.lo, &t.hi, &t.lo_bits);
        }
        Ok(())
    }

    fn scale(&self, v: &mut CudaSlice<u32>, n: u32, t: &Tables) -> Result<(), DriverError> {
        launch!(self, &self.k.scale_powers, n as usize, 256; &mut *v, &n, &t.lo, &t.hi, &t.lo_bits);
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

    fn h_on_device(
        &self,
        mut a: Vec<Scalar>,
        b: Vec<Scalar>,
        c: Vec<Scalar>,
    ) -> Result<Vec<Scalar>, GpuError> {
        let log_n = a.len().max(1).next_power_of_two().trailing_zeros();
        if log_n > Scalar::S {
            return Err(GpuError::Domain(super::domain::DomainTooLarge { log_n }));
        }
        let n = 1usize << log_n;
        if n == 1 {
            return Ok(Vec::new());
        }
        let _busy = self.occupy();
        // a, b, c over the domain, the power tables, slack.
        self.room_for_call(3 * n * 32 + (256 << 20), None)?;
        let clock = Instant::now();
        let bytes = (3 * a.len() * 32) as u64;
        let mut da = self.upload(&a, n * 8)?;
        let mut db = self.upload(&b, n * 8)?;
        drop(b);
        let mut dc = self.upload(&c, n * 8)?;
        drop(c);
        let clock = self.record(format!("h.upload (2^{log_n})"), clock, bytes)?;

        let omega = root_of_unity(log_n);
        let omega_inv = omega.invert().expect("non-zero");
        let g = Scalar::MULTIPLICATIVE_GENERATOR;
        let g_inv = g.invert().expect("non-zero");
        let n_inv = Scalar::from(n as u64).invert().expect("n < r");
        let fwd = self.tables(omega, log_n - 1, Scalar::ONE)?;
        let inv = self.tables(omega_inv, log_n - 1, Scalar::ONE)?;
        let coset = self.tables(g, log_n, n_inv)?;
        let uncoset = self.tables(g_inv, log_n, n_inv)?;
        let z_inv = (g.pow_vartime([n as u64]) - Scalar::ONE)
            .invert()
            .expect("g is not in the domain, so Z(g) != 0");
        let dz = self.stream.clone_htod(words(&[z_inv]))?;
        let n32 = n as u32;
        for v in [&mut da, &mut db, &mut dc] {
            self.ntt_in_place(v, log_n, &inv)?;
            self.scale(v, n32, &coset)?;
            self.ntt_in_place(v, log_n, &fwd)?;
        }
        launch!(self, &self.k.h_pointwise, n, 256; &mut da, &db, &dc, &n32, &dz);
        drop((db, dc));
        self.ntt_in_place(&mut da, log_n, &inv)?;
        self.scale(&mut da, n32, &uncoset)?;
        let clock = self.record(format!("h.kernels (7 NTTs of 2^{log_n})"), clock, 0)?;

        a.clear();
        a.resize(n - 1, Scalar::ZERO);
        self.stream
            .memcpy_dtoh(&da.slice(0..(n - 1) * 8), words_mut(&mut a))?;
        self.record(
            format!("h.download (2^{log_n})"),
            clock,
            ((n - 1) * 32) as u64,
        )?;
        Ok(a)
    }

    /// The device copy of `bases` (a whole query) under `key`, uploaded now if missing; None if
    /// it cannot fit beside the working memory even after the other entries are let go.
    fn resident<T: Words>(
        &self,
        key: BasesKey,
        bases: &[T],
    ) -> Result<Option<Arc<CudaSlice<u32>>>, DriverError> {
        let mut r = self.resident.lock().unwrap_or_else(|e| e.into_inner());
        r.clock += 1;
        let now = r.clock;
        if let Some(e) = r.entries.iter_mut().find(|e| e.key == key) {
            e.used = now;
            return Ok(Some(e.buf.clone()));
        }
        r.largest = r.largest.max(bases.len());
        let bytes = std::mem::size_of_val(bases);
        let keep_free = WORKING_BYTES_PER_POINT * r.largest + WORKING_BYTES_FIXED;
        if !self.make_room(&mut r, bytes + keep_free, None)? {
            tracing::info!(
                gpu = self.info.ordinal,
                query = key.1,
                bytes,
                "bases do not fit on the device: uploaded per call"
            );
            return Ok(None);
        }
        let clock = Instant::now();
        let buf = Arc::new(self.stream.clone_htod(words(bases))?);
        self.record(
            format!("bases {} (resident).upload", key.1),
            clock,
            bytes as u64,
        )?;
        tracing::info!(
            gpu = self.info.ordinal,
            query = key.1,
            bytes,
            "bases resident on the device"
        );
        r.entries.push(ResidentBases {
            key,
            buf: buf.clone(),
            bytes,
            used: now,
        });
        Ok(Some(buf))
    }

    /// Lets resident bases go, least recently used first and never `keep`, until `needed` bytes
    /// are free on the device; whether they are.
    fn make_room(
        &self,
        r: &mut Resident,
        needed: usize,
        keep: Option<BasesKey>,
    ) -> Result<bool, DriverError> {
        loop {
            let (free, _) = self.stream.context().mem_get_info()?;
            if free >= needed {
                return Ok(true);
            }
            let lru = (0..r.entries.len())
                .filter(|&i| Some(r.entries[i].key) != keep)
                .min_by_key(|&i| r.entries[i].used);
            let Some(lru) = lru else {
                return Ok(false);
            };
            let gone = r.entries.swap_remove(lru);
            tracing::info!(
                gpu = self.info.ordinal,
                query = gone.key.1,
                bytes = gone.bytes,
                free,
                needed,
                "resident bases let go for room"
            );
            drop(gone);
            // Frees are ordered on the stream: let them land before asking again.
            self.stream.synchronize()?;
        }
    }

    /// Room for one call's working memory, resident bases (but `keep`) let go if needed. A call
    /// that still does not fit (another process holds the memory) fails at its allocation.
    fn room_for_call(&self, needed: usize, keep: Option<BasesKey>) -> Result<(), DriverError> {
        let mut r = self.resident.lock().unwrap_or_else(|e| e.into_inner());
        if r.entries.is_empty() {
            return Ok(());
        }
        self.make_room(&mut r, needed, keep).map(|_| ())
    }

    /// Σ scalars·bases on the device; with `key`, `bases` is that whole query and stays
    /// resident.
    fn msm_on_device<C: GpuCurve>(
        &self,
        bases: &[C::Affine],
        key: Option<BasesKey>,
        scalars: &[Scalar],
    ) -> Result<(C, MsmStats), GpuError> {
        let n = scalars.len();
        if n == 0 {
            return Ok((C::identity(), MsmStats::default()));
        }
        if bases.len() < n {
            return Err(GpuError::Shape(format!(
                "{} bases for {n} scalars",
                bases.len()
            )));
        }
        let n32 = u32::try_from(n).map_err(|_| GpuError::Shape(format!("{n} points")))?;
        let shape = MsmShape::new(n, C::MAX_GROUPS);
        let label = format!("msm_{} ({n} points)", C::NAME);
        let _busy = self.occupy();

        let resident = match key {
            Some(key) if self.keep_bases.load(std::sync::atomic::Ordering::Relaxed) => {
                self.resident(key, bases)?
            }
            _ => None,
        };
        let threads = (shape.groups * shape.windows) as usize;
        let buckets_len = (1usize << (shape.c - 1)) * threads * C::XYZZ_WORDS;
        let transient_bytes = if resident.is_some() {
            0
        } else {
            n * std::mem::size_of::<C::Affine>()
        };
        // Scalars, digits, buckets and results, the bases if not resident, slack.
        let working = n * 32
            + shape.windows as usize * n * 2
            + (buckets_len + threads * C::XYZZ_WORDS) * 4
            + transient_bytes
            + (64 << 20);
        self.room_for_call(working, key)?;
        let clock = Instant::now();
        let transient;
        let db: &CudaSlice<u32> = match &resident {
            Some(buf) => buf,
            None => {
                transient = self.stream.clone_htod(words(&bases[..n]))?;
                &transient
            }
        };
        let ds = self.stream.clone_htod(words(scalars))?;
        let bytes = (transient_bytes + n * 32) as u64;
        let clock = self.record(format!("{label}.upload"), clock, bytes)?;

        // SAFETY: msm_digits writes every one of the windows * n digits.
        let mut digits = unsafe { self.stream.alloc::<i16>(shape.windows as usize * n) }?;
        let mut counts = self.stream.alloc_zeros::<u32>(2)?;
        launch!(self, &self.k.digits, n, 256; &ds, &n32, &shape.c, &shape.windows, &mut digits, &mut counts);
        drop(ds);
        // SAFETY: the bucket kernel initializes every bucket and writes every result.
        let mut buckets = unsafe { self.stream.alloc::<u32>(buckets_len) }?;
        let mut results = unsafe { self.stream.alloc::<u32>(threads * C::XYZZ_WORDS) }?;
        launch!(self, C::buckets(&self.k), threads, 128; db, &digits, &n32, &shape.c, &shape.windows, &shape.groups, &mut buckets, &mut results);
        drop((buckets, digits));
        let mut half = shape.groups / 2;
        while half > 0 {
            launch!(self, C::reduce(&self.k), (half * shape.windows) as usize, 128; &mut results, &shape.windows, &half);
            half /= 2;
        }
        let clock = self.record(format!("{label}.kernels"), clock, 0)?;

        let sums = self
            .stream
            .clone_dtoh(&results.slice(0..shape.windows as usize * C::XYZZ_WORDS))?;
        let counts = self.stream.clone_dtoh(&counts)?;
        self.record(format!("{label}.download"), clock, (sums.len() * 4) as u64)?;

        let mut acc = C::identity();
        for w in sums.chunks(C::XYZZ_WORDS).rev() {
            for _ in 0..shape.c {
                acc = acc.double();
            }
            acc += C::from_xyzz(w);
        }
        let (zeros, ones) = (counts[0] as usize, counts[1] as usize);
        Ok((
            acc,
            MsmStats {
                points: n,
                zeros,
                ones,
                others: n - zeros - ones,
            },
        ))
    }

    /// The NTT of `v` (a power-of-two length) over its domain: evaluations at omega^i, or with
    /// `inverse` the coefficients back (scaled by 1/n). For `cuzk selftest`.
    pub fn ntt(&self, mut v: Vec<Scalar>, inverse: bool) -> Result<Vec<Scalar>, ProveError> {
        self.ntt_on_device(&mut v, inverse)
            .map_err(|e| e.on(&self.info))?;
        Ok(v)
    }

    fn ntt_on_device(&self, v: &mut [Scalar], inverse: bool) -> Result<(), GpuError> {
        let n = v.len();
        if !n.is_power_of_two() {
            return Err(GpuError::Shape(format!(
                "NTT of {n} points: not a power of two"
            )));
        }
        let log_n = n.trailing_zeros();
        if log_n > Scalar::S {
            return Err(GpuError::Domain(super::domain::DomainTooLarge { log_n }));
        }
        if n == 1 {
            return Ok(());
        }
        let _busy = self.occupy();
        let mut d = self.upload(v, n * 8)?;
        let omega = root_of_unity(log_n);
        let base = if inverse {
            omega.invert().expect("non-zero")
        } else {
            omega
        };
        self.ntt_in_place(&mut d, log_n, &self.tables(base, log_n - 1, Scalar::ONE)?)?;
        if inverse {
            let n_inv = Scalar::from(n as u64).invert().expect("n < r");
            self.scale(&mut d, n as u32, &self.tables(Scalar::ONE, log_n, n_inv)?)?;
        }
        self.stream.memcpy_dtoh(&d, words_mut(v))?;
        self.stream.synchronize()?;
        Ok(())
    }
}

impl Backend for GpuBackend {
    fn name(&self) -> &'static str {
        "gpu"
    }

    fn h_coefficients(
        &self,
        a: Vec<Scalar>,
        b: Vec<Scalar>,
        c: Vec<Scalar>,
    ) -> Result<Vec<Scalar>, ProveError> {
        self.h_on_device(a, b, c).map_err(|e| e.on(&self.info))
    }

    fn msm_g1(
        &self,
        bases: &[G1Affine],
        scalars: &[Scalar],
    ) -> Result<(G1Projective, MsmStats), ProveError> {
        self.msm_on_device(bases, None, scalars)
            .map_err(|e| e.on(&self.info))
    }

    fn msm_g2(
        &self,
        bases: &[G2Affine],
        scalars: &[Scalar],
    ) -> Result<(G2Projective, MsmStats), ProveError> {
        self.msm_on_device(bases, None, scalars)
            .map_err(|e| e.on(&self.info))
    }

    fn msm_g1_query(
        &self,
        srs: &Srs,
        query: G1Query,
        scalars: &[Scalar],
    ) -> Result<(G1Projective, MsmStats), ProveError> {
        self.msm_on_device(query.bases(srs), Some((srs.id, query.name())), scalars)
            .map_err(|e| e.on(&self.info))
    }

    fn msm_b_g2(
        &self,
        srs: &Srs,
        scalars: &[Scalar],
    ) -> Result<(G2Projective, MsmStats), ProveError> {
        self.msm_on_device(&srs.b_g2, Some((srs.id, "b_g2")), scalars)
            .map_err(|e| e.on(&self.info))
    }

    fn stage_times(&self) -> Vec<StageTime> {
        std::mem::take(&mut *self.stages.lock().unwrap_or_else(|e| e.into_inner()))
    }

    fn keep_bases(&self, on: bool) {
        self.keep_bases
            .store(on, std::sync::atomic::Ordering::Relaxed);
        if !on {
            let mut r = self.resident.lock().unwrap_or_else(|e| e.into_inner());
            r.entries.clear();
        }
    }

    fn device_busy(&self) -> Option<std::time::Duration> {
        Some(std::time::Duration::from_nanos(
            self.busy_ns.load(std::sync::atomic::Ordering::Relaxed),
        ))
    }

    fn record_stages(&self, on: bool) {
        self.recording
            .store(on, std::sync::atomic::Ordering::Relaxed);
        if !on {
            self.stage_times();
        }
    }
}

struct Occupied<'a> {
    _guard: std::sync::MutexGuard<'a, ()>,
    since: Instant,
    busy_ns: &'a std::sync::atomic::AtomicU64,
}

impl Drop for Occupied<'_> {
    fn drop(&mut self) {
        let ns = u64::try_from(self.since.elapsed().as_nanos()).unwrap_or(u64::MAX);
        self.busy_ns
            .fetch_add(ns, std::sync::atomic::Ordering::Relaxed);
    }
}

#[derive(Debug, thiserror::Error)]
enum GpuError {
    #[error(transparent)]
    Driver(#[from] DriverError),
    #[error(transparent)]
    Domain(super::domain::DomainTooLarge),
    #[error("{0}")]
    Shape(String),
}

impl GpuError {
    fn on(self, gpu: &GpuInfo) -> ProveError {
        match self {
            GpuError::Domain(d) => ProveError::Domain(d),
            GpuError::Shape(s) => ProveError::ShapeMismatch(s),
            GpuError::Driver(e) => {
                ProveError::Device(format!("GPU {} ({}): {e}", gpu.ordinal, gpu.name))
            }
        }
    }
}

struct Tables {
    lo: CudaSlice<u32>,
    hi: CudaSlice<u32>,
    lo_bits: u32,
}

/// The primitive 2^log_n-th root of unity the CPU's domain uses.
fn root_of_unity(log_n: u32) -> Scalar {
    let mut omega = Scalar::ROOT_OF_UNITY;
    for _ in log_n..Scalar::S {
        omega = omega.square();
    }
    omega
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

/// Window width, window count and point groups of one MSM.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MsmShape {
    /// Bits per signed window (at most 15: digits are i16).
    pub c: u32,
    /// ceil(256 / c): the top window takes the last carry.
    pub windows: u32,
    /// Contiguous chunks of the points, one thread per (group, window); a power of two.
    pub groups: u32,
}

impl MsmShape {
    pub fn new(n: usize, max_groups: u32) -> MsmShape {
        let c: u32 = if n < 1 << 10 {
            4
        } else if n < 1 << 16 {
            6
        } else {
            8
        };
        let wanted = (n >> c).max(1) as u64;
        let groups = (1u64 << (63 - wanted.leading_zeros())).min(max_groups as u64) as u32;
        MsmShape {
            c,
            windows: 256u32.div_ceil(c),
            groups,
        }
    }
}

/// G1 and G2 as the kernels see them.
trait GpuCurve: Group<Scalar = Scalar> + std::ops::AddAssign<Self> {
    type Affine: Words;
    const NAME: &'static str;
    /// u32 words of one XYZZ point.
    const XYZZ_WORDS: usize;
    /// Bucket memory is groups * windows * 2^(c-1) points: keep it near 1.6 GB.
    const MAX_GROUPS: u32;
    fn buckets(k: &Kernels) -> &CudaFunction;
    fn reduce(k: &Kernels) -> &CudaFunction;
    /// (X, Y, ZZ, ZZZ) in Montgomery words -> Jacobian (X·ZZ·ZZZ², Y·ZZ³·ZZZ², ZZ·ZZZ).
    fn from_xyzz(words: &[u32]) -> Self;
}

fn fp(words: &[u32]) -> Fp {
    let mut l = [0u64; 6];
    for (i, limb) in l.iter_mut().enumerate() {
        *limb = words[2 * i] as u64 | (words[2 * i + 1] as u64) << 32;
    }
    Fp::from_raw_unchecked(l)
}

fn fp2(words: &[u32]) -> Fp2 {
    Fp2::new(fp(&words[..12]), fp(&words[12..24]))
}

impl GpuCurve for G1Projective {
    type Affine = G1Affine;
    const NAME: &'static str = "g1";
    const XYZZ_WORDS: usize = 48;
    const MAX_GROUPS: u32 = 2048;
    fn buckets(k: &Kernels) -> &CudaFunction {
        &k.buckets_g1
    }
    fn reduce(k: &Kernels) -> &CudaFunction {
        &k.reduce_g1
    }
    fn from_xyzz(w: &[u32]) -> Self {
        let (x, y, zz, zzz) = (
            fp(&w[0..12]),
            fp(&w[12..24]),
            fp(&w[24..36]),
            fp(&w[36..48]),
        );
        if bool::from(zz.is_zero()) {
            return G1Projective::identity();
        }
        let zzz2 = zzz.square();
        G1Projective::from_raw_unchecked(x * zz * zzz2, y * zz.square() * zz * zzz2, zz * zzz)
    }
}

impl GpuCurve for G2Projective {
    type Affine = G2Affine;
    const NAME: &'static str = "g2";
    const XYZZ_WORDS: usize = 96;
    const MAX_GROUPS: u32 = 1024;
    fn buckets(k: &Kernels) -> &CudaFunction {
        &k.buckets_g2
    }
    fn reduce(k: &Kernels) -> &CudaFunction {
        &k.reduce_g2
    }
    fn from_xyzz(w: &[u32]) -> Self {
        let (x, y, zz, zzz) = (
            fp2(&w[0..24]),
            fp2(&w[24..48]),
            fp2(&w[48..72]),
            fp2(&w[72..96]),
        );
        if bool::from(zz.is_zero()) {
            return G2Projective::identity();
        }
        let zzz2 = zzz.square();
        G2Projective::from_raw_unchecked(x * zz * zzz2, y * zz.square() * zz * zzz2, zz * zzz)
    }
}

/// Plain data made of 32-bit words, in the kernels' layout.
///
/// # Safety
/// Implementors are `repr(transparent)` over blst types of u64 limbs: size a multiple of 4,
/// alignment at least 4, every bit pattern readable as words.
unsafe trait Words: Sized {}
unsafe impl Words for Scalar {}
unsafe impl Words for G1Affine {}
unsafe impl Words for G2Affine {}

const _: () = assert!(std::mem::size_of::<Scalar>() == 32);
const _: () = assert!(std::mem::size_of::<G1Affine>() == 96);
const _: () = assert!(std::mem::size_of::<G2Affine>() == 192);

fn words<T: Words>(v: &[T]) -> &[u32] {
    // SAFETY: see `Words`.
    unsafe { std::slice::from_raw_parts(v.as_ptr().cast(), std::mem::size_of_val(v) / 4) }
}

fn words_mut<T: Words>(v: &mut [T]) -> &mut [u32] {
    // SAFETY: see `Words`; Scalar's every bit pattern the kernels write is a canonical element.
    unsafe { std::slice::from_raw_parts_mut(v.as_mut_ptr().cast(), std::mem::size_of_val(v) / 4) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn msm_shapes_cover_every_size() {
        for (n, max) in [
            (1, 2048),
            (2, 2048),
            (17, 2048),
            (1000, 2048),
            (1 << 22, 2048),
            (1 << 22, 1024),
            (3 << 20, 2048),
        ] {
            let s = MsmShape::new(n, max);
            assert!(s.c >= 2 && s.c <= 15);
            assert!(
                s.windows * s.c >= 256,
                "windows cover 255 bits and the last carry"
            );
            assert!(s.groups.is_power_of_two() && s.groups <= max);
            assert!(s.groups as usize <= n.max(1));
        }
        assert_eq!(
            MsmShape::new(1 << 22, 2048),
            MsmShape {
                c: 8,
                windows: 32,
                groups: 2048
            }
        );
    }

    #[test]
    fn xyzz_to_jacobian_matches_the_affine_point() {
        // A point in XYZZ with ZZ = λ², ZZZ = λ³ for a random λ must come back as the point.
        use group::Curve;
        let mut rng = rand::thread_rng();
        let p = G1Projective::random(&mut rng).to_affine();
        let l = Fp::random(&mut rng);
        let (zz, zzz) = (l.square(), l.square() * l);
        let coords = [p.x() * zz, p.y() * zzz, zz, zzz];
        let mut w = Vec::new();
        for c in coords {
            // SAFETY: Fp is repr(transparent) over blst_fp, six u64 Montgomery limbs.
            let limbs: [u64; 6] = unsafe { std::mem::transmute(c) };
            for limb in limbs {
                w.push(limb as u32);
                w.push((limb >> 32) as u32);
            }
        }
        assert_eq!(G1Projective::from_xyzz(&w).to_affine(), p);
        let zero = vec![0u32; 48];
        assert!(bool::from(G1Projective::from_xyzz(&zero).is_identity()));
    }
}
