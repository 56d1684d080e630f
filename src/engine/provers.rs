//! The prover slots: one partition per slot at a time, the most urgent first. Slot `i` proves on
//! device `i % devices` (each GPU, or the CPU). Each slot's held time is kept: the bench's
//! prover-busy fraction.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use crate::memory::CANCEL_POLL;

/// The wait for a slot was cancelled.
#[derive(Debug, PartialEq, Eq)]
pub struct Cancelled;

struct State {
    next_ticket: u64,
    /// Slots not in use, by id.
    free: Vec<usize>,
    /// (priority, arrival, ticket) waiting for a slot.
    queue: BinaryHeap<Reverse<(u8, u64, u64)>>,
    /// Ticket -> the slot granted to it.
    granted: HashMap<u64, usize>,
    /// Per slot: time held by finished partitions, and since when it is held now.
    busy: Vec<(Duration, Option<Instant>)>,
}

pub struct ProverSlots {
    state: Mutex<State>,
    changed: Condvar,
}

/// A prover slot, for one partition; given back when dropped.
pub struct ProverSlot {
    slots: Arc<ProverSlots>,
    id: usize,
}

impl ProverSlot {
    pub fn id(&self) -> usize {
        self.id
    }
}

impl ProverSlots {
    /// `count` partitions are proved at once (provers per device times devices).
    pub fn new(count: usize) -> Arc<Self> {
        Arc::new(ProverSlots {
            state: Mutex::new(State {
                next_ticket: 0,
                // Popped from the end: slot 0 (the first device) is handed out first.
                free: (0..count.max(1)).rev().collect(),
                queue: BinaryHeap::new(),
                granted: HashMap::new(),
                busy: vec![(Duration::ZERO, None); count.max(1)],
            }),
            changed: Condvar::new(),
        })
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Blocks until a slot is free for this partition, the most urgent first.
    pub fn acquire(
        self: &Arc<Self>,
        priority: u8,
        cancelled: &AtomicBool,
    ) -> Result<ProverSlot, Cancelled> {
        let mut st = self.lock();
        let ticket = st.next_ticket;
        st.next_ticket += 1;
        st.queue.push(Reverse((priority, ticket, ticket)));
        loop {
            if !st.free.is_empty() {
                if let Some(Reverse((_, _, head))) = st.queue.pop() {
                    let slot = st.free.pop().expect("checked non-empty");
                    st.granted.insert(head, slot);
                    self.changed.notify_all();
                }
            }
            if let Some(id) = st.granted.remove(&ticket) {
                st.busy[id].1 = Some(Instant::now());
                return Ok(ProverSlot {
                    slots: self.clone(),
                    id,
                });
            }
            if cancelled.load(Ordering::SeqCst) {
                st.queue.retain(|Reverse((_, _, t))| *t != ticket);
                return Err(Cancelled);
            }
            st = self
                .changed
                .wait_timeout(st, CANCEL_POLL)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
    }

    /// Partitions waiting for a slot.
    pub fn waiting(&self) -> usize {
        self.lock().queue.len()
    }

    /// How long each slot has been held, the current holder's time included.
    pub fn busy(&self) -> Vec<Duration> {
        self.lock()
            .busy
            .iter()
            .map(|(done, since)| *done + since.map_or(Duration::ZERO, |t| t.elapsed()))
            .collect()
    }
}

impl Drop for ProverSlot {
    fn drop(&mut self) {
        let s = &self.slots;
        let mut st = s.lock();
        let slot = &mut st.busy[self.id];
        if let Some(since) = slot.1.take() {
            slot.0 += since.elapsed();
        }
        st.free.push(self.id);
        s.changed.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_device_gets_its_own_prover_slot() {
        // Two devices: two partitions prove at once, on slots 0 and 1; a third waits for one.
        let p = ProverSlots::new(2);
        let no = AtomicBool::new(false);
        let first = p.acquire(2, &no).unwrap();
        let second = p.acquire(2, &no).unwrap();
        assert_eq!((first.id(), second.id()), (0, 1));
        let yes = AtomicBool::new(true);
        assert!(p.acquire(2, &yes).is_err(), "no third slot");
        std::thread::sleep(Duration::from_millis(20));
        drop(second);
        let third = p.acquire(2, &no).unwrap();
        assert_eq!(third.id(), 1);
        drop((first, third));
        let busy = p.busy();
        assert!(busy[0] >= Duration::from_millis(20) && busy[1] >= Duration::from_millis(20));
        // Nothing holds a slot now: the times stand still.
        assert_eq!(p.busy(), busy);
    }

    #[test]
    fn the_most_urgent_waiter_gets_the_next_slot() {
        let p = ProverSlots::new(1);
        let no = AtomicBool::new(false);
        let held = p.acquire(2, &no).unwrap();
        let order = Arc::new(Mutex::new(Vec::new()));
        let waiters: Vec<_> = [(2u8, "bulk"), (0, "winning")]
            .into_iter()
            .enumerate()
            .map(|(i, (priority, name))| {
                let (p2, order) = (p.clone(), order.clone());
                let t = std::thread::spawn(move || {
                    let no = AtomicBool::new(false);
                    let slot = p2.acquire(priority, &no).unwrap();
                    order.lock().unwrap().push(name);
                    drop(slot);
                });
                // The bulk partition queues first.
                while p.waiting() <= i {
                    std::thread::sleep(Duration::from_millis(1));
                }
                t
            })
            .collect();
        drop(held);
        for w in waiters {
            w.join().unwrap();
        }
        assert_eq!(*order.lock().unwrap(), ["winning", "bulk"]);
    }
}
