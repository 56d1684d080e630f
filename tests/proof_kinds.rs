//! SnapDeals, WindowPoSt and WinningPoSt end to end on real 2 KiB sectors: vanilla proofs made
//! with filecoin-proofs here, proved by cuzk (CLI and library), accepted by filecoin-proofs-api's
//! verifiers, byte-identical to bellperson with fixed r and s, and bad input refused by name.

mod common;

use std::collections::BTreeMap;
use std::path::Path;

use blstrs::Scalar;
use common::*;
use cuzk::circuits::request::{Base64, Bytes32};
use cuzk::circuits::samples::{
    post_proofs, randomness, seal, snap_request, window_post_request, winning_post_request,
    SealedSector,
};
use cuzk::circuits::{prover_id_from_miner, CircuitError, ProofRequest};
use ff::Field;
use filecoin_proofs_api::{PublicReplicaInfo, RegisteredPoStProof, SectorId};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

/// `n` freshly sealed 2 KiB sectors (numbers 1..=n) under `dir`.
fn sectors(dir: &Path, n: u64, committed_capacity: bool) -> Vec<SealedSector> {
    params_dir();
    (1..=n)
        .map(|i| {
            let d = dir.join(format!("sector-{i}"));
            std::fs::create_dir_all(&d).unwrap();
            seal(PROOF, MINER_ID, i, i, committed_capacity, &d).expect("sealing a 2 KiB sector")
        })
        .collect()
}

/// Proves a request through `cuzk prove KIND --input` and returns the proof bytes.
fn prove_cli(dir: &Path, request: &ProofRequest) -> Vec<u8> {
    let input = dir.join("request.json");
    std::fs::write(&input, serde_json::to_vec(request).unwrap()).unwrap();
    let out = dir.join("proof.bin");
    let _ = std::fs::remove_file(&out);
    let result = cuzk(&[
        "prove",
        request.kind().as_str(),
        "--input",
        input.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--params-dir",
        params_dir().to_str().unwrap(),
    ]);
    assert!(result.status.success(), "cuzk prove: {}", stderr(&result));
    std::fs::read(&out).unwrap()
}

fn replicas(
    sectors: &[SealedSector],
    proof: RegisteredPoStProof,
) -> BTreeMap<SectorId, PublicReplicaInfo> {
    sectors
        .iter()
        .map(|s| (s.sector_id, PublicReplicaInfo::new(proof, s.comm_r)))
        .collect()
}

#[test]
fn snap_deals_proof_verifies_with_filecoin_proofs() {
    let dir = tempfile::tempdir().unwrap();
    let cc = sectors(dir.path(), 1, true);
    let request = snap_request(&cc[0], 5, dir.path()).unwrap();
    let proof = prove_cli(dir.path(), &request);
    let ProofRequest::SnapDeals(r) = &request else {
        unreachable!()
    };
    let verify = |comm_d_new: [u8; 32]| {
        filecoin_proofs_api::update::verify_empty_sector_update_proof(
            r.registered_proof,
            &proof,
            r.comm_r_old.0,
            r.comm_r_new.0,
            comm_d_new,
        )
        .unwrap()
    };
    assert_eq!(proof.len(), 192, "one partition at 2 KiB");
    assert!(verify(r.comm_d_new.0), "verify_empty_sector_update_proof");
    let mut other = r.comm_d_new.0;
    other[0] ^= 1;
    assert!(!verify(other));
}

