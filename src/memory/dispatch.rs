//! The reactive dispatcher: decides which partition starts synthesis next. A partition starts
//! only when (1) its memory reservation fits in what is left of the budget and (2) the number of
//! partitions holding memory ahead of the prover (synthesizing, synthesized, queued for a prover
//! slot: a GPU, or the CPU) is under the configured depth. Nothing is admitted speculatively: at
//! start-up at most `depth` partitions hold memory, however many are queued.
//!
//! Order: the highest priority first (WinningPoSt, then WindowPoSt, then SnapDeals and PoRep),
//! FIFO within a priority; partitions of several jobs interleave in that order. A partition that
//! does not fit blocks those behind it (no smaller job jumps the queue and starves it).
//!
//! Loaded sets (parameter sets, PCEs) and PCE extractions are reserved from the same budget as
//! holds: admitted before partitions when they fit, never counted in the depth, and never
//! blocking partitions while they wait (the partitions ahead belong to running jobs, which finish
//! and give their memory back; the engine starts only more urgent jobs while a hold waits). A
//! hold next to others is admitted only if it leaves room for one more set of the largest size
//! held: a partition is smaller than its parameter set, so every job holding a set can still
//! start a partition and finish, and holds cannot deadlock. Memory kept for the life of the
//! process (page-locked staging and pool) is *set aside* instead: it shrinks the budget every
//! rule works in, and is not a set the rule must leave room to load twice.
//!
//! Pure state, no threads and no clock: [`super::Admission`] drives it, and so does the
//! simulation test.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// One partition waiting to start.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Work<T> {
    /// 0 is the most urgent.
    pub priority: u8,
    /// Bytes to reserve before synthesis starts (estimated from the circuit's shape).
    pub bytes: u64,
    pub item: T,
}

#[derive(Debug)]
struct Queued<T> {
    key: Reverse<(u8, u64)>,
    work: Work<T>,
}

impl<T> PartialEq for Queued<T> {
    fn eq(&self, other: &Self) -> bool {
        self.key == other.key
    }
}
impl<T> Eq for Queued<T> {}
impl<T> PartialOrd for Queued<T> {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl<T> Ord for Queued<T> {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.key.cmp(&other.key)
    }
}

/// Why the head of the queue waits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Blocked {
    Empty,
    Depth,
    Budget,
}

#[derive(Debug)]
pub struct Dispatcher<T> {
    budget: u64,
    depth: usize,
    reserved: u64,
    ahead_of_prover: usize,
    seq: u64,
    queue: BinaryHeap<Queued<T>>,
    holds: BinaryHeap<Queued<T>>,
    /// Sizes of the holds admitted and not released.
    held: Vec<u64>,
    /// Bytes set aside for the process's life (in `reserved`, not in `held`).
    aside: u64,
    /// Bytes passing through ([`Dispatcher::pass`]; in `reserved`, not in `held`).
    passing: u64,
}

impl<T> Dispatcher<T> {
    pub fn new(budget: u64, depth: usize) -> Self {
        Dispatcher {
            budget,
            depth: depth.max(1),
            reserved: 0,
            ahead_of_prover: 0,
            seq: 0,
            queue: BinaryHeap::new(),
            holds: BinaryHeap::new(),
            held: Vec::new(),
            aside: 0,
            passing: 0,
        }
    }

    /// Sets `bytes` aside for as long as the process runs (page-locked memory) if they fit now,
    /// with no hold queued and room left for the partition at the head of the queue; the rest
    /// of the budget is then all that work may use. False, and nothing set aside, otherwise.
    pub fn set_aside(&mut self, bytes: u64) -> bool {
        let head = self.queue.peek().map_or(0, |q| q.work.bytes);
        if !self.holds.is_empty() || self.reserved + bytes + head > self.budget {
            return false;
        }
        self.reserved += bytes;
        self.aside += bytes;
        true
    }

    /// Takes `bytes` for a moment (a request body while it is read and checked) if they fit
    /// now beside everything reserved. Work waiting for room may wait for them (seconds: a
    /// body's check), and work that starts meanwhile finds them counted; the room they leave
    /// to waiting work is not kept, or a box whose budget is full of partitions (its steady
    /// state) would refuse every submission. Given back with [`Dispatcher::release_passing`].
    /// False, and nothing taken, otherwise.
    pub fn pass(&mut self, bytes: u64) -> bool {
        if self.reserved + bytes > self.budget {
            return false;
        }
        self.reserved += bytes;
        self.passing += bytes;
        true
    }

