//! The gates every partition passes, shared by all running jobs: admission to synthesis (the
//! [`Dispatcher`]: memory reservation + depth ahead of the prover) and the prover itself (one
//! partition per prover slot, the most urgent first). Job threads block here; a [`Reservation`]
//! holds budget bytes until dropped, on success, error and cancellation alike.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use super::dispatch::{Dispatcher, Work};

/// How often a blocked partition looks at its job's cancellation flag.
const CANCEL_POLL: Duration = Duration::from_millis(100);

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum Refused {
    #[error("cancelled")]
    Cancelled,
    #[error("{bytes} bytes needed, the memory budget is {budget} bytes")]
    TooLarge { bytes: u64, budget: u64 },
}

struct State {
    dispatcher: Dispatcher<u64>,
    /// Tickets admitted by the dispatcher, not yet picked up by their threads.
    admitted: HashSet<u64>,
    next_ticket: u64,
    /// Prover slots not in use, by id.
    free_slots: Vec<usize>,
    /// (priority, arrival, ticket) waiting for a prover.
    prover_queue: BinaryHeap<Reverse<(u8, u64, u64)>>,
    /// Ticket -> the slot granted to it.
    granted: HashMap<u64, usize>,
    /// Per slot: time held by finished partitions, and since when it is held now.
    busy: Vec<(Duration, Option<Instant>)>,
}

pub struct Pipeline {
    state: Mutex<State>,
    changed: Condvar,
}

/// Budget bytes held for one partition.
pub struct Reservation {
    pipeline: Arc<Pipeline>,
    bytes: u64,
    /// Still counted ahead of the prover (the partition has not reached it).
    ahead: bool,
}

#[derive(Clone, Copy)]
enum Need {
    /// A parameter set: outside the depth, until released.
    Hold,
    /// A partition: counted ahead of the prover until it reaches it.
    Partition,
}

/// Budget bytes held for a parameter set while it is loaded; outside the depth.
pub struct Held {
    pipeline: Arc<Pipeline>,
    bytes: u64,
}

impl std::fmt::Debug for Held {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Held({} bytes)", self.bytes)
    }
}

impl Held {
    pub fn bytes(&self) -> u64 {
        self.bytes
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        let p = &self.pipeline;
        let mut st = p.lock();
        st.dispatcher.release_hold(self.bytes);
        p.pump(&mut st);
    }
}

/// A prover slot, for one partition. Slot `id` proves on device `id % devices`.
pub struct ProverSlot {
    pipeline: Arc<Pipeline>,
    id: usize,
}

impl ProverSlot {
    pub fn id(&self) -> usize {
        self.id
    }
}

