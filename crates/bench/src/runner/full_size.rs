//! `roverlog bench --only full-size`: the red-rover rig's one-hour trace (written by
//! [`crate::hour`]) read at full size.
//!
//! - Single-sample reads in the library, per format: one `Sensor::open` + `channel` + `len`,
//!   and one random `get(i)` on a channel kept open, on the hour's channel against a
//!   100-sample one of the same shape. The ratio long/short is the figure (target 1.5x at
//!   most); `Sensor::index_at(t)` likewise.
//! - The verbs on the hour trace, each as a child process: peak RSS (`wait4`'s `ru_maxrss`)
//!   against a stated budget, and seconds against `cat` of the same files to `/dev/null`
//!   measured in the same run, and against each decoding verb's decode floor; `replay` into
//!   a real daemon as one more row ([`super::verb_floor`]).
//!
//! Nothing is timed in tests; the figures go to BENCHMARKS.md.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::hour::{self, RigShape};
use crate::procfs;
use roverlog_core::format::Sensor;

use super::error::{current_exe, CommandError, Result, RunError, ScenarioError};
use super::verb_floor;
use super::{make_work_dir, Options};

/// Peak resident memory a verb may use on the hour trace, whatever its length.
pub(super) const RSS_BUDGET: u64 = 256 << 20;
/// Largest long/short ratio of a single-sample read.
const RATIO_TARGET: f64 = 1.5;

/// One format's long channel and short channel: (trace kind, sensor, channel).
const FORMATS: [(&str, bool, &str, &str); 6] = [
    ("raw", true, "imu", "acc"),
    ("lzma", false, "lzma", "acc"),
    ("lzmaf", true, "lidar", "rng"),
    ("jpg", false, "jpg", "img"),
    ("npz", false, "npz", "iq"),
    ("mjpg", true, "camera", "video.avi"),
];

struct Traces {
    rig: PathBuf,
    formats: PathBuf,
}

impl Traces {
    fn sensor(&self, rig: bool, sensor: &str) -> PathBuf {
        if rig { &self.rig } else { &self.formats }.join(sensor)
    }
}

/// Runs the full-size bench in `work`; `quick` shortens the hour to 2 minutes (a smoke test:
/// the figures mean nothing). Prints the table (or returns the JSON); `Ok(false)` when a
/// verb failed.
pub(super) fn run(work: &Path, quick: bool, json_out: bool) -> Result<bool> {
    let long_shape = if quick {
        RigShape::seconds(120)
    } else {
        RigShape::HOUR
    };
    let short_shape = RigShape::samples(100);
    let long = generate(work, "hour", &long_shape)?;
    let short = generate(work, "short", &short_shape)?;

    progress("single-sample reads");
    let mut reads = Vec::new();
    for (format, in_rig, sensor, channel) in FORMATS {
        let l = single_reads(&long.sensor(in_rig, sensor), channel)?;
        let s = single_reads(&short.sensor(in_rig, sensor), channel)?;
        reads.push(json!({
            "format": format, "channel": format!("{sensor}/{channel}"),
            "samples": [l.samples, s.samples],
            "open_len_s": [l.open_len, s.open_len],
            "open_len_ratio": l.open_len / s.open_len.max(1e-12),
            "read_s": [l.read, s.read],
            "read_ratio": l.read / s.read.max(1e-12),
            "index_at_s": [l.index_at, s.index_at],
            "index_at_ratio": l.index_at / s.index_at.max(1e-12),
        }));
    }

    progress("verbs on the hour trace");
    let verbs = run_verbs(work, &long.rig)?;
    let ok = verbs["rows"].as_array().is_some_and(|r| {
        r.iter().all(|v| {
            // replay's row: nothing dropped, every sensor's count the source's.
            v["exit"] == 0
                && v["drops"].as_u64().is_none_or(|d| d == 0)
                && v["counts_equal"] != false
        })
    });
    let report = json!({
        "hour": {"camera": long_shape.camera, "lidar": long_shape.lidar,
                 "radar": long_shape.radar, "imu": long_shape.imu},
        "quick": quick,
        "reads": reads,
        "ratio_target": RATIO_TARGET,
        "verbs": verbs,
        "rss_budget_bytes": RSS_BUDGET,
        "ok": ok,
    });
    if json_out {
        println!("{}", serde_json::to_string_pretty(&report).expect("json"));
    } else {
        print_table(&report);
    }
    Ok(ok)
}

