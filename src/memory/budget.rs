//! The memory budget: how many bytes the appliance may hold, from the cgroup it runs under
//! (v2: the lowest `memory.max` / `memory.high` on the path from its cgroup to the root; v1:
//! `memory.limit_in_bytes`), else the machine's MemTotal, minus a configured margin; or set
//! explicitly. Where the number came from is kept, logged and shown.

use std::fmt;
use std::path::{Path, PathBuf};

use serde::Serialize;

/// Where the budget's limit was read.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum BudgetSource {
    /// `memory.budget_bytes` in the configuration.
    Configured,
    /// A cgroup v2 file (`memory.max` or `memory.high`).
    CgroupV2 { file: PathBuf },
    /// The cgroup v1 `memory.limit_in_bytes` file.
    CgroupV1 { file: PathBuf },
    /// `MemTotal` of /proc/meminfo (no cgroup limit).
    MemTotal,
}

impl fmt::Display for BudgetSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BudgetSource::Configured => f.write_str("configured"),
            BudgetSource::CgroupV2 { file } => write!(f, "cgroup v2 {}", file.display()),
            BudgetSource::CgroupV1 { file } => write!(f, "cgroup v1 {}", file.display()),
            BudgetSource::MemTotal => f.write_str("MemTotal"),
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Budget {
    /// Bytes the appliance may hold.
    pub total_bytes: u64,
    /// The limit it was derived from, before the margin.
    pub limit_bytes: u64,
    pub margin_bytes: u64,
    pub source: BudgetSource,
}

/// Where the kernel's files are (`/` on a real system; a fixture directory in tests).
#[derive(Clone, Debug)]
pub struct System {
    pub proc_dir: PathBuf,
    pub cgroup_root: PathBuf,
}

impl Default for System {
    fn default() -> Self {
        System {
            proc_dir: PathBuf::from("/proc"),
            cgroup_root: PathBuf::from("/sys/fs/cgroup"),
        }
    }
}

impl Budget {
    /// The budget: `configured` bytes if non-zero, else the cgroup or machine limit minus
    /// `margin`.
    pub fn detect(system: &System, configured: u64, margin: u64) -> std::io::Result<Budget> {
        if configured > 0 {
            return Ok(Budget {
                total_bytes: configured,
                limit_bytes: configured,
                margin_bytes: 0,
                source: BudgetSource::Configured,
            });
        }
        let mem_total = mem_total(&system.proc_dir)?;
        let (limit, source) = match cgroup_limit(system)? {
            Some((limit, source)) if limit < mem_total => (limit, source),
            _ => (mem_total, BudgetSource::MemTotal),
        };
        Ok(Budget {
            total_bytes: limit.saturating_sub(margin),
            limit_bytes: limit,
            margin_bytes: margin,
            source,
        })
    }
}

fn mem_total(proc_dir: &Path) -> std::io::Result<u64> {
    let text = std::fs::read_to_string(proc_dir.join("meminfo"))?;
    text.lines()
        .find_map(|l| l.strip_prefix("MemTotal:"))
        .and_then(|v| v.trim().strip_suffix("kB"))
        .and_then(|kb| kb.trim().parse::<u64>().ok())
        .map(|kb| kb * 1024)
        .ok_or_else(|| std::io::Error::other("no MemTotal in meminfo"))
}

/// A limit file's value: bytes, or None for "max" (no limit).
fn read_limit(path: &Path) -> Option<u64> {
    let text = std::fs::read_to_string(path).ok()?;
    let text = text.trim();
    if text == "max" {
        return None;
    }
    let v: u64 = text.parse().ok()?;
    // cgroup v1 writes "no limit" as a huge page-aligned number.
    (v < 1 << 62).then_some(v)
}

/// The tightest memory limit on this process's cgroup and its ancestors.
fn cgroup_limit(system: &System) -> std::io::Result<Option<(u64, BudgetSource)>> {
    let membership = match std::fs::read_to_string(system.proc_dir.join("self/cgroup")) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    let mut best: Option<(u64, BudgetSource)> = None;
    let mut consider = |value: Option<u64>, source: BudgetSource| {
        if let Some(v) = value {
            if best.as_ref().is_none_or(|(b, _)| v < *b) {
                best = Some((v, source));
            }
        }
    };
    for line in membership.lines() {
        // hierarchy-id:controllers:path
        let mut parts = line.splitn(3, ':');
        let (Some(_), Some(controllers), Some(path)) = (parts.next(), parts.next(), parts.next())
        else {
            continue;
        };
        let relative = path.trim_start_matches('/');
        if controllers.is_empty() {
            // v2: walk from the cgroup up to the root of the hierarchy.
            let mut dir = system.cgroup_root.join(relative);
            loop {
                for name in ["memory.max", "memory.high"] {
                    let file = dir.join(name);
                    consider(read_limit(&file), BudgetSource::CgroupV2 { file });
                }
                if dir == system.cgroup_root || !dir.pop() {
                    break;
                }
            }
        } else if controllers.split(',').any(|c| c == "memory") {
            let file = system
                .cgroup_root
                .join("memory")
                .join(relative)
                .join("memory.limit_in_bytes");
            consider(read_limit(&file), BudgetSource::CgroupV1 { file });
        }
    }
    Ok(best)
}

