//! `roverlog ctl`: sends one command to a running daemon's control socket and prints the reply.

use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::Result;
use serde_json::{json, Value};

use super::exit::outln;
use super::exit::{Exit, Fail, Outcome, StdoutError};

/// Control a running daemon. The exit codes are in `after_help` (the subcommand's own doc
/// line replaces this text in `--help`).
#[derive(clap::Args)]
#[command(
    after_help = "Exit codes: 0 the daemon answered \"ok\"; 1 the daemon answered with \
an error; 2 bad usage or invalid config; 3 cannot reach the daemon (no socket, refused, \
timeout)."
)]
pub struct Args {
    /// Control socket (default: from --config, else ./run/control.sock).
    #[arg(long, short, global = true)]
    socket: Option<PathBuf>,
    /// The daemon's JSON config, to find its control socket.
    #[arg(long, short, global = true)]
    config: Option<PathBuf>,
    /// Print the raw JSON reply (for scripts).
    #[arg(long, global = true)]
    json: bool,
    /// Seconds to wait for the reply.
    #[arg(long, default_value_t = 30, global = true,
          value_parser = clap::value_parser!(u64).range(1..))]
    timeout: u64,
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(clap::Subcommand)]
enum Cmd {
    /// Per-sensor samples, rate, queue, drops, gaps, durable watermark; disk free.
    Status,
    /// Start a new trace.
    Start {
        #[arg(long)]
        label: Option<String>,
    },
    /// Stop recording (every sensor fsynced).
    Stop,
    /// Close the current trace and start a new one.
    Rotate {
        #[arg(long)]
        label: Option<String>,
    },
    /// Write a text mark into the trace's events.jsonl.
    Mark { text: String },
    /// Switch snapshot mode (keeping the last pre_trigger_seconds while not recording).
    Snapshot {
        #[arg(value_parser = ["on", "off"])]
        mode: String,
    },
    /// Snapshot mode: write the pre-trigger ring and the next --after as a trace.
    Trigger {
        #[arg(long)]
        label: Option<String>,
        /// How long to record after the trigger: seconds, "10" or "10s" (default 10).
        #[arg(long, value_parser = seconds)]
        after: Option<f64>,
    },
}

/// Seconds as "10", "2.5" or "10s".
fn seconds(s: &str) -> Result<f64, BadSeconds> {
    s.strip_suffix('s')
        .unwrap_or(s)
        .parse::<f64>()
        .ok()
        .filter(|v| (0.0..=86_400.0).contains(v))
        .ok_or_else(|| BadSeconds(s.to_string()))
}

/// A `--after` that is not seconds from 0 to 86400.
#[derive(Debug)]
struct BadSeconds(String);

impl std::fmt::Display for BadSeconds {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{:?} is not seconds from 0 to 86400 (e.g. 10 or 10s)",
            self.0
        )
    }
}

impl std::error::Error for BadSeconds {}

pub fn main(args: Args) -> Result<Outcome> {
    const WHO: &str = "roverlog ctl";
    let socket = match (&args.socket, &args.config) {
        (Some(s), _) => s.clone(),
        (None, Some(c)) => {
            roverlog_daemon::Config::load(c)
                .fail(Exit::Usage, WHO)?
                .sockets
                .control
        }
        (None, None) => roverlog_daemon::Config::default().sockets.control,
    };
    let cmd = match &args.cmd {
        Cmd::Status => json!({"cmd": "status"}),
        Cmd::Start { label } => json!({"cmd": "start", "label": label}),
        Cmd::Stop => json!({"cmd": "stop"}),
        Cmd::Rotate { label } => json!({"cmd": "rotate", "label": label}),
        Cmd::Mark { text } => json!({"cmd": "mark", "text": text}),
        Cmd::Snapshot { mode } => json!({"cmd": "snapshot", "on": mode == "on"}),
        Cmd::Trigger { label, after } => {
            json!({"cmd": "trigger", "label": label, "after": after})
        }
    };
    let reply = ask(&socket, &cmd, Duration::from_secs(args.timeout))
        .map_err(|e| anyhow::anyhow!("{}: {e}", socket.display()))
        .fail(Exit::Unavailable, WHO)?;
    let ok = reply["ok"] == true;
    if args.json {
        outln!("{reply}")?;
    } else if !ok {
        eprintln!(
            "roverlog ctl: {}",
            reply["error"].as_str().unwrap_or("error")
        );
    } else if matches!(args.cmd, Cmd::Status) {
        print_status(&reply)?;
    } else {
        print_reply(&reply)?;
    }
    Ok(if ok { Outcome::Ok } else { Outcome::Problems })
}