fn generate(work: &Path, name: &str, shape: &RigShape) -> Result<Traces> {
    let rig = work.join(format!("{name}-rig"));
    let formats = work.join(format!("{name}-formats"));
    let t = Instant::now();
    let total = shape.total();
    let mut last = Instant::now();
    let mut report = |what: &str, done: u64| {
        if last.elapsed() > Duration::from_secs(5) {
            progress(&format!("{name} {what}: {done} of {total} samples"));
            last = Instant::now();
        }
    };
    hour::write_rig_trace(&rig, shape, &mut |d| report("rig", d))?;
    hour::write_formats_trace(&formats, shape, &mut |d| report("formats", d))?;
    progress(&format!(
        "{name}: rig and formats traces written in {:.1} s",
        t.elapsed().as_secs_f64()
    ));
    Ok(Traces { rig, formats })
}

/// Seconds per operation (medians of rounds) on one channel.
struct Reads {
    samples: u64,
    open_len: f64,
    read: f64,
    index_at: f64,
}

/// A deterministic sequence of indexes over `0..n` (no `rand` needed).
fn indexes(n: u64, count: usize) -> Vec<u64> {
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    (0..count)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % n
        })
        .collect()
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn single_reads(sensor_dir: &Path, channel: &str) -> Result<Reads> {
    const ROUNDS: usize = 7;
    const OPENS: usize = 20;
    const READS: usize = 500;
    let what = |e| ScenarioError::Read {
        channel: sensor_dir.join(channel),
        error: Box::new(e),
    };
    let mut open_len = Vec::new();
    let mut samples = 0;
    for _ in 0..ROUNDS {
        let t = Instant::now();
        for _ in 0..OPENS {
            let s = Sensor::open(sensor_dir).map_err(what)?;
            samples = s.channel(channel).map_err(what)?.len()?;
        }
        open_len.push(t.elapsed().as_secs_f64() / OPENS as f64);
    }
    let sensor = Sensor::open(sensor_dir).map_err(what)?;
    let mut reader = sensor.channel(channel).map_err(what)?;
    // A first read may load what the channel keeps (an `lzma` channel decodes here).
    reader.get(0).map_err(what)?;
    let mut read = Vec::new();
    let mut index_at = Vec::new();
    let ts = sensor.timestamps()?;
    for r in 0..ROUNDS {
        let ix = indexes(samples, READS + r);
        let t = Instant::now();
        let mut bytes = 0;
        for &i in &ix[r..] {
            // Touch the bytes: a borrowed sample (raw, mjpg) costs its page, not nothing.
            let sample = reader.get(i).map_err(what)?;
            bytes += sample.len() + sample[sample.len() / 2] as usize;
        }
        read.push(t.elapsed().as_secs_f64() / READS as f64);
        std::hint::black_box(bytes);
        let t = Instant::now();
        for &i in &ix[r..] {
            let at = sensor.index_at(ts[i as usize])?;
            std::hint::black_box(at);
        }
        index_at.push(t.elapsed().as_secs_f64() / READS as f64);
    }
    Ok(Reads {
        samples,
        open_len: median(open_len),
        read: median(read),
        index_at: median(index_at),
    })
}

/// Peak RSS and wall time of one child process.
struct Measured {
    seconds: f64,
    max_rss: u64,
    ru_maxrss: u64,
    exit: i32,
}

