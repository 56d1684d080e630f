//! Our CUDA kernels: the sources (kernels/: util/, ff/, ec/, ntt/, groth16/, msm/) are embedded in the
//! binary, compiled by NVRTC into a cubin for the device's architecture at start-up, and the cubin
//! cached in the data dir under a hash of sources, options, architecture and NVRTC version, so a
//! later start loads it in milliseconds. [`Kernel`] is the one list of the kernels we launch.

use std::ffi::{c_char, CStr, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};
use cudarc::nvrtc::{result, sys};
use sha2::{Digest, Sha256};

/// The program NVRTC compiles: it includes the files below.
pub const PROGRAM: (&str, &str) = ("cuzk.cu", include_str!("../../kernels/cuzk.cu"));

/// Every kernel source, by the path `#include` names it with (relative to kernels/).
pub const FILES: [(&str, &str); 18] = [
    (
        "util/common.cuh",
        include_str!("../../kernels/util/common.cuh"),
    ),
    ("util/warp.cuh", include_str!("../../kernels/util/warp.cuh")),
    ("util/scan.cu", include_str!("../../kernels/util/scan.cu")),
    ("ff/mont.cuh", include_str!("../../kernels/ff/mont.cuh")),
    ("ff/fr.cuh", include_str!("../../kernels/ff/fr.cuh")),
    ("ff/fp.cuh", include_str!("../../kernels/ff/fp.cuh")),
    ("ff/fp2.cuh", include_str!("../../kernels/ff/fp2.cuh")),
    ("ec/xyzz.cuh", include_str!("../../kernels/ec/xyzz.cuh")),
    ("ec/affine.cuh", include_str!("../../kernels/ec/affine.cuh")),
    ("ntt/ntt.cu", include_str!("../../kernels/ntt/ntt.cu")),
    ("groth16/h.cu", include_str!("../../kernels/groth16/h.cu")),
    (
        "groth16/density.cu",
        include_str!("../../kernels/groth16/density.cu"),
    ),
    (
        "msm/digits.cuh",
        include_str!("../../kernels/msm/digits.cuh"),
    ),
    ("msm/table.cuh", include_str!("../../kernels/msm/table.cuh")),
    (
        "groth16/spmv.cu",
        include_str!("../../kernels/groth16/spmv.cu"),
    ),
    ("msm/msm.cu", include_str!("../../kernels/msm/msm.cu")),
    (
        "bench/points.cu",
        include_str!("../../kernels/bench/points.cu"),
    ),
    PROGRAM,
];

/// The kernels the host launches; each must be defined by the program (checked when the
/// module is loaded, and against the sources in the tests).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kernel {
    ScanTiles,
    ScanAdd,
    BitReverse,
    NttTiles,
    NttRegs,
    ScalePowers,
    HPointwise,
    DensityPopcount,
    DensityGather,
    WitnessExpand,
    WitnessScatter,
    PceSpmv,
    PceUnsatisfied,
    MsmSplit,
    MsmHistogram,
    MsmScatter,
    MsmSumListedG1,
    MsmSumListedG2,
    MsmFoldG1,
    MsmFoldG2,
    MsmAccumulateG1,
    MsmAccumulateG2,
    MsmFixupG1,
    MsmFixupG2,
    MsmWindowLevelG1,
    MsmWindowLevelG2,
    MsmWindowTableG1,
    PairSumsG1,
    PairSumsG2,
}