fn ask(socket: &PathBuf, cmd: &Value, timeout: Duration) -> std::io::Result<Value> {
    let mut s = UnixStream::connect(socket)?;
    s.set_read_timeout(Some(timeout))?;
    let mut line = serde_json::to_vec(cmd)?;
    line.push(b'\n');
    let sent = s.write_all(&line);
    // A daemon that refuses this peer (in no control list) answers at once and closes, so the
    // write may fail with a broken pipe: its answer is still there to read, and it is what
    // the user needs to see.
    let mut reply = String::new();
    let read = BufReader::new(s).read_line(&mut reply);
    match (sent, read) {
        (_, Ok(n)) if n > 0 => serde_json::from_str(&reply).map_err(std::io::Error::other),
        (Err(e), _) | (Ok(()), Err(e)) => Err(e),
        (Ok(()), Ok(_)) => Err(std::io::Error::new(
            std::io::ErrorKind::UnexpectedEof,
            "the daemon closed the connection without a reply",
        )),
    }
}

fn print_reply(r: &Value) -> Result<(), StdoutError> {
    if let Some(t) = r["trace"].as_str() {
        outln!("trace: {t}")?;
    }
    if let Some(s) = r["sensors"].as_object() {
        for (name, v) in s {
            match (v["samples"].as_u64(), v["error"].as_str()) {
                (Some(n), _) => outln!("  {name}: {n} samples")?,
                (None, Some(e)) => outln!("  {name}: FAILED: {e}")?,
                (None, None) => outln!("  {name}: {v}")?,
            }
        }
    }
    Ok(())
}

/// `offload: sending to s3://b/p: 2 trace(s), 140.2 MB left, 19.8 MB/s` and its last error.
fn print_offload(o: &Value) -> Result<(), StdoutError> {
    let Some(dest) = o["dest"].as_str() else {
        return Ok(());
    };
    let mb = |v: &Value| v.as_f64().unwrap_or(0.0) / 1e6;
    let pending = match o["pending_traces"].as_u64() {
        Some(n) => format!("{n} trace(s), {:.1} MB left", mb(&o["bytes_left"])),
        None => "not looked yet".into(),
    };
    outln!(
        "offload ({}): {} to {dest}: {pending}, {:.1} MB/s, {:.1} MB sent, {} trace(s) verified",
        o["when"].as_str().unwrap_or("?"),
        o["state"].as_str().unwrap_or("?"),
        mb(&o["rate_bytes_per_s"]),
        mb(&o["sent_bytes"]),
        o["verified_traces"]
    )?;
    if let Some(e) = o["last_error"].as_str() {
        outln!("offload error: {e}")?;
    }
    Ok(())
}