/// Runs `cmd` (stdout and stderr to `log`) and waits for it with `wait4`. Its peak resident
/// set is the largest `VmHWM` polled from `/proc` while it runs: `ru_maxrss` would do, but
/// a child started by `vfork`+`exec` inherits the parent's high-water mark in it, so any
/// peak below this (large) process's own would read as this process's.
fn measure(mut cmd: Command, log: &Path) -> Result<Measured> {
    let out = std::fs::File::create(log).map_err(|e| RunError::io("creating", log, e))?;
    let out2 = out
        .try_clone()
        .map_err(|e| RunError::io("opening", log, e))?;
    cmd.stdin(Stdio::null()).stdout(out2).stderr(out);
    let t = Instant::now();
    let child = cmd.spawn().map_err(|error| CommandError::Start {
        command: format!("{cmd:?}"),
        error,
    })?;
    let pid = child.id();
    let done = AtomicBool::new(false);
    let hwm = AtomicU64::new(0);
    let (status, r, usage) = std::thread::scope(|s| {
        s.spawn(|| {
            while !done.load(Relaxed) {
                if let Some(b) = procfs::status_bytes(pid, "VmHWM") {
                    hwm.fetch_max(b, Relaxed);
                }
                std::thread::sleep(Duration::from_millis(5));
            }
        });
        let mut status = 0;
        // SAFETY: an all-zero rusage is a valid value; wait4 fills it for our own child.
        let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: pid is our child, not yet waited for (`Child` is dropped without waiting).
        let r = unsafe { libc::wait4(pid as libc::pid_t, &mut status, 0, &mut usage) };
        done.store(true, Relaxed);
        (status, r, usage)
    });
    let seconds = t.elapsed().as_secs_f64();
    if r != pid as libc::pid_t {
        return Err(CommandError::Wait {
            command: format!("{cmd:?}"),
            error: std::io::Error::last_os_error(),
        }
        .into());
    }
    let exit = if libc::WIFEXITED(status) {
        libc::WEXITSTATUS(status)
    } else {
        -libc::WTERMSIG(status)
    };
    // A child that exits within the first poll is never sampled: `ru_maxrss` bounds it
    // from above (see the doc comment).
    let polled = hwm.into_inner();
    let ru_maxrss = usage.ru_maxrss as u64 * 1024;
    Ok(Measured {
        seconds,
        max_rss: if polled > 0 { polled } else { ru_maxrss },
        // Linux reports kilobytes.
        ru_maxrss,
        exit,
    })
}

fn trace_files(dir: &Path, out: &mut Vec<PathBuf>) -> Result<()> {
    let reading = |e| RunError::io("reading", dir, e);
    for e in std::fs::read_dir(dir).map_err(reading)? {
        let e = e.map_err(reading)?;
        if e.file_type().map_err(reading)?.is_dir() {
            trace_files(&e.path(), out)?;
        } else {
            out.push(e.path());
        }
    }
    Ok(())
}

