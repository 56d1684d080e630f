//! The PCE file: a 4 KiB header, then the arrays, each aligned to 64 bytes, so that a loaded
//! file is mapped and its large arrays used in place.
//!
//! Header (little-endian): magic `CUZKPCE\0`, format version (u32), header length (u32),
//! circuit hash (32 bytes, [`super::circuit_hash`]), inputs, aux, constraints, nnz of A, B and C,
//! distinct coefficients, the aux variables proven bits (`Pce::most_others`), body length (u64
//! each), body checksum (32 bytes), the circuit id
//! (u16 length, then UTF-8), zero padding, and the SHA-256 of everything before it in its last
//! 32 bytes. Body: for A, B, C in turn row_ptr (constraints + 1 u32), cols (nnz u32), coefficient
//! indices (nnz u32); the coefficients (32-byte canonical encodings); the densities (u64 words)
//! of A's aux, B's inputs and B's aux. The body checksum is the SHA-256 of the SHA-256s of its
//! 16 MiB chunks, so a load verifies it on every core.

use std::fs::File;
use std::io::{BufWriter, Seek, SeekFrom, Write};
use std::ops::Range;
use std::path::Path;

use anyhow::Context;
use blstrs::Scalar;
use ff::{Field, PrimeField};
use rayon::prelude::*;
use sha2::{Digest, Sha256};

use super::{Arrays, Pce, Shape, INPUT_COLUMN};
use crate::synth::Density;

#[cfg(not(target_endian = "little"))]
compile_error!("PCE files are mapped in place: little-endian targets only");

pub const FORMAT_VERSION: u32 = 2;
const MAGIC: &[u8; 8] = b"CUZKPCE\0";
const HEADER_LEN: usize = 4096;
const ALIGN: usize = 64;
const CHUNK: usize = 16 << 20;
const MAX_ID: usize = 256;
/// Where the header holds the circuit definition's hash (after magic, version, header length),
/// the body checksum (after the hash, eight counts and the body length) and the circuit id's
/// length (the id follows it), as `encode` writes them in order.
const HASH_AT: usize = 8 + 4 + 4;
const CHECKSUM_AT: usize = HASH_AT + 32 + 8 * 8 + 8;
const ID_LEN_AT: usize = CHECKSUM_AT + 32;

