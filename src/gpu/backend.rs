//! [`GpuBackend`]: the groth16 [`Backend`] on one device, its kernels launched through cudarc.
//!
//! Host buffers go to the device as they are: blstrs keeps scalars and points in Montgomery form
//! with blst's limb order, which is the kernels' layout ([`Words`]). One call's work runs on a
//! device at a time (its time counts as busy); stages are timed (transfers and kernels apart)
//! when a bench or the selftest asks. The work itself is in `ntt` (h, and h into its MSM without leaving the device), `msm` and `resident`
//! (the bases kept on the device and the room every call needs).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
use cudarc::driver::sys::CUmemPool_attribute as PoolAttribute;
use cudarc::driver::{
    result, sys, CudaFunction, CudaModule, CudaSlice, CudaStream, DevicePtrMut, DriverError,
    LaunchConfig,
};
use cudarc::nvrtc::Ptx;

use super::kernels::{self, Kernel};
use super::queries::Evaluations;
use super::registered::{register, Registered};
use super::resident::Resident;
use super::staging::Staging;
use super::{Gpu, GpuInfo};
use crate::groth16::domain::DomainTooLarge;
use crate::groth16::msm::MsmStats;
use crate::groth16::{
    g1_sums_expanded, Assignment, Backend, G1Query, G1Sums, ProveError, StageTime, WitnessSums,
};
use crate::memory::PinnedPool;
use crate::pce::{CompactProof, Pce};
use crate::srs::Srs;
use crate::synth::Scalars;

/// The loaded kernels, indexed by [`Kernel`].
pub(super) struct Kernels(Vec<CudaFunction>);

impl Kernels {
    fn load(module: &Arc<CudaModule>) -> Result<Kernels, DriverError> {
        let kernels = Kernel::ALL
            .iter()
            .map(|k| module.load_function(k.name()))
            .collect::<Result<_, _>>()
            .map(Kernels)?;
        for (k, bytes) in [
            (Kernel::NttTiles, super::ntt::NTT_SHARED_MAX),
            (Kernel::NttRegs, super::ntt::NTT_SHARED_MAX),
            (Kernel::BitReverse, super::ntt::BIT_REVERSE_SHARED_MAX),
        ] {
            kernels.get(k).set_attribute(
                sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                bytes as i32,
            )?;
        }
        Ok(kernels)
    }

    pub(super) fn get(&self, k: Kernel) -> &CudaFunction {
        &self.0[k as usize]
    }
}

/// Launches kernel `$k` over `$threads` threads in blocks of `$block` (with `$shared` bytes of
/// dynamic shared memory a block), with the arguments in the order and types the kernel
/// declares.
macro_rules! launch {
    ($gpu:expr, $k:expr, $threads:expr, $block:expr; $($arg:expr),* $(,)?) => {
        launch!($gpu, $k, $threads, $block, 0; $($arg),*)
    };
    ($gpu:expr, $k:expr, $threads:expr, $block:expr, $shared:expr; $($arg:expr),* $(,)?) => {{
        let threads: usize = $threads;
        if threads > 0 {
            use cudarc::driver::PushKernelArg;
            let mut b = $gpu.stream.launch_builder($gpu.kernels.get($k));
            $( b.arg($arg); )*
            let mut config = $crate::gpu::backend::grid(threads, $block);
            config.shared_mem_bytes = $shared;
            // SAFETY: each call site passes its kernel's parameters in order, with buffers as
            // long as `threads` implies.
            unsafe { b.launch(config) }?;
        }
    }};
}
pub(super) use launch;

/// The backend seen from one of its streams: work queued through a lane (its launches,
/// allocations, transfers and stage records) runs on that stream, so MSMs on different lanes
/// run side by side on the device. Everything else is the backend's.
#[derive(Clone, Copy)]
pub(super) struct Lane<'a> {
    pub gpu: &'a GpuBackend,
    pub stream: &'a Arc<CudaStream>,
}