fn run_verbs(work: &Path, trace: &Path) -> Result<Value> {
    let exe = current_exe()?;
    let out = work.join("verbs");
    std::fs::create_dir(&out).map_err(|e| RunError::io("creating", &out, e))?;
    let mut files = Vec::new();
    trace_files(trace, &mut files)?;
    files.sort();
    let bytes: u64 = files
        .iter()
        .map(|f| std::fs::metadata(f).map_or(0, |m| m.len()))
        .sum();
    let cat = || {
        let mut c = Command::new("cat");
        c.args(&files);
        c
    };
    // Warm the page cache as the generator left it, then the baseline.
    measure(cat(), &out.join("cat-warm.log"))?;
    let cat_s = measure(cat(), &out.join("cat.log"))?.seconds;
    progress("decode floors (every lzmaf and mjpg frame decoded once, one thread)");
    let floors = verb_floor::Floors::measure(trace)?;

    let t = trace.as_os_str();
    let o = |name: &str| out.join(name).into_os_string();
    let parent = trace.parent().unwrap_or(trace).as_os_str();
    let verbs: Vec<(&str, Vec<std::ffi::OsString>)> = vec![
        ("list", vec!["list".into(), parent.into()]),
        ("info", vec!["info".into(), t.into()]),
        ("validate", vec!["validate".into(), t.into()]),
        (
            "validate --deep",
            vec!["validate".into(), "--deep".into(), t.into()],
        ),
        (
            "plot",
            vec!["plot".into(), t.into(), "-o".into(), o("plot.png")],
        ),
        ("export", vec!["export".into(), t.into(), o("trace.mcap")]),
        (
            "extract",
            vec![
                "extract".into(),
                t.into(),
                o("extract"),
                "--relative".into(),
                "--start".into(),
                "0".into(),
                "--end".into(),
                "1".into(),
            ],
        ),
        ("checksum", vec!["checksum".into(), t.into(), o("sums.csv")]),
        (
            "convert",
            vec![
                "convert".into(),
                t.into(),
                o("convert"),
                "--channel".into(),
                "lidar/rng=raw".into(),
            ],
        ),
        ("import", vec!["import".into(), t.into(), o("import")]),
    ];
    let mut rows = Vec::new();
    for (name, args) in verbs {
        progress(&format!("verb {name}"));
        let mut cmd = Command::new(&exe);
        cmd.args(&args);
        let log = out.join(format!("{}.log", name.replace([' ', '-'], "")));
        let m = measure(cmd, &log)?;
        if m.exit != 0 && !(name.starts_with("validate") && m.exit == 1) {
            progress(&format!(
                "verb {name} exited {}; see {}",
                m.exit,
                log.display()
            ));
        }
        rows.push(json!({
            "verb": name, "exit": m.exit, "seconds": m.seconds, "max_rss_bytes": m.max_rss, "ru_maxrss_bytes": m.ru_maxrss,
        }));
    }
    progress("verb replay into a daemon");
    rows.push(verb_floor::replay_row(work, trace, |cmd, log| {
        let m = measure(cmd, log)?;
        Ok((m.seconds, m.max_rss, m.exit))
    })?);
    for row in &mut rows {
        let seconds = row["seconds"].as_f64().unwrap_or(0.0);
        row["x_cat"] = json!(seconds / cat_s.max(1e-9));
        row["within_budget"] = json!(row["max_rss_bytes"].as_u64().unwrap_or(0) <= RSS_BUDGET);
        let decoded = row["verb"].as_str().and_then(verb_floor::decodes);
        if let Some(floor) = decoded.map(|keep| floors.of(keep)) {
            row["floor_seconds"] = json!(floor.seconds);
            row["x_floor"] = json!(seconds / floor.seconds.max(1e-9));
            row["decoded_frames"] = json!(floor.frames);
            row["frames_per_second"] = json!(floor.frames as f64 / seconds.max(1e-9));
        }
    }
    Ok(json!({
        "trace_bytes": bytes, "trace_files": files.len(), "cat_seconds": cat_s, "rows": rows,
        "floors": floors.json(),
    }))
}

