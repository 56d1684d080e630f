//! Multi-scalar multiplication on the device (kernels/msm/msm.cu). The scalars are split: zeros
//! dropped, the points of ones summed by a parallel reduction, the rest through Pippenger with
//! signed c-bit digits whose (bucket, point) entries are sorted into runs on the device; the
//! runs are summed in chunks of equal length (skewed buckets cost nothing extra), the windows
//! reduced on the device, and the host weighs the few window sums by 2^(c·w).

use std::ops::Deref;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

use blstrs::{Fp, Fp2, G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
use cudarc::driver::CudaSlice;
use ff::Field;
use group::Group;

use super::backend::{launch, words, GpuBackend, GpuError, Lane, Words};
use super::kernels::Kernel;
use super::resident::BasesKey;
use crate::groth16::msm::MsmStats;
use crate::groth16::G1Query;

/// Window width and window count of the Pippenger part of an MSM.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MsmShape {
    /// Bits per signed window: digits lie in [-2^(c-1), 2^(c-1)], 2^(c-1) buckets a window.
    pub c: u32,
    /// 255 / c + 1: scalars are below 2^255, so the top window never carries out.
    pub windows: u32,
}

/// At most this many threads share the accumulation: it runs as one wave of the device (every
/// SM holding as many blocks as the kernel's registers allow, 67,584 threads on an H200), each
/// thread summing the same number of entries, so small MSMs get long enough chunks to hide a
/// thread's fixed costs and large ones no partly filled last wave.
const ACCUMULATE_THREADS: usize = 1 << 18;
/// Threads a block of the accumulation: the block size its kernels' `__launch_bounds__`
/// (kernels/msm/msm.cu) name, and must not be more.
const ACCUMULATE_BLOCK: u32 = 128;
/// Buckets (then partial window sums) one thread of a window level takes: 2^WINDOW_LOG_K.
const WINDOW_LOG_K: u32 = 3;
/// At most this many threads sum the points of the ones, each at least ONES_PER_THREAD of them
/// (fewer threads left most of the device idle: the 1.3M ones of a 2 KiB PoRep's L).
const ONES_THREADS: usize = 1 << 16;
const ONES_PER_THREAD: usize = 16;
/// Threads a block of the fixed-base table's making (each keeps its windows' multiples in local
/// memory while one inversion brings them back to affine).
const TABLE_BLOCK: u32 = 64;

impl MsmShape {
    /// The shape for `m` scalars through Pippenger: about 2^6 entries per bucket, so the
    /// bucket reduction stays small beside the additions.
    pub fn new(m: usize) -> MsmShape {
        // log2 rounded to the nearest: 2^22 - 1 points take the shape of 2^22.
        let log = (m.max(1) as f64).log2().round() as u32;
        MsmShape::of_width(log.saturating_sub(6).clamp(4, 20))
    }

    /// The shape of c-bit windows: 255 / c + 1 of them.
    fn of_width(c: u32) -> MsmShape {
        MsmShape {
            c,
            windows: 255 / c + 1,
        }
    }

    /// Mixed additions of `n` random scalars in this shape when `bucket_windows` sets of
    /// buckets are reduced (every window's own, or one for a fixed-base table): n entries a
    /// window, and each bucket's reduction.
    fn additions(&self, n: usize, bucket_windows: u32) -> f64 {
        n as f64 * f64::from(self.windows)
            + FULL_ADDITIONS_A_BUCKET * f64::from(bucket_windows) * self.half() as f64
    }