#[test]
fn window_post_partitions_merge_into_a_proof_verify_window_post_accepts() {
    let dir = tempfile::tempdir().unwrap();
    // Three sectors: two partitions of two at 2 KiB, the second one padded.
    let sectors = sectors(dir.path(), 3, false);
    let rand = randomness(11);
    let prover_id = prover_id_from_miner(MINER_ID);
    // v1.2 (today's WindowPoSt) and v1 (challenges depend on the partition's position).
    for proof_type in [
        RegisteredPoStProof::StackedDrgWindow2KiBV1_2,
        RegisteredPoStProof::StackedDrgWindow2KiBV1,
    ] {
        let mut merged = Vec::new();
        for k in 0..2 {
            let request = window_post_request(&sectors, proof_type, MINER_ID, rand, k).unwrap();
            let partition = prove_cli(dir.path(), &request);
            assert_eq!(partition.len(), 192);
            merged.extend(partition);
        }
        let ok = filecoin_proofs_api::post::verify_window_post(
            &rand,
            &[(proof_type, &merged)],
            &replicas(&sectors, proof_type),
            prover_id,
        )
        .unwrap();
        assert!(ok, "verify_window_post rejected {proof_type:?}");
        let mut other = rand;
        other[0] ^= 1;
        let wrong = filecoin_proofs_api::post::verify_window_post(
            &other,
            &[(proof_type, &merged)],
            &replicas(&sectors, proof_type),
            prover_id,
        )
        .unwrap();
        assert!(!wrong);
    }
}

/// A rehearsal SnapDeals update (old replica and new data that exist only at a few nodes, the
/// input the 32 GiB rehearsal synthesizes) at 2 KiB, where real parameters exist: cuzk proves it
/// and verify_empty_sector_update_proof accepts the proof for its three commitments.
#[test]
fn a_rehearsal_snap_deals_update_passes_its_verifier() {
    params_dir();
    let dir = tempfile::tempdir().unwrap();
    let request = cuzk::circuits::rehearse::snap_deals_request(2048, 4).unwrap();
    let ProofRequest::SnapDeals(r) = &request else {
        unreachable!()
    };
    let proof = prove_cli(dir.path(), &request);
    let verify = |comm_d_new: [u8; 32]| {
        filecoin_proofs_api::update::verify_empty_sector_update_proof(
            r.registered_proof,
            &proof,
            r.comm_r_old.0,
            r.comm_r_new.0,
            comm_d_new,
        )
        .unwrap()
    };
    assert_ne!(r.comm_r_old, r.comm_r_new);
    assert!(
        verify(r.comm_d_new.0),
        "a rehearsal update's proof was rejected"
    );
    let mut other = r.comm_d_new.0;
    other[0] ^= 1;
    assert!(!verify(other));
}

/// A rehearsal WindowPoSt partition (sectors that exist only where their challenges look, the
/// input the 32 GiB rehearsal synthesizes) at 2 KiB, where real parameters exist: cuzk proves
/// it and verify_window_post accepts the proof for the sectors' comm_r.
#[test]
fn a_rehearsal_window_post_partition_passes_verify_window_post() {
    params_dir();
    let dir = tempfile::tempdir().unwrap();
    let request = cuzk::circuits::rehearse::window_post_request(2048, MINER_ID, 0, 3).unwrap();
    let ProofRequest::WindowPost(r) = &request else {
        unreachable!()
    };
    let proof_type = r.registered_proof;
    let replicas: BTreeMap<_, _> = r
        .vanilla_proofs
        .iter()
        .map(|bytes| {
            let sector: filecoin_proofs::types::FallbackPoStSectorProof<
                filecoin_proofs::constants::SectorShape2KiB,
            > = bincode::deserialize(&bytes.0).unwrap();
            let comm_r: [u8; 32] = filecoin_hashers::Domain::into_bytes(&sector.comm_r)
                .try_into()
                .unwrap();
            (sector.sector_id, PublicReplicaInfo::new(proof_type, comm_r))
        })
        .collect();
    assert_eq!(replicas.len(), 2, "a full 2 KiB partition");
    let proof = prove_cli(dir.path(), &request);
    let verify = |rand: [u8; 32]| {
        filecoin_proofs_api::post::verify_window_post(
            &rand,
            &[(proof_type, &proof)],
            &replicas,
            prover_id_from_miner(MINER_ID),
        )
        .unwrap()
    };
    assert!(
        verify(r.randomness.0),
        "verify_window_post rejected a rehearsal partition"
    );
    let mut other = r.randomness.0;
    other[0] ^= 1;
    assert!(!verify(other));
}