/// Why a PCE file was not loaded. Every case but `Missing` means the file is discarded and
/// made again.
#[derive(Debug, thiserror::Error)]
pub enum FileError {
    #[error("no PCE file")]
    Missing,
    #[error("reading the PCE file: {0}")]
    Io(#[from] std::io::Error),
    #[error("not a PCE file (bad magic)")]
    NotPce,
    #[error("PCE format version {found}, this build reads {FORMAT_VERSION}")]
    Version { found: u32 },
    #[error("the file is the PCE of {found}")]
    Foreign { found: String },
    #[error("recorded from another circuit definition (stale: crate versions or public parameters changed)")]
    Stale,
    #[error("truncated: {len} bytes, the header says {expected}")]
    Truncated { len: u64, expected: u64 },
    #[error("corrupt: {0}")]
    Corrupt(String),
}

/// What the header says.
struct Header {
    hash: [u8; 32],
    shape: Shape,
    nnz: [usize; 3],
    coefficients: usize,
    bits: usize,
    body_len: u64,
    checksum: [u8; 32],
    id: String,
}

/// Where each array lives in the file (byte ranges from the file's start).
struct Layout {
    matrices: [[Range<usize>; 3]; 3],
    coefficients: Range<usize>,
    densities: [Range<usize>; 3],
    end: usize,
}

impl Layout {
    fn new(shape: Shape, nnz: [usize; 3], coefficients: usize) -> Option<Layout> {
        let mut at = HEADER_LEN;
        let mut next = |bytes: usize| -> Option<Range<usize>> {
            let start = at.checked_next_multiple_of(ALIGN)?;
            at = start.checked_add(bytes)?;
            Some(start..at)
        };
        let rows = shape.constraints.checked_add(1)?.checked_mul(4)?;
        let mut matrices = [[0..0, 0..0, 0..0], [0..0, 0..0, 0..0], [0..0, 0..0, 0..0]];
        for (m, n) in matrices.iter_mut().zip(nnz) {
            *m = [
                next(rows)?,
                next(n.checked_mul(4)?)?,
                next(n.checked_mul(4)?)?,
            ];
        }
        let coefficients = next(coefficients.checked_mul(32)?)?;
        let words = |bits: usize| bits.div_ceil(64) * 8;
        let densities = [
            next(words(shape.aux))?,
            next(words(shape.inputs))?,
            next(words(shape.aux))?,
        ];
        let end = at.checked_next_multiple_of(ALIGN)?;
        Some(Layout {
            matrices,
            coefficients,
            densities,
            end,
        })
    }
}

/// A u32 array's bytes as the file holds them.
fn u32_bytes(values: &[u32]) -> &[u8] {
    // SAFETY: u32 has no padding and every byte pattern of the view is a valid u8; little-endian
    // (checked at compile time above), so the bytes are the file's encoding.
    unsafe { std::slice::from_raw_parts(values.as_ptr().cast(), std::mem::size_of_val(values)) }
}

fn u64_bytes(values: &[u64]) -> &[u8] {
    // SAFETY: as u32_bytes.
    unsafe { std::slice::from_raw_parts(values.as_ptr().cast(), std::mem::size_of_val(values)) }
}

/// The u32 array in a 4-aligned byte range of a mapped file.
pub(super) fn u32s(bytes: &[u8]) -> &[u32] {
    assert!(
        bytes.as_ptr().align_offset(4) == 0 && bytes.len().is_multiple_of(4),
        "PCE sections are 64-byte aligned in a page-aligned map"
    );
    // SAFETY: aligned and sized for u32 (asserted), every bit pattern is a valid u32, and the
    // lifetime is the map's.
    unsafe { std::slice::from_raw_parts(bytes.as_ptr().cast(), bytes.len() / 4) }
}

/// SHA-256 over the SHA-256s of consecutive CHUNK-byte pieces, fed in any slicing.
struct ChunkedHash {
    outer: Sha256,
    inner: Sha256,
    filled: usize,
}

impl ChunkedHash {
    fn new() -> Self {
        ChunkedHash {
            outer: Sha256::new(),
            inner: Sha256::new(),
            filled: 0,
        }
    }

    fn update(&mut self, mut bytes: &[u8]) {
        while !bytes.is_empty() {
            let take = (CHUNK - self.filled).min(bytes.len());
            self.inner.update(&bytes[..take]);
            self.filled += take;
            bytes = &bytes[take..];
            if self.filled == CHUNK {
                let chunk = std::mem::take(&mut self.inner).finalize();
                self.outer.update(chunk);
                self.filled = 0;
            }
        }
    }

    fn finish(mut self) -> [u8; 32] {
        if self.filled > 0 {
            self.outer.update(self.inner.finalize());
        }
        self.outer.finalize().into()
    }
}

/// The chunked checksum of a whole body at once, on every core.
fn checksum(body: &[u8]) -> [u8; 32] {
    let chunks: Vec<[u8; 32]> = body
        .par_chunks(CHUNK)
        .map(|c| Sha256::digest(c).into())
        .collect();
    let mut outer = Sha256::new();
    for c in chunks {
        outer.update(c);
    }
    outer.finalize().into()
}

/// The body as it is written: bytes hashed and counted, zero padding between sections.
struct BodyWriter<W: Write> {
    out: W,
    hash: ChunkedHash,
    at: usize,
}

impl<W: Write> BodyWriter<W> {
    fn put(&mut self, at: usize, bytes: &[u8]) -> std::io::Result<()> {
        self.pad_to(at)?;
        self.put_raw(bytes)
    }

    fn pad_to(&mut self, at: usize) -> std::io::Result<()> {
        let zeros = [0u8; ALIGN];
        while self.at < at {
            let n = (at - self.at).min(ALIGN);
            self.put_raw(&zeros[..n])?;
        }
        Ok(())
    }