impl std::ops::Deref for Lane<'_> {
    type Target = GpuBackend;
    fn deref(&self) -> &GpuBackend {
        self.gpu
    }
}

impl Lane<'_> {
    /// [`GpuBackend::record`] for this lane's stream.
    pub(super) fn record(
        &self,
        stage: String,
        since: Instant,
        bytes: u64,
    ) -> Result<Instant, DriverError> {
        self.gpu.record_on(self.stream, stage, since, bytes)
    }
}

pub(super) fn grid(threads: usize, block: u32) -> LaunchConfig {
    let blocks = u32::try_from(threads.div_ceil(block as usize)).expect("grid fits in u32");
    LaunchConfig {
        grid_dim: (blocks, 1, 1),
        block_dim: (block, 1, 1),
        shared_mem_bytes: 0,
    }
}

pub struct GpuBackend {
    pub(super) info: GpuInfo,
    /// Where kernels run, and every buffer is allocated and freed; of the highest priority.
    pub(super) stream: Arc<CudaStream>,
    /// Where uploads that overlap the kernels run (ordered against `stream` by events).
    pub(super) copy: Arc<CudaStream>,
    /// Streams of MSMs that run beside those of `stream` (ordered against it by events).
    pub(super) side: [Arc<CudaStream>; SIDE_STREAMS],
    pub(super) kernels: Kernels,
    /// The device's streaming multiprocessors (what one wave of a kernel fills).
    pub(super) multiprocessors: u32,
    /// One call's device work at a time.
    busy: Mutex<()>,
    /// Nanoseconds `busy` has been held: the device's occupancy.
    busy_ns: AtomicU64,
    /// Stage times are kept only when asked (`cuzk bench`, `cuzk selftest`): the service
    /// proves forever and must not accumulate them.
    recording: AtomicBool,
    stages: Mutex<Vec<StageTime>>,
    pub(super) resident: Mutex<Resident>,
    pub(super) keep_bases: AtomicBool,
    /// Whether the H query gets a fixed-base table where device memory allows (on by default;
    /// off only to measure the difference).
    pub(super) window_tables: AtomicBool,
    pub(super) pool: Pool,
    /// Page-locked halves every upload from other memory goes through.
    staging: Mutex<Staging>,
    /// The page-locked pool, registered: uploads from it go straight to the device.
    registered: Mutex<Option<Arc<Registered>>>,
}

/// Streams beside the compute stream: the witness's MSMs (L, A, B in G1, B in G2) run on them
/// while h and its MSM run on it.
pub(super) const SIDE_STREAMS: usize = 4;

/// The device's memory pool, where every buffer of ours comes from (cudarc allocates on the
/// stream). It keeps what is freed instead of handing it back to the driver at every
/// synchronization, so a call's gigabytes of working memory are mapped once, not at every call;
/// [`Pool::idle_bytes`] is memory a call can still have, and [`Pool::release_idle`] gives it
/// back when something must be made to fit.
pub(super) struct Pool(sys::CUmemoryPool);

// SAFETY: a pool is a driver object, usable from any thread.
unsafe impl Send for Pool {}
unsafe impl Sync for Pool {}

impl Pool {
    fn keeping(gpu: &Gpu) -> Result<Pool, DriverError> {
        // SAFETY: the device comes from a live context.
        let pool = Pool(unsafe { result::device::get_mem_pool(gpu.ctx.cu_device()) }?);
        let mut keep = u64::MAX;
        // SAFETY: the release threshold is a u64 attribute of a valid pool.
        unsafe {
            sys::cuMemPoolSetAttribute(
                pool.0,
                PoolAttribute::CU_MEMPOOL_ATTR_RELEASE_THRESHOLD,
                (&mut keep as *mut u64).cast(),
            )
        }
        .result()?;
        Ok(pool)
    }

