//! Every parser of bytes from outside the process, one call each: what the fuzz targets in
//! fuzz/ drive, and what tests/fuzz_regressions.rs replays every saved input through. Each
//! call goes as far as the service goes with such bytes, checks what must hold of what it
//! accepts and says whether it accepted them all the way; any panic (or abort) is a finding.
//! Refusal is the expected outcome of most inputs.

use std::path::Path;

use filecoin_proofs_api::{RegisteredPoStProof, RegisteredUpdateProof};

use crate::circuits::json::{canonical_object, object};
use crate::circuits::post::PoStJob;
use crate::circuits::snap::SnapDeals;
use crate::circuits::ProofRequest;
use crate::jobs::JobRecord;

/// A parser's entry point: whether it accepted the bytes all the way.
pub type Target = fn(&[u8]) -> bool;

/// The targets, by the names fuzz/ gives them.
pub const TARGETS: [(&str, Target); 6] = [
    ("request", request),
    ("c1", c1),
    ("vanilla", vanilla),
    ("params", params),
    ("pce", pce),
    ("job_record", job_record),
];

/// A REST submission's body, read as `POST /v1/proofs` reads it: its members, the id, the
/// canonical stored form, the request of its kind, then every field checked and the job built.
/// The canonical form of an accepted body is itself canonical (resubmissions compare equal).
pub fn request(data: &[u8]) -> bool {
    let Ok(mut members) = object(data) else {
        return false;
    };
    let id_ok = members
        .remove("id")
        .and_then(|id| serde_json::from_str::<String>(id.get()).ok())
        .is_some_and(|id| crate::jobs::valid_id(&id));
    let Ok(stored) = canonical_object(&members) else {
        return false;
    };
    let again = object(&stored).expect("the canonical form is a JSON object");
    let twice = canonical_object(&again).expect("the canonical form can be written again");
    assert!(twice == stored, "the canonical form is not stable");
    drop((members, again));
    let prepared = ProofRequest::from_json(&stored).is_ok_and(|parsed| parsed.prepare().is_ok());
    id_ok && prepared
}

/// A PoRep C1 output, plain or in Curio's envelope (base64 or JSON in a request: the same
/// bytes once decoded), made into a job.
pub fn c1(data: &[u8]) -> bool {
    crate::circuits::porep::PoRepC2::from_c1(data, 1000, 1).is_ok()
}

/// Vanilla proofs (bincode, as filecoin-proofs-api returns them) of SnapDeals, WindowPoSt or
/// WinningPoSt, in the layout [`vanilla_input`] writes: the kind, the sector size, three
/// 32-byte values (the commitments r_old, r_new, d_new; or the randomness and prover id), then
/// the proofs.
pub fn vanilla(data: &[u8]) -> bool {
    let Some((&[kind, size], rest)) = data.split_first_chunk::<2>() else {
        return false;
    };
    let Some((context, mut rest)) = rest.split_first_chunk::<96>() else {
        return false;
    };
    let value = |i: usize| -> [u8; 32] { context[32 * i..32 * (i + 1)].try_into().expect("32") };
    let mut proofs = Vec::new();
    while let [lo, hi, tail @ ..] = rest {
        let len = usize::from(u16::from_le_bytes([*lo, *hi])).min(tail.len());
        proofs.push(&tail[..len]);
        rest = &tail[len..];
    }
    let size = usize::from(size) % 5;
    match kind % 3 {
        0 => {
            let proof = [
                RegisteredUpdateProof::StackedDrg2KiBV1,
                RegisteredUpdateProof::StackedDrg8MiBV1,
                RegisteredUpdateProof::StackedDrg512MiBV1,
                RegisteredUpdateProof::StackedDrg32GiBV1,
                RegisteredUpdateProof::StackedDrg64GiBV1,
            ][size];
            SnapDeals::new(proof, &proofs, value(0), value(1), value(2)).is_ok()
        }
        1 => {
            let proof = [
                RegisteredPoStProof::StackedDrgWindow2KiBV1_2,
                RegisteredPoStProof::StackedDrgWindow8MiBV1_2,
                RegisteredPoStProof::StackedDrgWindow512MiBV1_2,
                RegisteredPoStProof::StackedDrgWindow32GiBV1_2,
                RegisteredPoStProof::StackedDrgWindow64GiBV1_2,
            ][size];
            PoStJob::window(proof, value(0), value(1), 0, &proofs).is_ok()
        }
        _ => {
            let proof = [
                RegisteredPoStProof::StackedDrgWinning2KiBV1,
                RegisteredPoStProof::StackedDrgWinning8MiBV1,
                RegisteredPoStProof::StackedDrgWinning512MiBV1,
                RegisteredPoStProof::StackedDrgWinning32GiBV1,
                RegisteredPoStProof::StackedDrgWinning64GiBV1,
            ][size];
            PoStJob::winning(proof, value(0), value(1), &proofs).is_ok()
        }
    }
}