    /// The shape of a fixed-base table for `n` points ([`WindowTable`]): the c that makes the
    /// fewest additions, from 16 (at most MSM_TABLE_WINDOWS windows) to 24 (the digits'
    /// widest). None where it would save less than a tenth of the plain shape's additions
    /// (small MSMs: the one bucket reduction of 2^15 buckets outweighs their entries), or the
    /// table's entries would not fit 31 bits.
    pub fn table(n: usize) -> Option<MsmShape> {
        let shape = (16..=24)
            .map(MsmShape::of_width)
            .min_by(|a, b| a.additions(n, 1).total_cmp(&b.additions(n, 1)))?;
        let plain = MsmShape::new(n);
        let pays = shape.additions(n, 1) < 0.9 * plain.additions(n, plain.windows);
        let fits =
            shape.windows <= TABLE_WINDOWS && shape.windows as u64 * n as u64 <= MSM_NEGATE as u64;
        (pays && fits).then_some(shape)
    }

    /// Buckets of one window.
    pub fn half(&self) -> usize {
        1 << (self.c - 1)
    }

    /// Buckets of all windows.
    pub fn buckets(&self) -> usize {
        self.windows as usize * self.half()
    }
}

/// What reducing a bucket into its window sum costs, in mixed additions: two full additions
/// (the running sum and the total), each worth ~1.4 mixed ones.
const FULL_ADDITIONS_A_BUCKET: f64 = 2.8;

/// Whether the (bucket, point) entries of `m` scalars in `shape` (one a nonzero digit, at most
/// one a window) have 32-bit offsets: the sort's counts, runs and the accumulation's chunks are
/// u32 on the device.
fn entries_fit(m: usize, shape: MsmShape) -> bool {
    (m as u64) * u64::from(shape.windows) < u64::from(u32::MAX)
}

/// The chunk of `entries` each accumulation thread takes when `threads` share them, and how
/// many chunks that makes (at most `threads`).
fn chunking(entries: usize, threads: usize) -> (u32, u32) {
    let chunk = entries.div_ceil(threads.max(1)).max(1);
    (chunk as u32, entries.div_ceil(chunk) as u32)
}

/// Device bytes an MSM of `n` points of curve `C` needs at most: the scalars and their split,
/// the sorted entries, buckets, partial sums of chunks and window levels, the bases unless
/// they are resident, and slack.
pub(super) fn msm_working_bytes<C: GpuCurve>(n: usize, bases_resident: bool) -> usize {
    // The larger of the plain shape's and a fixed-base table's entries and buckets.
    let plain = MsmShape::new(n);
    let table = MsmShape::table(n).unwrap_or(plain);
    let point = C::XYZZ_WORDS * 4;
    let entries = n * plain.windows.max(table.windows) as usize;
    let buckets = plain.buckets().max(table.half());
    let (_, chunks) = chunking(entries, ACCUMULATE_THREADS);
    let bases = if bases_resident {
        0
    } else {
        n * std::mem::size_of::<C::Affine>()
    };
    n * 32
        + n * (4 + 4 + 32)
        + 2 * (buckets + 1) * 4
        + entries * 4
        + 2 * buckets * point
        + chunks as usize * (2 * point + 4)
        + ONES_THREADS * point
        + bases
        + (64 << 20)
}

/// An MSM's scalars on the device.
pub(super) struct DeviceScalars<'a> {
    /// Scalars in Montgomery form, 8 words each.
    pub buf: &'a CudaSlice<u32>,
    /// Scalars in `buf`.
    pub positions: usize,
    /// Points summed; positions whose point is at or past it are skipped.
    pub points: usize,
    /// Nonzero: position p holds the scalar of point bitrev(p) over this many bits.
    pub rev_bits: u32,
}

/// Bases for one call: resident ones shared, others uploaded for it.
pub(super) enum CallBases {
    Resident(Arc<CudaSlice<u32>>),
    Uploaded(CudaSlice<u32>),
}

impl Deref for CallBases {
    type Target = CudaSlice<u32>;
    fn deref(&self) -> &CudaSlice<u32> {
        match self {
            CallBases::Resident(b) => b,
            CallBases::Uploaded(b) => b,
        }
    }
}