fn print_status(r: &Value) -> Result<(), StdoutError> {
    // Alarms first: the lines nobody may miss.
    for a in r["alarms"].as_array().into_iter().flatten() {
        let mut detail: Vec<String> = a
            .as_object()
            .into_iter()
            .flatten()
            .filter(|(k, _)| !matches!(k.as_str(), "alarm" | "sensor" | "start"))
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        detail.sort();
        outln!(
            "ALARM {} {}  {}",
            a["alarm"].as_str().unwrap_or("?").to_uppercase(),
            a["sensor"].as_str().unwrap_or(""),
            detail.join(" ")
        )?;
    }
    match r["trace"].as_str() {
        Some(t) if r["recording"] == true => outln!("recording: {t}")?,
        _ => outln!("not recording")?,
    }
    if let Some(why) = r["stopped_reason"].as_str() {
        outln!("stopped: {why}")?;
    }
    let s = &r["snapshot"];
    if s["enabled"] == true || s["dropped_frames"].as_u64().unwrap_or(0) > 0 {
        outln!(
            "snapshot: {}, {} frame(s) ({:.1} MiB) held of the last {} s, {} dropped from the ring",
            if s["enabled"] == true { "on" } else { "off" },
            s["frames"],
            s["bytes"].as_u64().unwrap_or(0) as f64 / (1u64 << 20) as f64,
            s["pre_trigger_seconds"],
            s["dropped_frames"]
        )?;
    }
    if let Some(url) = r["http"]["url"].as_str() {
        let ro = if r["http"]["read_only"] == true {
            " (read-only)"
        } else {
            ""
        };
        outln!("dashboard: {url}{ro}")?;
    }
    print_offload(&r["offload"])?;
    let d = &r["disk"];
    if let Some(free) = d["free_bytes"].as_u64() {
        outln!(
            "disk: {:.1} GiB free (minimum {:.1} GiB){}",
            free as f64 / (1u64 << 30) as f64,
            d["min_free_bytes"].as_u64().unwrap_or(0) as f64 / (1u64 << 30) as f64,
            if d["low"] == true { "  LOW" } else { "" }
        )?;
    }
    // A failed write or fsync (docs/disk-failure.md): which file, which error, what is kept.
    for e in d["errors"].as_array().into_iter().flatten() {
        outln!(
            "DISK ERROR {}: {} of {}: {} ({} samples durable)",
            e["sensor"].as_str().unwrap_or("?"),
            e["what"].as_str().unwrap_or("?"),
            e["file"].as_str().unwrap_or("?"),
            e["error"].as_str().unwrap_or("?"),
            e["durable"]
        )?;
    }
    // Sensors the config expects that are not there: absent, not left out.
    for (name, a) in r["absent_sensors"].as_object().into_iter().flatten() {
        let hz = a["expected_hz"]
            .as_f64()
            .map_or(String::new(), |hz| format!(", expected at {hz} Hz"));
        let required = if a["required"] == true {
            " (required)"
        } else {
            ""
        };
        outln!("absent: {name}{required}{hz}")?;
    }
    let Some(sensors) = r["sensors"].as_object() else {
        return Ok(());
    };
    outln!(
        "{:<16} {:>4} {:>12} {:>10} {:>9} {:>9} {:>8} {:>8} {:>12} {:>9}",
        "sensor",
        "conn",
        "samples",
        "rate/s",
        "queue%",
        "high%",
        "drops",
        "gaps",
        "durable",
        "fsync_age"
    )?;
    for (name, s) in sensors {
        let lim = s["queue_limit"].as_u64().unwrap_or(1).max(1) as f64;
        let pct = |k: &str| 100.0 * s[k].as_u64().unwrap_or(0) as f64 / lim;
        outln!(
            "{:<16} {:>4} {:>12} {:>10.1} {:>8.1}% {:>8.1}% {:>8} {:>8} {:>12} {:>9}",
            name,
            if s["connected"] == true { "yes" } else { "no" },
            s["samples"].to_string(),
            s["rate_hz"].as_f64().unwrap_or(0.0),
            pct("queue_bytes"),
            pct("queue_high_water"),
            s["drops"].to_string(),
            s["gaps"].to_string(),
            s["durable"].to_string(),
            s["last_fsync_age_ms"]
                .as_u64()
                .map_or("-".to_string(), |ms| format!("{:.1}s", ms as f64 / 1000.0)),
        )?;
        if let Some(f) = s["failed"].as_str() {
            outln!("  FAILED: {f}")?;
        }
        if let Some(n) = s["discarded"].as_u64().filter(|&n| n > 0) {
            outln!("  {n} frames discarded while not recording")?;
        }
        if let Some(n) = s["lzmaf_stored"].as_u64().filter(|&n| n > 0) {
            outln!(
                "  {n} samples' lzmaf frames stored uncompressed (compression fell behind; \
                 `roverlog compact TRACE` recompresses them)"
            )?;
        }
    }
    Ok(())
}
