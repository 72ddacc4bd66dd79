//! The host clock's synchronisation state, recorded with each trace: every sample's receive
//! time and every event's `t` come from this clock, so a reader must know whether it was
//! synchronised. Each time the daemon opens a trace (a start, a rotation's new trace, a
//! resume after a restart) it appends one JSON line to `<trace>/_roverlog/clock.jsonl`
//! ([`CLOCK_FILE`]) with:
//!
//! - `kernel`: what `adjtimex(2)` says (every Linux host has it, whatever synchronises the
//!   clock): `state` (`ok`, `insert_leap`, `delete_leap`, `leap_in_progress`,
//!   `leap_occurred`, `unsynchronised`), `synchronised` (the `STA_UNSYNC` flag clear),
//!   `offset_s`, `max_error_s`, `est_error_s`;
//! - `chrony`: `chronyc -c tracking` when chrony runs (reference, stratum, `system_time_s`:
//!   chrony's offset of the system clock from true time, `last_offset_s`, `rms_offset_s`,
//!   `root_delay_s`, `root_dispersion_s`, `leap`), else why not (`error`);
//! - `ptp`: the PTP hardware clocks the host has (`/dev/ptp*`), listed only;
//! - `synchronised` and `summary`: the verdict in words, "unsynchronised" said plainly.
//!
//! Reading it never delays the recording: it runs on a thread of its own, `chronyc` bounded
//! by [`CHRONYC_BOUND`]. Upstream readers do not look into `_roverlog/`.

use std::io::{Read, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::events::{now_epoch, EVENTS_DIR};

/// The file, in the trace's `_roverlog/` directory.
pub const CLOCK_FILE: &str = "clock.jsonl";
/// How long `chronyc` may take to answer.
pub const CHRONYC_BOUND: Duration = Duration::from_secs(2);

/// One reading of the clock's state.
#[derive(Debug, Clone, Serialize)]
pub struct ClockState {
    /// When it was read (epoch seconds, the clock described).
    pub t: f64,
    /// Why the trace was opened: `start`, `rotate` or `resume`.
    pub opened: String,
    /// The verdict: the kernel says synchronised (and chrony, when it runs, is not
    /// "Not synchronised").
    pub synchronised: bool,
    /// The verdict in words.
    pub summary: String,
    pub kernel: Option<Kernel>,
    pub chrony: Chrony,
    /// `/dev/ptp*` devices present.
    pub ptp: Vec<String>,
}

/// `adjtimex(2)`'s view (read only: `modes` 0).
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Kernel {
    pub state: &'static str,
    pub synchronised: bool,
    pub offset_s: f64,
    pub max_error_s: f64,
    pub est_error_s: f64,
}

/// `chronyc -c tracking`, or why it gave nothing.
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(untagged)]
pub enum Chrony {
    Tracking(Tracking),
    Unavailable { error: String },
}

/// The fields of `chronyc -c tracking` (chrony's CSV form) a reader needs.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Tracking {
    pub reference: String,
    pub stratum: u32,
    pub system_time_s: f64,
    pub last_offset_s: f64,
    pub rms_offset_s: f64,
    pub frequency_ppm: f64,
    pub root_delay_s: f64,
    pub root_dispersion_s: f64,
    pub leap: String,
}

/// Why a `chronyc -c tracking` line was not understood.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum TrackingError {
    #[error("chronyc -c tracking: {found} fields, expected 14: {line:?}")]
    Fields { found: usize, line: String },
    #[error("chronyc -c tracking: field {field} is not a number: {value:?}")]
    Number { field: &'static str, value: String },
}

/// Parses one line of `chronyc -c tracking`: reference id, reference name, stratum,
/// reference time, system time, last offset, RMS offset, frequency, residual frequency,
/// skew, root delay, root dispersion, update interval, leap status.
pub fn parse_tracking(line: &str) -> Result<Tracking, TrackingError> {
    let f: Vec<&str> = line.trim().split(',').collect();
    if f.len() != 14 {
        return Err(TrackingError::Fields {
            found: f.len(),
            line: line.trim().to_string(),
        });
    }
    let num = |i: usize, field: &'static str| -> Result<f64, TrackingError> {
        f[i].trim().parse().map_err(|_| TrackingError::Number {
            field,
            value: f[i].to_string(),
        })
    };
    Ok(Tracking {
        reference: match f[1] {
            "" => f[0].to_string(),
            name => name.to_string(),
        },
        stratum: num(2, "stratum")? as u32,
        system_time_s: num(4, "system time")?,
        last_offset_s: num(5, "last offset")?,
        rms_offset_s: num(6, "RMS offset")?,
        frequency_ppm: num(7, "frequency")?,
        root_delay_s: num(10, "root delay")?,
        root_dispersion_s: num(11, "root dispersion")?,
        leap: f[13].trim().to_string(),
    })
}

