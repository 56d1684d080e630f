//! PoRep C2 end to end on a real 2 KiB sector: sealed with filecoin-proofs, proved by cuzk,
//! checked by filecoin-proofs' verify_seal and against bellperson's prover byte for byte.

mod common;

use base64::Engine as _;
use blstrs::Scalar;
use common::*;
use cuzk::circuits::oracle::Oracle;
use cuzk::circuits::porep::PoRepC2;
use cuzk::circuits::{prover_id_from_miner, CircuitError, ProofJob};
use ff::Field;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

fn write_json(dir: &std::path::Path, name: &str, value: &serde_json::Value) -> String {
    let path = dir.join(name);
    std::fs::write(&path, serde_json::to_vec(value).unwrap()).unwrap();
    path.to_str().unwrap().to_owned()
}

fn prove_cli(c1_path: &str, out: &str, miner: u64) -> std::process::Output {
    let params = params_dir();
    cuzk(&[
        "prove",
        "porep-c2",
        "--c1",
        c1_path,
        "--miner-id",
        &miner.to_string(),
        "--sector-number",
        &SECTOR_NUMBER.to_string(),
        "--out",
        out,
        "--params-dir",
        params.to_str().unwrap(),
    ])
}

#[test]
fn cli_proves_curio_envelope_and_verify_seal_accepts_it() {
    let c1 = sealed_c1();
    let dir = tempfile::tempdir().unwrap();
    let inner = serde_json::to_vec(&c1).unwrap();
    let envelope = serde_json::json!({
        "SectorNum": SECTOR_NUMBER,
        "Phase1Out": base64::engine::general_purpose::STANDARD.encode(inner),
        "SectorSize": 2048,
    });
    let c1_path = write_json(dir.path(), "c1.json", &envelope);
    let out_path = dir.path().join("proof.bin");
    let out = prove_cli(&c1_path, out_path.to_str().unwrap(), MINER_ID);
    assert!(out.status.success(), "cuzk prove failed: {}", stderr(&out));

    let proof = std::fs::read(&out_path).unwrap();
    assert_eq!(proof.len(), 192);
    let verify_with_seed = |seed: [u8; 32]| verify_sealed_porep(&proof, seed);
    assert!(
        verify_with_seed(c1.seed),
        "verify_seal rejected cuzk's proof"
    );

    // The same proof does not verify for another seed.
    let mut wrong_seed = c1.seed;
    wrong_seed[0] ^= 1;
    assert!(!verify_with_seed(wrong_seed));
}

/// A rehearsal sector (a committed-capacity sector that exists only where its challenges look,
/// the input the 32 GiB rehearsal proves) at 2 KiB, where real parameters exist: cuzk proves
/// it, and filecoin-proofs' verify_seal accepts the proof. What the 32 GiB rehearsal cannot
/// show (no real parameters at that size), this shows of the same construction.
#[test]
fn a_rehearsal_sectors_proof_passes_verify_seal() {
    let prover_id = prover_id_from_miner(MINER_ID);
    let c1 =
        cuzk::circuits::rehearse::porep_c1(PROOF, prover_id, SECTOR_NUMBER.into(), 11).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let c1_path = write_json(dir.path(), "c1.json", &serde_json::to_value(&c1).unwrap());
    let out_path = dir.path().join("proof.bin");
    let out = prove_cli(&c1_path, out_path.to_str().unwrap(), MINER_ID);
    assert!(out.status.success(), "cuzk prove failed: {}", stderr(&out));
    let proof = std::fs::read(&out_path).unwrap();
    let verify = |seed: [u8; 32]| {
        filecoin_proofs_api::seal::verify_seal(
            c1.registered_proof,
            c1.comm_r,
            c1.comm_d,
            prover_id,
            SECTOR_NUMBER.into(),
            c1.ticket,
            seed,
            &proof,
        )
        .unwrap()
    };
    assert!(
        verify(c1.seed),
        "verify_seal rejected a rehearsal sector's proof"
    );
    let mut wrong_seed = c1.seed;
    wrong_seed[0] ^= 1;
    assert!(!verify(wrong_seed));
}