    fn attribute(&self, attribute: PoolAttribute) -> Result<u64, DriverError> {
        let mut value = 0u64;
        // SAFETY: the reserved and used sizes are u64 attributes of a valid pool.
        unsafe { sys::cuMemPoolGetAttribute(self.0, attribute, (&mut value as *mut u64).cast()) }
            .result()?;
        Ok(value)
    }

    /// Bytes the pool holds that no buffer uses.
    pub(super) fn idle_bytes(&self) -> Result<usize, DriverError> {
        let reserved = self.attribute(PoolAttribute::CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT)?;
        let used = self.attribute(PoolAttribute::CU_MEMPOOL_ATTR_USED_MEM_CURRENT)?;
        Ok(reserved.saturating_sub(used) as usize)
    }

    /// Hands the idle bytes back to the driver (the stream must have run its frees).
    pub(super) fn release_idle(&self) -> Result<(), DriverError> {
        // SAFETY: a valid pool.
        unsafe { sys::cuMemPoolTrimTo(self.0, 0) }.result()
    }
}

impl GpuBackend {
    /// Loads the kernels onto `gpu`, from the cubin cache in `cache_dir` or compiled there.
    pub fn new(
        gpu: &Gpu,
        cache_dir: &std::path::Path,
        field: kernels::FieldCode,
    ) -> anyhow::Result<GpuBackend> {
        let arch = gpu.info.arch();
        let (cubin, origin, took) = kernels::load(cache_dir, &arch, field)?;
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
        let staging = Staging::new(&gpu.ctx)?;
        tracing::info!(
            gpu = gpu.info.ordinal,
            locked_bytes = Staging::LOCKED_BYTES,
            "page-locked staging for uploads"
        );
        // The compute stream carries the path that bounds a proof's call (h, then the H MSM):
        // its blocks go first wherever the side streams' MSMs, which fill the device around
        // it, have blocks waiting too.
        gpu.ctx.bind_to_thread()?;
        let (_, greatest) = cudarc::driver::result::stream::get_priority_range()?;
        Ok(GpuBackend {
            info: gpu.info.clone(),
            stream: gpu.ctx.new_stream_with_priority(greatest)?,
            copy: gpu.ctx.new_stream()?,
            side: [
                gpu.ctx.new_stream()?,
                gpu.ctx.new_stream()?,
                gpu.ctx.new_stream()?,
                gpu.ctx.new_stream()?,
            ],
            kernels: Kernels::load(&module)?,
            multiprocessors: gpu
                .ctx
                .attribute(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)?
                .max(1) as u32,
            busy: Mutex::new(()),
            busy_ns: AtomicU64::new(0),
            recording: AtomicBool::new(false),
            stages: Mutex::new(Vec::new()),
            resident: Mutex::new(Resident::default()),
            keep_bases: AtomicBool::new(true),
            window_tables: AtomicBool::new(true),
            pool: Pool::keeping(gpu)?,
            staging: Mutex::new(staging),
            registered: Mutex::new(None),
        })
    }

    pub fn info(&self) -> &GpuInfo {
        &self.info
    }

    /// Σ h_i·bases[i] with h = (A·B - C)/Z computed from a, b, c on the device and left there
    /// for the MSM (bases uploaded for the call). For `cuzk selftest` and `cuzk bench gpu`.
    pub fn h_msm_g1(
        &self,
        bases: &[G1Affine],
        a: Scalars,
        b: Scalars,
        c: Scalars,
    ) -> Result<G1Projective, ProveError> {
        self.h_msm_on_device(bases, None, a, b, c)
            .map(|(sum, _, _)| sum)
            .map_err(|e| e.on(&self.info))
    }