/// A fixed-base table of a query's first `stride` bases on the device (kernels/msm/table.cuh):
/// 2^(c·w)·P at w·stride + i for base i and every window w of `shape`. The windows' digits then
/// share one set of 2^(c-1) buckets: one bucket reduction instead of one a window, so c can be
/// wider and there are fewer windows, fewer entries to sort and add, and one window sum.
pub(super) struct WindowTable {
    pub buf: Arc<CudaSlice<u32>>,
    pub shape: MsmShape,
    pub stride: usize,
}

/// Device bytes of the fixed-base table of `n` bases of curve `C` in `shape`.
fn table_bytes<C: GpuCurve>(n: usize, shape: MsmShape) -> usize {
    shape.windows as usize * n * std::mem::size_of::<C::Affine>()
}

/// The shape of the fixed-base table of a query of `query` points, for a call that sums its
/// first `n`: the table covers the whole query (its stride), None where it does not pay or fit
/// ([`MsmShape::table`]) or the call sums more points than the query has.
fn table_shape(query: usize, n: usize) -> Option<MsmShape> {
    if n > query {
        return None;
    }
    MsmShape::table(query)
}

/// The resident key of the fixed-base table of the query under `key`: only H has one (its
/// scalars are h's coefficients, random and all past 1; the witness's are mostly 0 and 1 and
/// go through Pippenger a few percent at a time).
fn table_key(key: BasesKey) -> Option<BasesKey> {
    (key.1 == G1Query::H.name()).then_some((key.0, "h windows"))
}

impl GpuBackend {
    /// The fixed-base table of the resident `bases` of curve `C` (the whole query under `key`;
    /// a call sums its first `n` points): kept resident, made on the device from the bases the
    /// first time, over the whole query, so that every call of the query finds the same table
    /// whatever its `n`. None where tables are off, the curve or query has none, or it does not
    /// fit in the device's free memory beside the working memory (a table never pushes bases or
    /// PCEs out; it goes first).
    pub(super) fn window_table<C: GpuCurve>(
        &self,
        key: Option<BasesKey>,
        bases: &CallBases,
        n: usize,
    ) -> Result<Option<WindowTable>, GpuError> {
        if !self.window_tables.load(Ordering::Relaxed) {
            return Ok(None);
        }
        let (Some(kernel), Some(key), CallBases::Resident(bases)) =
            (C::WINDOW_TABLE, key.and_then(table_key), bases)
        else {
            return Ok(None);
        };
        let query = bases.len() * 4 / std::mem::size_of::<C::Affine>();
        let Some(shape) = table_shape(query, n) else {
            return Ok(None);
        };
        let bytes = table_bytes::<C>(query, shape);
        let made = self.resident_extra(key, query, bytes, || {
            // SAFETY: msm_window_table writes every point of the table.
            let mut table = unsafe { self.stream.alloc::<u32>(bytes / 4) }?;
            let (points, c, windows) = (query as u32, shape.c, shape.windows);
            launch!(self, kernel, query, TABLE_BLOCK;
                &**bases, &points, &c, &windows, &mut table);
            Ok(table)
        })?;
        Ok(made.map(|buf| WindowTable {
            buf,
            shape,
            stride: query,
        }))
    }

    /// The device copy of `bases[..n]`: resident under `key` when it fits, else uploaded, after
    /// room is made for `working` more bytes (plus the upload).
    pub(super) fn call_bases<C: GpuCurve>(
        &self,
        bases: &[C::Affine],
        n: usize,
        key: Option<BasesKey>,
        working: usize,
    ) -> Result<CallBases, GpuError> {
        let resident = match key {
            Some(key) => self.resident::<C>(key, bases)?,
            None => None,
        };
        let upload = if resident.is_some() {
            0
        } else {
            n * std::mem::size_of::<C::Affine>()
        };
        self.room_for_call(working + upload, key)?;
        Ok(match resident {
            Some(buf) => CallBases::Resident(buf),
            None => CallBases::Uploaded(self.upload(&bases[..n], words(&bases[..n]).len())?),
        })
    }

