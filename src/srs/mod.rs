//! The structured reference string: Filecoin `.params` (and `.vk`) files.
//!
//! Layout, as bellperson writes it: the verifying key (alpha_g1, beta_g1, beta_g2, gamma_g2,
//! delta_g1, delta_g2, then a big-endian u32 count of ic points and the points), then for each of
//! h, l, a, b_g1, b_g2 a big-endian u32 count and that many uncompressed points (G1: 96 bytes,
//! G2: 192 bytes). a, b_g1 and b_g2 are density-compressed: they hold bases only for variables
//! that appear in the A (resp. B) query, in variable order. The file is memory-mapped and each
//! section decoded in parallel.

mod random;

use std::fs::File;
use std::path::{Path, PathBuf};

use bellperson::groth16::VerifyingKey;
use blstrs::{Bls12, G1Affine, G2Affine};
use group::prime::PrimeCurveAffine;
use group::UncompressedEncoding;
use rayon::prelude::*;

const G1_BYTES: usize = 96;
const G2_BYTES: usize = 192;
/// alpha_g1, beta_g1, beta_g2, gamma_g2, delta_g1, delta_g2.
const VK_FIXED_BYTES: usize = 3 * G1_BYTES + 3 * G2_BYTES;

#[derive(Debug, thiserror::Error)]
pub enum SrsError {
    #[error("cannot read {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path} is truncated: section {section} needs {needed} bytes at offset {offset}, file has {len}")]
    Truncated {
        path: PathBuf,
        section: &'static str,
        offset: usize,
        needed: usize,
        len: usize,
    },
    #[error("{path}: point {index} of section {section} is not a valid curve point")]
    InvalidPoint {
        path: PathBuf,
        section: &'static str,
        index: usize,
    },
    #[error("{path} has {extra} bytes after its last section: not a Groth16 parameter file")]
    TrailingBytes { path: PathBuf, extra: usize },
}

/// Which file a set was read from: device, inode, length, modification and change times.
/// Parameter files are written once and renamed into place, and no tool sets a change time, so
/// one identity is one content: backends may key copies of the bases by it and keep them across
/// reads of the same file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SrsId {
    dev: u64,
    ino: u64,
    len: u64,
    mtime_ns: i128,
    ctime_ns: i128,
}

impl SrsId {
    /// The identity of a set made in memory (benchmarks of random bases), told apart by `tag`:
    /// no file has device u64::MAX.
    pub fn in_memory(tag: u64) -> SrsId {
        SrsId {
            dev: u64::MAX,
            ino: tag,
            len: 0,
            mtime_ns: 0,
            ctime_ns: 0,
        }
    }
}

/// A Groth16 proving key, decoded into memory.
pub struct Srs {
    /// The file it was read from.
    pub id: SrsId,
    pub vk: VerifyingKey<Bls12>,
    /// Powers for the quotient polynomial h: n - 1 of them for a domain of n.
    pub h: Vec<G1Affine>,
    /// One per aux variable.
    pub l: Vec<G1Affine>,
    /// All inputs, then aux variables in the A density.
    pub a: Vec<G1Affine>,
    /// Inputs in the B density, then aux variables in the B density.
    pub b_g1: Vec<G1Affine>,
    pub b_g2: Vec<G2Affine>,
}

impl std::fmt::Debug for Srs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Srs")
            .field("ic", &self.vk.ic.len())
            .field("h", &self.h.len())
            .field("l", &self.l.len())
            .field("a", &self.a.len())
            .field("b_g1", &self.b_g1.len())
            .field("b_g2", &self.b_g2.len())
            .finish()
    }
}

impl Srs {
    /// Reads and decodes a `.params` file.
    pub fn read(path: &Path) -> Result<Srs, SrsError> {
        let file = File::open(path).map_err(|source| SrsError::Io {
            path: path.to_owned(),
            source,
        })?;
        // SAFETY: the file is opened read-only and parameter files are never modified in place
        // (they are written once, then renamed into the cache).
        let map = unsafe { memmap2::Mmap::map(&file) }.map_err(|source| SrsError::Io {
            path: path.to_owned(),
            source,
        })?;
        let meta = file.metadata().map_err(|source| SrsError::Io {
            path: path.to_owned(),
            source,
        })?;
        let id = {
            use std::os::unix::fs::MetadataExt;
            SrsId {
                dev: meta.dev(),
                ino: meta.ino(),
                len: meta.len(),
                mtime_ns: i128::from(meta.mtime()) * 1_000_000_000 + i128::from(meta.mtime_nsec()),
                ctime_ns: i128::from(meta.ctime()) * 1_000_000_000 + i128::from(meta.ctime_nsec()),
            }
        };
        Srs::decode(id, path, &map)
    }