    /// Bytes taken by [`Dispatcher::pass`] given back.
    pub fn release_passing(&mut self, bytes: u64) {
        self.passing = self.passing.saturating_sub(bytes);
        self.release(bytes);
    }

    /// Bytes set aside given back.
    pub fn release_aside(&mut self, bytes: u64) {
        self.aside = self.aside.saturating_sub(bytes);
        self.release(bytes);
    }

    /// Queues a partition. One larger than the whole budget can never start: refused.
    pub fn enqueue(&mut self, work: Work<T>) -> Result<(), Work<T>> {
        self.push(false, work)
    }

    /// Queues a hold (a loaded set): bytes kept until released, outside the depth.
    pub fn enqueue_hold(&mut self, work: Work<T>) -> Result<(), Work<T>> {
        self.push(true, work)
    }

    /// Admits a hold at once if it fits with room for one more set of the largest size held and
    /// leaves room for the partition at the head of the queue (which may be waiting for depth),
    /// with no hold queued; else false, and nothing is queued. For sets that can be done without
    /// (PCEs, their extraction): they never delay work that waits.
    pub fn try_hold(&mut self, bytes: u64) -> bool {
        if !self.holds.is_empty() {
            return false;
        }
        let head = self.queue.peek().map_or(0, |q| q.work.bytes);
        if self.reserved + bytes + self.room_beside(bytes).max(head) > self.budget {
            return false;
        }
        self.reserved += bytes;
        self.held.push(bytes);
        true
    }

    /// What a hold of `bytes` must leave free beside itself: room for one more set of the
    /// largest size held (nothing when none is held).
    fn room_beside(&self, bytes: u64) -> u64 {
        self.held
            .iter()
            .max()
            .map_or(0, |&largest| bytes.max(largest))
    }

    /// Behind the work of its priority, in the holds' queue or the partitions'.
    fn push(&mut self, hold: bool, work: Work<T>) -> Result<(), Work<T>> {
        if work.bytes > self.usable() {
            return Err(work);
        }
        self.seq += 1;
        let queued = Queued {
            key: Reverse((work.priority, self.seq)),
            work,
        };
        if hold {
            self.holds.push(queued);
        } else {
            self.queue.push(queued);
        }
        Ok(())
    }

    /// The next hold that fits, or else the next partition allowed to start synthesis, its
    /// reservation taken; or why none is.
    pub fn admit(&mut self) -> Result<Work<T>, Blocked> {
        if let Some(hold) = self.holds.peek() {
            let bytes = hold.work.bytes;
            if self.reserved + bytes + self.room_beside(bytes) <= self.budget {
                let work = self.holds.pop().expect("peeked").work;
                self.reserved += work.bytes;
                self.held.push(work.bytes);
                return Ok(work);
            }
        }
        let head = self.queue.peek().ok_or(if self.holds.is_empty() {
            Blocked::Empty
        } else {
            Blocked::Budget
        })?;
        if self.ahead_of_prover >= self.depth {
            return Err(Blocked::Depth);
        }
        if self.reserved + head.work.bytes > self.budget {
            return Err(Blocked::Budget);
        }
        let work = self.queue.pop().expect("peeked").work;
        self.reserved += work.bytes;
        self.ahead_of_prover += 1;
        Ok(work)
    }

    /// A partition reached the prover: it no longer counts ahead of it (its memory still does).
    pub fn reached_prover(&mut self) {
        self.ahead_of_prover = self.ahead_of_prover.saturating_sub(1);
    }

    /// A partition ended before reaching the prover (error, cancellation).
    pub fn abandoned(&mut self, bytes: u64) {
        self.reached_prover();
        self.release(bytes);
    }

    /// Bytes of a reservation given back (all of it, or the part already freed).
    pub fn release(&mut self, bytes: u64) {
        self.reserved = self.reserved.saturating_sub(bytes);
    }