/// The kernel's clock state (`adjtimex` with `modes` 0 changes nothing).
pub fn kernel() -> Option<Kernel> {
    // SAFETY: an all-zero timex is valid input; modes 0 only reads.
    let mut t: libc::timex = unsafe { std::mem::zeroed() };
    // SAFETY: adjtimex reads and writes the timex we own.
    let state = unsafe { libc::adjtimex(&mut t) };
    if state < 0 {
        return None;
    }
    let unsync = t.status & libc::STA_UNSYNC != 0;
    let offset_unit = if t.status & libc::STA_NANO != 0 {
        1e-9
    } else {
        1e-6
    };
    Some(Kernel {
        state: match state {
            libc::TIME_OK => "ok",
            libc::TIME_INS => "insert_leap",
            libc::TIME_DEL => "delete_leap",
            libc::TIME_OOP => "leap_in_progress",
            libc::TIME_WAIT => "leap_occurred",
            _ => "unsynchronised",
        },
        synchronised: !unsync && state != libc::TIME_ERROR,
        offset_s: t.offset as f64 * offset_unit,
        max_error_s: t.maxerror as f64 * 1e-6,
        est_error_s: t.esterror as f64 * 1e-6,
    })
}

/// Runs `chronyc -c tracking`, at most [`CHRONYC_BOUND`].
pub fn chrony() -> Chrony {
    let unavailable = |error: String| Chrony::Unavailable { error };
    let mut child = match Command::new("chronyc")
        .args(["-c", "tracking"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
    {
        Ok(c) => c,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return unavailable("chronyc not installed".into())
        }
        Err(e) => return unavailable(format!("chronyc: {e}")),
    };
    let t0 = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(s)) => break s,
            Ok(None) if t0.elapsed() >= CHRONYC_BOUND => {
                let _ = child.kill();
                let _ = child.wait();
                return unavailable(format!("chronyc: no answer within {CHRONYC_BOUND:?}"));
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(20)),
            Err(e) => return unavailable(format!("chronyc: {e}")),
        }
    };
    let (mut out, mut err) = (String::new(), String::new());
    if let Some(mut o) = child.stdout.take() {
        let _ = o.read_to_string(&mut out);
    }
    if let Some(mut e) = child.stderr.take() {
        let _ = e.read_to_string(&mut err);
    }
    if !status.success() {
        return unavailable(format!("chronyc exited with {status}: {}", err.trim()));
    }
    match parse_tracking(out.lines().next().unwrap_or("")) {
        Ok(t) => Chrony::Tracking(t),
        Err(e) => unavailable(e.to_string()),
    }
}