impl Kernel {
    pub const ALL: [Kernel; 29] = [
        Kernel::ScanTiles,
        Kernel::ScanAdd,
        Kernel::BitReverse,
        Kernel::NttTiles,
        Kernel::NttRegs,
        Kernel::ScalePowers,
        Kernel::HPointwise,
        Kernel::DensityPopcount,
        Kernel::DensityGather,
        Kernel::WitnessExpand,
        Kernel::WitnessScatter,
        Kernel::PceSpmv,
        Kernel::PceUnsatisfied,
        Kernel::MsmSplit,
        Kernel::MsmHistogram,
        Kernel::MsmScatter,
        Kernel::MsmSumListedG1,
        Kernel::MsmSumListedG2,
        Kernel::MsmFoldG1,
        Kernel::MsmFoldG2,
        Kernel::MsmAccumulateG1,
        Kernel::MsmAccumulateG2,
        Kernel::MsmFixupG1,
        Kernel::MsmFixupG2,
        Kernel::MsmWindowLevelG1,
        Kernel::MsmWindowLevelG2,
        Kernel::MsmWindowTableG1,
        Kernel::PairSumsG1,
        Kernel::PairSumsG2,
    ];

    /// The `extern "C"` name the sources give it.
    pub fn name(self) -> &'static str {
        match self {
            Kernel::ScanTiles => "scan_tiles",
            Kernel::ScanAdd => "scan_add",
            Kernel::BitReverse => "fr_bit_reverse",
            Kernel::NttTiles => "fr_ntt_tiles",
            Kernel::NttRegs => "fr_ntt_regs",
            Kernel::ScalePowers => "fr_scale_powers",
            Kernel::HPointwise => "fr_h_pointwise",
            Kernel::DensityPopcount => "density_popcount",
            Kernel::DensityGather => "density_gather",
            Kernel::WitnessExpand => "witness_expand",
            Kernel::WitnessScatter => "witness_scatter",
            Kernel::PceSpmv => "pce_spmv",
            Kernel::PceUnsatisfied => "pce_unsatisfied",
            Kernel::MsmSplit => "msm_split",
            Kernel::MsmHistogram => "msm_histogram",
            Kernel::MsmScatter => "msm_scatter",
            Kernel::MsmSumListedG1 => "msm_sum_listed_g1",
            Kernel::MsmSumListedG2 => "msm_sum_listed_g2",
            Kernel::MsmFoldG1 => "msm_fold_g1",
            Kernel::MsmFoldG2 => "msm_fold_g2",
            Kernel::MsmAccumulateG1 => "msm_accumulate_g1",
            Kernel::MsmAccumulateG2 => "msm_accumulate_g2",
            Kernel::MsmFixupG1 => "msm_fixup_g1",
            Kernel::MsmFixupG2 => "msm_fixup_g2",
            Kernel::MsmWindowLevelG1 => "msm_window_level_g1",
            Kernel::MsmWindowLevelG2 => "msm_window_level_g2",
            Kernel::MsmWindowTableG1 => "msm_window_table_g1",
            Kernel::PairSumsG1 => "pair_sums_g1",
            Kernel::PairSumsG2 => "pair_sums_g2",
        }
    }
}

/// How the field arithmetic is compiled (kernels/ff/mont.cuh).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum FieldCode {
    /// PTX carry chains: what the service runs.
    #[default]
    CarryChains,
    /// The portable C++ (`CUZK_PORTABLE_FIELD`), cached apart: for telling a fault of the carry
    /// chains from one elsewhere.
    Portable,
}

impl FieldCode {
    /// `Portable` where `portable` holds.
    pub fn portable(portable: bool) -> FieldCode {
        if portable {
            FieldCode::Portable
        } else {
            FieldCode::CarryChains
        }
    }
}

fn options(arch: &str, field: FieldCode) -> Vec<String> {
    let mut options = vec![
        format!("--gpu-architecture={arch}"),
        "-std=c++17".into(),
        "-default-device".into(),
    ];
    if field == FieldCode::Portable {
        options.push("-DCUZK_PORTABLE_FIELD".into());
    }
    options
}

/// Whether NVRTC can be loaded here (libnvrtc.so.13 on the library path).
pub fn nvrtc_available() -> bool {
    // SAFETY: only looks for the library by name.
    unsafe { sys::is_culib_present() }
}

