//! PCE files under crashes and races, with real processes: `cuzk pce extract` killed with
//! SIGKILL while it writes (no file, or the old one intact), a corrupt or truncated file
//! discarded and made again, two processes racing to extract one circuit.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::{cuzk, stderr};

const CIRCUIT: &str = "porep-2k";

fn pce_file(dir: &Path) -> PathBuf {
    dir.join(format!("{CIRCUIT}.pce"))
}

fn extract_args(dir: &Path) -> Vec<String> {
    [
        "pce",
        "extract",
        "--kind",
        "porep-c2",
        "--sector-size",
        "2KiB",
        "--dir",
        dir.to_str().unwrap(),
    ]
    .map(String::from)
    .to_vec()
}

/// Runs `cuzk pce extract` to the end; returns its JSON line.
fn extract(dir: &Path) -> serde_json::Value {
    let args = extract_args(dir);
    let out = cuzk(&args.iter().map(String::as_str).collect::<Vec<_>>());
    assert!(out.status.success(), "cuzk pce extract: {}", stderr(&out));
    serde_json::from_slice(&out.stdout).expect("one JSON line")
}

fn spawn_extract(dir: &Path, force: bool) -> Child {
    let mut args = extract_args(dir);
    if force {
        args.push("--force".into());
    }
    Command::new(env!("CARGO_BIN_EXE_cuzk"))
        .args(&args)
        .env("CUZK_LOG", "warn")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("starting cuzk")
}

fn temp_files(dir: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .flatten()
                .map(|e| e.path())
                .filter(|p| p.to_string_lossy().contains(".tmp-"))
                .collect()
        })
        .unwrap_or_default()
}

/// Starts an extraction and SIGKILLs it once its temporary file has bytes in it (mid-write).
fn kill_while_writing(dir: &Path, force: bool) {
    let mut child = spawn_extract(dir, force);
    let deadline = Instant::now() + Duration::from_secs(300);
    loop {
        let writing = temp_files(dir)
            .iter()
            .any(|p| std::fs::metadata(p).is_ok_and(|m| m.len() > 0));
        if writing {
            break;
        }
        if let Some(status) = child.try_wait().unwrap() {
            panic!("the extraction ended ({status}) before it was seen writing");
        }
        assert!(Instant::now() < deadline, "no temporary file appeared");
        std::thread::sleep(Duration::from_micros(200));
    }
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    assert!(
        !temp_files(dir).is_empty(),
        "killed mid-write: its temporary file stays behind"
    );
}

#[test]
fn a_writer_killed_mid_write_leaves_no_file_or_the_old_one() {
    let dir = tempfile::tempdir().unwrap();
    kill_while_writing(dir.path(), false);
    assert!(
        !pce_file(dir.path()).exists(),
        "no file under the real name"
    );

    // The next run removes the dead writer's temporary file and makes a good one.
    let made = extract(dir.path());
    assert_eq!(made["extracted"], true, "{made}");
    assert!(temp_files(dir.path()).is_empty());
    let good = std::fs::read(pce_file(dir.path())).unwrap();

    // A rewrite killed mid-write leaves the old file, which still loads.
    kill_while_writing(dir.path(), true);
    assert_eq!(std::fs::read(pce_file(dir.path())).unwrap(), good);
    let loaded = extract(dir.path());
    assert_eq!(loaded["extracted"], false, "{loaded}");
    assert_eq!(loaded["constraints"], made["constraints"]);
    assert!(temp_files(dir.path()).is_empty());
}

#[test]
fn a_corrupt_or_truncated_file_is_discarded_and_made_again() {
    let dir = tempfile::tempdir().unwrap();
    let first = extract(dir.path());
    let path = pce_file(dir.path());
    let good = std::fs::read(&path).unwrap();
    let mut corrupt = good.clone();
    corrupt[good.len() / 2] ^= 0x01;
    for (what, bytes) in [
        ("one flipped bit", corrupt),
        ("truncated", good[..good.len() - 4096].to_vec()),
        ("empty", Vec::new()),
    ] {
        std::fs::write(&path, bytes).unwrap();
        let again = extract(dir.path());
        assert_eq!(again["extracted"], true, "{what}: {again}");
        assert_eq!(again["nnz"], first["nnz"], "{what}");
        assert_eq!(
            std::fs::read(&path).unwrap(),
            good,
            "{what}: made the same again"
        );
    }
}

#[test]
fn two_processes_racing_extract_once_and_both_get_the_good_file() {
    let dir = tempfile::tempdir().unwrap();
    let children = [
        spawn_extract(dir.path(), false),
        spawn_extract(dir.path(), false),
    ];
    let outputs: Vec<serde_json::Value> = children
        .into_iter()
        .map(|c| {
            let out = c.wait_with_output().unwrap();
            assert!(out.status.success(), "{}", stderr(&out));
            serde_json::from_slice(&out.stdout).unwrap()
        })
        .collect();
    let extracted = outputs.iter().filter(|o| o["extracted"] == true).count();
    assert_eq!(extracted, 1, "exactly one extraction: {outputs:?}");
    assert_eq!(outputs[0]["nnz"], outputs[1]["nnz"]);
    assert!(temp_files(dir.path()).is_empty());
    assert_eq!(extract(dir.path())["extracted"], false, "the file is good");
}

