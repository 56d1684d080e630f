//! Shared by the integration tests: the parameter cache, a sealed 2 KiB sector, the binary.
#![allow(dead_code)]

pub mod server;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::{Command, Output};
use std::sync::OnceLock;

use cuzk::circuits::samples::{post_proofs, randomness, seal, winning_post_request, SealedSector};
use cuzk::circuits::{prover_id_from_miner, ProofRequest};
use filecoin_proofs_api::seal::SealCommitPhase1Output;
use filecoin_proofs_api::{PublicReplicaInfo, RegisteredSealProof, SectorId};
use serde_json::{json, Value};

pub const MINER_ID: u64 = 1000;
pub const SECTOR_NUMBER: u64 = 7;
pub const PROOF: RegisteredSealProof = RegisteredSealProof::StackedDrg2KiBV1_1;

/// The test parameter cache, kept between runs (CUZK_TEST_PARAMS, default
/// /var/tmp/cuzk-test-params). Missing 2 KiB parameters of every proof kind are made once
/// through `cuzk params generate` (about 21 minutes on 2 cores: PoRep 13, SnapDeals 7, both
/// PoSt 1; none when warm). Also points this process's filecoin-proofs at it, for the verifiers
/// of filecoin-proofs-api the tests hold cuzk's proofs against (cuzk's own calls are given the
/// directory).
pub fn params_dir() -> PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = std::env::var_os("CUZK_TEST_PARAMS")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from("/var/tmp/cuzk-test-params"));
        for kind in ["porep-c2", "snap-deals", "window-post", "winning-post"] {
            let out = cuzk(&[
                "params",
                "generate",
                "--kind",
                kind,
                "--sector-size",
                "2KiB",
                "--dir",
                dir.to_str().unwrap(),
            ]);
            assert!(
                out.status.success(),
                "params generate --kind {kind} failed: {}",
                stderr(&out)
            );
        }
        std::env::set_var("FIL_PROOFS_PARAMETER_CACHE", &dir);
        dir
    })
    .clone()
}

/// A 2 KiB sector sealed once per test process with filecoin-proofs (PC1, PC2, C1).
pub fn sealed_c1() -> SealCommitPhase1Output {
    static C1: OnceLock<SealCommitPhase1Output> = OnceLock::new();
    params_dir();
    C1.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        cuzk::circuits::samples::seal_sector(PROOF, MINER_ID, SECTOR_NUMBER, 42, dir.path())
            .expect("sealing a 2 KiB sector")
    })
    .clone()
}

/// The files of `job`'s parameter set in the test cache.
pub fn parameter_files(job: &dyn cuzk::circuits::ProofJob) -> cuzk::circuits::ParameterFiles {
    cuzk::circuits::ParameterFiles::new(&params_dir(), &job.parameter_set())
}

/// The verifying key of `job`'s parameter set.
pub fn verifying_key(
    job: &dyn cuzk::circuits::ProofJob,
) -> bellperson::groth16::VerifyingKey<blstrs::Bls12> {
    cuzk::srs::read_verifying_key(&parameter_files(job).vk).unwrap()
}

pub fn cuzk(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_cuzk"))
        .args(args)
        .env("CUZK_LOG", "warn")
        .output()
        .expect("running cuzk")
}

pub fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Proves partition `k` of `job` with cuzk's CPU backend and with bellperson, both with r and s,
/// asserts the two proofs are the same bytes, and returns ours. The PCE path (matrices recorded
/// from the blank circuit into a fresh store) must give the same synthesized proof, value for
/// value, and the same proof bytes.
pub use cuzk::circuits::Through;

