//! Device discovery through the CUDA driver, loaded at run time: one primary context per device.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;

use cudarc::driver::{sys, CudaContext};
use serde::Serialize;

/// One CUDA device with its context (one per device, the primary one).
pub struct Gpu {
    pub ctx: Arc<CudaContext>,
    pub info: GpuInfo,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct GpuInfo {
    pub ordinal: usize,
    pub name: String,
    /// Compute capability, e.g. (9, 0) on Hopper.
    pub compute_capability: (i32, i32),
    pub memory_bytes: u64,
}

impl GpuInfo {
    /// The NVRTC architecture for this device, e.g. "sm_90".
    pub fn arch(&self) -> String {
        format!(
            "sm_{}{}",
            self.compute_capability.0, self.compute_capability.1
        )
    }
}

/// The GPUs to prove on: `selected` ordinals, or every device when it is empty. `Err` carries
/// the one-line reason there are none.
pub fn discover(selected: &[usize]) -> Result<Vec<Gpu>, String> {
    // SAFETY: only looks for the library by name; nothing is called through it.
    if !unsafe { sys::is_culib_present() } {
        return Err("no CUDA driver library (libcuda.so.1) on this machine".into());
    }
    // A driver too old for a symbol cudarc needs panics inside cudarc: treat it as no GPU.
    catch_unwind(AssertUnwindSafe(|| open(selected)))
        .unwrap_or_else(|_| Err("the CUDA driver library could not be used".into()))
}

fn open(selected: &[usize]) -> Result<Vec<Gpu>, String> {
    let count = CudaContext::device_count().map_err(|e| format!("CUDA driver: {e}"))?;
    let count = usize::try_from(count).unwrap_or(0);
    if count == 0 {
        return Err("the CUDA driver reports no devices".into());
    }
    let ordinals: Vec<usize> = if selected.is_empty() {
        (0..count).collect()
    } else {
        let mut seen = std::collections::HashSet::new();
        if let Some(dup) = selected.iter().find(|o| !seen.insert(**o)) {
            return Err(format!("GPU {dup} is listed twice"));
        }
        if let Some(bad) = selected.iter().find(|&&o| o >= count) {
            return Err(format!(
                "proving.gpus names device {bad}, but this machine has {count} (0..{})",
                count - 1
            ));
        }
        selected.to_vec()
    };
    ordinals
        .into_iter()
        .map(|ordinal| {
            let err = |e: cudarc::driver::DriverError| format!("GPU {ordinal}: {e}");
            let ctx = CudaContext::new(ordinal).map_err(err)?;
            // No per-buffer events: a backend orders its streams itself with events (uploads on
            // the copy stream and the side streams' MSMs start after events of the compute
            // stream, which waits on the copy stream's before it reads), and a call synchronizes
            // a stream before the buffers it used are freed; one call at a time (`occupy`).
            // SAFETY: called before any buffer or stream exists on this context.
            unsafe { ctx.disable_event_tracking() };
            let info = GpuInfo {
                ordinal,
                name: ctx.name().map_err(err)?,
                compute_capability: ctx.compute_capability().map_err(err)?,
                memory_bytes: ctx.total_mem().map_err(err)? as u64,
            };
            Ok(Gpu { ctx, info })
        })
        .collect()
}