impl Pipeline {
    /// `slots` partitions are proved at once (provers per device times devices).
    pub fn new(budget: u64, depth: usize, slots: usize) -> Arc<Self> {
        Arc::new(Pipeline {
            state: Mutex::new(State {
                dispatcher: Dispatcher::new(budget, depth),
                admitted: HashSet::new(),
                next_ticket: 0,
                // Popped from the end: slot 0 (the first device) is handed out first.
                free_slots: (0..slots.max(1)).rev().collect(),
                prover_queue: BinaryHeap::new(),
                granted: HashMap::new(),
                busy: vec![(Duration::ZERO, None); slots.max(1)],
            }),
            changed: Condvar::new(),
        })
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Waits for a change, or the cancellation poll interval.
    fn wait<'a>(&self, st: MutexGuard<'a, State>) -> MutexGuard<'a, State> {
        self.changed
            .wait_timeout(st, CANCEL_POLL)
            .unwrap_or_else(|e| e.into_inner())
            .0
    }

    /// Admits what the dispatcher allows now; wakes the waiters.
    fn pump(&self, st: &mut State) {
        while let Ok(work) = st.dispatcher.admit() {
            st.admitted.insert(work.item);
        }
        self.changed.notify_all();
    }

    /// Blocks until `bytes` for a parameter set fit in the budget (the most urgent first).
    pub fn hold(
        self: &Arc<Self>,
        priority: u8,
        bytes: u64,
        cancelled: &AtomicBool,
    ) -> Result<Held, Refused> {
        self.wait_admitted(Need::Hold, priority, bytes, cancelled)?;
        Ok(Held {
            pipeline: self.clone(),
            bytes,
        })
    }

    /// Holds `bytes` for a set the caller can do without, only if they fit now beside the
    /// sets held and the partition at the head of the queue, with no hold queued
    /// ([`Dispatcher::try_hold`]); never blocks.
    pub fn try_hold(self: &Arc<Self>, bytes: u64) -> Option<Held> {
        let mut st = self.lock();
        st.dispatcher.try_hold(bytes).then(|| Held {
            pipeline: self.clone(),
            bytes,
        })
    }

    /// Blocks until a partition of `bytes` may start synthesis (priority 0 first).
    pub fn admit(
        self: &Arc<Self>,
        priority: u8,
        bytes: u64,
        cancelled: &AtomicBool,
    ) -> Result<Reservation, Refused> {
        self.wait_admitted(Need::Partition, priority, bytes, cancelled)?;
        Ok(Reservation {
            pipeline: self.clone(),
            bytes,
            ahead: true,
        })
    }

    /// Queues `bytes` with the dispatcher and blocks until it admits them, or the wait is
    /// cancelled (then nothing stays reserved).
    fn wait_admitted(
        &self,
        need: Need,
        priority: u8,
        bytes: u64,
        cancelled: &AtomicBool,
    ) -> Result<(), Refused> {
        let mut st = self.lock();
        let ticket = st.next_ticket;
        st.next_ticket += 1;
        let budget = st.dispatcher.budget();
        let work = Work {
            priority,
            bytes,
            item: ticket,
        };
        let queued = match need {
            Need::Hold => st.dispatcher.enqueue_hold(work),
            Need::Partition => st.dispatcher.enqueue(work),
        };
        if queued.is_err() {
            return Err(Refused::TooLarge { bytes, budget });
        }
        self.pump(&mut st);
        loop {
            // Cancellation first: an admission that raced with it is given back below.
            if cancelled.load(Ordering::SeqCst) {
                st.dispatcher.remove(|t| *t == ticket);
                if st.admitted.remove(&ticket) {
                    match need {
                        Need::Hold => st.dispatcher.release_hold(bytes),
                        Need::Partition => st.dispatcher.abandoned(bytes),
                    }
                    self.pump(&mut st);
                }
                return Err(Refused::Cancelled);
            }
            if st.admitted.remove(&ticket) {
                return Ok(());
            }
            st = self.wait(st);
        }
    }

    /// Blocks until a prover slot is free for this partition, the most urgent first.
    pub fn prover(
        self: &Arc<Self>,
        priority: u8,
        reservation: &mut Reservation,
        cancelled: &AtomicBool,
    ) -> Result<ProverSlot, Refused> {
        let mut st = self.lock();
        let ticket = st.next_ticket;
        st.next_ticket += 1;
        st.prover_queue.push(Reverse((priority, ticket, ticket)));
        loop {
            if !st.free_slots.is_empty() {
                if let Some(Reverse((_, _, head))) = st.prover_queue.peek() {
                    let head = *head;
                    st.prover_queue.pop();
                    let slot = st.free_slots.pop().expect("checked non-empty");
                    st.granted.insert(head, slot);
                    self.changed.notify_all();
                }
            }
            if let Some(id) = st.granted.remove(&ticket) {
                // On the prover: no longer ahead of it, room for the next admission.
                st.dispatcher.on_gpu();
                st.busy[id].1 = Some(Instant::now());
                reservation.ahead = false;
                self.pump(&mut st);
                return Ok(ProverSlot {
                    pipeline: self.clone(),
                    id,
                });
            }
            if cancelled.load(Ordering::SeqCst) {
                st.prover_queue.retain(|Reverse((_, _, t))| *t != ticket);
                return Err(Refused::Cancelled);
            }
            st = self.wait(st);
        }
    }

    /// How long each prover slot has been held, the current holder's time included.
    pub fn slot_busy(&self) -> Vec<Duration> {
        let st = self.lock();
        st.busy
            .iter()
            .map(|(done, since)| *done + since.map_or(Duration::ZERO, |t| t.elapsed()))
            .collect()
    }

    pub fn snapshot(&self) -> PipelineStatus {
        let st = self.lock();
        PipelineStatus {
            budget_bytes: st.dispatcher.budget(),
            reserved_bytes: st.dispatcher.reserved() - st.dispatcher.held(),
            parameters_bytes: st.dispatcher.held(),
            ahead_of_prover: st.dispatcher.ahead_of_gpu(),
            waiting_partitions: st.dispatcher.queued(),
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct PipelineStatus {
    pub budget_bytes: u64,
    /// Reserved for partitions.
    pub reserved_bytes: u64,
    /// Held for loaded parameter sets.
    pub parameters_bytes: u64,
    pub ahead_of_prover: usize,
    pub waiting_partitions: usize,
}

impl std::fmt::Debug for Reservation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Reservation({} bytes)", self.bytes)
    }
}

impl Reservation {
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Gives back what the partition no longer holds, keeping `bytes` (no more than now).
    /// Only a partition that reached the prover shrinks: before, its buffers still grow.
    pub fn shrink_to(&mut self, bytes: u64) {
        if self.ahead || bytes >= self.bytes {
            return;
        }
        let p = &self.pipeline;
        let mut st = p.lock();
        st.dispatcher.release(self.bytes - bytes);
        self.bytes = bytes;
        p.pump(&mut st);
    }
}