/// NVRTC's version, (major, minor).
pub fn nvrtc_version() -> Result<(i32, i32)> {
    if !nvrtc_available() {
        bail!("NVRTC (libnvrtc.so.13) is not on the library path");
    }
    let (mut major, mut minor) = (0, 0);
    // SAFETY: two valid out-pointers.
    unsafe { sys::nvrtcVersion(&mut major, &mut minor) }
        .result()
        .map_err(|e| anyhow!("nvrtcVersion: {e:?}"))?;
    Ok((major, minor))
}

/// Compiles the kernels for `arch` (e.g. "sm_90") into a cubin.
pub fn compile(arch: &str, field: FieldCode) -> Result<Vec<u8>> {
    if !nvrtc_available() {
        bail!("NVRTC (libnvrtc.so.13) is not on the library path");
    }
    catch_unwind(AssertUnwindSafe(|| compile_file(PROGRAM, arch, field)))
        .unwrap_or_else(|_| Err(anyhow!("the NVRTC library could not be used")))
}

/// Compiles `file` (name, text) for `arch`, with every file of [`FILES`] available to its
/// `#include`s.
fn compile_file(file: (&str, &str), arch: &str, field: FieldCode) -> Result<Vec<u8>> {
    let cstring = |s: &str| CString::new(s).context("kernel source contains a NUL byte");
    let (name, text) = file;
    let src = cstring(text)?;
    let name = cstring(name)?;
    let headers: Vec<CString> = FILES
        .iter()
        .map(|(_, t)| cstring(t))
        .collect::<Result<_>>()?;
    let include_names: Vec<CString> = FILES
        .iter()
        .map(|(n, _)| cstring(n))
        .collect::<Result<_>>()?;
    let header_ptrs: Vec<*const c_char> = headers.iter().map(|h| h.as_ptr()).collect();
    let name_ptrs: Vec<*const c_char> = include_names.iter().map(|n| n.as_ptr()).collect();
    let mut prog = std::mem::MaybeUninit::uninit();
    // SAFETY: every pointer is a NUL-terminated string that outlives the call, and the two
    // arrays hold FILES.len() entries each.
    unsafe {
        sys::nvrtcCreateProgram(
            prog.as_mut_ptr(),
            src.as_ptr(),
            name.as_ptr(),
            FILES.len() as i32,
            header_ptrs.as_ptr(),
            name_ptrs.as_ptr(),
        )
    }
    .result()
    .map_err(|e| anyhow!("nvrtcCreateProgram: {e:?}"))?;
    // SAFETY: initialized by the successful call above.
    let program = Program(unsafe { prog.assume_init() });
    let opts = options(arch, field);
    // SAFETY: a live program and options without NUL bytes.
    if let Err(e) = unsafe { result::compile_program(program.0, &opts) } {
        // SAFETY: the program exists; the log is a NUL-terminated string.
        let log = unsafe { result::get_program_log(program.0) }
            .map(|l| {
                unsafe { CStr::from_ptr(l.as_ptr()) }
                    .to_string_lossy()
                    .into_owned()
            })
            .unwrap_or_default();
        bail!(
            "NVRTC failed to compile {} for {arch} ({e:?}):\n{log}",
            name.to_string_lossy()
        );
    }
    let mut size = 0usize;
    // SAFETY: the program compiled; size is a valid out-pointer.
    unsafe { sys::nvrtcGetCUBINSize(program.0, &mut size) }
        .result()
        .map_err(|e| anyhow!("nvrtcGetCUBINSize: {e:?}"))?;
    let mut cubin = vec![0u8; size];
    // SAFETY: the buffer holds `size` bytes.
    unsafe { sys::nvrtcGetCUBIN(program.0, cubin.as_mut_ptr() as *mut c_char) }
        .result()
        .map_err(|e| anyhow!("nvrtcGetCUBIN: {e:?}"))?;
    if cubin.is_empty() {
        bail!("NVRTC produced no cubin for {arch}");
    }
    Ok(cubin)
}

struct Program(sys::nvrtcProgram);

impl Drop for Program {
    fn drop(&mut self) {
        // SAFETY: created by nvrtcCreateProgram, destroyed once.
        let _ = unsafe { result::destroy_program(self.0) };
    }
}