fn print_table(r: &Value) {
    let h = &r["hour"];
    println!(
        "full-size: the rig's hour ({} camera, {} lidar, {} radar, {} imu samples){}",
        h["camera"],
        h["lidar"],
        h["radar"],
        h["imu"],
        if r["quick"] == true {
            " --quick: figures mean nothing"
        } else {
            ""
        }
    );
    println!();
    println!(
        "single-sample reads in the library, hour channel vs a 100-sample one (target <= {RATIO_TARGET}x):"
    );
    println!(
        "| format | channel | samples | open+len hour | short | ratio | get(i) hour | short | ratio | index_at hour | short | ratio |"
    );
    println!("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |");
    let us = |v: &Value| format!("{:.2} us", v.as_f64().unwrap_or(0.0) * 1e6);
    let x = |v: &Value| format!("{:.2}x", v.as_f64().unwrap_or(0.0));
    for row in r["reads"].as_array().into_iter().flatten() {
        println!(
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            row["format"].as_str().unwrap_or("?"),
            row["channel"].as_str().unwrap_or("?"),
            row["samples"][0],
            us(&row["open_len_s"][0]),
            us(&row["open_len_s"][1]),
            x(&row["open_len_ratio"]),
            us(&row["read_s"][0]),
            us(&row["read_s"][1]),
            x(&row["read_ratio"]),
            us(&row["index_at_s"][0]),
            us(&row["index_at_s"][1]),
            x(&row["index_at_ratio"]),
        );
    }
    let v = &r["verbs"];
    println!();
    println!(
        "verbs on the hour trace ({:.1} MiB in {} files; cat of them to /dev/null: {:.2} s), budget {} MiB peak RSS:",
        v["trace_bytes"].as_f64().unwrap_or(0.0) / (1 << 20) as f64,
        v["trace_files"],
        v["cat_seconds"].as_f64().unwrap_or(0.0),
        RSS_BUDGET >> 20
    );
    println!(
        "| verb | exit | peak RSS | seconds | x cat | decode floor | x floor | frames/s | within budget |"
    );
    println!("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |");
    let mib = |v: &Value| v.as_f64().unwrap_or(0.0) / (1 << 20) as f64;
    for row in v["rows"].as_array().into_iter().flatten() {
        let (floor, x_floor, rate) = match row["floor_seconds"].as_f64() {
            Some(f) => (
                format!("{f:.2} s"),
                format!("{:.2}x", row["x_floor"].as_f64().unwrap_or(0.0)),
                format!("{:.0}", row["frames_per_second"].as_f64().unwrap_or(0.0)),
            ),
            None => ("-".into(), "-".into(), "-".into()),
        };
        println!(
            "| {} | {} | {:.1} MiB | {:.2} | {:.1}x | {floor} | {x_floor} | {rate} | {} |",
            row["verb"].as_str().unwrap_or("?"),
            row["exit"],
            mib(&row["max_rss_bytes"]),
            row["seconds"].as_f64().unwrap_or(0.0),
            row["x_cat"].as_f64().unwrap_or(0.0),
            if row["within_budget"] == true {
                "yes"
            } else {
                "NO"
            },
        );
    }
    for row in v["rows"].as_array().into_iter().flatten() {
        if row.get("daemon_hwm_bytes").is_some() {
            println!();
            println!(
                "replay into a daemon: daemon peak RSS {:.1} MiB, drops {}, lzmaf frames stored uncompressed {}, counts equal to the source: {}",
                mib(&row["daemon_hwm_bytes"]),
                row["drops"],
                row["lzmaf_stored_uncompressed"],
                if row["counts_equal"] == true { "yes" } else { "NO" },
            );
        }
    }
    println!();
    println!("decode floors (one thread, every frame once):");
    for f in v["floors"].as_array().into_iter().flatten() {
        println!(
            "  {:<18} {:>7} frames {:>7.2} s {:>8.0} frames/s",
            f["channel"].as_str().unwrap_or("?"),
            f["frames"],
            f["seconds"].as_f64().unwrap_or(0.0),
            f["frames_per_second"].as_f64().unwrap_or(0.0)
        );
    }
}

fn progress(msg: &str) {
    eprintln!("bench full-size: {msg}");
}

/// `--only full-size`: the bench in a fresh working directory, kept when asked or failed.
pub(super) fn alone(args: &Options) -> Result<bool> {
    let work = make_work_dir(args.dir.as_deref())?;
    super::progress(&format!("working in {}", work.display()));
    let ok = run(&work, args.quick, args.json)?;
    super::finish(&work, args.keep, ok);
    Ok(ok)
}
