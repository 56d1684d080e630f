//! Prometheus metrics: one registry, every series named here (cuzk_ prefix, _bytes, _seconds,
//! _total), plus the standard process collector (RSS, CPU, file descriptors).

use prometheus::{
    CounterVec, Encoder, HistogramOpts, HistogramVec, IntCounterVec, IntGaugeVec, Opts, Registry,
    TextEncoder,
};

use crate::circuits::ProofKind;
use crate::jobs::JobState;
use crate::memory::Purpose;

pub struct Metrics {
    registry: Registry,
    /// Jobs known to the service, by kind and state.
    pub jobs: IntGaugeVec,
    /// Jobs waiting to start, by kind.
    pub queue_depth: IntGaugeVec,
    /// The ledger: buffers in flight per pipeline stage, and their bytes.
    pub ledger_buffers: IntGaugeVec,
    pub ledger_bytes: IntGaugeVec,
    /// The ledger's bytes lent from the page-locked pool, per stage.
    pub ledger_pinned_bytes: IntGaugeVec,
    /// Bytes of partitions' a, b, c and aux vectors as synthesized, by kind and place: pinned
    /// (lent from the pool) or heap (unpooled: should stay flat).
    pub synthesis_buffer_bytes: IntCounterVec,
    /// The page-locked pool: bytes locked, and leased now (set when scraped).
    pub pinned_pool_bytes: IntGaugeVec,
    /// The last partition's reservation estimate and its synthesized size, per kind.
    pub partition_bytes: IntGaugeVec,
    pub queue_wait_seconds: HistogramVec,
    pub synthesis_seconds: HistogramVec,
    pub prove_seconds: HistogramVec,
    pub job_seconds: HistogramVec,
    pub proofs_verified: IntCounterVec,
    pub proofs_failed: IntCounterVec,
    /// The memory budget and the limit it was derived from.
    pub budget_bytes: prometheus::IntGauge,
    pub memory_limit_bytes: prometheus::IntGauge,
    /// Budget bytes held by partition reservations now (set when scraped).
    pub reserved_bytes: prometheus::IntGauge,
    /// Budget bytes held by holds now, by purpose: loaded parameter sets, loaded PCEs, PCE
    /// extractions (set when scraped).
    pub held_bytes: IntGaugeVec,
    /// Partitions waiting for memory or depth to start synthesis (set when scraped).
    pub partitions_waiting: prometheus::IntGauge,
    /// Partitions synthesized, by kind and path (pce, full).
    pub syntheses: IntCounterVec,
    /// Partition proofs that did not verify against their own public inputs, by kind and the
    /// backend that made them.
    pub wrong_partition_proofs: IntCounterVec,
    /// PCE lookups when a job starts, by circuit and result (hit: loaded or shared; miss).
    pub pce_lookups: IntCounterVec,
    /// Background PCE extractions, by circuit and result (ok, failed).
    pub pce_extractions: IntCounterVec,
    pub pce_load_seconds: HistogramVec,
    /// Seconds of device work per GPU (brought up to date when scraped).
    pub gpu_busy_seconds: CounterVec,
    /// Device bytes of parameter-set bases and PCE matrices resident per GPU (set when
    /// scraped).
    pub gpu_resident_bytes: IntGaugeVec,
}

/// Buckets from 10 ms to about 45 minutes.
fn buckets() -> Vec<f64> {
    prometheus::exponential_buckets(0.01, 2.5, 14).expect("valid buckets")
}