#[test]
fn winning_post_proof_verifies_with_filecoin_proofs() {
    let dir = tempfile::tempdir().unwrap();
    let sectors = sectors(dir.path(), 2, false);
    let rand = randomness(12);
    let request = winning_post_request(&sectors, MINER_ID, rand).unwrap();
    let proof = prove_cli(dir.path(), &request);
    let (winning, _) = post_proofs(PROOF).unwrap();
    let ProofRequest::WinningPost(r) = &request else {
        unreachable!()
    };
    let challenged = bincode_sector(&r.vanilla_proofs[0]);
    let replicas: BTreeMap<_, _> = replicas(&sectors, winning)
        .into_iter()
        .filter(|(id, _)| *id == challenged)
        .collect();
    let verify = |rand: [u8; 32]| {
        filecoin_proofs_api::post::verify_winning_post(
            &rand,
            &proof,
            &replicas,
            prover_id_from_miner(MINER_ID),
        )
        .unwrap()
    };
    assert!(verify(rand), "verify_winning_post");
    let mut other = rand;
    other[1] ^= 1;
    assert!(!verify(other));
}

/// The sector id at the start of a bincode FallbackPoStSectorProof.
fn bincode_sector(bytes: &Base64) -> SectorId {
    SectorId::from(u64::from_le_bytes(bytes.0[..8].try_into().unwrap()))
}

#[test]
fn one_partition_of_each_kind_is_byte_identical_to_bellperson() {
    let dir = tempfile::tempdir().unwrap();
    let cc = sectors(&dir.path().join("cc"), 1, true);
    let plain = sectors(&dir.path().join("plain"), 3, false);
    let (_, window) = post_proofs(PROOF).unwrap();
    let requests = [
        snap_request(&cc[0], 6, dir.path()).unwrap(),
        window_post_request(&plain, window, MINER_ID, randomness(13), 1).unwrap(),
        winning_post_request(&plain, MINER_ID, randomness(14)).unwrap(),
    ];
    let mut rng = ChaCha8Rng::seed_from_u64(7);
    for request in requests {
        let kind = request.kind();
        // The parameter file is the one filecoin-proofs-api names for the proof type.
        let api_path = match &request {
            ProofRequest::WindowPost(r) => Some(r.registered_proof.cache_params_path().unwrap()),
            ProofRequest::WinningPost(r) => Some(r.registered_proof.cache_params_path().unwrap()),
            _ => None,
        };
        let job = request.clone().prepare_with_oracle().unwrap();
        if let Some(api_path) = api_path {
            assert_eq!(parameter_files(job.as_ref()).params, api_path, "{kind}");
        }
        let (r, s) = (Scalar::random(&mut rng), Scalar::random(&mut rng));
        let ours = assert_identical_to_bellperson(job.as_ref(), 0, r, s);
        let vk = verifying_key(job.as_ref());
        let bytes = job
            .finish(std::slice::from_ref(&ours), &vk)
            .unwrap_or_else(|e| panic!("{kind}: cuzk's verifier rejects the proof: {e}"));
        // What cuzk's verifier accepts, filecoin-proofs-api's accepts.
        let api_accepts = match &request {
            ProofRequest::SnapDeals(r) => {
                filecoin_proofs_api::update::verify_empty_sector_update_proof(
                    r.registered_proof,
                    &bytes,
                    r.comm_r_old.0,
                    r.comm_r_new.0,
                    r.comm_d_new.0,
                )
                .unwrap()
            }
            ProofRequest::WinningPost(r) => {
                let challenged = bincode_sector(&r.vanilla_proofs[0]);
                let replicas: BTreeMap<_, _> = replicas(&plain, r.registered_proof)
                    .into_iter()
                    .filter(|(id, _)| *id == challenged)
                    .collect();
                filecoin_proofs_api::post::verify_winning_post(
                    &r.randomness.0,
                    &bytes,
                    &replicas,
                    prover_id_from_miner(MINER_ID),
                )
                .unwrap()
            }
            // One partition of several: verify_window_post needs them all (the merging test).
            _ => true,
        };
        assert!(api_accepts, "{kind}: filecoin-proofs-api rejects the proof");
        // A proof that is not the circuit's is refused.
        let mut bad = ours;
        bad.a = bad.c;
        assert!(
            matches!(job.finish(&[bad], &vk), Err(CircuitError::Verification(_))),
            "{kind}: a bad proof passed"
        );
    }
}