    /// Seconds to upload `vectors` one after another on the compute stream (from the
    /// registered pool directly, from elsewhere through the staging halves), the device's
    /// buffers made first. For `cuzk bench gpu --op transfer`.
    pub fn upload_seconds(&self, vectors: &[&[Scalar]]) -> Result<f64, ProveError> {
        let run = || -> Result<f64, DriverError> {
            let _busy = self.occupy();
            let mut bufs = Vec::with_capacity(vectors.len());
            for v in vectors {
                bufs.push(self.device_for(v.len() * 8, v.len() * 8)?);
            }
            self.stream.synchronize()?;
            let clock = Instant::now();
            for (v, buf) in vectors.iter().zip(&mut bufs) {
                self.stage(&self.stream, words(v), buf)?;
            }
            self.stream.synchronize()?;
            Ok(clock.elapsed().as_secs_f64())
        };
        run().map_err(|e| GpuError::Driver(e).on(&self.info))
    }

    /// The device for one call's work; its time counts as busy.
    pub(super) fn occupy(&self) -> Occupied<'_> {
        Occupied {
            _guard: lock(&self.busy),
            since: Instant::now(),
            busy_ns: &self.busy_ns,
        }
    }

    /// The lane of the compute stream.
    pub(super) fn lane(&self) -> Lane<'_> {
        Lane {
            gpu: self,
            stream: &self.stream,
        }
    }

    /// Ends a stage of the compute stream begun at `since`: when stages are recorded, waits for
    /// the stream to run it and keeps its time; otherwise the stream runs on without the host
    /// waiting.
    pub(super) fn record(
        &self,
        stage: String,
        since: Instant,
        bytes: u64,
    ) -> Result<Instant, DriverError> {
        self.record_on(&self.stream, stage, since, bytes)
    }

    /// [`GpuBackend::record`] for a stage of `stream`.
    fn record_on(
        &self,
        stream: &CudaStream,
        stage: String,
        since: Instant,
        bytes: u64,
    ) -> Result<Instant, DriverError> {
        if !self.recording.load(Ordering::Relaxed) {
            return Ok(Instant::now());
        }
        stream.synchronize()?;
        let now = Instant::now();
        lock(&self.stages).push(StageTime {
            stage,
            seconds: (now - since).as_secs_f64(),
            bytes,
        });
        Ok(now)
    }

    /// A device buffer of `len_words` words starting with `host` (zeros after it), copied
    /// through the page-locked staging halves on the compute stream.
    pub(super) fn upload<T: Words>(
        &self,
        host: &[T],
        len_words: usize,
    ) -> Result<CudaSlice<u32>, DriverError> {
        let words = words(host);
        let mut dev = self.device_for(words.len(), len_words)?;
        self.stage(&self.stream, words, &mut dev)?;
        Ok(dev)
    }

    /// A device buffer of `len_words` words for an upload of `host_words`: zeros past them.
    pub(super) fn device_for(
        &self,
        host_words: usize,
        len_words: usize,
    ) -> Result<CudaSlice<u32>, DriverError> {
        if host_words == len_words {
            // SAFETY: fully overwritten by the upload it is made for.
            unsafe { self.stream.alloc::<u32>(len_words) }
        } else {
            self.stream.alloc_zeros::<u32>(len_words)
        }
    }

    /// `host` into the start of `dev` on the copy stream, which must already wait for `dev`'s
    /// allocation; the compute stream waits for an event recorded after it before reading.
    pub(super) fn upload_on_copy<T: Words>(
        &self,
        host: &[T],
        dev: &mut CudaSlice<u32>,
    ) -> Result<(), DriverError> {
        self.stage(&self.copy, words(host), dev)
    }

    /// `words` into the start of `dev` on `stream`: one DMA from the registered pool (the
    /// caller keeps them until the stream has run it), else through the staging halves.
    pub(super) fn stage<D: DevicePtrMut<u32>>(
        &self,
        stream: &CudaStream,
        words: &[u32],
        dev: &mut D,
    ) -> Result<(), DriverError> {
        assert!(dev.len() >= words.len(), "an upload larger than its buffer");
        if words.is_empty() {
            return Ok(());
        }
        let (at, _ordered) = dev.device_ptr_mut(stream);
        if self.is_registered(words) {
            // SAFETY: `dev` has room for `words`; the caller keeps them until the stream has
            // run this copy (`Staged::free_beside`, or a call that waits for its stream).
            return unsafe { result::memcpy_htod_async(at, words, stream.cu_stream()) };
        }
        lock(&self.staging).htod(stream, words, at)
    }

    /// Whether `words` lie in the registered page-locked pool (an upload from them is one DMA,
    /// and they must outlive it).
    pub(super) fn is_registered(&self, words: &[u32]) -> bool {
        let bytes = words_as_bytes(words);
        lock(&self.registered)
            .as_ref()
            .is_some_and(|r| r.holds(bytes))
    }
}

