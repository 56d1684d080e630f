//! Retention: finished jobs older than `jobs.retention_secs`, or beyond the newest
//! `jobs.retention_count`, are deleted from the store and forgotten. The store's I/O runs
//! outside the queue's lock; a job whose directory cannot be removed stays and is tried again
//! at the next sweep.

use std::cmp::Reverse;

use super::{lock, Inner};
use crate::jobs::now_ms;

impl Inner {
    /// Deletes finished jobs beyond the retention age and count.
    pub(super) fn sweep(&self) {
        let limits = lock(&self.limits).clone();
        let mut finished: Vec<(u64, String)> = {
            let st = self.queue.lock();
            st.jobs
                .iter()
                .filter_map(|(id, job)| {
                    let r = lock(&job.record);
                    r.state
                        .is_final()
                        .then(|| (r.finished_at_ms.unwrap_or(0), id.clone()))
                })
                .collect()
        };
        finished.sort_by_key(|(at, id)| Reverse((*at, id.clone())));
        let cutoff = now_ms().saturating_sub(limits.retention.as_millis() as u64);
        for (i, (at, id)) in finished.into_iter().enumerate() {
            if i < limits.retention_count && at >= cutoff {
                continue;
            }
            if let Err(e) = self.store.remove(&id) {
                tracing::warn!(%id, error = %e, "cannot remove an expired job");
                continue;
            }
            if let Some(job) = self.queue.lock().jobs.remove(&id) {
                let r = lock(&job.record);
                self.count(r.kind, r.state, -1);
            }
            tracing::info!(%id, "expired job removed");
        }
    }
}