    /// Σ scalars·bases on the device; with `key`, `bases` is that whole query and stays
    /// resident.
    pub(super) fn msm_on_device<C: GpuCurve>(
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
        let label = format!("msm_{} ({n} points)", C::NAME);
        let _busy = self.occupy();
        let clock = Instant::now();
        let working = msm_working_bytes::<C>(n, true);
        let db = self.call_bases::<C>(bases, n, key, working)?;
        let ds = self.upload(scalars, n * 8)?;
        let bytes = match db {
            CallBases::Resident(_) => n * 32,
            CallBases::Uploaded(_) => n * (32 + std::mem::size_of::<C::Affine>()),
        };
        let clock = self.record(format!("{label}.upload"), clock, bytes as u64)?;
        let table = self.window_table::<C>(key, &db, n)?;
        let scalars = DeviceScalars {
            buf: &ds,
            positions: n,
            points: n,
            rev_bits: 0,
        };
        self.lane()
            .msm_kernels::<C>(&db, table.as_ref(), scalars, &label, clock)
    }
}

impl Lane<'_> {
    /// The MSM of scalars already on the device over bases on the device. The caller holds the
    /// device (`occupy`) and has made room for [`msm_working_bytes`].
    pub(super) fn msm_kernels<C: GpuCurve>(
        &self,
        bases: &CudaSlice<u32>,
        table: Option<&WindowTable>,
        scalars: DeviceScalars<'_>,
        label: &str,
        clock: Instant,
    ) -> Result<(C, MsmStats), GpuError> {
        let points = scalars.points;
        if points >= MSM_NEGATE as usize || scalars.positions > u32::MAX as usize {
            return Err(GpuError::Shape(format!("an MSM of {points} points")));
        }
        let (positions, points32) = (scalars.positions as u32, points as u32);
        // SAFETY: msm_split writes the first counts[0] and counts[1] entries, the only ones read.
        let mut ones = unsafe { self.stream.alloc::<u32>(points.max(1)) }?;
        let mut others = unsafe { self.stream.alloc::<u32>(points.max(1)) }?;
        let mut other_scalars = unsafe { self.stream.alloc::<u32>(points.max(1) * 8) }?;
        let mut counts = self.stream.alloc_zeros::<u32>(2)?;
        launch!(self, Kernel::MsmSplit, scalars.positions, 256;
            scalars.buf, &positions, &points32, &scalars.rev_bits,
            &mut ones, &mut others, &mut other_scalars, &mut counts);
        let counts = self.stream.clone_dtoh(&counts)?;
        let (n_ones, m) = (counts[0] as usize, counts[1] as usize);
        let mut clock = self.record(format!("{label}.split"), clock, 0)?;

        let mut sum = C::identity();
        if n_ones > 0 {
            sum += self.sum_listed::<C>(bases, &ones, n_ones)?;
            clock = self.record(format!("{label}.ones ({n_ones})"), clock, 0)?;
        }
        drop(ones);
        if m > 0 {
            sum += self.pippenger::<C>(bases, table, &others, &other_scalars, m, label, clock)?;
        }
        Ok((
            sum,
            MsmStats {
                points,
                zeros: points - n_ones - m,
                ones: n_ones,
                others: m,
            },
        ))
    }

    /// Σ bases[list[k]] for k < count: threads sum strided parts, then fold pairwise.
    fn sum_listed<C: GpuCurve>(
        &self,
        bases: &CudaSlice<u32>,
        list: &CudaSlice<u32>,
        count: usize,
    ) -> Result<C, GpuError> {
        let threads = count
            .div_ceil(ONES_PER_THREAD)
            .next_power_of_two()
            .min(ONES_THREADS);
        // SAFETY: msm_sum_listed writes every partial.
        let mut partials = unsafe { self.stream.alloc::<u32>(threads * C::XYZZ_WORDS) }?;
        let (count32, threads32) = (count as u32, threads as u32);
        launch!(self, C::SUM_LISTED, threads, 128; bases, list, &count32, &threads32, &mut partials);
        let mut half = threads32 / 2;
        while half > 0 {
            launch!(self, C::FOLD, half as usize, 128; &mut partials, &half);
            half /= 2;
        }
        let words = self.stream.clone_dtoh(&partials.slice(0..C::XYZZ_WORDS))?;
        Ok(C::from_xyzz(&words))
    }

    /// Pippenger over the `m` listed points and their canonical scalars; with `table` (of
    /// these bases), its shape and one set of buckets for every window.
    #[allow(clippy::too_many_arguments)]
    fn pippenger<C: GpuCurve>(
        &self,
        bases: &CudaSlice<u32>,
        table: Option<&WindowTable>,
        points: &CudaSlice<u32>,
        scalars: &CudaSlice<u32>,
        m: usize,
        label: &str,
        clock: Instant,
    ) -> Result<C, GpuError> {
        let (shape, stride, bucket_windows, bases) = match table {
            Some(t) => (t.shape, t.stride as u32, 1, &*t.buf),
            None => {
                let shape = MsmShape::new(m);
                (shape, 0, shape.windows as usize, bases)
            }
        };
        let buckets = bucket_windows * shape.half();
        if !entries_fit(m, shape) {
            return Err(GpuError::Shape(format!(
                "an MSM of {m} scalars past 1 has more entries than 32-bit offsets hold"
            )));
        }
        let (m32, buckets32) = (m as u32, buckets as u32);
        let mut offsets = self.stream.alloc_zeros::<u32>(buckets + 1)?;
        launch!(self, Kernel::MsmHistogram, m, 256; scalars, &m32, &shape.c, &stride, &mut offsets);
        self.scan(&mut offsets, buckets + 1)?;
        let total = self
            .stream
            .clone_dtoh(&offsets.slice(buckets..buckets + 1))?[0];
        let mut cursor = self.stream.clone_dtod(&offsets)?;
        // SAFETY: msm_scatter writes each of the `total` entries once.
        let mut entries = unsafe { self.stream.alloc::<u32>(total.max(1) as usize) }?;
        launch!(self, Kernel::MsmScatter, m, 256; scalars, points, &m32, &shape.c, &stride, &mut cursor, &mut entries);
        drop(cursor);
        let table_note = if table.is_some() { ", table" } else { "" };
        let clock = self.record(
            format!("{label}.sort (c {}{table_note}, {total} entries)", shape.c),
            clock,
            0,
        )?;

        let w = C::XYZZ_WORDS;
        let mut sums = self.stream.alloc_zeros::<u32>(buckets * w)?;
        if total > 0 {
            let (chunk, chunks) = chunking(total as usize, self.accumulate_wave::<C>()?);
            // SAFETY: the accumulation writes every tail_bucket, and the heads and tails the
            // fix-up reads (those of the chunks a crossing run spans).
            let mut heads = unsafe { self.stream.alloc::<u32>(chunks as usize * w) }?;
            let mut tails = unsafe { self.stream.alloc::<u32>(chunks as usize * w) }?;
            let mut tail_bucket = unsafe { self.stream.alloc::<u32>(chunks as usize) }?;
            launch!(self, C::ACCUMULATE, chunks as usize, ACCUMULATE_BLOCK;
                bases, &entries, &offsets, &buckets32, &total, &chunk,
                &mut sums, &mut heads, &mut tails, &mut tail_bucket);
            launch!(self, C::FIXUP, chunks as usize * 32, 128;
                &offsets, &chunk, &chunks, &heads, &tails, &tail_bucket, &mut sums);
        }
        drop((entries, offsets));
        let clock = self.record(format!("{label}.accumulate"), clock, 0)?;

        // Σ_k (k+1)·bucket_k per window, a level at a time.
        let mut x = sums;
        let mut y: Option<CudaSlice<u32>> = None;
        let mut len_log = shape.c - 1;
        while len_log > 0 {
            let log_k = WINDOW_LOG_K.min(len_log);
            let threads = bucket_windows << (len_log - log_k);
            // SAFETY: msm_window_level writes every output point.
            let mut x_out = unsafe { self.stream.alloc::<u32>(threads * w) }?;
            let mut y_out = unsafe { self.stream.alloc::<u32>(threads * w) }?;
            let (first, threads32) = (u32::from(y.is_none()), threads as u32);
            launch!(self, C::WINDOW_LEVEL, threads, 64;
                &x, y.as_ref().unwrap_or(&x), &first, &log_k, &threads32, &mut x_out, &mut y_out);
            x = x_out;
            y = Some(y_out);
            len_log -= log_k;
        }
        let y = y.expect("c >= 2 makes at least one level");
        let window_sums = self.stream.clone_dtoh(&y.slice(0..bucket_windows * w))?;
        self.record(format!("{label}.windows"), clock, 0)?;

        let mut acc = C::identity();
        for sum in window_sums.chunks(w).rev() {
            for _ in 0..shape.c {
                acc = acc.double();
            }
            acc += C::from_xyzz(sum);
        }
        Ok(acc)
    }

    /// Threads of one full wave of `C`'s accumulation on this device, at most
    /// ACCUMULATE_THREADS.
    fn accumulate_wave<C: GpuCurve>(&self) -> Result<usize, GpuError> {
        let per_sm = self
            .kernels
            .get(C::ACCUMULATE)
            .occupancy_max_active_blocks_per_multiprocessor(ACCUMULATE_BLOCK, 0, None)?;
        let wave = self.multiprocessors as usize * per_sm.max(1) as usize;
        Ok((wave * ACCUMULATE_BLOCK as usize).min(ACCUMULATE_THREADS))
    }

    /// Exclusive prefix sums of `data[..n]`, in place (kernels/util/scan.cu).
    pub(super) fn scan(&self, data: &mut CudaSlice<u32>, n: usize) -> Result<(), GpuError> {
        let tiles = n.div_ceil(SCAN_TILE);
        // SAFETY: scan_tiles writes every tile's total.
        let mut sums = unsafe { self.stream.alloc::<u32>(tiles) }?;
        let n32 = u32::try_from(n).map_err(|_| GpuError::Shape(format!("a scan of {n}")))?;
        launch!(self, Kernel::ScanTiles, tiles * SCAN_THREADS, SCAN_THREADS as u32; &mut *data, &n32, &mut sums);
        if tiles > 1 {
            self.scan(&mut sums, tiles)?;
            launch!(self, Kernel::ScanAdd, n, 256; &mut *data, &n32, &sums);
        }
        Ok(())
    }
}