    /// A hold given back.
    pub fn release_hold(&mut self, bytes: u64) {
        if let Some(i) = self.held.iter().position(|&b| b == bytes) {
            self.held.swap_remove(i);
        }
        self.release(bytes);
    }

    /// Bytes of the holds admitted and not released, those set aside and those passing.
    pub fn held(&self) -> u64 {
        self.held.iter().sum::<u64>() + self.aside + self.passing
    }

    /// Removes queued partitions and holds matching `drop` (a cancelled job's).
    pub fn remove(&mut self, mut drop: impl FnMut(&T) -> bool) -> usize {
        let before = self.queue.len() + self.holds.len();
        self.queue.retain(|q| !drop(&q.work.item));
        self.holds.retain(|q| !drop(&q.work.item));
        before - self.queue.len() - self.holds.len()
    }

    pub fn reserved(&self) -> u64 {
        self.reserved
    }

    pub fn budget(&self) -> u64 {
        self.budget
    }

    /// The budget less what is set aside: the most any work may ever hold.
    pub fn usable(&self) -> u64 {
        self.budget - self.aside
    }

    pub fn ahead_of_prover(&self) -> usize {
        self.ahead_of_prover
    }

    /// Partitions waiting.
    pub fn queued(&self) -> usize {
        self.queue.len()
    }

    /// Holds waiting.
    pub fn queued_holds(&self) -> usize {
        self.holds.len()
    }
}

#[cfg(test)]
mod simulation {
    //! The dispatcher under a virtual clock: synthesis workers and one or more GPUs with fixed
    //! stage durations, partitions of fixed sizes. Time is in abstract units.

    use super::*;

    const PO_REP: u8 = 2;
    const WINNING: u8 = 0;

    #[derive(Clone, Debug, PartialEq)]
    struct Part {
        job: &'static str,
        index: usize,
        synth: u64,
        gpu: u64,
        bytes: u64,
    }

    #[derive(Default)]
    struct Trace {
        /// (time, job, index) of each synthesis start.
        starts: Vec<(u64, &'static str, usize)>,
        gpu_busy: Vec<(u64, u64)>,
        /// Busy time of each GPU.
        busy_per_gpu: Vec<u64>,
        max_reserved: u64,
        max_ahead: usize,
    }

    /// Runs until every partition is proved or `until` on one GPU; returns the trace.
    fn run(
        d: &mut Dispatcher<Part>,
        synth_workers: usize,
        arrivals: Vec<(u64, Work<Part>)>,
        until: u64,
    ) -> Trace {
        run_on(d, synth_workers, 1, arrivals, until)
    }

    /// The same with `gpus` devices, each taking the most urgent synthesized partition when free.
    fn run_on(
        d: &mut Dispatcher<Part>,
        synth_workers: usize,
        gpus: usize,
        mut arrivals: Vec<(u64, Work<Part>)>,
        until: u64,
    ) -> Trace {
        let mut trace = Trace {
            busy_per_gpu: vec![0; gpus],
            ..Trace::default()
        };
        let mut now = 0;
        let mut synthesizing: Vec<(u64, Part)> = Vec::new(); // (done at, part)
        let mut gpu_queue: Vec<(u8, u64, Part)> = Vec::new(); // (priority, order, part)
        let mut devices: Vec<Option<(u64, Part)>> = vec![None; gpus];
        let mut order = 0;
        arrivals.sort_by_key(|(t, _)| *t);
        let mut arrivals = arrivals.into_iter().peekable();
        while now <= until {
            while arrivals.peek().is_some_and(|(t, _)| *t <= now) {
                let (_, w) = arrivals.next().unwrap();
                d.enqueue(w).unwrap();
            }
            // A GPU finishes: the partition's memory is released.
            for gpu in devices.iter_mut() {
                if let Some((done, part)) = gpu.take() {
                    if done <= now {
                        d.release(part.bytes);
                    } else {
                        *gpu = Some((done, part));
                    }
                }
            }
            // Synthesis finishes: to the GPU queue (still ahead of the GPU).
            let (finished, running): (Vec<_>, Vec<_>) =
                synthesizing.drain(..).partition(|(done, _)| *done <= now);
            synthesizing = running;
            for (_, part) in finished {
                order += 1;
                let priority = if part.job.starts_with("winning") {
                    WINNING
                } else {
                    PO_REP
                };
                gpu_queue.push((priority, order, part));
            }
            // Each free GPU takes the most urgent synthesized partition.
            for (i, gpu) in devices.iter_mut().enumerate() {
                if gpu.is_none() && !gpu_queue.is_empty() {
                    gpu_queue.sort_by_key(|(p, o, _)| (*p, *o));
                    let (_, _, part) = gpu_queue.remove(0);
                    d.reached_prover();
                    trace.gpu_busy.push((now, now + part.gpu));
                    trace.busy_per_gpu[i] += part.gpu;
                    *gpu = Some((now + part.gpu, part));
                }
            }
            // Admission, as long as a synthesis worker is free.
            while synthesizing.len() < synth_workers {
                match d.admit() {
                    Ok(w) => {
                        trace.starts.push((now, w.item.job, w.item.index));
                        synthesizing.push((now + w.item.synth, w.item));
                    }
                    Err(_) => break,
                }
            }
            trace.max_reserved = trace.max_reserved.max(d.reserved());
            trace.max_ahead = trace.max_ahead.max(d.ahead_of_prover());
            assert!(d.reserved() <= d.budget(), "over budget at {now}");
            let idle = synthesizing.is_empty()
                && devices.iter().all(Option::is_none)
                && gpu_queue.is_empty();
            if idle && d.queued() == 0 && arrivals.peek().is_none() {
                break;
            }
            now += 1;
        }
        trace
    }

