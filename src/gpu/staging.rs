//! Uploads through page-locked staging: the DMA engine reads pinned host memory at PCIe speed,
//! while a copy from pageable memory goes through the driver's own small bounce buffer at a
//! fraction of it. Two pinned halves alternate: while the device reads one, a few host threads
//! fill the other with the next chunk of the source, so the host copy and the transfer overlap.
//! The halves are made once per backend and kept; a half is refilled only after the event
//! recorded behind its last transfer has fired.

use std::sync::Arc;

use cudarc::driver::{result, sys, CudaContext, CudaEvent, CudaStream, DriverError};

/// Words of one pinned half (32 MiB): large enough that a transfer runs at full speed, small
/// enough that the first chunk's host copy delays little.
pub(super) const STAGE_WORDS: usize = 8 << 20;
/// Host threads filling a half: one core copies a few GB/s from memory to memory, the link
/// carries tens.
const COPY_THREADS: usize = 8;
/// Below this many words a chunk is copied by the calling thread alone.
const SPLIT_WORDS: usize = 256 << 10;

/// One page-locked half and the event behind its last transfer.
struct Half {
    ptr: *mut u32,
    event: CudaEvent,
}

/// Two page-locked halves of [`STAGE_WORDS`] each.
pub(super) struct Staging {
    ctx: Arc<CudaContext>,
    halves: [Half; 2],
}

// SAFETY: the halves are plain host memory owned by this value; it is used under a lock.
unsafe impl Send for Staging {}

impl Staging {
    pub(super) fn new(ctx: &Arc<CudaContext>) -> Result<Staging, DriverError> {
        let half = || -> Result<Half, DriverError> {
            ctx.bind_to_thread()?;
            // SAFETY: a fresh allocation, freed in Drop; written before it is read.
            let ptr = unsafe { result::malloc_host(STAGE_WORDS * 4, 0) }?.cast::<u32>();
            Ok(Half {
                ptr,
                event: ctx.new_event(None)?,
            })
        };
        Ok(Staging {
            ctx: ctx.clone(),
            halves: [half()?, half()?],
        })
    }

    /// Bytes of page-locked host memory one staging holds.
    pub(super) const LOCKED_BYTES: usize = 2 * STAGE_WORDS * 4;

    /// Copies `src` to the device memory at `dst` (at least `src.len()` words) on `stream`.
    /// Returns once the last chunk is queued: the copy is ordered before the stream's later
    /// work, and `src` may be dropped (every chunk is in a half by then).
    pub(super) fn htod(
        &mut self,
        stream: &CudaStream,
        src: &[u32],
        dst: sys::CUdeviceptr,
    ) -> Result<(), DriverError> {
        for (i, chunk) in src.chunks(STAGE_WORDS).enumerate() {
            let half = &self.halves[i % 2];
            // The transfer that last read this half is done.
            half.event.synchronize()?;
            // SAFETY: the half holds STAGE_WORDS >= chunk.len() words and no transfer reads it.
            let pinned = unsafe { std::slice::from_raw_parts_mut(half.ptr, chunk.len()) };
            fill(pinned, chunk);
            let at = dst + (i * STAGE_WORDS * 4) as u64;
            // SAFETY: `dst` has room for `src` (the caller's contract); the half stays
            // untouched until the event recorded next has fired.
            unsafe { result::memcpy_htod_async(at, &*pinned, stream.cu_stream()) }?;
            half.event.record(stream)?;
        }
        Ok(())
    }
}

impl Drop for Staging {
    fn drop(&mut self) {
        for half in &self.halves {
            // A transfer may still read the half: wait for it before freeing.
            let _ = half.event.synchronize();
            let _ = self.ctx.bind_to_thread();
            // SAFETY: allocated by malloc_host in `new`, freed once.
            let _ = unsafe { result::free_host(half.ptr.cast()) };
        }
    }
}

/// `dst.copy_from_slice(src)` on up to [`COPY_THREADS`] threads.
fn fill(dst: &mut [u32], src: &[u32]) {
    if src.len() <= SPLIT_WORDS {
        dst.copy_from_slice(src);
        return;
    }
    let part = src.len().div_ceil(COPY_THREADS);
    std::thread::scope(|s| {
        let mut pieces = dst.chunks_mut(part).zip(src.chunks(part));
        let first = pieces.next();
        for (to, from) in pieces {
            s.spawn(move || to.copy_from_slice(from));
        }
        if let Some((to, from)) = first {
            to.copy_from_slice(from);
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_split_copy_is_the_source() {
        for len in [0, 1, SPLIT_WORDS, SPLIT_WORDS + 1, 3 * SPLIT_WORDS + 7] {
            let src: Vec<u32> = (0..len as u32)
                .map(|i| i.wrapping_mul(2_654_435_761))
                .collect();
            let mut dst = vec![0u32; len];
            fill(&mut dst, &src);
            assert_eq!(dst, src, "{len}");
        }
    }
}
