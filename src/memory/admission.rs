//! The gate every large buffer passes before it exists: [`Admission`] hands out budget bytes as
//! RAII values, in the [`Dispatcher`]'s order. A [`Reservation`] holds one partition's bytes
//! (counted ahead of the prover until [`Reservation::reached_prover`]); a [`Hold`] holds a loaded
//! set's or a PCE extraction's, outside the depth. Both give their bytes back when dropped, on
//! success, error and cancellation alike. Threads block here; a blocked wait looks at its
//! cancellation flag every [`CANCEL_POLL`].

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::Duration;

use serde::Serialize;

use super::dispatch::{Dispatcher, Work};

/// How often a blocked wait looks at its cancellation flag.
pub const CANCEL_POLL: Duration = Duration::from_millis(100);

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum Refused {
    #[error("cancelled")]
    Cancelled,
    #[error("{bytes} bytes needed, the memory budget is {budget} bytes")]
    TooLarge { bytes: u64, budget: u64 },
}

/// What a [`Hold`] keeps in memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Purpose {
    /// A loaded Groth16 parameter set.
    Parameters,
    /// A loaded PCE.
    Pce,
    /// A PCE being recorded.
    PceExtraction,
    /// Host memory the backends keep page-locked for as long as they run (a GPU's upload
    /// staging).
    Locked,
    /// The page-locked pool partitions' vectors are lent from (`PinnedPool`).
    PinnedPool,
    /// Request bodies being read and checked (`Admission::pass`).
    RequestBodies,
}

impl Purpose {
    pub const ALL: [Purpose; 6] = [
        Purpose::Parameters,
        Purpose::Pce,
        Purpose::PceExtraction,
        Purpose::Locked,
        Purpose::PinnedPool,
        Purpose::RequestBodies,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Purpose::Parameters => "parameters",
            Purpose::Pce => "pce",
            Purpose::PceExtraction => "pce-extraction",
            Purpose::Locked => "locked",
            Purpose::PinnedPool => "pinned-pool",
            Purpose::RequestBodies => "request-bodies",
        }
    }
}

struct State {
    dispatcher: Dispatcher<u64>,
    /// Tickets admitted by the dispatcher, not yet picked up by their threads.
    admitted: HashSet<u64>,
    /// The purpose of each hold queued and not yet admitted, by ticket.
    purposes: HashMap<u64, Purpose>,
    next_ticket: u64,
    /// Bytes held, by [`Purpose`]: moved together with the dispatcher's count, under one lock.
    held: [u64; Purpose::ALL.len()],
}

pub struct Admission {
    state: Mutex<State>,
    changed: Condvar,
}

/// Budget bytes held for one partition.
pub struct Reservation {
    admission: Arc<Admission>,
    bytes: u64,
    /// Still counted ahead of the prover (the partition has not reached it).
    ahead: bool,
}

/// Budget bytes held for a loaded set, a PCE extraction, memory set aside or a request body;
/// outside the depth.
pub struct Hold {
    admission: Arc<Admission>,
    bytes: u64,
    purpose: Purpose,
    kind: HoldKind,
}

/// How a [`Hold`]'s bytes are counted, and so given back.
#[derive(Clone, Copy, PartialEq, Eq)]
enum HoldKind {
    /// A loaded set (or an extraction): one of the sets a new one must leave room beside.
    Set,
    /// Set aside for the process's life ([`Admission::set_aside`]).
    Aside,
    /// Passing through ([`Admission::pass`]).
    Passing,
}

#[derive(Clone, Copy)]
enum Need {
    Hold(Purpose),
    Partition,
}

/// The budget as /v1/status and the metrics show it: every byte counted once.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct MemoryStatus {
    pub budget_bytes: u64,
    /// Held by partition reservations.
    pub reserved_bytes: u64,
    /// Held by holds: the sum of `held`.
    pub held_bytes: u64,
    /// Held by holds, by purpose (parameters, pce, pce-extraction).
    pub held: Vec<HeldBytes>,
    pub ahead_of_prover: usize,
    pub waiting_partitions: usize,
    /// Holds (parameter sets being loaded) waiting for budget.
    pub waiting_holds: usize,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct HeldBytes {
    pub purpose: &'static str,
    pub bytes: u64,
}

