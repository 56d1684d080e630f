//! The architecture invariants of docs/architecture.md that a reading of the sources can check:
//! the layers and their arrows, which module may name which crate, where the environment is read
//! and where files the appliance keeps are written. Comments are not code: they are left out.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The layers, lowest first. A module may use modules of lower layers only: no arrow goes up
/// or sideways, so the graph has no circle.
const LAYERS: &[&[&str]] = &[
    &["persist", "faults"],
    &["memory", "synth", "srs"],
    &["pce"],
    &["groth16"],
    &["gpu"],
    &["circuits"],
    &["config"],
    &["jobs"],
    &["metrics", "systemd", "fuzz"],
    &["engine"],
    &["api"],
    &["cli"],
];

/// One source file: its top-level module, its code (comments removed), and its code without
/// the trailing `#[cfg(test)]` module.
struct Source {
    path: PathBuf,
    module: String,
    code: String,
    production: String,
}

fn sources() -> Vec<Source> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut out = Vec::new();
    let mut dirs = vec![root.clone()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                dirs.push(path);
                continue;
            }
            if path.extension().is_none_or(|e| e != "rs") {
                continue;
            }
            let rel = path.strip_prefix(&root).unwrap();
            let first = rel
                .components()
                .next()
                .unwrap()
                .as_os_str()
                .to_str()
                .unwrap();
            let module = first.trim_end_matches(".rs").to_owned();
            let text = std::fs::read_to_string(&path).unwrap();
            let code: String = text
                .lines()
                .map(|l| match l.find("//") {
                    Some(i) => &l[..i],
                    None => l,
                })
                .collect::<Vec<_>>()
                .join("\n");
            // Test code: a file's trailing `#[cfg(test)] mod`, or a whole `tests.rs` module.
            let production = match code.find("#[cfg(test)]\nmod ") {
                _ if path.ends_with("tests.rs") => String::new(),
                Some(i) => code[..i].to_owned(),
                None => code.clone(),
            };
            out.push(Source {
                path: rel.to_owned(),
                module,
                code,
                production,
            });
        }
    }
    out
}

fn rank(module: &str) -> Option<usize> {
    LAYERS.iter().position(|layer| layer.contains(&module))
}

/// The top-level modules a file's code names through `crate::`.
fn uses(code: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut rest = code;
    while let Some(i) = rest.find("crate::") {
        rest = &rest[i + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            // use crate::{a::X, b::{Y, Z}}: the first segment of each path in the group.
            let mut depth = 0;
            let mut at_start = true;
            let mut name = String::new();
            for c in group.chars() {
                match c {
                    '{' => depth += 1,
                    '}' | ',' if depth == 0 => {
                        // A module named alone (`crate::{persist}`) is used too.
                        if at_start && !name.is_empty() {
                            out.insert(std::mem::take(&mut name));
                        }
                        if c == '}' {
                            break;
                        }
                        at_start = true;
                        name.clear();
                        continue;
                    }
                    '}' => depth -= 1,
                    _ => {}
                }
                if at_start && depth == 0 {
                    if c.is_alphanumeric() || c == '_' {
                        name.push(c);
                    } else if c == ':' && !name.is_empty() {
                        out.insert(std::mem::take(&mut name));
                        at_start = false;
                    }
                }
            }
        } else {
            let name: String = rest
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            if !name.is_empty() {
                out.insert(name);
            }
        }
    }
    out
}

