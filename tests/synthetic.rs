//! The prover against bellperson on synthetic circuits: no Filecoin parameters needed.

use bellperson::groth16::{
    create_proof_batch, generate_random_parameters, prepare_verifying_key, verify_proof, Parameters,
};
use blstrs::{Bls12, Scalar};
use cuzk::groth16::{prove, prove_start, CpuBackend, ProveError};
use cuzk::srs::{Srs, SrsError};
use cuzk::synth::synthesize;
use cuzk::synth::synthetic::SyntheticCircuit;
use ff::Field;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

fn params_file(
    circuit: &SyntheticCircuit,
    dir: &std::path::Path,
) -> (Parameters<Bls12>, std::path::PathBuf) {
    let mut rng = ChaCha8Rng::seed_from_u64(5);
    let params = generate_random_parameters::<Bls12, _, _>(circuit.clone(), &mut rng).unwrap();
    let path = dir.join("synthetic.params");
    let mut bytes = Vec::new();
    params.write(&mut bytes).unwrap();
    std::fs::write(&path, bytes).unwrap();
    (params, path)
}

fn proof_bytes(p: &bellperson::groth16::Proof<Bls12>) -> Vec<u8> {
    let mut v = Vec::new();
    p.write(&mut v).unwrap();
    v
}

#[test]
fn synthetic_proofs_are_byte_identical_to_bellperson_and_verify() {
    let dir = tempfile::tempdir().unwrap();
    for (inputs, constraints, seed) in [(1usize, 10usize, 1u64), (3, 1000, 2), (7, 5000, 3)] {
        let circuit = SyntheticCircuit::new(inputs, constraints, seed);
        let (params, path) = params_file(&circuit, dir.path());
        let srs = Srs::read(&path).unwrap();
        assert_eq!(srs.a, *params.a);
        assert_eq!(srs.b_g2, *params.b_g2);
        assert_eq!(srs.vk, params.vk);

        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let (r, s) = (Scalar::random(&mut rng), Scalar::random(&mut rng));
        let synth = synthesize(circuit.clone()).unwrap();
        assert_eq!(synth.unsatisfied_rows(), 0);
        assert!(
            synth.a_aux_density.count() < synth.aux.len(),
            "some aux outside A"
        );
        let (ours, _) = prove(&CpuBackend, &srs, synth, r, s).unwrap();
        let theirs = create_proof_batch(vec![circuit.clone()], &params, vec![r], vec![s]).unwrap();
        assert_eq!(
            proof_bytes(&ours),
            proof_bytes(&theirs[0]),
            "{inputs} inputs, {constraints} rows"
        );
        // B in G2 left to the finish (the split the engine uses), not summed with the G1 work.
        let synth = synthesize(circuit.clone()).unwrap();
        let started = prove_start(&CpuBackend, &srs, synth, r, s, false).unwrap();
        let (split, _) = started.finish(&CpuBackend, &srs).unwrap();
        assert_eq!(proof_bytes(&split), proof_bytes(&theirs[0]), "split");

        let pvk = prepare_verifying_key(&params.vk);
        let mut public = vec![];
        public.extend_from_slice(&circuit.inputs);
        assert!(verify_proof(&pvk, &ours, &public).unwrap());
    }
}

#[test]
fn parameters_of_another_circuit_are_rejected_before_proving() {
    let dir = tempfile::tempdir().unwrap();
    let (_, path) = params_file(&SyntheticCircuit::new(2, 100, 1), dir.path());
    let srs = Srs::read(&path).unwrap();
    let synth = synthesize(SyntheticCircuit::new(2, 101, 1)).unwrap();
    let err = prove(&CpuBackend, &srs, synth, Scalar::ONE, Scalar::ONE).unwrap_err();
    assert!(matches!(err, ProveError::ShapeMismatch(_)), "{err}");
}

#[test]
fn unsatisfied_witness_is_counted() {
    let mut synth = synthesize(SyntheticCircuit::new(2, 100, 1)).unwrap();
    synth.c[10] += Scalar::ONE;
    synth.c[20] += Scalar::ONE;
    assert_eq!(synth.unsatisfied_rows(), 2);
}

#[test]
fn truncated_corrupt_and_padded_parameter_files_are_clear_errors() {
    let dir = tempfile::tempdir().unwrap();
    let (_, path) = params_file(&SyntheticCircuit::new(2, 300, 4), dir.path());
    let bytes = std::fs::read(&path).unwrap();

    let short = dir.path().join("short.params");
    std::fs::write(&short, &bytes[..bytes.len() - 7]).unwrap();
    let err = Srs::read(&short).unwrap_err();
    assert!(
        matches!(
            err,
            SrsError::Truncated {
                section: "b_g2",
                ..
            }
        ),
        "{err}"
    );

    let empty = dir.path().join("empty.params");
    std::fs::write(&empty, []).unwrap();
    assert!(matches!(
        Srs::read(&empty).unwrap_err(),
        SrsError::Truncated { section: "vk", .. }
    ));

    let padded = dir.path().join("padded.params");
    let mut more = bytes.clone();
    more.extend_from_slice(&[0u8; 5]);
    std::fs::write(&padded, more).unwrap();
    assert!(matches!(
        Srs::read(&padded).unwrap_err(),
        SrsError::TrailingBytes { extra: 5, .. }
    ));

    // Flip a byte of the first h point's x coordinate: it leaves the curve.
    let vk_len = 3 * 96 + 3 * 192 + 4 + 96 * 3;
    let mut bad = bytes.clone();
    bad[vk_len + 4 + 40] ^= 0x55;
    let corrupt = dir.path().join("corrupt.params");
    std::fs::write(&corrupt, bad).unwrap();
    let err = Srs::read(&corrupt).unwrap_err();
    assert!(
        matches!(
            err,
            SrsError::InvalidPoint {
                section: "h",
                index: 0,
                ..
            }
        ),
        "{err}"
    );
    assert!(err.to_string().contains("corrupt.params"));

    let missing = Srs::read(&dir.path().join("nope.params")).unwrap_err();
    assert!(matches!(missing, SrsError::Io { .. }));
}