impl Metrics {
    pub fn new() -> Self {
        let registry = Registry::new();
        let gauge = |name: &str, help: &str, labels: &[&str]| {
            let g = IntGaugeVec::new(Opts::new(name, help), labels).expect("valid metric");
            registry
                .register(Box::new(g.clone()))
                .expect("unique metric");
            g
        };
        let counter = |name: &str, help: &str| {
            let c = IntCounterVec::new(Opts::new(name, help), &["kind"]).expect("valid metric");
            registry
                .register(Box::new(c.clone()))
                .expect("unique metric");
            c
        };
        let histogram = |name: &str, help: &str| {
            let h = HistogramVec::new(HistogramOpts::new(name, help).buckets(buckets()), &["kind"])
                .expect("valid metric");
            registry
                .register(Box::new(h.clone()))
                .expect("unique metric");
            h
        };
        let plain_gauge = |name: &str, help: &str| {
            let g = prometheus::IntGauge::new(name, help).expect("valid metric");
            registry
                .register(Box::new(g.clone()))
                .expect("unique metric");
            g
        };
        let counter_by = |name: &str, help: &str, labels: &[&str]| {
            let c = IntCounterVec::new(Opts::new(name, help), labels).expect("valid metric");
            registry
                .register(Box::new(c.clone()))
                .expect("unique metric");
            c
        };
        let m = Metrics {
            gpu_busy_seconds: {
                let c = CounterVec::new(
                    Opts::new(
                        "cuzk_gpu_busy_seconds_total",
                        "Seconds each GPU spent on proving work (rate() is its busy fraction)",
                    ),
                    &["gpu"],
                )
                .expect("valid metric");
                registry
                    .register(Box::new(c.clone()))
                    .expect("unique metric");
                c
            },
            gpu_resident_bytes: gauge(
                "cuzk_gpu_resident_bytes",
                "Device bytes of parameter-set bases and PCE matrices kept resident between proofs, per GPU",
                &["gpu"],
            ),
            syntheses: counter_by(
                "cuzk_syntheses_total",
                "Partitions synthesized, by path: pce (witness + SpMV), compact (the witness alone, a, b, c computed by the prover) or full",
                &["kind", "path"],
            ),
            wrong_partition_proofs: counter_by(
                "cuzk_wrong_partition_proofs_total",
                "Partition proofs that did not verify against their public inputs, by the backend that made them (each is proved once more on the other backend)",
                &["kind", "backend"],
            ),
            pce_lookups: counter_by(
                "cuzk_pce_lookups_total",
                "PCE lookups at job start: hit (loaded or shared) or miss (full path)",
                &["circuit", "result"],
            ),
            pce_extractions: counter_by(
                "cuzk_pce_extractions_total",
                "Background PCE extractions, ok or failed",
                &["circuit", "result"],
            ),
            pce_load_seconds: {
                let h = HistogramVec::new(
                    HistogramOpts::new("cuzk_pce_load_seconds", "Time to map and check a PCE file")
                        .buckets(buckets()),
                    &["circuit"],
                )
                .expect("valid metric");
                registry
                    .register(Box::new(h.clone()))
                    .expect("unique metric");
                h
            },
            budget_bytes: plain_gauge("cuzk_memory_budget_bytes", "Bytes the appliance may hold"),
            memory_limit_bytes: plain_gauge(
                "cuzk_memory_limit_bytes",
                "The cgroup or machine limit the budget is derived from",
            ),
            reserved_bytes: plain_gauge(
                "cuzk_memory_reserved_bytes",
                "Budget bytes held by partition reservations",
            ),
            held_bytes: gauge(
                "cuzk_memory_held_bytes",
                "Budget bytes held outside partitions, by purpose: parameters (loaded Groth16 parameter sets), pce (loaded PCEs), pce-extraction",
                &["purpose"],
            ),
            partitions_waiting: plain_gauge(
                "cuzk_partitions_waiting",
                "Partitions waiting for memory or depth to start synthesis",
            ),
            jobs: gauge("cuzk_jobs", "Jobs known to the service", &["kind", "state"]),
            queue_depth: gauge("cuzk_queue_depth", "Jobs waiting to start", &["kind"]),
            ledger_buffers: gauge(
                "cuzk_ledger_buffers",
                "Partition buffers in flight per pipeline stage",
                &["stage"],
            ),
            ledger_bytes: gauge(
                "cuzk_ledger_bytes",
                "Bytes of partition buffers in flight per pipeline stage",
                &["stage"],
            ),
            ledger_pinned_bytes: gauge(
                "cuzk_ledger_pinned_bytes",
                "Bytes of partition buffers in flight per pipeline stage lent from the page-locked pool",
                &["stage"],
            ),
            synthesis_buffer_bytes: counter_by(
                "cuzk_synthesis_buffer_bytes_total",
                "Bytes of synthesized a, b, c and aux vectors, by place: pinned (lent from the page-locked pool) or heap (unpooled; flat while the pool is sized right); compact: compact witnesses kept in their place",
                &["kind", "place"],
            ),
            pinned_pool_bytes: gauge(
                "cuzk_pinned_pool_bytes",
                "The page-locked pool: bytes locked at start, and leased to partitions now",
                &["state"],
            ),
            partition_bytes: gauge(
                "cuzk_partition_bytes",
                "Bytes of the last partition per kind: the reservation estimated from the circuit's shape, and what synthesis produced",
                &["kind", "measure"],
            ),
            queue_wait_seconds: histogram(
                "cuzk_queue_wait_seconds",
                "Time from submission to start",
            ),
            synthesis_seconds: histogram("cuzk_synthesis_seconds", "Synthesis time per partition"),
            prove_seconds: histogram(
                "cuzk_prove_seconds",
                "Prover (NTT and MSM) time per partition",
            ),
            job_seconds: histogram("cuzk_job_seconds", "Time from start to verified proof"),
            proofs_verified: counter(
                "cuzk_proofs_verified_total",
                "Proofs that passed filecoin-proofs' verifier",
            ),
            proofs_failed: counter(
                "cuzk_proofs_failed_total",
                "Jobs that ended failed (bad input, failed verification, errors)",
            ),
            registry,
        };
        #[cfg(target_os = "linux")]
        m.registry
            .register(Box::new(
                prometheus::process_collector::ProcessCollector::for_self(),
            ))
            .expect("unique metric");
        // Every series exists from the start, so that dashboards and alerts see zeros.
        for purpose in Purpose::ALL {
            m.held_bytes.with_label_values(&[purpose.as_str()]);
        }
        for state in ["locked", "leased"] {
            m.pinned_pool_bytes.with_label_values(&[state]);
        }
        for kind in ProofKind::ALL {
            for state in JobState::ALL {
                m.jobs.with_label_values(&[kind.as_str(), state.as_str()]);
            }
            m.queue_depth.with_label_values(&[kind.as_str()]);
            m.proofs_verified.with_label_values(&[kind.as_str()]);
            m.proofs_failed.with_label_values(&[kind.as_str()]);
            for place in ["pinned", "heap"] {
                m.synthesis_buffer_bytes
                    .with_label_values(&[kind.as_str(), place]);
            }
            for path in [crate::synth::SynthPath::Pce, crate::synth::SynthPath::Full] {
                m.syntheses
                    .with_label_values(&[kind.as_str(), path.as_str()]);
            }
        }
        m
    }

