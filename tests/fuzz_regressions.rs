//! The fuzz targets' entry points (`cuzk::fuzz`) without the fuzzer: every input the fuzzer
//! ever crashed on (fuzz/regressions/TARGET/) replayed, and a valid input of every target
//! accepted all the way (which is what makes those inputs good seeds: with CUZK_FUZZ_SEEDS set
//! to a folder, they are written there, one folder per target, for `.ci/fuzz`).

use std::path::{Path, PathBuf};

use cuzk::circuits::rehearse;
use cuzk::circuits::request::C1Input;
use cuzk::circuits::ProofRequest;
use cuzk::fuzz::{self, TARGETS};

const KIB2: u64 = 2048;

fn regressions() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/regressions")
}

#[test]
fn every_input_a_fuzz_target_crashed_on_is_replayed_without_a_panic() {
    let mut replayed = 0;
    for (name, target) in TARGETS {
        let dir = regressions().join(name);
        assert!(dir.is_dir(), "{} is missing", dir.display());
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path
                .file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with('.'))
            {
                continue;
            }
            let bytes = std::fs::read(&path).unwrap();
            let outcome = std::panic::catch_unwind(|| target(&bytes));
            assert!(outcome.is_ok(), "{name}: {} panics", path.display());
            replayed += 1;
        }
    }
    eprintln!("{replayed} saved inputs replayed");
}

/// One valid input of each target (a 2 KiB rehearsal sector's request, C1 output and vanilla
/// proofs, a parameter file and a PCE of a small circuit, a job record).
fn seeds() -> Vec<(&'static str, &'static str, Vec<u8>)> {
    let mut seeds = Vec::new();
    let porep = rehearse::porep_request(KIB2, 1000, 1, 7).unwrap();
    let ProofRequest::PorepC2(ref c2) = porep else {
        unreachable!()
    };
    let C1Input::Json(ref c1) = c2.c1 else {
        panic!("a rehearsal's C1 output is JSON")
    };
    seeds.push(("c1", "porep-2k.json", c1.get().as_bytes().to_vec()));
    for (name, request) in [
        ("porep-2k.json", porep.clone()),
        (
            "snap-2k.json",
            rehearse::snap_deals_request(KIB2, 1).unwrap(),
        ),
        (
            "window-2k.json",
            rehearse::window_post_request(KIB2, 1000, 0, 1).unwrap(),
        ),
    ] {
        let mut body = serde_json::to_value(&request).unwrap();
        body["id"] = "seed-1".into();
        seeds.push(("request", name, serde_json::to_vec(&body).unwrap()));
        let input = match &request {
            ProofRequest::SnapDeals(r) => {
                let proofs: Vec<&[u8]> = r.vanilla_proofs.iter().map(|p| &p.0[..]).collect();
                let context = [r.comm_r_old.0, r.comm_r_new.0, r.comm_d_new.0];
                fuzz::vanilla_input(0, 0, context, &proofs)
            }
            ProofRequest::WindowPost(r) => {
                let proofs: Vec<&[u8]> = r.vanilla_proofs.iter().map(|p| &p.0[..]).collect();
                let prover = cuzk::circuits::prover_id_from_miner(r.miner_id.unwrap());
                fuzz::vanilla_input(1, 0, [r.randomness.0, prover, [0; 32]], &proofs)
            }
            _ => continue,
        };
        seeds.push(("vanilla", name, input));
    }

    use bellperson::groth16::generate_random_parameters;
    let circuit = cuzk::synth::synthetic::SyntheticCircuit::new(2, 40, 1);
    let params =
        generate_random_parameters::<blstrs::Bls12, _, _>(circuit.clone(), &mut rand::thread_rng())
            .unwrap();
    let mut bytes = Vec::new();
    params.write(&mut bytes).unwrap();
    seeds.push(("params", "synthetic.params", bytes));
    let mut bytes = Vec::new();
    params.vk.write(&mut bytes).unwrap();
    seeds.push(("params", "synthetic.vk", bytes));

    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("syn.pce");
    let pce = cuzk::pce::record(circuit).unwrap();
    cuzk::pce::file::write(&path, "syn", &[7; 32], &pce).unwrap();
    seeds.push(("pce", "synthetic.pce", std::fs::read(&path).unwrap()));

    let mut record = cuzk::jobs::JobRecord::new(
        "seed-1",
        cuzk::circuits::ProofKind::PorepC2,
        "ab".repeat(32),
    );
    seeds.push((
        "job_record",
        "queued.json",
        serde_json::to_vec(&record).unwrap(),
    ));
    record.state = cuzk::jobs::JobState::Done;
    record.proof = Some(cuzk::jobs::ProofDigest::of(&[1; 1920]));
    record.timings.total_s = Some(12.5);
    seeds.push((
        "job_record",
        "done.json",
        serde_json::to_vec(&record).unwrap(),
    ));
    seeds
}

#[test]
fn a_valid_input_of_every_fuzz_target_is_accepted_all_the_way() {
    let seeds = seeds();
    let out = std::env::var_os("CUZK_FUZZ_SEEDS").map(PathBuf::from);
    for (name, target) in TARGETS {
        let mine: Vec<_> = seeds.iter().filter(|(t, ..)| *t == name).collect();
        assert!(!mine.is_empty(), "no seed for {name}");
        for (_, file, bytes) in mine {
            assert!(target(bytes), "{name}: the valid {file} is refused");
            if let Some(out) = &out {
                std::fs::create_dir_all(out.join(name)).unwrap();
                std::fs::write(out.join(name).join(file), bytes).unwrap();
            }
        }
    }
    // The same inputs a byte short are refused (what is checked is checked).
    for (name, file, bytes) in &seeds {
        let target = TARGETS.iter().find(|(t, _)| t == name).unwrap().1;
        assert!(
            !target(&bytes[..bytes.len() - 1]),
            "{name}: {file} a byte short is accepted"
        );
    }
}