/// The sign bit of an entry (kernels/msm/msm.cu): point indices stay below it.
const MSM_NEGATE: u32 = 0x8000_0000;
/// Windows a fixed-base table holds at most (MSM_TABLE_WINDOWS in kernels/msm/table.cuh).
const TABLE_WINDOWS: u32 = 16;
/// Threads of a scan block and words a block scans (kernels/util/scan.cu).
const SCAN_THREADS: usize = 256;
const SCAN_TILE: usize = SCAN_THREADS * 8;

/// G1 and G2 as the kernels see them.
pub(super) trait GpuCurve: Group<Scalar = Scalar> + std::ops::AddAssign<Self> {
    type Affine: Words;
    const NAME: &'static str;
    /// u32 words of one XYZZ point.
    const XYZZ_WORDS: usize;
    const SUM_LISTED: Kernel;
    const FOLD: Kernel;
    const ACCUMULATE: Kernel;
    const FIXUP: Kernel;
    const WINDOW_LEVEL: Kernel;
    /// Benchmark points as sums of table pairs (kernels/bench/points.cu).
    const PAIR_SUMS: Kernel;
    /// The maker of a query's fixed-base table ([`WindowTable`]), where the curve has one.
    const WINDOW_TABLE: Option<Kernel>;
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
    const SUM_LISTED: Kernel = Kernel::MsmSumListedG1;
    const FOLD: Kernel = Kernel::MsmFoldG1;
    const ACCUMULATE: Kernel = Kernel::MsmAccumulateG1;
    const FIXUP: Kernel = Kernel::MsmFixupG1;
    const WINDOW_LEVEL: Kernel = Kernel::MsmWindowLevelG1;
    const PAIR_SUMS: Kernel = Kernel::PairSumsG1;
    const WINDOW_TABLE: Option<Kernel> = Some(Kernel::MsmWindowTableG1);
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
    const SUM_LISTED: Kernel = Kernel::MsmSumListedG2;
    const FOLD: Kernel = Kernel::MsmFoldG2;
    const ACCUMULATE: Kernel = Kernel::MsmAccumulateG2;
    const FIXUP: Kernel = Kernel::MsmFixupG2;
    const WINDOW_LEVEL: Kernel = Kernel::MsmWindowLevelG2;
    const PAIR_SUMS: Kernel = Kernel::PairSumsG2;
    const WINDOW_TABLE: Option<Kernel> = None;
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn msm_shapes_cover_every_size() {
        for n in [
            1,
            2,
            17,
            1000,
            40_000,
            1 << 22,
            3 << 20,
            1 << 26,
            1 << 27,
            1 << 30,
        ] {
            let s = MsmShape::new(n);
            assert!((4..=20).contains(&s.c), "{n}: c {}", s.c);
            // The top window holds at most c - 1 bits of a scalar below 2^255.
            assert!(255 - (s.windows - 1) * s.c < s.c, "{n}");
            assert!(s.windows * s.c >= 255);
            // Bucket keys stay below the entries' sign bit.
            assert!(s.buckets() < MSM_NEGATE as usize);
        }
        assert_eq!(MsmShape::new(1 << 22), MsmShape { c: 16, windows: 16 });
        assert_eq!(MsmShape::new(1 << 26), MsmShape { c: 20, windows: 13 });
    }

