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

/// A place in line: (priority, sequence, id), the smallest first.
pub(super) type Entry = Reverse<(u8, u64, String)>;

#[derive(Default)]
pub(super) struct State {
    /// (priority, sequence, id): the smallest starts first. Entries of jobs cancelled while
    /// queued stay until popped; `queued` is the true count.
    pub(super) queue: BinaryHeap<Entry>,
    pub(super) queued: usize,
    pub(super) jobs: HashMap<String, Arc<Job>>,
    /// Ids being stored by a submission now (not yet in `jobs`): a second submission of one
    /// waits for the first, and they count against the queue's limit.
    pub(super) creating: HashSet<String>,
    /// Ids of expired jobs being removed from the store now (no longer in `jobs`): a new
    /// submission of one waits until its old directory is gone.
    pub(super) removing: HashSet<String>,
    /// Ids of queued jobs whose cancellation is being stored now: they do not start; the
    /// engine loop parks a popped entry here, to go back in line if the store fails.
    pub(super) cancelling: HashMap<String, Option<Entry>>,
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

    /// Whether `id`'s directory is being made or removed, or its cancellation stored, now.
    pub(super) fn busy(&self, id: &str) -> bool {
        self.creating.contains(id) || self.removing.contains(id) || self.cancelling.contains_key(id)
    }
}

/// An id whose store I/O runs outside the lock: registered in `creating`, `removing` or
/// `cancelling` while it runs, let go when ended or dropped (also when the I/O panics), waking
/// whoever waits for it.
pub(super) struct StoreIo<'a> {
    queue: &'a Queue,
    id: String,
    what: Io,
    ended: bool,
}

#[derive(Clone, Copy, PartialEq)]
enum Io {
    Creating,
    Removing,
    Cancelling,
}

impl<'a> StoreIo<'a> {
    /// Registers `id` (the caller holds the lock as `st`, and has checked it is not busy).
    pub(super) fn begin(queue: &'a Queue, st: &mut State, id: &str, removal: bool) -> Self {
        let what = if removal { Io::Removing } else { Io::Creating };
        match what {
            Io::Removing => st.removing.insert(id.to_owned()),
            _ => st.creating.insert(id.to_owned()),
        };
        StoreIo {
            queue,
            id: id.to_owned(),
            what,
            ended: false,
        }
    }

    /// Registers the queued job `id` as being cancelled (the caller holds the lock as `st`).
    pub(super) fn cancelling(queue: &'a Queue, st: &mut State, id: &str) -> Self {
        st.cancelling.insert(id.to_owned(), None);
        StoreIo {
            queue,
            id: id.to_owned(),
            what: Io::Cancelling,
            ended: false,
        }
    }

    /// Lets the id go under the caller's lock; a cancellation's parked place in line, if the
    /// engine loop popped it meanwhile. The caller notifies.
    pub(super) fn end(mut self, st: &mut State) -> Option<Entry> {
        self.ended = true;
        self.release(st)
    }

    fn release(&self, st: &mut State) -> Option<Entry> {
        match self.what {
            Io::Creating => {
                st.creating.remove(&self.id);
                None
            }
            Io::Removing => {
                st.removing.remove(&self.id);
                None
            }
            Io::Cancelling => st.cancelling.remove(&self.id).flatten(),
        }
    }
}

impl Drop for StoreIo<'_> {
    fn drop(&mut self) {
        if self.ended {
            return;
        }
        let mut st = self.queue.lock();
        if let Some(entry) = self.release(&mut st) {
            st.queue.push(entry);
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
