//! Retention: finished jobs older than `jobs.retention_secs`, or beyond the newest
//! `jobs.retention_count`, are deleted from the store and forgotten. The store's I/O runs
//! outside the queue's lock, the job out of the map meanwhile and its id marked as being
//! removed (a new submission of it waits); a job whose directory cannot be removed comes back
//! and is tried again at the next sweep.

use std::cmp::Reverse;
use std::sync::Arc;

use super::queue::{Job, StoreIo};
use super::{lock, Inner};
use crate::jobs::now_ms;

impl Inner {
    /// Deletes finished jobs beyond the retention age and count.
    pub(super) fn sweep(&self) {
        let limits = lock(&self.limits).clone();
        let mut finished: Vec<(u64, String, Arc<Job>)> = {
            let st = self.queue.lock();
            st.jobs
                .iter()
                .filter_map(|(id, job)| {
                    let r = lock(&job.record);
                    r.state
                        .is_final()
                        .then(|| (r.finished_at_ms.unwrap_or(0), id.clone(), job.clone()))
                })
                .collect()
        };
        finished.sort_by_key(|(at, id, _)| Reverse((*at, id.clone())));
        let cutoff = now_ms().saturating_sub(limits.retention.as_millis() as u64);
        for (i, (at, id, job)) in finished.into_iter().enumerate() {
            if i < limits.retention_count && at >= cutoff {
                continue;
            }
            let removing = {
                let mut st = self.queue.lock();
                // Another sweep may have taken it meanwhile.
                if !st.jobs.get(&id).is_some_and(|j| Arc::ptr_eq(j, &job)) || st.busy(&id) {
                    continue;
                }
                st.jobs.remove(&id);
                StoreIo::begin(&self.queue, &mut st, &id, true)
            };
            if let Err(e) = self.store.remove(&id) {
                tracing::warn!(%id, error = %e, "cannot remove an expired job");
                self.queue.lock().jobs.insert(id, job);
                continue;
            }
            drop(removing);
            let r = lock(&job.record);
            self.count(r.kind, r.state, -1);
            tracing::info!(%id, "expired job removed");
        }
    }
}