    /// Decodes the bytes of a `.params` file (`path` names it in errors).
    pub fn decode(id: SrsId, path: &Path, bytes: &[u8]) -> Result<Srs, SrsError> {
        let mut r = Reader {
            path,
            bytes,
            pos: 0,
        };
        let vk = r.vk()?;
        let h = r.g1_section("h")?;
        let l = r.g1_section("l")?;
        let a = r.g1_section("a")?;
        let b_g1 = r.g1_section("b_g1")?;
        let b_g2 = r.g2_section("b_g2")?;
        r.finish()?;
        Ok(Srs {
            id,
            vk,
            h,
            l,
            a,
            b_g1,
            b_g2,
        })
    }

    /// The section lengths of a `.params` file, read from its counts alone (no point decoded):
    /// what its set will hold, known before it is loaded.
    pub fn read_shape(path: &Path) -> Result<SrsShape, SrsError> {
        let io = |source| SrsError::Io {
            path: path.to_owned(),
            source,
        };
        let file = File::open(path).map_err(io)?;
        // SAFETY: as in `read`: parameter files are never modified in place.
        let map = unsafe { memmap2::Mmap::map(&file) }.map_err(io)?;
        SrsShape::decode(path, &map)
    }

    /// Heap bytes of the decoded points.
    pub fn heap_bytes(&self) -> usize {
        let g1 = std::mem::size_of::<G1Affine>();
        (self.h.len() + self.l.len() + self.a.len() + self.b_g1.len() + self.vk.ic.len()) * g1
            + self.b_g2.len() * std::mem::size_of::<G2Affine>()
    }
}

/// Reads a `.vk` file (a verifying key alone).
pub fn read_verifying_key(path: &Path) -> Result<VerifyingKey<Bls12>, SrsError> {
    let bytes = std::fs::read(path).map_err(|source| SrsError::Io {
        path: path.to_owned(),
        source,
    })?;
    decode_verifying_key(path, &bytes)
}

/// Decodes the bytes of a `.vk` file (`path` names it in errors).
pub fn decode_verifying_key(path: &Path, bytes: &[u8]) -> Result<VerifyingKey<Bls12>, SrsError> {
    let mut r = Reader {
        path,
        bytes,
        pos: 0,
    };
    let vk = r.vk()?;
    r.finish()?;
    Ok(vk)
}

impl SrsShape {
    /// The section lengths in the bytes of a `.params` file, from its counts alone (no point
    /// decoded; `path` names it in errors).
    pub fn decode(path: &Path, bytes: &[u8]) -> Result<SrsShape, SrsError> {
        let mut r = Reader {
            path,
            bytes,
            pos: 0,
        };
        r.take("vk", VK_FIXED_BYTES)?;
        let inputs = r.count("vk.ic")?;
        r.take("vk.ic", inputs.saturating_mul(G1_BYTES))?;
        let mut lengths = [0; 4];
        for (n, section) in lengths.iter_mut().zip(["h", "l", "a", "b_g1"]) {
            *n = r.count(section)?;
            r.take(section, n.saturating_mul(G1_BYTES))?;
        }
        let [h, l, a, b] = lengths;
        Ok(SrsShape { inputs, h, l, a, b })
    }
}