/// Where a cubin came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Origin {
    Cache,
    Compiled,
}

/// The cubin for `arch`, from the cache in `dir` when present, else compiled and cached there.
pub fn load(dir: &Path, arch: &str, field: FieldCode) -> Result<(Vec<u8>, Origin, Duration)> {
    let start = Instant::now();
    let path = cache_path(dir, arch, field)?;
    match std::fs::read(&path) {
        Ok(bytes) if looks_like_elf(&bytes) => return Ok((bytes, Origin::Cache, start.elapsed())),
        Ok(_) => {
            tracing::warn!(path = %path.display(), "cached cubin is not an ELF image; recompiling")
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => {
            tracing::warn!(path = %path.display(), error = %e, "cached cubin unreadable; recompiling")
        }
    }
    tracing::info!(
        arch,
        "compiling the CUDA kernels with NVRTC (once per version and device)"
    );
    let cubin = compile(arch, field)?;
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    crate::persist::write_atomic(&path, &cubin)?;
    Ok((cubin, Origin::Compiled, start.elapsed()))
}

/// `<dir>/cuzk-<arch>-<hash>.cubin`, the hash over source, options, architecture and NVRTC.
pub fn cache_path(dir: &Path, arch: &str, field: FieldCode) -> Result<PathBuf> {
    let (major, minor) = nvrtc_version()?;
    let mut h = Sha256::new();
    for (name, text) in FILES {
        h.update(name.as_bytes());
        h.update([0]);
        h.update(text.as_bytes());
        h.update([0]);
    }
    for o in options(arch, field) {
        h.update(o.as_bytes());
        h.update([0]);
    }
    h.update(format!("nvrtc {major}.{minor}").as_bytes());
    let hash = h.finalize();
    let hex: String = hash[..8].iter().map(|b| format!("{b:02x}")).collect();
    Ok(dir.join(format!("cuzk-{arch}-{hex}.cubin")))
}

fn looks_like_elf(bytes: &[u8]) -> bool {
    bytes.len() > 64 && bytes.starts_with(b"\x7fELF")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// CI has no GPU but has NVRTC (from PyPI, see .ci/run, which sets CUZK_REQUIRE_NVRTC=1):
    /// every kernel must compile for Hopper, and the cubin must define every kernel we launch.
    #[test]
    fn every_kernel_compiles_for_sm_90_with_nvrtc() {
        if !nvrtc_available() {
            assert!(
                std::env::var_os("CUZK_REQUIRE_NVRTC").is_none(),
                "CUZK_REQUIRE_NVRTC is set but libnvrtc.so.13 is not on LD_LIBRARY_PATH"
            );
            eprintln!("skipped: NVRTC is not on the library path (set LD_LIBRARY_PATH)");
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let (cubin, origin, _) = load(dir.path(), "sm_90", FieldCode::CarryChains).unwrap();
        assert_eq!(origin, Origin::Compiled);
        assert!(looks_like_elf(&cubin));
        for k in Kernel::ALL {
            assert!(
                defines(&cubin, k.name()),
                "kernel {k:?} missing from the cubin"
            );
        }
        // The second load comes from the cache, byte for byte.
        let (again, origin, _) = load(dir.path(), "sm_90", FieldCode::CarryChains).unwrap();
        assert_eq!(origin, Origin::Cache);
        assert_eq!(again, cubin);
        // A torn cache file is replaced, not loaded.
        let path = cache_path(dir.path(), "sm_90", FieldCode::CarryChains).unwrap();
        std::fs::write(&path, b"\x7fELF torn").unwrap();
        let (fixed, origin, _) = load(dir.path(), "sm_90", FieldCode::CarryChains).unwrap();
        assert_eq!(origin, Origin::Compiled);
        assert_eq!(fixed, cubin);
        // The portable field arithmetic compiles too, into a cubin cached apart.
        let portable_path = cache_path(dir.path(), "sm_90", FieldCode::Portable).unwrap();
        assert_ne!(portable_path, path);
        let (portable, origin, _) = load(dir.path(), "sm_90", FieldCode::Portable).unwrap();
        assert_eq!(origin, Origin::Compiled);
        assert_ne!(portable, cubin);
        for k in Kernel::ALL {
            assert!(defines(&portable, k.name()), "kernel {k:?} missing");
        }
    }

    #[test]
    fn a_kernel_that_does_not_compile_is_an_error_with_the_log() {
        if !nvrtc_available() {
            eprintln!("skipped: NVRTC is not on the library path");
            return;
        }
        let bad = "extern \"C\" __global__ void k() { undefined_name = 1; }";
        let err = compile_file(("bad.cu", bad), "sm_90", FieldCode::CarryChains)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("sm_90") && err.contains("bad.cu") && err.contains("undefined_name"),
            "{err}"
        );
    }

    /// Whether a cubin holds a symbol named `name`.
    fn defines(cubin: &[u8], name: &str) -> bool {
        cubin
            .windows(name.len() + 1)
            .any(|w| &w[..name.len()] == name.as_bytes() && w[name.len()] == 0)
    }

    /// The `extern "C" __global__` kernels a source file defines: the last word before the
    /// parameters (after a qualifier such as a launch-bounds macro).
    fn kernels_in(text: &str) -> Vec<&str> {
        text.split("extern \"C\" __global__ void ")
            .skip(1)
            .filter_map(|rest| rest.split('(').next()?.split_whitespace().last())
            .collect()
    }

    /// Each file of kernels/ compiles on its own (with what it includes), its cubin defines
    /// the kernels it declares, and the kernels the files declare are exactly [`Kernel::ALL`].
    #[test]
    fn every_kernel_file_compiles_alone_and_the_kernel_list_matches_the_sources() {
        let mut declared: Vec<&str> = FILES
            .iter()
            .filter(|(name, _)| *name != PROGRAM.0)
            .flat_map(|(_, text)| kernels_in(text))
            .collect();
        declared.sort();
        let mut launched: Vec<&str> = Kernel::ALL.iter().map(|k| k.name()).collect();
        launched.sort();
        assert_eq!(declared, launched, "kernels in the sources vs Kernel::ALL");
        for (name, text) in FILES {
            assert!(
                name.ends_with(".cuh") || name.ends_with(".cu"),
                "{name}: not a kernel source"
            );
            for (include, _) in text
                .lines()
                .filter_map(|l| l.strip_prefix("#include \""))
                .filter_map(|l| l.split_once('"'))
            {
                assert!(
                    FILES.iter().any(|(n, _)| *n == include),
                    "{name} includes {include}, which is not in FILES"
                );
            }
        }
        // Every source under kernels/ (the host checks aside) is embedded.
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("kernels");
        let mut dirs = vec![root.clone()];
        while let Some(dir) = dirs.pop() {
            for entry in std::fs::read_dir(&dir).unwrap().flatten() {
                let path = entry.path();
                if path.is_dir() && !path.ends_with("hostcheck") {
                    dirs.push(path);
                } else if path.extension().is_some_and(|e| e == "cu" || e == "cuh") {
                    let rel = path
                        .strip_prefix(&root)
                        .unwrap()
                        .to_str()
                        .unwrap()
                        .to_owned();
                    assert!(
                        FILES.iter().any(|(n, _)| *n == rel),
                        "kernels/{rel} is not embedded in FILES"
                    );
                }
            }
        }
        if !nvrtc_available() {
            eprintln!("skipped the compilation: NVRTC is not on the library path");
            return;
        }
        for file in FILES {
            let cubin = compile_file(file, "sm_90", FieldCode::CarryChains)
                .unwrap_or_else(|e| panic!("{} does not compile alone: {e:#}", file.0));
            for k in kernels_in(file.1) {
                assert!(defines(&cubin, k), "{}: kernel {k} missing", file.0);
            }
        }
    }
}