    fn put_raw(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        self.out.write_all(bytes)?;
        self.hash.update(bytes);
        self.at += bytes.len();
        Ok(())
    }
}

/// Writes `pce` as the file at `path` atomically: a temporary file in the same directory,
/// fsynced, renamed over `path` (which may exist), the directory fsynced. A crash leaves the old
/// file or none, and at worst a temporary file the store removes.
pub fn write(path: &Path, id: &str, hash: &[u8; 32], pce: &Pce) -> anyhow::Result<()> {
    anyhow::ensure!(id.len() <= MAX_ID, "circuit id {id:?} is too long");
    let tmp = crate::persist::temp_path(path);
    crate::persist::write_with(path, |file| write_to(file, &tmp, id, hash, pce))
}

/// The file's bytes into `file` (the temporary file `tmp`).
fn write_to(
    file: &mut File,
    tmp: &Path,
    id: &str,
    hash: &[u8; 32],
    pce: &Pce,
) -> anyhow::Result<()> {
    let shape = pce.shape();
    let nnz = pce.nnz();
    let layout = Layout::new(shape, nnz, pce.coefficients.len()).context("PCE too large")?;
    let mut body = BodyWriter {
        out: BufWriter::with_capacity(8 << 20, file),
        hash: ChunkedHash::new(),
        at: HEADER_LEN,
    };
    body.out.write_all(&[0; HEADER_LEN])?;
    let written = (|| -> std::io::Result<()> {
        for (m, ranges) in layout.matrices.iter().enumerate() {
            let matrix = pce.matrix(m);
            for (range, values) in ranges
                .iter()
                .zip([matrix.row_ptr, matrix.cols, matrix.coeffs])
            {
                body.put(range.start, u32_bytes(values))?;
            }
        }
        body.pad_to(layout.coefficients.start)?;
        for c in &pce.coefficients {
            body.put_raw(&c.to_repr())?;
        }
        for (range, density) in layout.densities.iter().zip(pce.densities()) {
            body.put(range.start, u64_bytes(density.words()))?;
        }
        body.pad_to(layout.end)
    })();
    written.with_context(|| format!("writing {}", tmp.display()))?;
    let header = Header {
        hash: *hash,
        shape,
        nnz,
        coefficients: pce.coefficients.len(),
        bits: pce.bits,
        body_len: (layout.end - HEADER_LEN) as u64,
        checksum: body.hash.finish(),
        id: id.to_owned(),
    };
    let file = body.out.into_inner().map_err(|e| e.into_error())?;
    file.seek(SeekFrom::Start(0))?;
    file.write_all(&encode(&header))?;
    Ok(())
}

fn encode(h: &Header) -> Vec<u8> {
    let mut out = Vec::with_capacity(HEADER_LEN);
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
    out.extend_from_slice(&(HEADER_LEN as u32).to_le_bytes());
    out.extend_from_slice(&h.hash);
    for n in [h.shape.inputs, h.shape.aux, h.shape.constraints]
        .into_iter()
        .chain(h.nnz)
        .chain([h.coefficients, h.bits])
    {
        out.extend_from_slice(&(n as u64).to_le_bytes());
    }
    out.extend_from_slice(&h.body_len.to_le_bytes());
    out.extend_from_slice(&h.checksum);
    out.extend_from_slice(&(h.id.len() as u16).to_le_bytes());
    out.extend_from_slice(h.id.as_bytes());
    out.resize(HEADER_LEN - 32, 0);
    let digest = Sha256::digest(&out);
    out.extend_from_slice(&digest);
    out
}

/// Reads fields in order from a header.
struct Fields<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Fields<'_> {
    fn take<const N: usize>(&mut self) -> [u8; N] {
        let out = self.bytes[self.at..self.at + N]
            .try_into()
            .expect("N bytes");
        self.at += N;
        out
    }

    fn u64(&mut self) -> u64 {
        u64::from_le_bytes(self.take())
    }

    fn usize(&mut self) -> Result<usize, FileError> {
        usize::try_from(self.u64()).map_err(|_| FileError::Corrupt("a count overflows".into()))
    }
}

