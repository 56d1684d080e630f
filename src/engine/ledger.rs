//! The ledger at the narrow waist: per pipeline stage, how many partition buffers are in flight
//! and how many bytes they hold. It moves only where a partition enters synthesis, where its
//! `SynthesizedProof` is made, handed to the prover and dropped: a [`LedgerEntry`] follows one
//! partition and leaves the ledger when dropped, on success, error and cancellation alike.

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
    pub bytes: i64,
}

pub struct Ledger {
    buffers: [AtomicI64; Stage::ALL.len()],
    bytes: [AtomicI64; Stage::ALL.len()],
    metrics: Arc<Metrics>,
}

impl Ledger {
    /// A ledger at zero; its series exist from the start, so dashboards and alerts see zeros.
    pub fn new(metrics: Arc<Metrics>) -> Self {
        for stage in Stage::ALL {
            metrics.ledger_buffers.with_label_values(&[stage.as_str()]);
            metrics.ledger_bytes.with_label_values(&[stage.as_str()]);
        }
        Ledger {
            buffers: Default::default(),
            bytes: Default::default(),
            metrics,
        }
    }

    fn add(&self, stage: Stage, buffers: i64, bytes: i64) {
        let i = stage.index();
        let n = self.buffers[i].fetch_add(buffers, Ordering::SeqCst) + buffers;
        let b = self.bytes[i].fetch_add(bytes, Ordering::SeqCst) + bytes;
        self.metrics
            .ledger_buffers
            .with_label_values(&[stage.as_str()])
            .set(n);
        self.metrics
            .ledger_bytes
            .with_label_values(&[stage.as_str()])
            .set(b);
    }

    /// A partition enters `stage` holding `bytes`.
    pub fn enter(&self, stage: Stage, bytes: usize) -> LedgerEntry<'_> {
        self.add(stage, 1, bytes as i64);
        LedgerEntry {
            ledger: self,
            stage,
            bytes: bytes as i64,
        }
    }

    pub fn snapshot(&self) -> Vec<StageCount> {
        Stage::ALL
            .iter()
            .map(|s| StageCount {
                stage: s.as_str(),
                buffers: self.buffers[s.index()].load(Ordering::SeqCst),
                bytes: self.bytes[s.index()].load(Ordering::SeqCst),
            })
            .collect()
    }
}

/// One partition's place in the ledger.
pub struct LedgerEntry<'a> {
    ledger: &'a Ledger,
    stage: Stage,
    bytes: i64,
}

impl<'a> LedgerEntry<'a> {
    /// The partition moves on to `stage`, now holding `bytes`.
    pub fn move_to(self, stage: Stage, bytes: usize) -> LedgerEntry<'a> {
        let ledger = self.ledger;
        drop(self);
        ledger.enter(stage, bytes)
    }
}

impl Drop for LedgerEntry<'_> {
    fn drop(&mut self) {
        self.ledger.add(self.stage, -1, -self.bytes);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_move_between_stages_and_leave_on_drop() {
        let ledger = Ledger::new(Arc::new(Metrics::new()));
        let a = ledger.enter(Stage::Synthesizing, 0);
        let b = ledger
            .enter(Stage::Synthesizing, 0)
            .move_to(Stage::Synthesized, 100);
        let count = |stage: Stage| {
            let s = ledger.snapshot();
            let c = &s[stage.index()];
            (c.buffers, c.bytes)
        };
        assert_eq!(count(Stage::Synthesizing), (1, 0));
        assert_eq!(count(Stage::Synthesized), (1, 100));
        let b = b.move_to(Stage::Proving, 100);
        assert_eq!(count(Stage::Synthesized), (0, 0));
        assert_eq!(count(Stage::Proving), (1, 100));
        let b = b.move_to(Stage::Finalizing, 10);
        assert_eq!(count(Stage::Proving), (0, 0));
        assert_eq!(count(Stage::Finalizing), (1, 10));
        drop((a, b));
        assert!(ledger
            .snapshot()
            .iter()
            .all(|c| c.buffers == 0 && c.bytes == 0));
    }
}