    fn porep(job: &'static str, partitions: usize) -> Vec<(u64, Work<Part>)> {
        (0..partitions)
            .map(|index| {
                let part = Part {
                    job,
                    index,
                    synth: 40,
                    gpu: 10,
                    bytes: 14,
                };
                (
                    0,
                    Work {
                        priority: PO_REP,
                        bytes: part.bytes,
                        item: part,
                    },
                )
            })
            .collect()
    }

    #[test]
    fn start_up_admits_at_most_depth_and_never_exceeds_the_budget() {
        // Room in the budget for 7 partitions, depth 3: three start, not seven.
        let mut d = Dispatcher::new(100, 3);
        let mut arrivals = porep("a", 10);
        arrivals.extend(porep("b", 10));
        let trace = run(&mut d, 8, arrivals, 10_000);
        let at_zero = trace.starts.iter().filter(|(t, ..)| *t == 0).count();
        assert_eq!(at_zero, 3, "start-up burst: {:?}", &trace.starts[..5]);
        assert!(trace.max_ahead <= 3);
        assert!(trace.max_reserved <= 100);
        assert_eq!(trace.starts.len(), 20, "every partition ran");
        assert_eq!(d.reserved(), 0, "all reservations returned");
    }

    #[test]
    fn the_budget_holds_when_it_is_tighter_than_depth() {
        // Depth would allow 8, the budget only 2 partitions of 14.
        let mut d = Dispatcher::new(30, 8);
        let trace = run(&mut d, 8, porep("a", 10), 10_000);
        assert_eq!(trace.max_reserved, 28);
        assert_eq!(trace.starts.len(), 10);
    }

    #[test]
    fn the_gpu_stays_busy_in_steady_state() {
        // Synthesis takes 4x the GPU time; 5 workers and depth 6 keep the GPU fed.
        let mut d = Dispatcher::new(1000, 6);
        let mut arrivals = Vec::new();
        for job in ["a", "b", "c", "d", "e", "f"] {
            arrivals.extend(porep(job, 10));
        }
        let trace = run(&mut d, 5, arrivals, 100_000);
        // Steady state: from the first GPU start to the last GPU end.
        let first = trace.gpu_busy.first().unwrap().0;
        let last = trace.gpu_busy.last().unwrap().1;
        let busy: u64 = trace.gpu_busy.iter().map(|(a, b)| b - a).sum();
        let idle_fraction = 1.0 - busy as f64 / (last - first) as f64;
        assert!(
            idle_fraction < 0.25,
            "GPU idle {idle_fraction:.2} of the time"
        );
    }