impl Drop for Reservation {
    fn drop(&mut self) {
        let p = &self.pipeline;
        let mut st = p.lock();
        if self.ahead {
            st.dispatcher.abandoned(self.bytes);
        } else {
            st.dispatcher.release(self.bytes);
        }
        p.pump(&mut st);
    }
}

impl Drop for ProverSlot {
    fn drop(&mut self) {
        let p = &self.pipeline;
        let mut st = p.lock();
        let slot = &mut st.busy[self.id];
        if let Some(since) = slot.1.take() {
            slot.0 += since.elapsed();
        }
        st.free_slots.push(self.id);
        p.changed.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reservations_gate_admission_and_return_on_drop() {
        let p = Pipeline::new(100, 2, 1);
        let no = AtomicBool::new(false);
        let other = p.admit(2, 40, &no).unwrap();
        let mut a = p.admit(2, 30, &no).unwrap();
        assert_eq!(p.snapshot().reserved_bytes, 70);
        // 31 more would exceed 100 (and depth 2 is full): a cancelled wait returns instead of
        // blocking.
        let yes = AtomicBool::new(true);
        assert_eq!(p.admit(2, 31, &yes).unwrap_err(), Refused::Cancelled);
        assert_eq!(
            p.admit(2, 101, &no).unwrap_err(),
            Refused::TooLarge {
                bytes: 101,
                budget: 100
            }
        );
        let slot = p.prover(2, &mut a, &no).unwrap();
        assert_eq!(p.snapshot().ahead_of_prover, 1);
        // On the prover, a reservation gives back what its partition freed.
        a.shrink_to(20);
        a.shrink_to(25);
        assert_eq!((a.bytes(), p.snapshot().reserved_bytes), (20, 60));
        // A waiter is admitted once room appears.
        let waiter = {
            let p = p.clone();
            std::thread::spawn(move || {
                let no = AtomicBool::new(false);
                p.admit(0, 50, &no).map(|r| r.bytes())
            })
        };
        std::thread::sleep(Duration::from_millis(50));
        drop(slot);
        drop(a);
        assert_eq!(waiter.join().unwrap(), Ok(50));
        drop(other);
        let s = p.snapshot();
        assert_eq!((s.reserved_bytes, s.ahead_of_prover), (0, 0));
    }

    #[test]
    fn each_device_gets_its_own_prover_slot() {
        // Two devices: two partitions prove at once, on slots 0 and 1; a third waits for one.
        let p = Pipeline::new(1000, 3, 2);
        let no = AtomicBool::new(false);
        let mut r: Vec<Reservation> = (0..3).map(|_| p.admit(2, 10, &no).unwrap()).collect();
        let first = p.prover(2, &mut r[0], &no).unwrap();
        let second = p.prover(2, &mut r[1], &no).unwrap();
        assert_eq!((first.id(), second.id()), (0, 1));
        let yes = AtomicBool::new(true);
        assert!(p.prover(2, &mut r[2], &yes).is_err(), "no third slot");
        std::thread::sleep(Duration::from_millis(20));
        drop(second);
        let third = p.prover(2, &mut r[2], &no).unwrap();
        assert_eq!(third.id(), 1);
        drop((first, third));
        let busy = p.slot_busy();
        assert!(busy[0] >= Duration::from_millis(20) && busy[1] >= Duration::from_millis(20));
        // Nothing holds a slot now: the times stand still.
        assert_eq!(p.slot_busy(), busy);
    }

    #[test]
    fn a_parameter_hold_is_reserved_outside_the_depth_and_returned_on_drop() {
        let p = Pipeline::new(100, 1, 1);
        let no = AtomicBool::new(false);
        let set = p.hold(2, 60, &no).unwrap();
        let part = p.admit(2, 40, &no).unwrap();
        let s = p.snapshot();
        assert_eq!(
            (s.reserved_bytes, s.parameters_bytes, s.ahead_of_prover),
            (40, 60, 1)
        );
        // Another set waits until the first goes; cancelling the wait gives nothing back twice.
        let yes = AtomicBool::new(true);
        assert_eq!(p.hold(0, 50, &yes).unwrap_err(), Refused::Cancelled);
        assert_eq!(
            p.hold(0, 101, &no).unwrap_err(),
            Refused::TooLarge {
                bytes: 101,
                budget: 100
            }
        );
        drop(set);
        drop(part);
        let other = p.hold(0, 50, &no).unwrap();
        assert_eq!(p.snapshot().parameters_bytes, 50);
        drop(other);
        let s = p.snapshot();
        assert_eq!((s.reserved_bytes, s.parameters_bytes), (0, 0));
    }
}