impl Backend for GpuBackend {
    fn name(&self) -> &'static str {
        "gpu"
    }

    fn h_coefficients(&self, a: Scalars, b: Scalars, c: Scalars) -> Result<Scalars, ProveError> {
        self.h_on_device(a, b, c)
            .map(Scalars::from)
            .map_err(|e| e.on(&self.info))
    }

    fn h_msm(
        &self,
        srs: &Srs,
        a: Scalars,
        b: Scalars,
        c: Scalars,
    ) -> Result<(G1Projective, Duration), ProveError> {
        self.h_msm_on_device(&srs.h, Some((srs.id.into(), G1Query::H.name())), a, b, c)
            .map(|(sum, _, h_took)| (sum, h_took))
            .map_err(|e| e.on(&self.info))
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
        self.msm_on_device(
            query.bases(srs),
            Some((srs.id.into(), query.name())),
            scalars,
        )
        .map_err(|e| e.on(&self.info))
    }

    fn g1_sums(
        &self,
        srs: &Srs,
        a: Scalars,
        b: Scalars,
        c: Scalars,
        w: Assignment<'_>,
        b_g2: bool,
    ) -> Result<G1Sums, ProveError> {
        self.g1_on_device(srs, Evaluations::Host([a, b, c]), w, b_g2)
            .map_err(|e| e.on(&self.info))
    }

    fn evaluates(&self, pce: &Pce) -> bool {
        self.evaluates_pce(pce)
    }

    fn g1_sums_compact(
        &self,
        srs: &Srs,
        proof: &CompactProof,
        b_g2: bool,
    ) -> Result<G1Sums, ProveError> {
        let h_fits = Self::h_domain(proof.num_constraints())
            .is_ok_and(|log_n| Self::h_in_one_call(srs, log_n));
        if !self.evaluates_pce(proof.pce()) || !h_fits {
            return g1_sums_expanded(self, srs, proof, b_g2);
        }
        let w = Assignment::compact(proof);
        self.g1_on_device(srs, Evaluations::Pce(proof.pce()), w, b_g2)
            .map_err(|e| e.on(&self.info))
    }

    fn witness_msms_g1(&self, srs: &Srs, w: Assignment<'_>) -> Result<WitnessSums, ProveError> {
        self.witness_msms_on_device(srs, w)
            .map_err(|e| e.on(&self.info))
    }

    fn msm_b_g2(
        &self,
        srs: &Srs,
        scalars: &[Scalar],
    ) -> Result<(G2Projective, MsmStats), ProveError> {
        self.msm_on_device(
            &srs.b_g2,
            Some((srs.id.into(), super::queries::B_G2)),
            scalars,
        )
        .map_err(|e| e.on(&self.info))
    }

    fn stage_times(&self) -> Vec<StageTime> {
        std::mem::take(&mut *lock(&self.stages))
    }

    fn keep_bases(&self, on: bool) {
        self.keep_bases.store(on, Ordering::Relaxed);
        if !on {
            lock(&self.resident).clear();
        }
    }

    fn window_tables(&self, on: bool) {
        self.window_tables.store(on, Ordering::Relaxed);
        if !on {
            lock(&self.resident).let_go_extras();
        }
    }

    fn locked_bytes(&self) -> u64 {
        Staging::LOCKED_BYTES as u64
    }

    fn device_resident_bytes(&self) -> Option<u64> {
        Some(lock(&self.resident).bytes() as u64)
    }

    fn register_pool(&self, pool: &Arc<PinnedPool>) -> Result<Option<Duration>, ProveError> {
        let ctx = self.stream.context();
        let (registered, took) = register(ctx, pool)
            .map_err(|e| ProveError::Device(format!("registering the page-locked pool: {e}")))?;
        *lock(&self.registered) = Some(registered);
        Ok(Some(took))
    }

    fn device_busy(&self) -> Option<Duration> {
        Some(Duration::from_nanos(self.busy_ns.load(Ordering::Relaxed)))
    }

    fn record_stages(&self, on: bool) {
        self.recording.store(on, Ordering::Relaxed);
        if !on {
            self.stage_times();
        }
    }
}