fn decode(bytes: &[u8]) -> Result<Header, FileError> {
    if bytes.len() < 16 {
        return Err(FileError::Truncated {
            len: bytes.len() as u64,
            expected: HEADER_LEN as u64,
        });
    }
    let mut f = Fields { bytes, at: 0 };
    if &f.take::<8>() != MAGIC {
        return Err(FileError::NotPce);
    }
    let version = u32::from_le_bytes(f.take());
    if version != FORMAT_VERSION {
        return Err(FileError::Version { found: version });
    }
    if u32::from_le_bytes(f.take()) as usize != HEADER_LEN {
        return Err(FileError::Corrupt("header length".into()));
    }
    if bytes.len() < HEADER_LEN {
        return Err(FileError::Truncated {
            len: bytes.len() as u64,
            expected: HEADER_LEN as u64,
        });
    }
    let (fields, digest) = bytes[..HEADER_LEN].split_at(HEADER_LEN - 32);
    if Sha256::digest(fields).as_slice() != digest {
        return Err(FileError::Corrupt("header checksum mismatch".into()));
    }
    let hash = f.take();
    let shape = Shape {
        inputs: f.usize()?,
        aux: f.usize()?,
        constraints: f.usize()?,
    };
    let nnz = [f.usize()?, f.usize()?, f.usize()?];
    let coefficients = f.usize()?;
    let bits = f.usize()?;
    if bits > shape.aux {
        return Err(FileError::Corrupt(
            "more proven bits than aux variables".into(),
        ));
    }
    let body_len = f.u64();
    let checksum = f.take();
    let id_len = u16::from_le_bytes(f.take()) as usize;
    if id_len > MAX_ID {
        return Err(FileError::Corrupt("circuit id length".into()));
    }
    let id = std::str::from_utf8(&bytes[f.at..f.at + id_len])
        .map_err(|_| FileError::Corrupt("circuit id is not UTF-8".into()))?
        .to_owned();
    Ok(Header {
        hash,
        shape,
        nnz,
        coefficients,
        bits,
        body_len,
        checksum,
        id,
    })
}

/// Loads the PCE of circuit `id` (whose definition hashes to `hash`) from `path`: mapped, its
/// checksum and every index checked. Any error means nothing of the file is used.
pub fn load(path: &Path, id: &str, hash: &[u8; 32]) -> Result<Pce, FileError> {
    let file = match File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(FileError::Missing),
        Err(e) => return Err(e.into()),
    };
    // SAFETY: PCE files are never modified in place: they are written under a temporary name
    // and renamed over, so this map keeps seeing the file it opened.
    let map = unsafe { memmap2::Mmap::map(&file) }?;
    from_map(map, id, hash)
}

/// The PCE of circuit `id` (whose definition hashes to `hash`) in `bytes`, a PCE file's
/// contents, copied into memory of its own and checked as [`load`] checks a file.
pub fn from_bytes(bytes: &[u8], id: &str, hash: &[u8; 32]) -> Result<Pce, FileError> {
    let mut map = memmap2::MmapMut::map_anon(bytes.len().max(1))?;
    map[..bytes.len()].copy_from_slice(bytes);
    from_map(map.make_read_only()?, id, hash)
}

/// The PCE of circuit `id` (whose definition hashes to `hash`) in the mapped bytes of a PCE
/// file, checked as [`load`] checks a file.
pub fn from_map(map: memmap2::Mmap, id: &str, hash: &[u8; 32]) -> Result<Pce, FileError> {
    let header = decode(&map)?;
    if header.id != id {
        return Err(FileError::Foreign { found: header.id });
    }
    if header.hash != *hash {
        return Err(FileError::Stale);
    }
    let layout = Layout::new(header.shape, header.nnz, header.coefficients)
        .ok_or_else(|| FileError::Corrupt("sizes overflow".into()))?;
    let expected = layout.end as u64;
    if header.body_len != expected - HEADER_LEN as u64 {
        return Err(FileError::Corrupt(
            "body length disagrees with the shape".into(),
        ));
    }
    if map.len() as u64 != expected {
        return Err(FileError::Truncated {
            len: map.len() as u64,
            expected,
        });
    }
    if checksum(&map[HEADER_LEN..]) != header.checksum {
        return Err(FileError::Corrupt("body checksum mismatch".into()));
    }
    let coefficients = map[layout.coefficients.clone()]
        .chunks_exact(32)
        .map(|b| Option::from(Scalar::from_repr(b.try_into().expect("32 bytes"))))
        .collect::<Option<Vec<Scalar>>>()
        .ok_or_else(|| FileError::Corrupt("a coefficient is not a field element".into()))?;
    let density = |range: &Range<usize>, len: usize| {
        let words = map[range.clone()]
            .chunks_exact(8)
            .map(|b| u64::from_le_bytes(b.try_into().expect("8 bytes")))
            .collect();
        Density::from_words(words, len).ok_or_else(|| FileError::Corrupt("density bits".into()))
    };
    let shape = header.shape;
    let pce = Pce {
        id: super::next_id(),
        shape,
        a_aux_density: density(&layout.densities[0], shape.aux)?,
        b_input_density: density(&layout.densities[1], shape.inputs)?,
        b_aux_density: density(&layout.densities[2], shape.aux)?,
        bits: header.bits,
        coefficients,
        arrays: Arrays::Mapped {
            sections: layout.matrices,
            map,
        },
    };
    for m in 0..3 {
        check_matrix(&pce, m)?;
    }
    if pce.coefficients.first() != Some(&Scalar::ONE)
        || pce.coefficients.get(1) != Some(&-Scalar::ONE)
    {
        return Err(FileError::Corrupt("coefficient table".into()));
    }
    Ok(pce)
}