/// `cuzk bench <args> --pce-dir <a fresh directory>` run to the end: its JSON report.
fn bench(args: &[&str]) -> serde_json::Value {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_cuzk"))
        .arg("bench")
        .args(args)
        .arg("--pce-dir")
        .arg(dir.path())
        .env("CUZK_LOG", "warn")
        .env("FIL_PROOFS_PARAMETER_CACHE", common::params_dir())
        .output()
        .expect("running cuzk bench");
    assert!(
        out.status.success(),
        "cuzk bench {args:?}: {}",
        stderr(&out)
    );
    serde_json::from_slice(&out.stdout).expect("JSON")
}

/// The reservation the engine admits a partition with bounds what its synthesis takes, on
/// every path: `cuzk bench synth` (a process of its own, so its peak RSS is the synthesis's)
/// measures one synthesis per path, its peak RSS growth and what it holds after, for a PoRep
/// (its witness nearly all bits) and a WinningPoSt (nearly all hashes: the compact witness's
/// worst case).
#[test]
fn each_synthesis_paths_reservation_bounds_its_measured_peak_porep_and_winning_post() {
    let report = bench(&[
        "synth",
        "--kinds",
        "porep-c2,winning-post",
        "--paths",
        "full,pce,compact",
        "--runs",
        "1",
    ]);
    let kinds = report["kinds"].as_array().expect("kinds");
    assert_eq!(kinds.len(), 2, "{report}");
    for kind in kinds {
        assert_eq!(kind["identical"], true, "{kind}");
        let mut reserved = Vec::new();
        for path in ["full", "pce", "compact"] {
            let p = &kind[path];
            let bytes = |key: &str| {
                p[key]
                    .as_u64()
                    .unwrap_or_else(|| panic!("{path}: no {key}"))
            };
            let (peak, held, bound) = (
                bytes("peak_rss_growth_bytes"),
                bytes("held_bytes"),
                bytes("reserved_bytes"),
            );
            eprintln!(
                "{} {path}: peak {peak}, held {held}, reserved {bound}",
                kind["kind"]
            );
            assert!(peak > 0 && held > 0, "{path}: nothing measured: {p}");
            assert!(
                peak <= bound && held <= bound,
                "{} {path}: peak {peak} or held {held} over the reservation {bound}",
                kind["kind"]
            );
            reserved.push(bound);
        }
        // The compact witness is reserved less than a, b and c.
        assert!(reserved[2] < reserved[1], "{kind}");
    }
}

/// `cuzk bench witness` makes a compact witness of a larger shape from a real 2 KiB PoRep
/// witness repeated: every value pushed, the mix kept, held within the engine's compact
/// reservation and far under the plain witness's 32 bytes a value.
#[test]
fn a_larger_shapes_compact_witness_keeps_the_mix_and_fits_its_reservation() {
    let aux: u64 = 7_000_001;
    let report = bench(&[
        "witness",
        "--kind",
        "porep-c2",
        "--aux",
        &aux.to_string(),
        "--inputs",
        "328",
        "--domain-log2",
        "23",
    ]);
    let w = &report["witness"];
    let n = |key: &str| {
        w[key]
            .as_u64()
            .unwrap_or_else(|| panic!("no {key}: {report}"))
    };
    assert_eq!(n("values"), aux, "{report}");
    assert_eq!(n("zeros") + n("ones") + n("others"), aux, "{report}");
    // A PoRep witness is nearly all bits.
    assert!(n("others") * 20 < aux, "{report}");
    let reserved = report["reserved_bytes"]["compact"].as_u64().unwrap();
    assert!(n("held_bytes") <= reserved, "{report}");
    assert!(n("peak_rss_growth_bytes") <= reserved, "{report}");
    assert!(n("held_bytes") * 10 < aux * 32, "{report}");
}

/// The parameter set a rehearsal makes for a circuit (`Pce::srs_shape`, then random points)
/// has the section lengths of the real set: for every kind, the shape its 2 KiB PCE asks for
/// equals the 2 KiB parameter file's.
#[test]
fn a_pces_parameter_shape_is_its_real_parameter_files() {
    use cuzk::circuits::{CircuitId, ParameterFiles, ProofKind};
    let params = common::params_dir();
    let dir = tempfile::tempdir().unwrap();
    let store = cuzk::pce::PceStore::open(dir.path()).unwrap();
    for kind in [
        ProofKind::PorepC2,
        ProofKind::SnapDeals,
        ProofKind::WindowPost,
        ProofKind::WinningPost,
    ] {
        let circuit = CircuitId::new(kind, 2048);
        let (pce, _) = circuit.obtain_pce(&store, false).unwrap();
        let files = ParameterFiles::new(&params, &circuit.parameter_set().unwrap());
        let real = cuzk::srs::Srs::read(&files.params).unwrap();
        assert_eq!(pce.srs_shape(), real.shape(), "{kind}");
        // The counts read before loading are the loaded set's.
        assert_eq!(
            cuzk::srs::Srs::read_shape(&files.params).unwrap(),
            real.shape(),
            "{kind}"
        );
        let random = cuzk::srs::Srs::random(real.shape(), 3);
        assert_eq!(random.shape(), real.shape(), "{kind}");
    }
}