#[test]
fn every_module_has_a_layer_and_every_arrow_points_down() {
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut wrong = Vec::new();
    for s in sources() {
        if s.module == "lib" || s.module == "main" {
            continue;
        }
        let from = rank(&s.module).unwrap_or_else(|| {
            panic!("src/{}: module {} has no layer", s.path.display(), s.module)
        });
        for to in uses(&s.code) {
            if to == s.module {
                continue;
            }
            let Some(r) = rank(&to) else {
                wrong.push(format!(
                    "src/{} uses crate::{to}, which has no layer",
                    s.path.display()
                ));
                continue;
            };
            if r >= from {
                wrong.push(format!(
                    "src/{} ({}) uses crate::{to}: an arrow up or sideways",
                    s.path.display(),
                    s.module
                ));
            }
            graph.entry(s.module.clone()).or_default().insert(to);
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    // The graph, for the record (cargo test -- --nocapture shows it).
    for (from, to) in &graph {
        println!(
            "{from} -> {}",
            to.iter().cloned().collect::<Vec<_>>().join(", ")
        );
    }
    // Every module of lib.rs is placed, and nothing placed is missing.
    let lib =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("src/lib.rs")).unwrap();
    let declared: BTreeSet<&str> = lib
        .lines()
        .filter_map(|l| {
            l.strip_prefix("pub mod ")
                .or_else(|| l.strip_prefix("mod "))
        })
        .map(|l| l.trim_end_matches(';'))
        .collect();
    let placed: BTreeSet<&str> = LAYERS.iter().flat_map(|l| l.iter().copied()).collect();
    assert_eq!(declared, placed, "modules of lib.rs vs LAYERS");
}

/// Files whose (non-test) code may name `word`, as a path prefix of src/.
fn only_in(word: &str, allowed: &[&str], production_only: bool) -> Vec<String> {
    sources()
        .into_iter()
        .filter(|s| {
            let code = if production_only {
                &s.production
            } else {
                &s.code
            };
            code.contains(word)
        })
        .map(|s| s.path.to_string_lossy().into_owned())
        .filter(|p| !allowed.iter().any(|a| p.starts_with(a)))
        .collect()
}

#[test]
fn only_gpu_knows_cudarc_only_api_knows_axum_only_cli_knows_clap() {
    assert_eq!(only_in("cudarc", &["gpu/"], false), Vec::<String>::new());
    assert_eq!(only_in("axum", &["api/"], false), Vec::<String>::new());
    assert_eq!(only_in("clap", &["cli/"], false), Vec::<String>::new());
}

#[test]
fn nothing_sets_the_environment_and_only_config_systemd_and_cli_read_it() {
    for word in ["set_var", "remove_var"] {
        assert_eq!(only_in(word, &[], false), Vec::<String>::new(), "{word}");
    }
    for word in ["env::var", "env::vars", "EnvFilter::try_from_env"] {
        assert_eq!(
            only_in(word, &["config/", "systemd.rs", "cli/"], true),
            Vec::<String>::new(),
            "{word}"
        );
    }
}

#[test]
fn no_filecoin_proofs_helper_that_reads_its_environment_is_called() {
    // Parameter paths come from the configured directory and the set's identifier
    // (circuits::ParameterFiles); verifiers are given the verifying key.
    for word in [
        "parameter_cache_params_path",
        "parameter_cache_verifying_key_path",
        "parameter_cache_dir",
        "cache_params_path",
        "get_stacked_verifying_key",
        "verify_seal(",
        "verify_empty_sector_update_proof(",
        "verify_winning_post(",
        "verify_window_post(",
    ] {
        assert_eq!(only_in(word, &[], false), Vec::<String>::new(), "{word}");
    }
    // The generator of test parameters is filecoin-proofs' own, in its own process.
    assert_eq!(
        only_in("::groth_params(", &["circuits/params.rs"], false),
        Vec::<String>::new()
    );
}

#[test]
fn files_the_appliance_keeps_are_written_through_persist() {
    // Scratch inputs of sample sectors, the kernel's /proc/self/clear_refs and a benchmark's
    // service log in its temporary directory are not kept.
    let allowed = [
        "persist.rs",
        "circuits/samples.rs",
        "cli/bench.rs",
        "cli/bench_load.rs",
    ];
    for word in ["fs::write", "File::create", "OpenOptions", "fs::rename"] {
        let writers = only_in(word, &allowed, true);
        let writers: Vec<String> = writers
            .into_iter()
            // A job's directory is renamed away before it is deleted (a removal, not a write).
            .filter(|p| !(p == "jobs/mod.rs" && word == "fs::rename"))
            .collect();
        assert_eq!(writers, Vec::<String>::new(), "{word}");
    }
}

#[test]
fn the_engines_public_face_stays_small() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/engine/mod.rs");
    let lines = std::fs::read_to_string(path).unwrap().lines().count();
    assert!(lines < 500, "src/engine/mod.rs has {lines} lines");
}

#[test]
fn the_reading_of_uses_sees_groups_nested_groups_and_inline_paths() {
    let code = "use crate::{a::X, b::{Y, Z}, c};\nfn f() { crate::d::g(); }\n";
    let seen: Vec<String> = uses(code).into_iter().collect();
    assert_eq!(seen, ["a", "b", "c", "d"]);
    // An arrow up is found: memory naming the engine.
    let memory = Source {
        path: "memory/mod.rs".into(),
        module: "memory".into(),
        code: "use crate::engine::Stage;".into(),
        production: String::new(),
    };
    let up = uses(&memory.code)
        .into_iter()
        .any(|to| rank(&to) >= rank(&memory.module));
    assert!(up);
}