/// The error of preparing a request (JSON-level edits applied first).
fn refusal(request: &ProofRequest, edit: impl FnOnce(&mut serde_json::Value)) -> String {
    let mut value = serde_json::to_value(request).unwrap();
    edit(&mut value);
    let result = ProofRequest::from_json(&serde_json::to_vec(&value).unwrap())
        .and_then(|r| r.prepare().map(|_| ()));
    match result {
        Ok(()) => panic!("accepted: {}", &value.to_string()[..200]),
        Err(e @ CircuitError::InvalidInput { .. }) => e.to_string(),
        Err(e) => panic!("expected an input error, got: {e}"),
    }
}

/// An edit of a request's JSON.
type Edit = Box<dyn FnOnce(&mut serde_json::Value)>;

fn garbage() -> serde_json::Value {
    serde_json::to_value(Base64(b"\x05\x00\x00\x00garbage bincode".to_vec())).unwrap()
}

fn hex32(bytes: [u8; 32]) -> serde_json::Value {
    serde_json::to_value(Bytes32(bytes)).unwrap()
}

fn assert_refused(request: &ProofRequest, cases: Vec<(&str, Edit)>) {
    for (expected, edit) in cases {
        let err = refusal(request, edit);
        assert!(err.contains(expected), "expected {expected:?} in: {err}");
    }
}

#[test]
fn bad_snap_deals_input_is_refused_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let cc = sectors(dir.path(), 1, true);
    let request = snap_request(&cc[0], 5, dir.path()).unwrap();
    request
        .clone()
        .prepare()
        .expect("the unedited request is good");
    let ProofRequest::SnapDeals(r) = &request else {
        unreachable!()
    };
    let mut other_comm = r.comm_r_new.0;
    other_comm[0] ^= 1;
    assert_refused(
        &request,
        vec![
            (
                "invalid vanilla_proofs[0]: not a bincode PartitionProof",
                Box::new(|v| v["vanilla_proofs"][0] = garbage()),
            ),
            (
                "invalid vanilla_proofs: 2 partition proofs",
                Box::new(|v| {
                    let p = v["vanilla_proofs"][0].clone();
                    v["vanilla_proofs"].as_array_mut().unwrap().push(p);
                }),
            ),
            (
                "invalid vanilla_proofs[0]: does not verify against comm_r_old, comm_r_new",
                Box::new(move |v| v["comm_r_new"] = hex32(other_comm)),
            ),
            (
                "invalid comm_r_old",
                Box::new(|v| v["comm_r_old"] = serde_json::json!("abcd")),
            ),
            (
                "invalid comm_d_new: 31 bytes",
                Box::new(|v| v["comm_d_new"] = serde_json::json!(vec![1u8; 31])),
            ),
            (
                "invalid comm_r_old: not a BLS12-381 field element",
                Box::new(|v| v["comm_r_old"] = hex32([0xff; 32])),
            ),
            (
                "invalid registered_proof",
                Box::new(|v| v["registered_proof"] = serde_json::json!("StackedDrg2KiBV9")),
            ),
            // Another size's proof type: the 2 KiB vanilla proof does not decode as, or fit, it.
            (
                "invalid vanilla_proofs",
                Box::new(|v| v["registered_proof"] = serde_json::json!("StackedDrg8MiBV1")),
            ),
        ],
    );
}