struct Reader<'a> {
    path: &'a Path,
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, section: &'static str, needed: usize) -> Result<&'a [u8], SrsError> {
        let end = self
            .pos
            .checked_add(needed)
            .filter(|&e| e <= self.bytes.len());
        let Some(end) = end else {
            return Err(SrsError::Truncated {
                path: self.path.to_owned(),
                section,
                offset: self.pos,
                needed,
                len: self.bytes.len(),
            });
        };
        let out = &self.bytes[self.pos..end];
        self.pos = end;
        Ok(out)
    }

    fn count(&mut self, section: &'static str) -> Result<usize, SrsError> {
        let b = self.take(section, 4)?;
        Ok(u32::from_be_bytes([b[0], b[1], b[2], b[3]]) as usize)
    }

    fn points<P>(&mut self, section: &'static str, size: usize) -> Result<Vec<P>, SrsError>
    where
        P: UncompressedEncoding + PrimeCurveAffine + Send,
    {
        let n = self.count(section)?;
        let needed = n.saturating_mul(size);
        let body = self.take(section, needed)?;
        body.par_chunks_exact(size)
            .enumerate()
            .map(|(index, chunk)| {
                let mut repr = P::Uncompressed::default();
                repr.as_mut().copy_from_slice(chunk);
                // On-curve is checked here; subgroup membership is not (as bellperson's unchecked
                // read): parameter files come from the operator's own trusted cache.
                let p: Option<P> = P::from_uncompressed_unchecked(&repr).into();
                p.filter(|p| !bool::from(p.is_identity()))
                    .ok_or_else(|| SrsError::InvalidPoint {
                        path: self.path.to_owned(),
                        section,
                        index,
                    })
            })
            .collect()
    }

    fn g1_section(&mut self, section: &'static str) -> Result<Vec<G1Affine>, SrsError> {
        self.points(section, G1_BYTES)
    }

    fn g2_section(&mut self, section: &'static str) -> Result<Vec<G2Affine>, SrsError> {
        self.points(section, G2_BYTES)
    }

    fn vk(&mut self) -> Result<VerifyingKey<Bls12>, SrsError> {
        let start = self.pos;
        self.take("vk", VK_FIXED_BYTES)?;
        let ic = self.count("vk.ic")?;
        self.take("vk.ic", ic.saturating_mul(G1_BYTES))?;
        VerifyingKey::<Bls12>::read(&self.bytes[start..self.pos]).map_err(|_| {
            SrsError::InvalidPoint {
                path: self.path.to_owned(),
                section: "vk",
                index: 0,
            }
        })
    }

    fn finish(&self) -> Result<(), SrsError> {
        if self.pos == self.bytes.len() {
            Ok(())
        } else {
            Err(SrsError::TrailingBytes {
                path: self.path.to_owned(),
                extra: self.bytes.len() - self.pos,
            })
        }
    }
}

/// A verifying key of generators with `inputs` ic points, for a set of random points: its
/// proofs verify against no key, and nothing checks them with this one.
pub fn placeholder_vk(inputs: usize) -> VerifyingKey<Bls12> {
    let g1 = G1Affine::generator();
    let g2 = G2Affine::generator();
    VerifyingKey {
        alpha_g1: g1,
        beta_g1: g1,
        beta_g2: g2,
        gamma_g2: g2,
        delta_g1: g1,
        delta_g2: g2,
        ic: vec![g1; inputs],
    }
}

/// The section lengths of a parameter set: what a circuit's shape asks of one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SrsShape {
    /// Public inputs, ONE included (the verifying key's ic points).
    pub inputs: usize,
    /// h: the evaluation domain's size less one.
    pub h: usize,
    /// l: one per aux variable.
    pub l: usize,
    /// a: every input, then the aux variables in the A density.
    pub a: usize,
    /// b_g1 and b_g2: the inputs, then the aux variables, in the B density.
    pub b: usize,
}

impl Srs {
    /// A parameter set of `shape` whose bases are random points (no file holds it): what a
    /// rehearsal proves with where no real parameters of the size exist, as fast to sum as
    /// real ones. Its proofs do not verify. The points are tiled: point i of a section is
    /// R[i mod r] + S[i / r] for two tables of about √n random points, brought to affine
    /// coordinates a block at a time ([`random`]). `seed` fixes every point.
    pub fn random(shape: SrsShape, seed: u64) -> Srs {
        use random::tiled;
        Srs {
            id: SrsId::in_memory(seed ^ 0x7265_6865_6172_7365),
            vk: placeholder_vk(shape.inputs),
            h: tiled::<blstrs::G1Projective>(shape.h, seed),
            l: tiled::<blstrs::G1Projective>(shape.l, seed + 1),
            a: tiled::<blstrs::G1Projective>(shape.a, seed + 2),
            b_g1: tiled::<blstrs::G1Projective>(shape.b, seed + 3),
            b_g2: tiled::<blstrs::G2Projective>(shape.b, seed + 4),
        }
    }

    /// The shape of this set's sections.
    pub fn shape(&self) -> SrsShape {
        SrsShape {
            inputs: self.vk.ic.len(),
            h: self.h.len(),
            l: self.l.len(),
            a: self.a.len(),
            b: self.b_g1.len(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_random_set_has_its_shape_distinct_points_and_is_fixed_by_its_seed() {
        let shape = SrsShape {
            inputs: 3,
            h: 1023,
            l: 700,
            a: 500,
            b: 301,
        };
        let set = Srs::random(shape, 9);
        assert_eq!(set.shape(), shape);
        assert_eq!(set.b_g2.len(), shape.b);
        assert_eq!(set.h, Srs::random(shape, 9).h);
        assert_ne!(set.h, Srs::random(shape, 10).h);
        let distinct: std::collections::HashSet<_> =
            set.h.iter().map(|p| p.to_compressed()).collect();
        assert_eq!(distinct.len(), shape.h);
        assert!(set.h.iter().all(|p| !bool::from(p.is_identity())));
        assert!(set.b_g2.iter().all(|p| bool::from(p.is_torsion_free())));
    }
}