/// The PTP hardware clocks present (`/dev/ptp0`, ...).
fn ptp_devices() -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir("/dev")
        .map(|d| {
            d.filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with("ptp"))
                .map(|n| format!("/dev/{n}"))
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

/// The verdict from the kernel's and chrony's views.
fn verdict(kernel: Option<&Kernel>, chrony: &Chrony) -> (bool, String) {
    let chrony_says = match chrony {
        Chrony::Tracking(t) if t.leap == "Not synchronised" => {
            Some((false, "chrony: not synchronised".to_string()))
        }
        Chrony::Tracking(t) => Some((
            true,
            format!(
                "chrony: {} stratum {}, offset {:+.6} s, leap {}",
                t.reference, t.stratum, t.system_time_s, t.leap
            ),
        )),
        Chrony::Unavailable { .. } => None,
    };
    let kernel_says = match kernel {
        Some(k) if k.synchronised => (
            true,
            format!("kernel: synchronised, max error {:.6} s", k.max_error_s),
        ),
        Some(k) => (false, format!("kernel: {}", k.state)),
        None => (false, "kernel: adjtimex failed".to_string()),
    };
    let ok = kernel_says.0 && chrony_says.as_ref().is_none_or(|c| c.0);
    let mut parts = vec![kernel_says.1];
    parts.extend(chrony_says.map(|c| c.1));
    let word = if ok { "synchronised" } else { "unsynchronised" };
    (ok, format!("{word} ({})", parts.join("; ")))
}

/// Reads the clock's state now; `opened`: why the trace was opened.
pub fn read(opened: &str) -> ClockState {
    let kernel = kernel();
    let chrony = chrony();
    let (synchronised, summary) = verdict(kernel.as_ref(), &chrony);
    ClockState {
        t: now_epoch(),
        opened: opened.to_string(),
        synchronised,
        summary,
        kernel,
        chrony,
        ptp: ptp_devices(),
    }
}

/// Appends `state` as one line to `<trace>/_roverlog/clock.jsonl` and fsyncs it.
pub fn append(trace: &Path, state: &ClockState) -> std::io::Result<()> {
    let dir = trace.join(EVENTS_DIR);
    std::fs::create_dir_all(&dir)?;
    let mut line = serde_json::to_vec(state).expect("clock state as JSON");
    line.push(b'\n');
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(dir.join(CLOCK_FILE))?;
    f.write_all(&line)?;
    f.sync_all()
}

/// Records the clock's state with `trace` on a thread of its own (chronyc may be slow);
/// an unsynchronised clock is also logged as a warning.
pub fn record_with(trace: &Path, opened: &'static str) {
    let trace = trace.to_path_buf();
    std::thread::spawn(move || {
        let state = read(opened);
        if state.synchronised {
            tracing::info!(trace = %trace.display(), "host clock: {}", state.summary);
        } else {
            tracing::warn!(trace = %trace.display(), "host clock: {}", state.summary);
        }
        if let Err(e) = append(&trace, &state) {
            tracing::warn!(
                "clock state not written to {}: {e}",
                trace.join(EVENTS_DIR).join(CLOCK_FILE).display()
            );
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    /// chrony 4's `-c tracking` line for a synchronised host (the fields as chronyc prints
    /// them), and one for a host that never reached a server.
    const SYNCED: &str = "C0A80001,ntp.example,3,1700000000.123456789,-0.000012345,0.000020000,0.000030000,-12.345,0.001,0.050,0.012000,0.001500,64.5,Normal\n";
    const UNSYNCED: &str =
        "00000000,,0,0.000000000,0.000000000,0.000000000,0.000000000,0.000,0.000,0.000,1.000000000,1.000000000,0.0,Not synchronised\n";

    #[test]
    fn chrony_tracking_lines_parse() {
        let t = parse_tracking(SYNCED).unwrap();
        assert_eq!(t.reference, "ntp.example");
        assert_eq!(t.stratum, 3);
        assert_eq!(t.system_time_s, -0.000012345);
        assert_eq!(t.root_dispersion_s, 0.0015);
        assert_eq!(t.leap, "Normal");
        let u = parse_tracking(UNSYNCED).unwrap();
        assert_eq!(u.reference, "00000000");
        assert_eq!(u.leap, "Not synchronised");
        assert!(matches!(
            parse_tracking("506 Cannot talk to daemon"),
            Err(TrackingError::Fields { found: 1, .. })
        ));
        assert!(matches!(
            parse_tracking(&SYNCED.replace(",3,", ",x,")),
            Err(TrackingError::Number {
                field: "stratum",
                ..
            })
        ));
    }

    #[test]
    fn the_verdict_says_unsynchronised_plainly() {
        let k = |synchronised| Kernel {
            state: if synchronised { "ok" } else { "unsynchronised" },
            synchronised,
            offset_s: 0.0,
            max_error_s: 0.016,
            est_error_s: 0.0,
        };
        let none = Chrony::Unavailable {
            error: "chronyc not installed".into(),
        };
        let (ok, s) = verdict(Some(&k(false)), &none);
        assert!(!ok);
        assert_eq!(s, "unsynchronised (kernel: unsynchronised)");
        let (ok, s) = verdict(Some(&k(true)), &none);
        assert!(ok, "{s}");
        assert!(s.starts_with("synchronised (kernel: synchronised"), "{s}");
        // The kernel's flag alone is not enough when chrony says it has no source.
        let lost = Chrony::Tracking(parse_tracking(UNSYNCED).unwrap());
        let (ok, s) = verdict(Some(&k(true)), &lost);
        assert!(!ok);
        assert!(s.contains("chrony: not synchronised"), "{s}");
        let good = Chrony::Tracking(parse_tracking(SYNCED).unwrap());
        let (ok, s) = verdict(Some(&k(true)), &good);
        assert!(ok);
        assert!(
            s.contains("ntp.example stratum 3, offset -0.000012 s"),
            "{s}"
        );
    }

    #[test]
    fn this_host_s_state_is_read_and_appended_as_lines() {
        let k = kernel().expect("adjtimex reads on Linux");
        if k.synchronised {
            assert_ne!(k.state, "unsynchronised");
        }
        let dir = tempfile::tempdir().unwrap();
        append(dir.path(), &read("start")).unwrap();
        append(dir.path(), &read("resume")).unwrap();
        let text = std::fs::read_to_string(dir.path().join("_roverlog").join(CLOCK_FILE)).unwrap();
        let lines: Vec<serde_json::Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(lines.len(), 2);
        assert_eq!(lines[0]["opened"], "start");
        assert_eq!(lines[1]["opened"], "resume");
        assert_eq!(lines[0]["kernel"]["state"], k.state);
        let word = if lines[0]["synchronised"] == true {
            "synchronised ("
        } else {
            "unsynchronised ("
        };
        assert!(lines[0]["summary"].as_str().unwrap().starts_with(word));
        // chronyc is not installed here: said so, not left out.
        assert!(
            lines[0]["chrony"].get("error").is_some()
                || lines[0]["chrony"].get("stratum").is_some()
        );
    }
}