#[test]
fn c1_with_wrong_seed_is_a_clear_error_and_no_proof() {
    let mut c1 = serde_json::to_value(sealed_c1()).unwrap();
    let seed = c1["seed"].as_array_mut().unwrap();
    seed[0] = serde_json::json!((seed[0].as_u64().unwrap() + 1) % 256);
    let dir = tempfile::tempdir().unwrap();
    let c1_path = write_json(dir.path(), "c1.json", &c1);
    let out_path = dir.path().join("proof.bin");
    let out = prove_cli(&c1_path, out_path.to_str().unwrap(), MINER_ID);
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(err.contains("do not match the seed"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    assert!(!out_path.exists());
}

#[test]
fn corrupted_or_mismatched_c1_is_a_clear_error() {
    let c1 = serde_json::to_vec(&sealed_c1()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let out_path = dir.path().join("proof.bin");

    let truncated = dir.path().join("truncated.json");
    std::fs::write(&truncated, &c1[..c1.len() / 2]).unwrap();
    let whole = dir.path().join("c1.json");
    std::fs::write(&whole, &c1).unwrap();

    // A node deep in the first vanilla proof, changed: the Merkle checks fail.
    let mut tampered = serde_json::to_value(sealed_c1()).unwrap();
    let node = first_node(&mut tampered["vanilla_proofs"]).expect("a 32-byte node in the proofs");
    node[0] = serde_json::json!((node[0].as_u64().unwrap() + 1) % 256);
    let tampered = write_json(dir.path(), "tampered.json", &tampered);
    let tampered = std::path::PathBuf::from(tampered);

    let cases = [
        (&truncated, MINER_ID, "invalid c1"),
        (&whole, MINER_ID + 1, "invalid replica_id"),
        (&tampered, MINER_ID, "do not satisfy the circuit"),
    ];
    for (c1_path, miner, expected) in cases {
        let out = prove_cli(c1_path.to_str().unwrap(), out_path.to_str().unwrap(), miner);
        assert!(!out.status.success());
        let err = stderr(&out);
        assert!(err.contains(expected), "{err}");
        assert_eq!(
            err.trim().lines().count(),
            1,
            "one line for the user: {err}"
        );
        assert!(!err.contains("panicked"), "{err}");
    }
    assert!(!out_path.exists());
}

/// The first array of 32 bytes at depth, found depth-first.
fn first_node(v: &mut serde_json::Value) -> Option<&mut Vec<serde_json::Value>> {
    let is_node =
        |items: &Vec<serde_json::Value>| items.len() == 32 && items.iter().all(|x| x.is_u64());
    let node = matches!(v, serde_json::Value::Array(items) if is_node(items));
    match v {
        serde_json::Value::Array(items) => {
            if node {
                Some(items)
            } else {
                items.iter_mut().find_map(first_node)
            }
        }
        serde_json::Value::Object(map) => map.values_mut().find_map(first_node),
        _ => None,
    }
}

#[test]
fn porep_partition_is_byte_identical_to_bellperson() {
    let job = PoRepC2::new(
        sealed_c1(),
        prover_id_from_miner(MINER_ID),
        SECTOR_NUMBER.into(),
    )
    .unwrap();
    // The parameter file is the one filecoin-proofs names for the proof type.
    assert_eq!(
        parameter_files(&job).params,
        PROOF.cache_params_path().unwrap()
    );
    let mut rng = ChaCha8Rng::seed_from_u64(99);
    let (r, s) = (Scalar::random(&mut rng), Scalar::random(&mut rng));

    let synth = job.synthesize(0).unwrap();
    assert_eq!(synth.unsatisfied_rows(), 0);
    assert_eq!(synth.num_constraints(), 2_687_961);
    drop(synth);
    let ours = assert_identical_to_bellperson(&job, 0, r, s);
    let vk = verifying_key(&job);
    let bytes = job
        .finish(std::slice::from_ref(&ours), &vk)
        .expect("the proof verifies");
    // What cuzk accepts, filecoin-proofs' verify_seal accepts.
    assert!(verify_sealed_porep(&bytes, sealed_c1().seed));
    // And a proof that is not the circuit's is refused.
    let mut bad = ours;
    bad.a = bad.c;
    assert!(matches!(
        job.finish(&[bad], &vk),
        Err(CircuitError::Verification(_))
    ));
    // bellperson's own proof passes too: the oracle proves the same statement.
    let params = bellperson::groth16::Parameters::read(
        std::io::BufReader::new(std::fs::File::open(parameter_files(&job).params).unwrap()),
        false,
    )
    .unwrap();
    let (r2, s2) = (Scalar::random(&mut rng), Scalar::random(&mut rng));
    let theirs = job.bellperson_proof(0, &params, r2, s2).unwrap();
    job.finish(&[theirs], &vk)
        .expect("bellperson's proof verifies");
}