#[cfg(test)]
mod tests {
    use super::*;

    const GIB: u64 = 1 << 30;

    /// A fixture system: meminfo with 64 GiB, /proc/self/cgroup as given, files under the root.
    fn fixture(cgroup: &str, files: &[(&str, &str)]) -> (tempfile::TempDir, System) {
        let dir = tempfile::tempdir().unwrap();
        let proc_dir = dir.path().join("proc");
        std::fs::create_dir_all(proc_dir.join("self")).unwrap();
        std::fs::write(
            proc_dir.join("meminfo"),
            "MemTotal:       67108864 kB\nMemFree:        1000 kB\n",
        )
        .unwrap();
        std::fs::write(proc_dir.join("self/cgroup"), cgroup).unwrap();
        let cgroup_root = dir.path().join("sys/fs/cgroup");
        for (path, content) in files {
            let p = cgroup_root.join(path);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, content).unwrap();
        }
        (
            dir,
            System {
                proc_dir,
                cgroup_root,
            },
        )
    }

    #[test]
    fn v2_nested_takes_the_tightest_limit_on_the_path() {
        let (_d, sys) = fixture(
            "0::/system.slice/cuzk.service\n",
            &[
                ("system.slice/cuzk.service/memory.max", "max\n"),
                ("system.slice/cuzk.service/memory.high", "34359738368\n"),
                ("system.slice/memory.max", "51539607552\n"),
                ("memory.max", "max\n"),
            ],
        );
        let b = Budget::detect(&sys, 0, GIB).unwrap();
        assert_eq!(b.limit_bytes, 32 * GIB);
        assert_eq!(b.total_bytes, 31 * GIB);
        assert!(
            matches!(&b.source, BudgetSource::CgroupV2 { file } if file.ends_with("cuzk.service/memory.high"))
        );
    }

    #[test]
    fn v2_max_everywhere_falls_back_to_mem_total() {
        let (_d, sys) = fixture(
            "0::/user.slice\n",
            &[
                ("user.slice/memory.max", "max\n"),
                ("user.slice/memory.high", "max\n"),
            ],
        );
        let b = Budget::detect(&sys, 0, 4 * GIB).unwrap();
        assert_eq!(b.source, BudgetSource::MemTotal);
        assert_eq!(b.limit_bytes, 64 * GIB);
        assert_eq!(b.total_bytes, 60 * GIB);
    }

    #[test]
    fn v1_memory_controller_limit_is_read_and_unlimited_ignored() {
        let cgroup =
            "12:cpu,cpuacct:/docker/abc\n7:memory:/docker/abc\n1:name=systemd:/docker/abc\n";
        let (_d, sys) = fixture(
            cgroup,
            &[("memory/docker/abc/memory.limit_in_bytes", "17179869184\n")],
        );
        let b = Budget::detect(&sys, 0, 0).unwrap();
        assert_eq!(b.limit_bytes, 16 * GIB);
        assert!(matches!(b.source, BudgetSource::CgroupV1 { .. }));

        let (_d, sys) = fixture(
            cgroup,
            &[(
                "memory/docker/abc/memory.limit_in_bytes",
                "9223372036854771712\n",
            )],
        );
        assert_eq!(
            Budget::detect(&sys, 0, 0).unwrap().source,
            BudgetSource::MemTotal
        );
    }

    #[test]
    fn a_limit_above_the_machine_and_an_explicit_budget() {
        let (_d, sys) = fixture("0::/big\n", &[("big/memory.max", &(128 * GIB).to_string())]);
        assert_eq!(
            Budget::detect(&sys, 0, 0).unwrap().source,
            BudgetSource::MemTotal
        );
        let b = Budget::detect(&sys, 10 * GIB, GIB).unwrap();
        assert_eq!(
            (b.total_bytes, b.source),
            (10 * GIB, BudgetSource::Configured)
        );
    }

    #[test]
    fn this_machine_has_a_budget() {
        let b = Budget::detect(&System::default(), 0, 0).unwrap();
        assert!(b.total_bytes > 0);
    }
}
