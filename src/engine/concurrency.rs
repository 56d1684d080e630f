//! How many jobs run at once and how many partitions may hold memory ahead of the prover, as
//! configured or derived from the machine.

/// Jobs in progress and partitions ahead of the prover.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Concurrency {
    pub workers: usize,
    pub depth: usize,
}

impl Concurrency {
    /// `workers` and `depth` as configured, 0 meaning derived from the machine. On the CPU the
    /// prover takes every core: one partition synthesizing while one proves (2) keeps it busy.
    /// With GPUs synthesis is the bottleneck: 3/8 of the cores, at most 6 per GPU (measured on
    /// an H200 box, docs/measurements/2026-12-03-h200). The memory budget bounds what actually
    /// runs either way.
    pub fn derive(workers: usize, depth: usize, cores: usize, gpus: usize) -> Concurrency {
        let derived = if gpus == 0 {
            2
        } else {
            (cores * 3 / 8).min(6 * gpus).max(2)
        };
        Concurrency {
            workers: if workers == 0 { derived } else { workers },
            depth: if depth == 0 { derived } else { depth },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Concurrency;

    #[test]
    fn concurrency_is_derived_only_where_not_configured() {
        let c = |w, d, cores, gpus| {
            let c = Concurrency::derive(w, d, cores, gpus);
            (c.workers, c.depth)
        };
        assert_eq!(c(0, 0, 2, 0), (2, 2), "CPU proving");
        assert_eq!(c(0, 0, 64, 0), (2, 2), "CPU proving uses the cores itself");
        assert_eq!(c(0, 0, 16, 1), (6, 6), "one H200 box");
        assert_eq!(c(0, 0, 128, 2), (12, 12), "capped per GPU");
        assert_eq!(c(0, 0, 2, 1), (2, 2), "never under 2");
        assert_eq!(c(3, 0, 16, 1), (3, 6));
        assert_eq!(c(0, 5, 16, 0), (2, 5));
    }
}