    #[test]
    fn a_table_takes_the_cheapest_shape_where_it_pays_and_its_entries_fit_31_bits() {
        // Small MSMs: the one reduction of 2^15 buckets outweighs what fewer windows save.
        assert_eq!(MsmShape::table(1), None);
        assert_eq!(MsmShape::table(1000), None);
        let at = |log: u32| MsmShape::table(1 << log).map(|s| (s.c, s.windows));
        assert_eq!(at(16), Some((16, 16)));
        // A 2 KiB PoRep's h (2^22): 13 windows of 20 bits against 16 of 16.
        assert_eq!(at(22), Some((20, 13)));
        assert_eq!(at(26), Some((24, 11)));
        // A 32 GiB PoRep's h (2^27): 11 windows of 2^27 entries fit 31 bits.
        assert_eq!(at(27), Some((24, 11)));
        assert_eq!(MsmShape::table(1 << 28), None);
        for log in 12..=27 {
            if let Some(s) = MsmShape::table(1 << log) {
                assert!(
                    s.windows <= 16 && s.c <= 24 && s.c * s.windows >= 256,
                    "{s:?}"
                );
                let plain = MsmShape::new(1 << log);
                assert!(
                    s.windows < plain.windows,
                    "2^{log}: {s:?} against {plain:?}"
                );
                assert!(
                    table_bytes::<G1Projective>(1 << log, s)
                        == (1usize << log) * s.windows as usize * 96
                );
            }
        }
    }