pub fn assert_identical_to_bellperson(
    job: &dyn cuzk::circuits::oracle::OracleJob,
    k: usize,
    r: blstrs::Scalar,
    s: blstrs::Scalar,
) -> cuzk::groth16::Proof<blstrs::Bls12> {
    let kind = job.kind();
    let path = parameter_files(job).params;
    let synth = job.synthesize(k).unwrap();
    let pce_dir = tempfile::tempdir().unwrap();
    let store = cuzk::pce::PceStore::open(pce_dir.path()).unwrap();
    let (pce, _) = job.circuit_id().obtain_pce(&store, false).unwrap();
    let pce = std::sync::Arc::new(pce);
    let (fast, synth_path) = job
        .synthesize_with(k, Through::Pce(&pce), &cuzk::synth::Heap)
        .unwrap();
    assert_eq!(synth_path, cuzk::synth::SynthPath::Pce, "{kind}");
    let fast = fast.into_full();
    assert!(
        fast == synth,
        "{kind}: the PCE path made another synthesized proof"
    );
    // The witness alone, a, b and c computed by the prover (the CPU's: expanded on the host).
    let shared: std::sync::Arc<dyn cuzk::pce::HoldsPce> = pce;
    let (compact, synth_path) = job
        .synthesize_with(k, Through::Compact(&shared), &cuzk::synth::Heap)
        .unwrap();
    drop(shared);
    assert_eq!(synth_path, cuzk::synth::SynthPath::Compact, "{kind}");
    assert!(
        compact.heap_bytes() * 4 < synth.heap_bytes(),
        "{kind}: a compact witness of {} bytes beside {} of a, b, c and aux",
        compact.heap_bytes(),
        synth.heap_bytes()
    );
    let srs = cuzk::srs::Srs::read(&path).unwrap();
    let backend = cuzk::groth16::CpuBackend;
    let (ours, _) = cuzk::groth16::prove(&backend, &srs, synth, r, s).unwrap();
    let (through_pce, _) = cuzk::groth16::prove(&backend, &srs, fast, r, s).unwrap();
    let (through_compact, _) = cuzk::groth16::prove(&backend, &srs, compact, r, s).unwrap();
    drop(srs);
    let file = std::io::BufReader::new(std::fs::File::open(&path).unwrap());
    let params = bellperson::groth16::Parameters::read(file, false).unwrap();
    let theirs = job.bellperson_proof(k, &params, r, s).unwrap();
    let bytes = |p: &cuzk::groth16::Proof<blstrs::Bls12>| {
        let mut v = Vec::new();
        p.write(&mut v).unwrap();
        v
    };
    assert_eq!(
        bytes(&ours),
        bytes(&theirs),
        "{kind}: not byte-identical to bellperson"
    );
    assert_eq!(
        bytes(&through_pce),
        bytes(&ours),
        "{kind}: the PCE path proved other bytes"
    );
    assert_eq!(
        bytes(&through_compact),
        bytes(&ours),
        "{kind}: the compact witness proved other bytes"
    );
    ours
}

/// filecoin-proofs' verify_seal on a proof of the sealed 2 KiB sector, with `seed`.
pub fn verify_sealed_porep(proof: &[u8], seed: [u8; 32]) -> bool {
    let c1 = sealed_c1();
    filecoin_proofs_api::seal::verify_seal(
        c1.registered_proof,
        c1.comm_r,
        c1.comm_d,
        cuzk::circuits::prover_id_from_miner(MINER_ID),
        SECTOR_NUMBER.into(),
        c1.ticket,
        seed,
        proof,
    )
    .unwrap()
}

/// Two sealed sectors and a WinningPoSt request over them, with its verifier.
pub struct Winning {
    _dir: tempfile::TempDir,
    pub sectors: Vec<SealedSector>,
    pub request: ProofRequest,
    pub randomness: [u8; 32],
}

pub fn winning() -> Winning {
    params_dir();
    let dir = tempfile::tempdir().unwrap();
    let sectors: Vec<_> = (1..=2)
        .map(|i| {
            let d = dir.path().join(format!("s{i}"));
            std::fs::create_dir_all(&d).unwrap();
            seal(PROOF, MINER_ID, i, i, false, &d).unwrap()
        })
        .collect();
    let rand = randomness(40);
    let request = winning_post_request(&sectors, MINER_ID, rand).unwrap();
    Winning {
        _dir: dir,
        sectors,
        request,
        randomness: rand,
    }
}

impl Winning {
    pub fn body(&self, id: &str) -> Value {
        let mut v = serde_json::to_value(&self.request).unwrap();
        v["id"] = json!(id);
        v
    }

    pub fn verify(&self, proof: &[u8]) {
        let (winning, _) = post_proofs(PROOF).unwrap();
        let ProofRequest::WinningPost(r) = &self.request else {
            unreachable!()
        };
        let challenged = SectorId::from(u64::from_le_bytes(
            r.vanilla_proofs[0].0[..8].try_into().unwrap(),
        ));
        let replicas: BTreeMap<_, _> = self
            .sectors
            .iter()
            .filter(|s| s.sector_id == challenged)
            .map(|s| (s.sector_id, PublicReplicaInfo::new(winning, s.comm_r)))
            .collect();
        let ok = filecoin_proofs_api::post::verify_winning_post(
            &self.randomness,
            proof,
            &replicas,
            prover_id_from_miner(MINER_ID),
        )
        .unwrap();
        assert!(ok, "verify_winning_post rejected the served proof");
    }
}
