//! Host memory registered with the driver: the page-locked pool, made known to every context
//! (`CU_MEMHOSTREGISTER_PORTABLE`) once per process, so that an upload from a buffer in it is
//! one DMA at the link's speed, with no copy through the staging halves. Unregistered when the
//! last backend using it goes, before the pool unmaps it (the registration holds the pool).

use std::ops::Range;
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use cudarc::driver::{sys, CudaContext, DriverError};

use crate::memory::PinnedPool;

/// One pool's registration.
pub(super) struct Registered {
    ctx: Arc<CudaContext>,
    range: Range<usize>,
    _pool: Arc<PinnedPool>,
}

impl Registered {
    /// Whether `bytes` lie wholly in the registered memory.
    pub(super) fn holds(&self, bytes: &[u8]) -> bool {
        let start = bytes.as_ptr() as usize;
        start >= self.range.start && start + bytes.len() <= self.range.end
    }
}

impl Drop for Registered {
    fn drop(&mut self) {
        let _ = self.ctx.bind_to_thread();
        // SAFETY: registered in `register`, once; no transfer reads it (its backends are gone).
        let _ = unsafe { sys::cuMemHostUnregister(self.range.start as *mut _) }.result();
    }
}

/// The registrations of this process, by start address (a range registered twice is an error
/// of the driver's, so every backend shares one).
static REGISTERED: Mutex<Vec<Weak<Registered>>> = Mutex::new(Vec::new());

/// `pool`'s region registered with the driver (through `ctx`), and how long that took: zero
/// when it already was, by another backend.
pub(super) fn register(
    ctx: &Arc<CudaContext>,
    pool: &Arc<PinnedPool>,
) -> Result<(Arc<Registered>, Duration), DriverError> {
    let (ptr, len) = pool.region();
    let start = ptr.as_ptr() as usize;
    let mut all = REGISTERED.lock().unwrap_or_else(|e| e.into_inner());
    all.retain(|r| r.strong_count() > 0);
    if let Some(known) = all
        .iter()
        .filter_map(Weak::upgrade)
        .find(|r| r.range.start == start)
    {
        return Ok((known, Duration::ZERO));
    }
    let clock = Instant::now();
    ctx.bind_to_thread()?;
    // SAFETY: the pool's mapping, alive as long as the registration (which holds the pool).
    unsafe {
        sys::cuMemHostRegister_v2(ptr.as_ptr().cast(), len, sys::CU_MEMHOSTREGISTER_PORTABLE)
    }
    .result()?;
    let registered = Arc::new(Registered {
        ctx: ctx.clone(),
        range: start..start + len,
        _pool: pool.clone(),
    });
    all.push(Arc::downgrade(&registered));
    Ok((registered, clock.elapsed()))
}