    #[test]
    fn winning_post_behind_twenty_porep_partitions_starts_within_one_partition_time() {
        let mut d = Dispatcher::new(1000, 4);
        let mut arrivals = porep("a", 10);
        arrivals.extend(porep("b", 10));
        let winning = Part {
            job: "winning",
            index: 0,
            synth: 2,
            gpu: 2,
            bytes: 1,
        };
        let submitted = 25;
        arrivals.push((
            submitted,
            Work {
                priority: WINNING,
                bytes: 1,
                item: winning,
            },
        ));
        let trace = run(&mut d, 4, arrivals, 100_000);
        let started = trace
            .starts
            .iter()
            .find(|(_, job, _)| *job == "winning")
            .expect("the WinningPoSt ran")
            .0;
        // One PoRep partition's time: synthesis + GPU.
        assert!(
            started - submitted <= 40 + 10,
            "waited {}",
            started - submitted
        );
        let before: usize = trace
            .starts
            .iter()
            .filter(|(t, j, _)| *t < started && *j != "winning")
            .count();
        assert!(
            before < 20,
            "it did not wait for the queue: {before} PoRep partitions started first"
        );
    }

    #[test]
    fn a_partition_larger_than_the_budget_is_refused_and_cancelled_work_removed() {
        let mut d = Dispatcher::new(10, 2);
        assert!(d
            .enqueue(Work {
                priority: 2,
                bytes: 11,
                item: "big"
            })
            .is_err());
        d.enqueue(Work {
            priority: 2,
            bytes: 4,
            item: "a",
        })
        .unwrap();
        d.enqueue(Work {
            priority: 2,
            bytes: 4,
            item: "b",
        })
        .unwrap();
        assert_eq!(d.remove(|i| *i == "a"), 1);
        assert_eq!(d.admit().unwrap().item, "b");
        assert_eq!(d.admit().unwrap_err(), Blocked::Empty);
        d.abandoned(4);
        assert_eq!((d.reserved(), d.ahead_of_prover()), (0, 0));
    }

    #[test]
    fn a_waiting_hold_neither_blocks_partitions_nor_counts_in_the_depth() {
        let mut d: Dispatcher<&str> = Dispatcher::new(100, 1);
        let work = |priority, bytes, item| Work {
            priority,
            bytes,
            item,
        };
        // A parameter set of 60 is held; a partition of 30 is admitted (depth 1 is the
        // partition's alone).
        d.enqueue_hold(work(2, 60, "set-a")).unwrap();
        d.enqueue(work(2, 30, "a-1")).unwrap();
        assert_eq!(d.admit(), Ok(work(2, 60, "set-a")));
        assert_eq!(d.admit(), Ok(work(2, 30, "a-1")));
        assert_eq!(d.ahead_of_prover(), 1);
        // A more urgent set of 50 waits for room without stopping job a's next partition.
        d.enqueue_hold(work(0, 50, "set-b")).unwrap();
        d.enqueue(work(2, 10, "a-2")).unwrap();
        d.reached_prover();
        assert_eq!(d.admit(), Ok(work(2, 10, "a-2")));
        assert_eq!(d.admit(), Err(Blocked::Budget));
        // Job a ends: its partitions and its set go back, and set b is held.
        d.release(30);
        d.release(10);
        assert_eq!(
            d.admit(),
            Err(Blocked::Budget),
            "60 + 50 leaves no room for a partition"
        );
        d.release_hold(60);
        assert_eq!(d.admit(), Ok(work(0, 50, "set-b")));
        assert_eq!((d.reserved(), d.held()), (50, 50));
        // Next to set b (50), a set of 20 needs 20 + 50 of room: 70 <= 100 - 50? No.
        d.enqueue_hold(work(1, 20, "set-c")).unwrap();
        assert_eq!(d.admit(), Err(Blocked::Budget));
        d.release_hold(50);
        assert_eq!(d.admit(), Ok(work(1, 20, "set-c")));
        d.release_hold(20);
        assert_eq!(
            d.enqueue_hold(work(0, 101, "huge")).unwrap_err().item,
            "huge"
        );
        d.enqueue_hold(work(1, 60, "cancelled")).unwrap();
        assert_eq!(d.remove(|i| *i == "cancelled"), 1);
    }

