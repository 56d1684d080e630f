//! Our CUDA kernels: the sources are embedded in the binary, compiled by NVRTC into a cubin for
//! the device's architecture at start-up, and the cubin cached in the data dir under a hash of
//! source, options, architecture and NVRTC version, so a later start loads it in milliseconds.

use std::ffi::{c_char, CStr, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};
use cudarc::nvrtc::{result, sys};
use sha2::{Digest, Sha256};

/// The kernel sources, in the order they are concatenated into one program.
pub const SOURCES: [(&str, &str); 4] = [
    ("field.cu", include_str!("../../kernels/field.cu")),
    ("curve.cu", include_str!("../../kernels/curve.cu")),
    ("ntt.cu", include_str!("../../kernels/ntt.cu")),
    ("msm.cu", include_str!("../../kernels/msm.cu")),
];

/// Every kernel the program defines; each must be present in the cubin.
pub const KERNELS: [&str; 9] = [
    "fr_bit_reverse",
    "fr_ntt_stage",
    "fr_scale_powers",
    "fr_h_pointwise",
    "msm_digits",
    "msm_buckets_g1",
    "msm_buckets_g2",
    "msm_reduce_g1",
    "msm_reduce_g2",
];

pub fn source() -> String {
    SOURCES
        .iter()
        .map(|(_, s)| *s)
        .collect::<Vec<_>>()
        .join("\n")
}

fn options(arch: &str) -> Vec<String> {
    vec![
        format!("--gpu-architecture={arch}"),
        "-std=c++17".into(),
        "-default-device".into(),
    ]
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
pub fn compile(arch: &str) -> Result<Vec<u8>> {
    if !nvrtc_available() {
        bail!("NVRTC (libnvrtc.so.13) is not on the library path");
    }
    catch_unwind(AssertUnwindSafe(|| compile_source(&source(), arch)))
        .unwrap_or_else(|_| Err(anyhow!("the NVRTC library could not be used")))
}

fn compile_source(source: &str, arch: &str) -> Result<Vec<u8>> {
    let src = CString::new(source).context("kernel source contains a NUL byte")?;
    let name = CString::new("cuzk.cu").expect("no NUL");
    let prog = result::create_program(&src, Some(&name))
        .map_err(|e| anyhow!("nvrtcCreateProgram: {e:?}"))?;
    let program = Program(prog);
    let opts = options(arch);
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
        bail!("NVRTC failed to compile the kernels for {arch} ({e:?}):\n{log}");
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
pub fn load(dir: &Path, arch: &str) -> Result<(Vec<u8>, Origin, Duration)> {
    let start = Instant::now();
    let path = cache_path(dir, arch)?;
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
    let cubin = compile(arch)?;
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    crate::persist::write_atomic(&path, &cubin)?;
    Ok((cubin, Origin::Compiled, start.elapsed()))
}

/// `<dir>/cuzk-<arch>-<hash>.cubin`, the hash over source, options, architecture and NVRTC.
pub fn cache_path(dir: &Path, arch: &str) -> Result<PathBuf> {
    let (major, minor) = nvrtc_version()?;
    let mut h = Sha256::new();
    h.update(source().as_bytes());
    for o in options(arch) {
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
        let (cubin, origin, _) = load(dir.path(), "sm_90").unwrap();
        assert_eq!(origin, Origin::Compiled);
        assert!(looks_like_elf(&cubin));
        for k in KERNELS {
            assert!(
                cubin
                    .windows(k.len() + 1)
                    .any(|w| &w[..k.len()] == k.as_bytes() && w[k.len()] == 0),
                "kernel {k} missing from the cubin"
            );
        }
        // The second load comes from the cache, byte for byte.
        let (again, origin, _) = load(dir.path(), "sm_90").unwrap();
        assert_eq!(origin, Origin::Cache);
        assert_eq!(again, cubin);
        // A torn cache file is replaced, not loaded.
        let path = cache_path(dir.path(), "sm_90").unwrap();
        std::fs::write(&path, b"\x7fELF torn").unwrap();
        let (fixed, origin, _) = load(dir.path(), "sm_90").unwrap();
        assert_eq!(origin, Origin::Compiled);
        assert_eq!(fixed, cubin);
    }

    #[test]
    fn a_kernel_that_does_not_compile_is_an_error_with_the_log() {
        if !nvrtc_available() {
            eprintln!("skipped: NVRTC is not on the library path");
            return;
        }
        let bad = "extern \"C\" __global__ void k() { undefined_name = 1; }";
        let err = compile_source(bad, "sm_90").unwrap_err().to_string();
        assert!(
            err.contains("sm_90") && err.contains("undefined_name"),
            "{err}"
        );
    }
}