/// An input of [`vanilla`]: `kind` 0 SnapDeals, 1 WindowPoSt, 2 WinningPoSt; `size` 0..5 from
/// 2 KiB to 64 GiB; `context` the commitments (or randomness and prover id); the proofs, each
/// at most 65,535 bytes.
pub fn vanilla_input(kind: u8, size: u8, context: [[u8; 32]; 3], proofs: &[&[u8]]) -> Vec<u8> {
    let mut out = vec![kind, size];
    out.extend(context.iter().flatten());
    for proof in proofs {
        let len = u16::try_from(proof.len()).expect("a proof of at most 65,535 bytes");
        out.extend_from_slice(&len.to_le_bytes());
        out.extend_from_slice(proof);
    }
    out
}

/// A `.params` file (its shape from the counts alone, then every point decoded) and a `.vk`
/// file. What the shape reads is what the whole decode finds.
pub fn params(data: &[u8]) -> bool {
    let path = Path::new("fuzz.params");
    let shape = crate::srs::SrsShape::decode(path, data);
    let set = crate::srs::Srs::decode(crate::srs::SrsId::in_memory(0), path, data);
    if let Ok(srs) = &set {
        let shape = shape.expect("a file that decodes has a shape");
        assert_eq!(
            shape,
            srs.shape(),
            "the counts and the decoded set disagree"
        );
    }
    let vk = crate::srs::decode_verifying_key(Path::new("fuzz.vk"), data);
    set.is_ok() || vk.is_ok()
}

/// A PCE file: as it is, and with its two checksums made good (so that what lies behind them
/// is reached), loaded as the store loads one.
pub fn pce(data: &[u8]) -> bool {
    // Asked for what the file's own header names, so that the fuzzer's files can match.
    let load = |bytes: &[u8]| {
        let (id, hash) = crate::pce::file::claimed_identity(bytes);
        crate::pce::file::from_bytes(bytes, &id, &hash).is_ok()
    };
    let as_is = load(data);
    let mut sealed = data.to_vec();
    crate::pce::file::reseal(&mut sealed);
    let resealed = load(&sealed);
    assert!(
        !as_is || resealed,
        "a file that loads is refused once resealed"
    );
    as_is
}

/// A job's `state.json`: what a restart reads back. A record that parses is written and read
/// again to the same record.
pub fn job_record(data: &[u8]) -> bool {
    let Ok(record) = serde_json::from_slice::<JobRecord>(data) else {
        return false;
    };
    let written = serde_json::to_vec(&record).expect("a record serializes");
    let again: JobRecord = serde_json::from_slice(&written).expect("a written record parses");
    assert_eq!(
        (&again.id, again.kind, again.state, &again.request_sha256),
        (
            &record.id,
            record.kind,
            record.state,
            &record.request_sha256
        )
    );
    assert_eq!(again.proof, record.proof);
    crate::jobs::valid_id(&record.id)
}