impl Admission {
    /// A gate over `budget` bytes with at most `depth` partitions ahead of the prover.
    pub fn new(budget: u64, depth: usize) -> Arc<Self> {
        Arc::new(Admission {
            state: Mutex::new(State {
                dispatcher: Dispatcher::new(budget, depth),
                admitted: HashSet::new(),
                purposes: HashMap::new(),
                next_ticket: 0,
                held: [0; Purpose::ALL.len()],
            }),
            changed: Condvar::new(),
        })
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Admits what the dispatcher allows now; wakes the waiters.
    fn pump(&self, st: &mut State) {
        while let Ok(work) = st.dispatcher.admit() {
            if let Some(purpose) = st.purposes.remove(&work.item) {
                st.held[purpose as usize] += work.bytes;
            }
            st.admitted.insert(work.item);
        }
        self.changed.notify_all();
    }

    /// Blocks until `bytes` for `purpose` fit in the budget (the most urgent first).
    pub fn hold(
        self: &Arc<Self>,
        priority: u8,
        purpose: Purpose,
        bytes: u64,
        cancelled: &AtomicBool,
    ) -> Result<Hold, Refused> {
        self.wait_admitted(Need::Hold(purpose), priority, bytes, cancelled)?;
        Ok(Hold {
            admission: self.clone(),
            bytes,
            purpose,
            kind: HoldKind::Set,
        })
    }

    /// Holds `bytes` for something the caller can do without, only if they fit now beside the
    /// sets held and the partition at the head of the queue, with no hold queued
    /// ([`Dispatcher::try_hold`]); never blocks.
    pub fn try_hold(self: &Arc<Self>, purpose: Purpose, bytes: u64) -> Option<Hold> {
        self.hold_now(purpose, bytes, HoldKind::Set)
    }

    /// Sets `bytes` for `purpose` aside for as long as the returned hold lives (memory the
    /// process keeps page-locked), if they fit now ([`Dispatcher::set_aside`]); never blocks.
    /// Work then fits in the rest of the budget, [`Admission::budget`].
    pub fn set_aside(self: &Arc<Self>, purpose: Purpose, bytes: u64) -> Option<Hold> {
        self.hold_now(purpose, bytes, HoldKind::Aside)
    }

    /// Holds `bytes` for `purpose` for a moment (a request body while it is read and checked),
    /// if they fit now beside everything reserved ([`Dispatcher::pass`]); never blocks. The
    /// budget work fits in is unchanged: the bytes are only counted while held.
    pub fn pass(self: &Arc<Self>, purpose: Purpose, bytes: u64) -> Option<Hold> {
        self.hold_now(purpose, bytes, HoldKind::Passing)
    }

    /// A hold of `kind` taken now, if the dispatcher lets it.
    fn hold_now(self: &Arc<Self>, purpose: Purpose, bytes: u64, kind: HoldKind) -> Option<Hold> {
        let mut st = self.lock();
        let taken = match kind {
            HoldKind::Set => st.dispatcher.try_hold(bytes),
            HoldKind::Aside => st.dispatcher.set_aside(bytes),
            HoldKind::Passing => st.dispatcher.pass(bytes),
        };
        if !taken {
            return None;
        }
        st.held[purpose as usize] += bytes;
        Some(Hold {
            admission: self.clone(),
            bytes,
            purpose,
            kind,
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
            admission: self.clone(),
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
        let budget = st.dispatcher.usable();
        let work = Work {
            priority,
            bytes,
            item: ticket,
        };
        let queued = match need {
            Need::Hold(_) => st.dispatcher.enqueue_hold(work),
            Need::Partition => st.dispatcher.enqueue(work),
        };
        if queued.is_err() {
            return Err(Refused::TooLarge { bytes, budget });
        }
        if let Need::Hold(purpose) = need {
            st.purposes.insert(ticket, purpose);
        }
        self.pump(&mut st);
        loop {
            // Cancellation first: an admission that raced with it is given back below.
            if cancelled.load(Ordering::SeqCst) {
                st.dispatcher.remove(|t| *t == ticket);
                st.purposes.remove(&ticket);
                if st.admitted.remove(&ticket) {
                    match need {
                        Need::Hold(purpose) => {
                            st.held[purpose as usize] -= bytes;
                            st.dispatcher.release_hold(bytes);
                        }
                        Need::Partition => st.dispatcher.abandoned(bytes),
                    }
                    self.pump(&mut st);
                }
                return Err(Refused::Cancelled);
            }
            if st.admitted.remove(&ticket) {
                return Ok(());
            }
            st = self
                .changed
                .wait_timeout(st, CANCEL_POLL)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
    }

    /// The bytes work may ever hold: the budget less what is set aside.
    pub fn budget(&self) -> u64 {
        self.lock().dispatcher.usable()
    }

    pub fn snapshot(&self) -> MemoryStatus {
        let st = self.lock();
        let held_bytes = st.dispatcher.held();
        MemoryStatus {
            budget_bytes: st.dispatcher.budget(),
            reserved_bytes: st.dispatcher.reserved() - held_bytes,
            held_bytes,
            held: Purpose::ALL
                .iter()
                .map(|p| HeldBytes {
                    purpose: p.as_str(),
                    bytes: st.held[*p as usize],
                })
                .collect(),
            ahead_of_prover: st.dispatcher.ahead_of_prover(),
            waiting_partitions: st.dispatcher.queued(),
            waiting_holds: st.dispatcher.queued_holds(),
        }
    }
}

impl std::fmt::Debug for Hold {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Hold({} bytes, {})", self.bytes, self.purpose.as_str())
    }
}

impl Hold {
    pub fn bytes(&self) -> u64 {
        self.bytes
    }
}

impl Drop for Hold {
    fn drop(&mut self) {
        let a = &self.admission;
        let mut st = a.lock();
        st.held[self.purpose as usize] -= self.bytes;
        match self.kind {
            HoldKind::Set => st.dispatcher.release_hold(self.bytes),
            HoldKind::Aside => st.dispatcher.release_aside(self.bytes),
            HoldKind::Passing => st.dispatcher.release_passing(self.bytes),
        }
        a.pump(&mut st);
    }
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

    /// The partition reached the prover: it no longer counts ahead of it, and the next
    /// partition may be admitted (its bytes stay reserved).
    pub fn reached_prover(&mut self) {
        if !self.ahead {
            return;
        }
        let a = &self.admission;
        let mut st = a.lock();
        st.dispatcher.reached_prover();
        self.ahead = false;
        a.pump(&mut st);
    }

    /// Gives back what the partition no longer holds, keeping `bytes` (no more than now).
    /// Only a partition that reached the prover shrinks: before, its buffers still grow.
    pub fn shrink_to(&mut self, bytes: u64) {
        if !self.ahead {
            self.settle_to(bytes);
        }
    }

    /// Gives back what a finished synthesis does not hold, keeping `bytes` (no more than
    /// now), whether or not it reached the prover: its buffers no longer grow (a compact
    /// witness waiting for the prover).
    pub fn settle_to(&mut self, bytes: u64) {
        if bytes >= self.bytes {
            return;
        }
        let a = &self.admission;
        let mut st = a.lock();
        st.dispatcher.release(self.bytes - bytes);
        self.bytes = bytes;
        a.pump(&mut st);
    }
}

impl Drop for Reservation {
    fn drop(&mut self) {
        let a = &self.admission;
        let mut st = a.lock();
        if self.ahead {
            st.dispatcher.abandoned(self.bytes);
        } else {
            st.dispatcher.release(self.bytes);
        }
        a.pump(&mut st);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn held(a: &Admission, purpose: Purpose) -> u64 {
        let s = a.snapshot();
        s.held
            .iter()
            .find(|h| h.purpose == purpose.as_str())
            .map_or(0, |h| h.bytes)
    }

    #[test]
    fn reservations_gate_admission_and_return_on_drop() {
        let a = Admission::new(100, 2);
        let no = AtomicBool::new(false);
        let other = a.admit(2, 40, &no).unwrap();
        let mut r = a.admit(2, 30, &no).unwrap();
        assert_eq!(a.snapshot().reserved_bytes, 70);
        // 31 more would exceed 100 (and depth 2 is full): a cancelled wait returns instead of
        // blocking.
        let yes = AtomicBool::new(true);
        assert_eq!(a.admit(2, 31, &yes).unwrap_err(), Refused::Cancelled);
        assert_eq!(
            a.admit(2, 101, &no).unwrap_err(),
            Refused::TooLarge {
                bytes: 101,
                budget: 100
            }
        );
        // Before the prover a reservation does not shrink: its buffers still grow.
        r.shrink_to(10);
        assert_eq!(r.bytes(), 30);
        r.reached_prover();
        assert_eq!(a.snapshot().ahead_of_prover, 1);
        // On the prover, a reservation gives back what its partition freed.
        r.shrink_to(20);
        r.shrink_to(25);
        assert_eq!((r.bytes(), a.snapshot().reserved_bytes), (20, 60));
        // A waiter is admitted once room appears.
        let waiter = {
            let a = a.clone();
            std::thread::spawn(move || {
                let no = AtomicBool::new(false);
                a.admit(0, 50, &no).map(|r| r.bytes())
            })
        };
        std::thread::sleep(Duration::from_millis(50));
        drop(r);
        assert_eq!(waiter.join().unwrap(), Ok(50));
        drop(other);
        let s = a.snapshot();
        assert_eq!((s.reserved_bytes, s.ahead_of_prover), (0, 0));
    }

    #[test]
    fn a_hold_is_counted_by_purpose_the_moment_it_is_admitted() {
        let a = Admission::new(100, 1);
        let no = AtomicBool::new(false);
        let part = a.admit(2, 80, &no).unwrap();
        let waiter = {
            let a = a.clone();
            std::thread::spawn(move || {
                let no = AtomicBool::new(false);
                a.hold(0, Purpose::Parameters, 50, &no).map(|h| h.bytes())
            })
        };
        while a.snapshot().waiting_holds == 0 {
            std::thread::sleep(Duration::from_millis(1));
        }
        // Admitted here, under the gate's lock, whether or not its thread has woken yet.
        drop(part);
        let s = a.snapshot();
        assert_eq!((s.held_bytes, held(&a, Purpose::Parameters)), (50, 50));
        assert_eq!(waiter.join().unwrap(), Ok(50));
        assert_eq!(
            a.snapshot().held_bytes,
            0,
            "the hold was dropped with its thread"
        );
    }

    #[test]
    fn a_hold_is_reserved_outside_the_depth_counted_by_purpose_and_returned_on_drop() {
        let a = Admission::new(100, 1);
        let no = AtomicBool::new(false);
        let set = a.hold(2, Purpose::Parameters, 60, &no).unwrap();
        let part = a.admit(2, 40, &no).unwrap();
        let s = a.snapshot();
        assert_eq!(
            (s.reserved_bytes, s.held_bytes, s.ahead_of_prover),
            (40, 60, 1)
        );
        assert_eq!(held(&a, Purpose::Parameters), 60);
        // Another set waits until the first goes; cancelling the wait gives nothing back twice.
        let yes = AtomicBool::new(true);
        assert_eq!(
            a.hold(0, Purpose::Parameters, 50, &yes).unwrap_err(),
            Refused::Cancelled
        );
        assert_eq!(
            a.hold(0, Purpose::Pce, 101, &no).unwrap_err(),
            Refused::TooLarge {
                bytes: 101,
                budget: 100
            }
        );
        // Something the caller can do without is held only when it fits now.
        assert!(a.try_hold(Purpose::Pce, 1).is_none());
        drop(set);
        drop(part);
        let pce = a.try_hold(Purpose::Pce, 30).unwrap();
        let extraction = a.hold(0, Purpose::PceExtraction, 20, &no).unwrap();
        let s = a.snapshot();
        assert_eq!(s.held_bytes, 50);
        assert_eq!(
            (held(&a, Purpose::Pce), held(&a, Purpose::PceExtraction)),
            (30, 20)
        );
        assert_eq!(s.held.iter().map(|h| h.bytes).sum::<u64>(), s.held_bytes);
        drop((pce, extraction));
        let s = a.snapshot();
        assert_eq!((s.reserved_bytes, s.held_bytes), (0, 0));
        assert!(s.held.iter().all(|h| h.bytes == 0));
    }

    #[test]
    fn page_locked_memory_is_budget_the_rest_cannot_have() {
        let a = Admission::new(100, 2);
        let no = AtomicBool::new(false);
        let locked = a.set_aside(Purpose::Locked, 30).unwrap();
        assert_eq!(held(&a, Purpose::Locked), 30);
        assert_eq!(a.budget(), 70);
        // Partitions get the budget less the locked bytes, and nothing beyond it.
        assert_eq!(
            a.admit(0, 71, &no).unwrap_err(),
            Refused::TooLarge {
                bytes: 71,
                budget: 70
            }
        );
        let part = a.admit(0, 70, &no).unwrap();
        assert!(a.try_hold(Purpose::Pce, 1).is_none());
        let s = a.snapshot();
        assert_eq!(
            (s.budget_bytes, s.reserved_bytes, s.held_bytes),
            (100, 70, 30)
        );
        drop((part, locked));
        let s = a.snapshot();
        assert_eq!((s.reserved_bytes, s.held_bytes), (0, 0));
        assert_eq!(a.budget(), 100);
    }

    #[test]
    fn a_settled_reservation_gives_its_bytes_back_but_still_counts_ahead_of_the_prover() {
        let a = Admission::new(100, 1);
        let no = AtomicBool::new(false);
        let mut compact = a.admit(0, 90, &no).unwrap();
        compact.settle_to(5);
        let s = a.snapshot();
        assert_eq!((s.reserved_bytes, s.ahead_of_prover), (5, 1));
        // The bytes are free, the depth is not: a second partition waits for the first to
        // reach the prover.
        let a2 = a.clone();
        let second = std::thread::spawn(move || a2.admit(0, 90, &AtomicBool::new(false)));
        std::thread::sleep(Duration::from_millis(50));
        assert_eq!(a.snapshot().waiting_partitions, 1);
        compact.reached_prover();
        let second = second.join().unwrap().unwrap();
        assert_eq!(a.snapshot().reserved_bytes, 95);
        drop((compact, second));
        assert_eq!(a.snapshot().reserved_bytes, 0);
    }

    #[test]
    fn memory_set_aside_is_not_a_set_the_holds_must_leave_room_to_load_twice() {
        // Parameters (45) and their partition (35) fit beside 20 bytes locked; were the locked
        // bytes a held set, the parameters' hold would wait for room to load a second 45 forever.
        let a = Admission::new(100, 2);
        let no = AtomicBool::new(false);
        let _pool = a.set_aside(Purpose::PinnedPool, 20).unwrap();
        let params = a.hold(0, Purpose::Parameters, 45, &no).unwrap();
        let part = a.admit(0, 35, &no).unwrap();
        let s = a.snapshot();
        assert_eq!((s.reserved_bytes, s.held_bytes), (35, 65));
        drop(part);
        // Beside a held set the rule still stands: a set of 5 must leave room for another 45.
        assert!(a.try_hold(Purpose::Pce, 5).is_none());
        drop(params);
        assert!(a.try_hold(Purpose::Pce, 5).is_some());
    }
}