    /// Brings GPU `ordinal`'s busy counter up to `seconds`, its device work so far (a counter
    /// only rises: a smaller total is ignored).
    pub fn gpu_busy(&self, ordinal: usize, seconds: f64) {
        let counter = self
            .gpu_busy_seconds
            .with_label_values(&[&ordinal.to_string()]);
        let behind = seconds - counter.get();
        if behind > 0.0 {
            counter.inc_by(behind);
        }
    }

    /// The Prometheus text exposition of every series.
    pub fn render(&self) -> String {
        let mut out = Vec::new();
        TextEncoder::new()
            .encode(&self.registry.gather(), &mut out)
            .expect("encoding to a Vec cannot fail");
        String::from_utf8(out).expect("the text format is UTF-8")
    }
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gpu_busy_counters_follow_each_devices_total_and_never_fall() {
        let m = Metrics::new();
        m.gpu_busy(0, 1.5);
        m.gpu_busy(1, 0.25);
        m.gpu_busy(0, 2.0);
        m.gpu_busy(0, 1.0);
        let text = m.render();
        assert!(
            text.contains("cuzk_gpu_busy_seconds_total{gpu=\"0\"} 2\n"),
            "{text}"
        );
        assert!(
            text.contains("cuzk_gpu_busy_seconds_total{gpu=\"1\"} 0.25\n"),
            "{text}"
        );
    }
}