    #[test]
    fn an_optional_hold_is_taken_only_when_it_delays_nothing_that_waits() {
        let mut d: Dispatcher<&str> = Dispatcher::new(120, 1);
        let work = |priority, bytes, item| Work {
            priority,
            bytes,
            item,
        };
        // A parameter set of 40 is held: a PCE of 30 needs 30 + 40 of room, which is there.
        d.enqueue_hold(work(2, 40, "set")).unwrap();
        assert_eq!(d.admit(), Ok(work(2, 40, "set")));
        assert!(d.try_hold(30));
        assert_eq!((d.reserved(), d.held()), (70, 70));
        // Another of 20 needs 20 + 40 > 50 left.
        assert!(!d.try_hold(20));
        d.release_hold(30);
        // A partition waiting for depth keeps its room: 50 + 30 + 60 > 120, 50 + 10 + 60 <= 120.
        d.enqueue(work(2, 10, "a-1")).unwrap();
        d.enqueue(work(2, 60, "a-2")).unwrap();
        assert_eq!(d.admit(), Ok(work(2, 10, "a-1")));
        assert_eq!(d.admit(), Err(Blocked::Depth));
        assert!(!d.try_hold(30));
        assert!(d.try_hold(10));
        d.release_hold(10);
        // A queued hold comes first.
        d.reached_prover();
        d.release(10);
        assert_eq!(d.admit(), Ok(work(2, 60, "a-2")));
        d.enqueue_hold(work(3, 50, "extraction")).unwrap();
        assert_eq!(d.admit(), Err(Blocked::Budget));
        assert!(!d.try_hold(1));
        assert_eq!(
            d.reserved(),
            100,
            "refused optional holds leave nothing behind"
        );
    }

    #[test]
    fn bytes_passing_through_count_while_held_and_never_shrink_the_budget() {
        let mut d: Dispatcher<&str> = Dispatcher::new(100, 1);
        let work = |bytes, item| Work {
            priority: 2,
            bytes,
            item,
        };
        // A set of 40 is held beside a partition of 20 waiting for depth behind one of 10.
        d.enqueue_hold(work(40, "set")).unwrap();
        assert_eq!(d.admit(), Ok(work(40, "set")));
        d.enqueue(work(10, "a-1")).unwrap();
        d.enqueue(work(20, "a-2")).unwrap();
        assert_eq!(d.admit(), Ok(work(10, "a-1")));
        assert_eq!(d.admit(), Err(Blocked::Depth));
        // 50 reserved: 51 more do not fit, 50 do.
        assert!(!d.pass(51));
        assert!(d.pass(50));
        assert_eq!((d.reserved(), d.held()), (100, 90));
        // Passing bytes are counted while held: a-2 is past depth but waits for them...
        d.reached_prover();
        d.release(10);
        assert_eq!(d.admit(), Err(Blocked::Budget));
        // ...and starts once they are given back; the budget work fits in never shrank.
        d.release_passing(50);
        assert_eq!(d.admit(), Ok(work(20, "a-2")));
        assert_eq!(d.usable(), 100);
        assert_eq!((d.reserved(), d.held()), (60, 40));
        assert!(!d.pass(41));
        assert_eq!(d.reserved(), 60, "a refused pass leaves nothing behind");
    }

    #[test]
    fn two_gpus_are_both_kept_busy_within_budget_and_depth() {
        // Synthesis takes 4x a GPU's time: 8 synthesis workers feed two GPUs. Room for 14
        // partitions in the budget, depth 8.
        let mut d = Dispatcher::new(200, 8);
        let mut arrivals = Vec::new();
        for job in ["a", "b", "c", "d"] {
            arrivals.extend(porep(job, 10));
        }
        let t = run_on(&mut d, 8, 2, arrivals, 10_000);
        assert!(t.max_reserved <= 200);
        assert!(t.max_ahead <= 8, "ahead {}", t.max_ahead);
        assert_eq!(t.starts.len(), 40);
        let end = t.gpu_busy.iter().map(|(_, e)| *e).max().unwrap();
        // After the first synthesis (40 units), both GPUs are busy most of the time.
        for (gpu, busy) in t.busy_per_gpu.iter().enumerate() {
            let fraction = *busy as f64 / (end - 40) as f64;
            assert!(fraction > 0.85, "GPU {gpu} busy {fraction:.2}");
        }
        assert_eq!(t.busy_per_gpu.iter().sum::<u64>(), 400);
    }
}