/// Rewrites the body checksum and the header's digest of the bytes of a PCE file as its writer
/// would have made them (nothing else: a wrong length or count stays wrong). Fuzzing's way past
/// the checksums, to the checks behind them.
#[doc(hidden)]
pub fn reseal(bytes: &mut [u8]) {
    if bytes.len() < HEADER_LEN {
        return;
    }
    let body = checksum(&bytes[HEADER_LEN..]);
    bytes[CHECKSUM_AT..CHECKSUM_AT + 32].copy_from_slice(&body);
    let digest = Sha256::digest(&bytes[..HEADER_LEN - 32]);
    bytes[HEADER_LEN - 32..HEADER_LEN].copy_from_slice(&digest);
}

/// The circuit id and definition hash the header of `bytes` names, read without checking
/// anything (empty where the bytes do not reach them): what a fuzzed file claims to be.
#[doc(hidden)]
pub fn claimed_identity(bytes: &[u8]) -> (String, [u8; 32]) {
    let id_len = bytes
        .get(ID_LEN_AT..ID_LEN_AT + 2)
        .map_or(0, |b| usize::from(u16::from_le_bytes([b[0], b[1]])));
    let id = bytes
        .get(ID_LEN_AT + 2..ID_LEN_AT + 2 + id_len)
        .and_then(|b| std::str::from_utf8(b).ok())
        .unwrap_or_default();
    let hash = bytes
        .get(HASH_AT..HASH_AT + 32)
        .and_then(|h| h.try_into().ok())
        .unwrap_or_default();
    (id.to_owned(), hash)
}