    #[test]
    fn a_table_covers_its_whole_query_whatever_a_calls_length() {
        let query = 1 << 20;
        let whole = MsmShape::table(query);
        assert!(whole.is_some());
        // A call of fewer points finds the same table (its stride is the query's).
        assert_eq!(table_shape(query, query), whole);
        assert_eq!(table_shape(query, 1000), whole);
        assert_eq!(table_shape(query, query + 1), None);
    }

    /// The MSMs of a 32 GiB PoRep partition (domain 2^27; 130,169,893 aux values, the L, A
    /// and B queries at most that long; the shape `cuzk pce extract --sector-size 32GiB`
    /// measured): every device index fits its 32 bits.
    #[test]
    fn a_32gib_partitions_msms_keep_every_device_index_in_32_bits() {
        let (h, aux) = ((1usize << 27) - 1, 130_169_893usize);
        for m in [h, aux] {
            let shape = MsmShape::new(m);
            assert_eq!((shape.c, shape.windows), (20, 13), "{m}");
            assert!(entries_fit(m, shape), "{m}");
            let entries = m * shape.windows as usize;
            // Every entry's point index leaves bit 31 for the sign; buckets are keys too.
            assert!(m < MSM_NEGATE as usize && shape.buckets() < MSM_NEGATE as usize);
            let (chunk, chunks) = chunking(entries, ACCUMULATE_THREADS);
            assert!(chunks as usize <= ACCUMULATE_THREADS);
            assert!((chunk as u64) * (chunks as u64) >= entries as u64);
        }
        // H's table, were a device to hold it (132 GiB): 11 windows of 24 bits, table positions
        // below the sign bit; 2^28 points would not fit and get none.
        let table = MsmShape::table(h).expect("2^27 has a table shape");
        assert_eq!((table.c, table.windows), (24, 11));
        assert!(table.windows as u64 * h as u64 <= MSM_NEGATE as u64);
        assert!(entries_fit(h, table));
        assert_eq!(table_bytes::<G1Projective>(h, table), 141_733_919_712);
        assert_eq!(MsmShape::table((1 << 28) - 1), None);
        // The entries' offsets are refused past u32 (not wrapped): 2^29 points, 13 windows.
        assert!(!entries_fit(1 << 29, MsmShape::new(1 << 29)));
        // Working memory is sized in usize, past 4 GiB.
        assert!(msm_working_bytes::<G1Projective>(h, true) > 1 << 33);
    }

