//! Logging to stderr: our tracing events, and the `log` records of filecoin-proofs and bellperson
//! at warning level and above. bellperson's own phase timings are kept for the benchmark.

use std::io::IsTerminal;
use std::sync::Mutex;
use std::time::Duration;

use tracing_subscriber::EnvFilter;

static BELLPERSON_TIMES: Mutex<Vec<(String, Duration)>> = Mutex::new(Vec::new());

struct LogBridge;

impl log::Log for LogBridge {
    fn enabled(&self, metadata: &log::Metadata<'_>) -> bool {
        metadata.level() <= log::Level::Info
    }

    fn log(&self, record: &log::Record<'_>) {
        let msg = record.args().to_string();
        for key in ["synthesis time", "prover time"] {
            if let Some(rest) = msg.strip_prefix(key).and_then(|r| r.strip_prefix(": ")) {
                if let Some(d) = parse_debug_duration(rest) {
                    let mut times = BELLPERSON_TIMES.lock().unwrap_or_else(|e| e.into_inner());
                    times.push((key.to_string(), d));
                }
            }
        }
        if record.level() <= log::Level::Warn {
            tracing::warn!(target: "deps", "{}: {}", record.target(), msg);
        }
    }

    fn flush(&self) {}
}

pub fn init() {
    let filter = EnvFilter::try_from_env("CUZK_LOG").unwrap_or_else(|_| EnvFilter::new("info"));
    let subscriber = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .finish();
    let _ = tracing::subscriber::set_global_default(subscriber);
    if log::set_boxed_logger(Box::new(LogBridge)).is_ok() {
        log::set_max_level(log::LevelFilter::Info);
    }
}

/// Takes the bellperson phase time named `key` ("synthesis time" or "prover time") logged since
/// the last call.
pub fn take_bellperson_time(key: &str) -> Option<Duration> {
    let mut times = BELLPERSON_TIMES.lock().unwrap_or_else(|e| e.into_inner());
    let pos = times.iter().rposition(|(k, _)| k == key)?;
    Some(times.remove(pos).1)
}

/// Parses `Duration`'s Debug output: "1.5s", "250.3ms", "12µs", "80ns".
fn parse_debug_duration(s: &str) -> Option<Duration> {
    let s = s.trim();
    let units = [
        ("ms", 1e-3),
        ("µs", 1e-6),
        ("us", 1e-6),
        ("ns", 1e-9),
        ("s", 1.0),
    ];
    units.iter().find_map(|(suffix, scale)| {
        s.strip_suffix(suffix)
            .and_then(|n| n.parse::<f64>().ok())
            .map(|n| Duration::from_secs_f64(n * scale))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_duration_debug_output() {
        for d in [
            Duration::from_millis(1500),
            Duration::from_micros(250_300),
            Duration::from_nanos(80),
        ] {
            let got = parse_debug_duration(&format!("{d:?}")).unwrap();
            assert!((got.as_secs_f64() - d.as_secs_f64()).abs() < 1e-9, "{d:?}");
        }
        assert_eq!(parse_debug_duration("soon"), None);
    }
}