#[test]
fn bad_window_post_input_is_refused_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let sectors = sectors(dir.path(), 3, false);
    let (_, window) = post_proofs(PROOF).unwrap();
    let request = window_post_request(&sectors, window, MINER_ID, randomness(21), 0).unwrap();
    request
        .clone()
        .prepare()
        .expect("the unedited request is good");
    let other = hex32(randomness(22));
    assert_refused(
        &request,
        vec![
            ("invalid vanilla_proofs[1]: not a bincode FallbackPoStSectorProof", Box::new(|v| v["vanilla_proofs"][1] = garbage())),
            ("invalid vanilla_proofs: do not verify for this proof type, randomness", Box::new(move |v| v["randomness"] = other)),
            ("invalid vanilla_proofs: 3 sectors; a StackedDrgWindow2KiBV1_2 partition holds at most 2", Box::new(|v| {
                let p = v["vanilla_proofs"][0].clone();
                v["vanilla_proofs"].as_array_mut().unwrap().push(p);
            })),
            ("invalid vanilla_proofs: is empty", Box::new(|v| v["vanilla_proofs"] = serde_json::json!([]))),
            // verify_window_post takes sectors in ascending order: any other order would prove
            // and self-verify, then fail on chain.
            ("invalid vanilla_proofs[1]: sector 1 follows sector 2: a partition's sectors go in ascending order", Box::new(|v| v["vanilla_proofs"].as_array_mut().unwrap().swap(0, 1))),
            ("invalid vanilla_proofs[1]: sector 1 follows sector 1", Box::new(|v| {
                let p = v["vanilla_proofs"][0].clone();
                v["vanilla_proofs"][1] = p;
            })),
            ("invalid registered_proof: StackedDrgWinning2KiBV1 is not a WindowPoSt proof", Box::new(|v| v["registered_proof"] = serde_json::json!("StackedDrgWinning2KiBV1"))),
            ("invalid vanilla_proofs", Box::new(|v| v["registered_proof"] = serde_json::json!("StackedDrgWindow32GiBV1_2"))),
            ("invalid randomness: not a BLS12-381 field element", Box::new(|v| v["randomness"] = hex32([0xff; 32]))),
            ("invalid partition_index", Box::new(|v| v["partition_index"] = serde_json::json!(-1))),
            ("invalid partition_index: 5000 is beyond", Box::new(|v| v["partition_index"] = serde_json::json!(5000))),
            ("invalid prover_id: give either miner_id or prover_id", Box::new(|v| v["prover_id"] = hex32([1; 32]))),
            ("invalid miner_id: missing", Box::new(|v| {
                v.as_object_mut().unwrap().remove("miner_id");
            })),
        ],
    );
}

#[test]
fn bad_winning_post_input_is_refused_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let sectors = sectors(dir.path(), 2, false);
    let request = winning_post_request(&sectors, MINER_ID, randomness(31)).unwrap();
    request
        .clone()
        .prepare()
        .expect("the unedited request is good");
    let other = hex32(randomness(32));
    assert_refused(
        &request,
        vec![
            (
                "invalid vanilla_proofs[0]: not a bincode FallbackPoStSectorProof",
                Box::new(|v| v["vanilla_proofs"][0] = garbage()),
            ),
            (
                "invalid vanilla_proofs: do not verify for this proof type and randomness",
                Box::new(move |v| v["randomness"] = other),
            ),
            (
                "invalid vanilla_proofs: 2 sectors; a WinningPoSt proves 1",
                Box::new(|v| {
                    let p = v["vanilla_proofs"][0].clone();
                    v["vanilla_proofs"].as_array_mut().unwrap().push(p);
                }),
            ),
            (
                "invalid registered_proof: StackedDrgWindow2KiBV1_2 is not a WinningPoSt proof",
                Box::new(|v| v["registered_proof"] = serde_json::json!("StackedDrgWindow2KiBV1_2")),
            ),
            (
                "invalid randomness: neither 64 hex digits nor base64",
                Box::new(|v| v["randomness"] = serde_json::json!("00")),
            ),
            (
                "invalid kind",
                Box::new(|v| v["kind"] = serde_json::json!("winning-posts")),
            ),
        ],
    );
}