    #[test]
    fn chunks_cover_every_entry_with_few_threads() {
        for threads in [1, 67_584, ACCUMULATE_THREADS] {
            for entries in [1, 2, 1000, 1 << 18, (1 << 18) + 1, 64 << 20, 1_750_000_000] {
                let (chunk, chunks) = chunking(entries, threads);
                assert!(chunk >= 1);
                assert!(chunk as usize * chunks as usize >= entries);
                assert!((chunk as usize) * (chunks as usize - 1) < entries);
                assert!(chunks as usize <= threads);
            }
        }
    }

    #[test]
    fn the_host_constants_match_the_kernels() {
        let msm = include_str!("../../kernels/msm/digits.cuh");
        assert!(msm.contains(&format!("#define MSM_NEGATE {MSM_NEGATE:#x}u")));
        let table = include_str!("../../kernels/msm/table.cuh");
        assert!(table.contains(&format!("#define MSM_TABLE_WINDOWS {TABLE_WINDOWS}\n")));
        let scan = include_str!("../../kernels/util/scan.cu");
        assert!(scan.contains(&format!("#define SCAN_THREADS {SCAN_THREADS}\n")));
        assert!(scan.contains(&format!(
            "#define SCAN_PER_THREAD {}\n",
            SCAN_TILE / SCAN_THREADS
        )));
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

    #[test]
    fn working_memory_counts_the_bases_only_when_they_are_not_resident() {
        let n = 1 << 22;
        let resident = msm_working_bytes::<G1Projective>(n, true);
        let uploaded = msm_working_bytes::<G1Projective>(n, false);
        assert_eq!(uploaded - resident, n * 96);
        // Per point: its scalar, its split (index and canonical scalar), one entry a window.
        let shape = MsmShape::new(n);
        assert!(resident > n * (32 + 40 + 4 * shape.windows as usize));
        assert!(resident < 2 << 30, "{resident}");
    }
}
