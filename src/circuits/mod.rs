//! Filecoin circuits: turning what Curio holds (C1 output, vanilla proofs) into one circuit per
//! partition, and the partition proofs back into the bytes filecoin-proofs returns.

pub mod params;
pub mod porep;
pub mod seal;
pub mod synthetic;

use std::fmt;

/// Bytes of one Groth16 proof (compressed A, B, C).
pub const GROTH_PROOF_BYTES: usize = 192;

#[derive(Debug, thiserror::Error)]
pub enum CircuitError {
    #[error("invalid {field}: {why}")]
    InvalidInput { field: &'static str, why: String },
    #[error("the inputs do not satisfy the circuit: partition {partition} violates {rows} constraints (corrupted C1 output?)")]
    Unsatisfied { partition: usize, rows: usize },
    #[error("partition {partition}: the vanilla proofs do not match the seed and commitments of the C1 output (the verifier would derive other public inputs)")]
    PublicInputMismatch { partition: usize },
    #[error("synthesis failed: {0}")]
    Synthesis(String),
    #[error("proof failed verification: {0}")]
    Verification(String),
}

/// A stable name per circuit kind and shape (e.g. `porep-2k`, `porep-32g`): the key of the SRS
/// and PCE caches.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
pub struct CircuitId(String);

impl CircuitId {
    pub fn porep(sector_size: u64) -> Self {
        CircuitId(format!("porep-{}", size_tag(sector_size)))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for CircuitId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// 2048 -> "2k", 8 MiB -> "8m", 32 GiB -> "32g".
fn size_tag(bytes: u64) -> String {
    const UNITS: [(u64, &str); 3] = [(1 << 30, "g"), (1 << 20, "m"), (1 << 10, "k")];
    for (unit, tag) in UNITS {
        if bytes >= unit && bytes % unit == 0 {
            return format!("{}{tag}", bytes / unit);
        }
    }
    format!("{bytes}b")
}

/// The prover id of a miner actor: its ID-address number as unsigned LEB128, zero-padded to 32.
pub fn prover_id_from_miner(miner_id: u64) -> [u8; 32] {
    let mut out = [0u8; 32];
    let mut n = miner_id;
    let mut i = 0;
    loop {
        let byte = (n & 0x7f) as u8;
        n >>= 7;
        if n == 0 {
            out[i] = byte;
            break;
        }
        out[i] = byte | 0x80;
        i += 1;
    }
    out
}

/// Parses a sector size such as `2KiB`, `32GiB`, `8MiB` or a plain byte count.
pub fn parse_sector_size(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let (num, mult) = [("KiB", 1u64 << 10), ("MiB", 1 << 20), ("GiB", 1 << 30)]
        .iter()
        .find_map(|(suffix, m)| t.strip_suffix(suffix).map(|n| (n, *m)))
        .unwrap_or((t, 1));
    num.trim()
        .parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(mult))
        .ok_or_else(|| format!("{s:?} is not a sector size (e.g. 2KiB, 32GiB)"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prover_id_is_leb128_zero_padded() {
        assert_eq!(prover_id_from_miner(0)[..2], [0, 0]);
        assert_eq!(prover_id_from_miner(1000)[..3], [0xe8, 0x07, 0]);
        assert_eq!(prover_id_from_miner(127)[..2], [0x7f, 0]);
        assert_eq!(prover_id_from_miner(128)[..3], [0x80, 0x01, 0]);
        assert_eq!(prover_id_from_miner(u64::MAX)[9], 0x01);
    }

    #[test]
    fn sector_sizes_parse_and_name() {
        assert_eq!(parse_sector_size("2KiB"), Ok(2048));
        assert_eq!(parse_sector_size("32GiB"), Ok(32 << 30));
        assert_eq!(parse_sector_size("8388608"), Ok(8 << 20));
        assert!(parse_sector_size("2KB").is_err());
        assert_eq!(CircuitId::porep(2048).as_str(), "porep-2k");
        assert_eq!(CircuitId::porep(64 << 30).as_str(), "porep-64g");
    }
}