pub(super) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The device held for one call: the time counts as busy when dropped.
pub(super) struct Occupied<'a> {
    _guard: MutexGuard<'a, ()>,
    since: Instant,
    busy_ns: &'a AtomicU64,
}

impl Drop for Occupied<'_> {
    fn drop(&mut self) {
        let ns = u64::try_from(self.since.elapsed().as_nanos()).unwrap_or(u64::MAX);
        self.busy_ns.fetch_add(ns, Ordering::Relaxed);
    }
}

#[derive(Debug, thiserror::Error)]
pub(super) enum GpuError {
    #[error(transparent)]
    Driver(#[from] DriverError),
    #[error(transparent)]
    Domain(DomainTooLarge),
    #[error("{0}")]
    Shape(String),
    /// Rows of a witness whose a, b and c were computed from its PCE on the device where
    /// a·b ≠ c.
    #[error("{0} rows unsatisfied")]
    Unsatisfied(usize),
}

impl GpuError {
    pub(super) fn on(self, gpu: &GpuInfo) -> ProveError {
        match self {
            GpuError::Domain(d) => ProveError::Domain(d),
            GpuError::Shape(s) => ProveError::ShapeMismatch(s),
            GpuError::Unsatisfied(rows) => ProveError::Unsatisfied { rows },
            GpuError::Driver(e) => {
                ProveError::Device(format!("GPU {} ({}): {e}", gpu.ordinal, gpu.name))
            }
        }
    }
}

/// Plain data made of 32-bit words, in the kernels' layout.
///
/// # Safety
/// Implementors are `repr(transparent)` over blst types of u64 limbs: size a multiple of 4,
/// alignment at least 4, every bit pattern readable as words.
pub(super) unsafe trait Words: Sized {}
unsafe impl Words for Scalar {}
unsafe impl Words for G1Affine {}
unsafe impl Words for G2Affine {}

const _: () = assert!(std::mem::size_of::<Scalar>() == 32);
const _: () = assert!(std::mem::size_of::<G1Affine>() == 96);
const _: () = assert!(std::mem::size_of::<G2Affine>() == 192);

pub(super) fn words<T: Words>(v: &[T]) -> &[u32] {
    // SAFETY: see `Words`.
    unsafe { std::slice::from_raw_parts(v.as_ptr().cast(), std::mem::size_of_val(v) / 4) }
}

pub(super) fn words_mut<T: Words>(v: &mut [T]) -> &mut [u32] {
    // SAFETY: see `Words`; Scalar's every bit pattern the kernels write is a canonical element.
    unsafe { std::slice::from_raw_parts_mut(v.as_mut_ptr().cast(), std::mem::size_of_val(v) / 4) }
}

/// `words` as bytes.
fn words_as_bytes(words: &[u32]) -> &[u8] {
    // SAFETY: u32s are plain bytes; the length is the same memory's.
    unsafe { std::slice::from_raw_parts(words.as_ptr().cast(), std::mem::size_of_val(words)) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernels_are_indexed_in_the_order_of_their_list() {
        for (i, k) in Kernel::ALL.iter().enumerate() {
            assert_eq!(*k as usize, i, "{k:?}");
        }
    }
}
