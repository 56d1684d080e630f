//! The jobs the engine knows and the queue of those waiting to start: the most urgent kind first
//! (WinningPoSt, then WindowPoSt, then SnapDeals and PoRep), FIFO within a kind's priority.
//! Everything here is in memory and changes under one lock; nothing here does I/O.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, HashSet};
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::Duration;

use tokio::sync::watch;

use super::lock;
use crate::circuits::ProofKind;
use crate::jobs::JobRecord;
use crate::metrics::Metrics;

/// 0 is the most urgent.
pub(super) fn priority(kind: ProofKind) -> u8 {
    match kind {
        ProofKind::WinningPost => 0,
        ProofKind::WindowPost => 1,
        ProofKind::SnapDeals | ProofKind::PorepC2 => 2,
    }
}

/// A job the engine knows: its record (saved on every change) and who waits on it.
pub(super) struct Job {
    pub(super) record: Mutex<JobRecord>,
    pub(super) changes: watch::Sender<JobRecord>,
    pub(super) cancel: AtomicBool,
}

impl Job {
    pub(super) fn new(record: JobRecord) -> Arc<Job> {
        let (changes, _) = watch::channel(record.clone());
        Arc::new(Job {
            record: Mutex::new(record),
            changes,
            cancel: AtomicBool::new(false),
        })
    }

    pub(super) fn id(&self) -> String {
        lock(&self.record).id.clone()
    }
}

#[derive(Default)]
pub(super) struct State {
    /// (priority, sequence, id): the smallest starts first. Entries of jobs cancelled while
    /// queued stay until popped; `queued` is the true count.
    pub(super) queue: BinaryHeap<Reverse<(u8, u64, String)>>,
    pub(super) queued: usize,
    pub(super) jobs: HashMap<String, Arc<Job>>,
    /// Ids being stored by a submission now (not yet in `jobs`): a second submission of one
    /// waits for the first, and they count against the queue's limit.
    pub(super) creating: HashSet<String>,
    /// Ids of expired jobs being removed from the store now (no longer in `jobs`): a new
    /// submission of one waits until its old directory is gone.
    pub(super) removing: HashSet<String>,
    pub(super) running: usize,
    pub(super) draining: bool,
    seq: u64,
}

impl State {
    /// Puts a queued job in line behind those of its priority.
    pub(super) fn enqueue(&mut self, kind: ProofKind, id: &str, metrics: &Metrics) {
        self.seq += 1;
        self.queue
            .push(Reverse((priority(kind), self.seq, id.to_owned())));
        self.queued += 1;
        metrics
            .queue_depth
            .with_label_values(&[kind.as_str()])
            .inc();
    }

    /// No job runs or waits.
    pub(super) fn idle(&self) -> bool {
        self.running == 0 && self.queued == 0
    }

    /// Whether `id`'s directory is being made or removed now.
    pub(super) fn busy(&self, id: &str) -> bool {
        self.creating.contains(id) || self.removing.contains(id)
    }
}

/// An id whose store I/O runs outside the lock: registered in `creating` or `removing` while it
/// runs, let go when dropped (also when the I/O panics), waking whoever waits for it.
pub(super) struct StoreIo<'a> {
    queue: &'a Queue,
    id: String,
    removal: bool,
}

impl<'a> StoreIo<'a> {
    /// Registers `id` (the caller holds the lock as `st`, and has checked it is not busy).
    pub(super) fn begin(queue: &'a Queue, st: &mut State, id: &str, removal: bool) -> Self {
        let set = if removal {
            &mut st.removing
        } else {
            &mut st.creating
        };
        set.insert(id.to_owned());
        StoreIo {
            queue,
            id: id.to_owned(),
            removal,
        }
    }
}

impl Drop for StoreIo<'_> {
    fn drop(&mut self) {
        let mut st = self.queue.lock();
        if self.removal {
            st.removing.remove(&self.id);
        } else {
            st.creating.remove(&self.id);
        }
        drop(st);
        self.queue.notify();
    }
}

/// The state under its lock, and the condition every change of it signals.
#[derive(Default)]
pub(super) struct Queue {
    state: Mutex<State>,
    changed: Condvar,
}

impl Queue {
    pub(super) fn lock(&self) -> MutexGuard<'_, State> {
        lock(&self.state)
    }

    /// Wakes whoever waits for a change (the engine loop, a drain, a second submission).
    pub(super) fn notify(&self) {
        self.changed.notify_all();
    }

    /// Waits for a change, at most `timeout`.
    pub(super) fn wait<'a>(
        &self,
        st: MutexGuard<'a, State>,
        timeout: Duration,
    ) -> MutexGuard<'a, State> {
        self.changed
            .wait_timeout(st, timeout)
            .unwrap_or_else(|e| e.into_inner())
            .0
    }
}