#[test]
fn cli_refuses_bad_input_of_each_kind_in_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        (
            "snap-deals",
            serde_json::json!({"registered_proof": "StackedDrg2KiBV1",
            "vanilla_proofs": [garbage()], "comm_r_old": hex32([1; 32]),
            "comm_r_new": hex32([2; 32]), "comm_d_new": hex32([3; 32])}),
            "invalid vanilla_proofs[0]",
        ),
        (
            "window-post",
            serde_json::json!({"registered_proof": "StackedDrgWindow2KiBV1_2",
            "randomness": hex32([1; 32]), "miner_id": 1000, "partition_index": 0,
            "vanilla_proofs": [garbage()]}),
            "invalid vanilla_proofs[0]",
        ),
        (
            "winning-post",
            serde_json::json!({"registered_proof": "StackedDrgWinning2KiBV1",
            "randomness": hex32([1; 32]), "miner_id": 1000, "vanilla_proofs": "nope"}),
            "invalid vanilla_proofs",
        ),
        (
            "porep-c2",
            serde_json::json!({"c1": "bm90IGpzb24=", "miner_id": 1000,
            "sector_number": 1}),
            "invalid c1",
        ),
        // A request file of another kind than asked for.
        (
            "winning-post",
            serde_json::json!({"kind": "window-post"}),
            "is a \"window-post\" request, not winning-post",
        ),
    ];
    for (kind, body, expected) in cases {
        let input = dir.path().join("request.json");
        std::fs::write(&input, serde_json::to_vec(&body).unwrap()).unwrap();
        let out = dir.path().join("proof.bin");
        let result = cuzk(&[
            "prove",
            kind,
            "--input",
            input.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ]);
        assert!(!result.status.success());
        let err = stderr(&result);
        assert!(
            err.contains(expected),
            "{kind}: expected {expected:?} in: {err}"
        );
        assert_eq!(
            err.trim().lines().count(),
            1,
            "one line for the user: {err}"
        );
        assert!(!err.contains("panicked"), "{err}");
        assert!(!out.exists());
    }
}

/// `cuzk bench pipeline` of `args` (a CPU engine, 2 KiB, the test parameters): its report.
fn pipeline(args: &[&str]) -> serde_json::Value {
    let pce = tempfile::tempdir().unwrap();
    let params = params_dir();
    let mut all = vec![
        "bench",
        "pipeline",
        "--backend",
        "cpu",
        "--params-dir",
        params.to_str().unwrap(),
        "--pce-dir",
        pce.path().to_str().unwrap(),
    ];
    all.extend(args);
    let out = cuzk(&all);
    assert!(
        out.status.success(),
        "bench pipeline {args:?}: {}",
        stderr(&out)
    );
    serde_json::from_slice(&out.stdout).expect("a JSON report")
}

/// A 2 KiB WindowPoSt through the engine: its partition (with the fixed working allowance) is
/// larger than its parameter set, whose hold therefore covers one partition (the dispatcher
/// leaves room for one more set, so every job holding a set can start a partition): admitted,
/// proved, verified. Then rehearsed (`--rehearse`: rehearsal sectors, a parameter set of random
/// points standing for the file): proved through the same engine, and ended unverified.
#[test]
fn window_post_goes_through_the_engine_real_and_rehearsed() {
    let real = pipeline(&["--kind", "window-post", "--jobs", "2"]);
    assert_eq!(
        (real["done"].as_u64(), real["verified"].as_u64()),
        (Some(2), Some(2)),
        "{real}"
    );
    assert_eq!(real["rehearsal"], false);
    let rehearsed = pipeline(&["--kind", "window-post", "--jobs", "2", "--rehearse"]);
    assert_eq!(
        (rehearsed["done"].as_u64(), rehearsed["verified"].as_u64()),
        (Some(2), Some(0)),
        "{rehearsed}"
    );
    assert_eq!(rehearsed["rehearsal"], true);
}
