//! The ledger at the narrow waist: per pipeline stage, how many partition buffers are in flight
//! and how many bytes they hold. It moves only where a partition enters synthesis, where its
//! `SynthesizedProof` is made, handed to the prover and dropped: a [`LedgerEntry`] follows one
//! partition and leaves the ledger when dropped, on success, error and cancellation alike.
//! Bytes are counted where they are: on the heap, or lent from the page-locked pool.

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;

use serde::Serialize;

use crate::metrics::Metrics;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stage {
    /// Running the circuit (the buffers grow; counted at zero bytes until made).
    Synthesizing,
    /// Made, waiting for the prover.
    Synthesized,
    /// On a prover slot: h and the G1 MSMs.
    Proving,
    /// Off the prover slot: B in G2 and the join (only B's scalars are held).
    Finalizing,
}

impl Stage {
    pub const ALL: [Stage; 4] = [
        Stage::Synthesizing,
        Stage::Synthesized,
        Stage::Proving,
        Stage::Finalizing,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Stage::Synthesizing => "synthesizing",
            Stage::Synthesized => "synthesized",
            Stage::Proving => "proving",
            Stage::Finalizing => "finalizing",
        }
    }

    fn index(self) -> usize {
        self as usize
    }
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct StageCount {
    pub stage: &'static str,
    pub buffers: i64,
    /// On the heap.
    pub bytes: i64,
    /// Lent from the page-locked pool.
    pub pinned_bytes: i64,
}

/// Bytes a partition holds: on the heap, and lent from the page-locked pool.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Held {
    pub heap: usize,
    pub pinned: usize,
}

pub struct Ledger {
    buffers: [AtomicI64; Stage::ALL.len()],
    bytes: [AtomicI64; Stage::ALL.len()],
    pinned: [AtomicI64; Stage::ALL.len()],
    metrics: Arc<Metrics>,
}

impl Ledger {
    /// A ledger at zero; its series exist from the start, so dashboards and alerts see zeros.
    pub fn new(metrics: Arc<Metrics>) -> Self {
        for stage in Stage::ALL {
            metrics.ledger_buffers.with_label_values(&[stage.as_str()]);
            metrics.ledger_bytes.with_label_values(&[stage.as_str()]);
            metrics
                .ledger_pinned_bytes
                .with_label_values(&[stage.as_str()]);
        }
        Ledger {
            buffers: Default::default(),
            bytes: Default::default(),
            pinned: Default::default(),
            metrics,
        }
    }

    fn add(&self, stage: Stage, buffers: i64, held: Held, sign: i64) {
        let i = stage.index();
        let label = [stage.as_str()];
        let n = self.buffers[i].fetch_add(buffers, Ordering::SeqCst) + buffers;
        self.metrics.ledger_buffers.with_label_values(&label).set(n);
        for (count, bytes, gauge) in [
            (&self.bytes[i], held.heap, &self.metrics.ledger_bytes),
            (
                &self.pinned[i],
                held.pinned,
                &self.metrics.ledger_pinned_bytes,
            ),
        ] {
            let delta = sign * bytes as i64;
            let now = count.fetch_add(delta, Ordering::SeqCst) + delta;
            gauge.with_label_values(&label).set(now);
        }
    }

    /// A partition enters `stage` holding `held`.
    pub fn enter(&self, stage: Stage, held: Held) -> LedgerEntry<'_> {
        self.add(stage, 1, held, 1);
        LedgerEntry {
            ledger: self,
            stage,
            held,
        }
    }

    pub fn snapshot(&self) -> Vec<StageCount> {
        Stage::ALL
            .iter()
            .map(|s| StageCount {
                stage: s.as_str(),
                buffers: self.buffers[s.index()].load(Ordering::SeqCst),
                bytes: self.bytes[s.index()].load(Ordering::SeqCst),
                pinned_bytes: self.pinned[s.index()].load(Ordering::SeqCst),
            })
            .collect()
    }
}

/// One partition's place in the ledger.
pub struct LedgerEntry<'a> {
    ledger: &'a Ledger,
    stage: Stage,
    held: Held,
}

impl<'a> LedgerEntry<'a> {
    /// The partition moves on to `stage`, now holding `held`.
    pub fn move_to(self, stage: Stage, held: Held) -> LedgerEntry<'a> {
        let ledger = self.ledger;
        drop(self);
        ledger.enter(stage, held)
    }
}

impl Drop for LedgerEntry<'_> {
    fn drop(&mut self) {
        self.ledger.add(self.stage, -1, self.held, -1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_move_between_stages_and_leave_on_drop() {
        let ledger = Ledger::new(Arc::new(Metrics::new()));
        let held = |heap, pinned| Held { heap, pinned };
        let a = ledger.enter(Stage::Synthesizing, Held::default());
        let b = ledger
            .enter(Stage::Synthesizing, Held::default())
            .move_to(Stage::Synthesized, held(100, 7));
        let count = |stage: Stage| {
            let s = ledger.snapshot();
            let c = &s[stage.index()];
            (c.buffers, c.bytes, c.pinned_bytes)
        };
        assert_eq!(count(Stage::Synthesizing), (1, 0, 0));
        assert_eq!(count(Stage::Synthesized), (1, 100, 7));
        let b = b.move_to(Stage::Proving, held(100, 7));
        assert_eq!(count(Stage::Synthesized), (0, 0, 0));
        assert_eq!(count(Stage::Proving), (1, 100, 7));
        let b = b.move_to(Stage::Finalizing, held(10, 0));
        assert_eq!(count(Stage::Proving), (0, 0, 0));
        assert_eq!(count(Stage::Finalizing), (1, 10, 0));
        drop((a, b));
        assert!(ledger
            .snapshot()
            .iter()
            .all(|c| c.buffers == 0 && c.bytes == 0 && c.pinned_bytes == 0));
    }
}