/// Offsets ascending and ending at nnz, every column and coefficient index in range: what the
/// evaluator relies on (a file with a good checksum from a faulty writer is refused too).
fn check_matrix(pce: &Pce, m: usize) -> Result<(), FileError> {
    let matrix = pce.matrix(m);
    let shape = pce.shape;
    let bad = |what: &str| {
        Err(FileError::Corrupt(format!(
            "matrix {}: {what}",
            ["A", "B", "C"][m]
        )))
    };
    let rows = matrix.row_ptr;
    if rows.first() != Some(&0) || rows.last().map(|&n| n as usize) != Some(matrix.nnz()) {
        return bad("row offsets do not span the entries");
    }
    if rows.par_windows(2).any(|w| w[0] > w[1]) {
        return bad("row offsets decrease");
    }
    let coefficients = pce.coefficients.len() as u32;
    let column_ok = |col: u32| {
        if col & INPUT_COLUMN == 0 {
            (col as usize) < shape.aux
        } else {
            ((col & !INPUT_COLUMN) as usize) < shape.inputs
        }
    };
    if !matrix.cols.par_iter().all(|&c| column_ok(c)) {
        return bad("a column out of range");
    }
    if !matrix.coeffs.par_iter().all(|&k| k < coefficients) {
        return bad("a coefficient index out of range");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pce::record;
    use crate::synth::synthetic::SyntheticCircuit;

    /// A 32 GiB PoRep partition's PCE (the shape and non-zeros `cuzk pce extract
    /// --sector-size 32GiB` recorded on the H200 box: 130,278,869 constraints, 722M non-zeros,
    /// a 7.4 GB file): its layout is counted in usize past 4 GiB, however the non-zeros split
    /// among A, B and C, and comes to the file's measured size.
    #[test]
    fn a_32gib_porep_pces_layout_is_counted_past_32_bits_and_matches_its_file() {
        let shape = Shape {
            inputs: 328,
            aux: 130_169_893,
            constraints: 130_278_869,
        };
        for nnz in [
            [300_000_000, 200_000_000, 222_000_000],
            [722_000_000, 0, 0],
            [240_000_000, 241_000_000, 241_000_000],
        ] {
            let layout = Layout::new(shape, nnz, 4096).expect("a layout");
            assert!(
                (7_300_000_000..7_500_000_000).contains(&layout.end),
                "{}",
                layout.end
            );
            // Every array in order, aligned, none overlapping.
            let mut at = HEADER_LEN;
            let arrays = layout.matrices.iter().flatten();
            for r in arrays
                .chain([&layout.coefficients])
                .chain(&layout.densities)
            {
                assert!(r.start >= at && r.start % ALIGN == 0, "{r:?}");
                at = r.end;
            }
            assert!(layout.end >= at);
        }
        // Past usize, refused rather than wrapped.
        assert!(Layout::new(shape, [usize::MAX / 2, 0, 0], 1).is_none());
    }

    /// The 32 GiB PCEs `cuzk pce extract` wrote (docs/measurements/2026-12-07-rehearsal/: their
    /// headers' counts and body lengths): the layout computes each file's length to the byte,
    /// past 2^32 and with WindowPoSt's 1.15 G non-zeros, and every row pointer of a matrix (its
    /// non-zeros counted in u32) stays below 2^32.
    #[test]
    fn the_32gib_porep_and_window_post_pces_lay_out_to_their_files_lengths() {
        let measured = [
            (
                328,
                130_169_893,
                130_278_869,
                [309_405_051, 130_327_340, 282_656_500],
                2466,
                7_375_079_424usize,
            ),
            (
                25_840,
                126_902_376,
                125_305_057,
                [862_416_559, 127_398_015, 157_401_792],
                985,
                10_713_152_320,
            ),
        ];
        for (inputs, aux, constraints, nnz, coefficients, body) in measured {
            let shape = Shape {
                inputs,
                aux,
                constraints,
            };
            let layout = Layout::new(shape, nnz, coefficients).expect("a layout");
            assert_eq!(layout.end - HEADER_LEN, body, "{nnz:?}");
            assert!(
                nnz.iter().all(|&n| n < u32::MAX as usize),
                "row pointers are u32"
            );
            assert!(layout.end > u32::MAX as usize);
        }
    }

    fn recorded() -> Pce {
        record(SyntheticCircuit::new(2, 3000, 1)).unwrap()
    }

    const HASH: [u8; 32] = [7; 32];

    #[test]
    fn a_written_file_loads_mapped_and_evaluates_the_same() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("syn.pce");
        let pce = recorded();
        write(&path, "syn", &HASH, &pce).unwrap();
        // Written over an existing file too.
        write(&path, "syn", &HASH, &pce).unwrap();
        assert_eq!(
            std::fs::read_dir(dir.path()).unwrap().count(),
            1,
            "no temporary file left"
        );
        let loaded = load(&path, "syn", &HASH).unwrap();
        assert!(matches!(loaded.arrays, Arrays::Mapped { .. }));
        assert_eq!(loaded.shape(), pce.shape());
        for m in 0..3 {
            let (a, b) = (loaded.matrix(m), pce.matrix(m));
            assert_eq!((a.row_ptr, a.cols, a.coeffs), (b.row_ptr, b.cols, b.coeffs));
        }
        assert_eq!(loaded.densities(), pce.densities());
        assert_eq!(loaded.most_others(), pce.most_others());
        let circuit = SyntheticCircuit::new(2, 3000, 9);
        assert_eq!(
            loaded.synthesize(circuit.clone()).unwrap(),
            crate::synth::synthesize(circuit).unwrap()
        );
        assert!(loaded.bytes() > std::fs::metadata(&path).unwrap().len());
    }

    #[test]
    fn every_damaged_file_is_refused_by_name() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("syn.pce");
        write(&path, "syn", &HASH, &recorded()).unwrap();
        let good = std::fs::read(&path).unwrap();
        let damaged = |bytes: &[u8]| {
            std::fs::write(&path, bytes).unwrap();
            load(&path, "syn", &HASH).unwrap_err()
        };
        let flip = |at: usize| {
            let mut b = good.clone();
            b[at] ^= 0x10;
            b
        };
        assert!(
            matches!(damaged(&flip(HEADER_LEN + 100)), FileError::Corrupt(ref w) if w.contains("body checksum"))
        );
        assert!(matches!(
            damaged(&flip(good.len() - 1)),
            FileError::Corrupt(_)
        ));
        assert!(
            matches!(damaged(&flip(60)), FileError::Corrupt(ref w) if w.contains("header checksum"))
        );
        assert!(matches!(damaged(&flip(0)), FileError::NotPce));
        assert!(matches!(damaged(&flip(8)), FileError::Version { .. }));
        for len in [
            0,
            10,
            HEADER_LEN - 1,
            HEADER_LEN,
            good.len() - 64,
            good.len() - 1,
        ] {
            let err = damaged(&good[..len]);
            assert!(matches!(err, FileError::Truncated { .. }), "{len}: {err}");
        }
        let mut longer = good.clone();
        longer.extend_from_slice(&[0; 64]);
        assert!(matches!(damaged(&longer), FileError::Truncated { .. }));
        std::fs::write(&path, &good).unwrap();
        assert!(
            matches!(load(&path, "other", &HASH).unwrap_err(), FileError::Foreign { ref found } if found == "syn")
        );
        assert!(matches!(
            load(&path, "syn", &[8; 32]).unwrap_err(),
            FileError::Stale
        ));
        assert!(matches!(
            load(&dir.path().join("none.pce"), "syn", &HASH).unwrap_err(),
            FileError::Missing
        ));
        load(&path, "syn", &HASH).unwrap();
    }

    #[test]
    fn resealing_a_written_file_changes_nothing_and_mends_only_its_checksums() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("syn.pce");
        write(&path, "syn", &HASH, &recorded()).unwrap();
        let good = std::fs::read(&path).unwrap();
        let mut same = good.clone();
        reseal(&mut same);
        assert!(
            same == good,
            "the writer's checksums are the ones reseal makes"
        );
        // A flipped coefficient byte resealed passes the checksums and meets the checks behind
        // them.
        let pce = recorded();
        let layout = Layout::new(pce.shape, pce.nnz(), pce.coefficients.len()).unwrap();
        let mut damaged = good.clone();
        damaged[layout.coefficients.start] ^= 0x10;
        reseal(&mut damaged);
        assert_eq!(claimed_identity(&damaged), ("syn".to_owned(), HASH));
        let err = from_bytes(&damaged, "syn", &HASH).unwrap_err();
        assert!(
            matches!(err, FileError::Corrupt(ref w) if !w.contains("checksum")),
            "{err}"
        );
        reseal(&mut damaged[..10]);
    }

    #[test]
    fn an_out_of_range_index_with_a_good_checksum_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("syn.pce");
        let mut pce = recorded();
        if let Arrays::Owned(ms) = &mut pce.arrays {
            ms[1].cols[5] = pce.shape.aux as u32;
        }
        write(&path, "syn", &HASH, &pce).unwrap();
        let err = load(&path, "syn", &HASH).unwrap_err();
        assert!(
            matches!(err, FileError::Corrupt(ref w) if w.contains("column")),
            "{err}"
        );
    }

    #[test]
    fn chunked_hash_does_not_depend_on_how_bytes_arrive() {
        let body: Vec<u8> = (0..(CHUNK * 2 + 12345))
            .map(|i| (i * 31 % 251) as u8)
            .collect();
        let mut h = ChunkedHash::new();
        for piece in body.chunks(999_983) {
            h.update(piece);
        }
        assert_eq!(h.finish(), checksum(&body));
    }
}
