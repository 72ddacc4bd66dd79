//! `roverlog bench --disk DIR`: prints what [`crate::disk::measure`] measured and
//! the advice drawn from it. The advice is a pure function of the measured figures
//! ([`advice`]), so what it says for given numbers is tested without a disk.
//!
//! One unit style: sizes in MiB and rates in MiB/s (the `--load-mbps` flag is decimal MB/s,
//! converted once where the load is stated); the JSON keeps bytes.

use serde_json::{json, Value};
use std::fmt::Write as _;
use std::path::Path;

use super::error::{Result, UsageError};

const MIB: f64 = (1u64 << 20) as f64;

fn mib(bytes: f64) -> String {
    format!("{:.1} MiB", bytes / MIB)
}

fn mib_s(bytes_per_s: f64) -> String {
    format!("{:.1} MiB/s", bytes_per_s / MIB)
}

fn block(bytes: u64) -> String {
    if bytes >= 1 << 20 {
        format!("{} MiB", bytes >> 20)
    } else {
        format!("{} KiB", bytes >> 10)
    }
}

/// What the measured figures mean for a load: the settings to use, and why, in words.
#[derive(Debug)]
pub struct Advice {
    /// The disk keeps up with the load: every block size measured wrote faster than it, and
    /// some fsync interval's data is written and synced within the interval.
    pub holds: bool,
    /// `fsync_interval_ms` and the per-sensor `queue_bytes`, when the disk holds the load.
    pub fsync_interval_ms: Option<u64>,
    pub queue_bytes: Option<u64>,
    /// The advice as printed, one line each.
    pub lines: Vec<String>,
}

/// The advice for a load of `load` bytes/s in all, `sensor_load` of it from the busiest
/// sensor, from `r`, [`crate::disk::measure`]'s figures (`sizes` with `block_bytes`
/// and `mb_per_s`; `plan` with `fsync_interval_ms`, `bytes_per_interval`, `worst_round_s`,
/// `holds`, or `why` when it was not measured).
///
/// The rules: an fsync interval fits when one interval's data is written and synced within
/// it (the writer keeps up); the shortest that fits is recommended, as it loses the least on
/// a power cut. Each sensor's queue must take that sensor's data while the writer is busy for
/// its worst round; twice that, in whole MiB, is the per-sensor `queue_bytes`. A disk that
/// wrote slower than the load with any block size is not trusted to hold it, whatever a few
/// short rounds showed.
pub fn advice(r: &Value, load: f64, sensor_load: f64) -> Advice {
    let plan: Vec<&Value> = r["plan"].as_array().into_iter().flatten().collect();
    let mut lines = plan_lines(&plan, load, sensor_load);
    lines.push(String::new());
    let fails = |mut lines: Vec<String>, more: Vec<String>| {
        lines.extend(more);
        Advice {
            holds: false,
            fsync_interval_ms: None,
            queue_bytes: None,
            lines,
        }
    };
    if let Some(warning) = slower_than_load(r, load) {
        return fails(lines, warning);
    }
    match plan.iter().position(|p| p["holds"] == true) {
        None => fails(lines, vec![no_interval_holds(&plan)]),
        Some(i) => recommend(&plan, i, sensor_load, lines),
    }
}

/// The advice's first lines: each candidate fsync interval, and whether writing and syncing
/// one interval of the load fit in it.
fn plan_lines(plan: &[&Value], load: f64, sensor_load: f64) -> Vec<String> {
    let mut lines = Vec::new();
    lines.push(format!(
        "for a load of {} in all, the busiest sensor {} (fsync \"periodic\"); one interval's data written and fdatasynced, worst of {} rounds:",
        mib_s(load),
        mib_s(sensor_load),
        crate::disk::PLAN_ROUNDS
    ));
    for p in plan {
        let ms = p["fsync_interval_ms"].as_u64().unwrap_or(0);
        let bytes = p["bytes_per_interval"].as_f64().unwrap_or(0.0);
        let line = match (p["why"].as_str(), p["worst_round_s"].as_f64()) {
            (Some(why), _) => format!("not measured: {why}"),
            (None, Some(worst)) => format!(
                "{} in {:.0} ms: {}",
                mib(bytes),
                worst * 1e3,
                if p["holds"] == true {
                    "fits"
                } else {
                    "does NOT fit (the writer would fall behind)"
                }
            ),
            (None, None) => "no figure".into(),
        };
        lines.push(format!("  fsync_interval_ms {ms:>5}: {line}"));
    }
    lines
}

/// The warning when the disk's sustained rate at its slowest block size is under the load:
/// no interval can hold it for long.
fn slower_than_load(r: &Value, load: f64) -> Option<Vec<String>> {
    // The slowest block size: the disk's sustained rate at its worst.
    let slowest = r["sizes"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|s| Some((s["block_bytes"].as_u64()?, s["mb_per_s"].as_f64()? * 1e6)))
        .min_by(|a, b| a.1.total_cmp(&b.1));
    let (block_bytes, rate) = slowest.filter(|&(_, rate)| rate < load)?;
    Some(vec![
        format!(
            "WARNING: this disk is slower than the load. With {} writes it wrote {} (fdatasync every {} included), under the {} stated: it cannot keep up for long, whatever a short interval shows above.",
            block(block_bytes),
            mib_s(rate),
            mib(r["sync_every_bytes"].as_f64().unwrap_or(0.0)),
            mib_s(load),
        ),
        "The queues would fill, then queue_policy decides (\"block\": the drivers wait; \"drop\": frames are lost). Lower the load or record to a faster disk.".into(),
        "no fsync interval holds this load (exit 1)".into(),
    ])
}

/// Why no candidate interval holds the load: how long the shortest one took.
fn no_interval_holds(plan: &[&Value]) -> String {
    let shortest = plan.first();
    let took = shortest.and_then(|p| p["worst_round_s"].as_f64());
    let mut l = "no fsync interval holds this load: ".to_string();
    match (shortest, took) {
        (Some(p), Some(t)) => {
            let _ = write!(
                l,
                "even {} ms of it took {:.0} ms to write and sync",
                p["fsync_interval_ms"],
                t * 1e3
            );
        }
        _ => l.push_str("the disk is too slow for it"),
    }
    l.push_str(" (exit 1)");
    l
}

/// The recommendation from the shortest interval that holds (`plan[i]`): that interval, and
/// the per-sensor queue that covers the busiest sensor while the writer is busy.
fn recommend(plan: &[&Value], i: usize, sensor_load: f64, mut lines: Vec<String>) -> Advice {
    // The daemon's defaults the advice compares against.
    let defaults = roverlog_daemon::config::RawConfig::default();
    let p = plan[i];
    let ms = p["fsync_interval_ms"].as_u64().unwrap_or(0);
    let worst = p["worst_round_s"].as_f64().unwrap_or(0.0);
    let interval_bytes = p["bytes_per_interval"].as_f64().unwrap_or(0.0);

    lines.push("recommended:".into());
    let shorter: Vec<String> = plan[..i]
        .iter()
        .map(|q| match q["worst_round_s"].as_f64() {
            Some(t) => format!("{} ms took {:.0} ms", q["fsync_interval_ms"], t * 1e3),
            None => format!("{} ms was not measured", q["fsync_interval_ms"]),
        })
        .collect();
    let why_not_shorter = if shorter.is_empty() {
        "it is the shortest candidate".to_string()
    } else {
        format!("the shorter ones do not fit: {}", shorter.join(", "))
    };
    lines.push(format!(
        "  fsync_interval_ms {ms}: the shortest interval whose data is written and synced within it (worst round {:.0} ms of {ms} ms; {why_not_shorter}), so the writer keeps up and a power cut loses at most {ms} ms of data ({}). A longer interval would lose more and gain nothing here.",
        worst * 1e3,
        mib(interval_bytes),
    ));
    if interval_bytes > defaults.fsync_bytes as f64 {
        lines.push(format!(
            "    One interval is {}, over fsync_bytes ({} by default), which then syncs first: raise fsync_bytes to at least {} for the interval to count.",
            mib(interval_bytes),
            mib(defaults.fsync_bytes as f64),
            mib(interval_bytes),
        ));
    }

    // Per sensor: the busiest sensor's data while the writer is busy, twice, whole MiB.
    let during = sensor_load * worst;
    let need_mib = ((2.0 * during) / MIB).ceil().max(1.0) as u64;
    let queue = need_mib << 20;
    let default_note = if queue <= defaults.queue_bytes {
        format!(
            "The default ({}) is enough; keep it unless memory is short (queue_bytes must also hold max_frame_bytes + 4 bytes, and max_frame_bytes is {} by default).",
            mib(defaults.queue_bytes as f64),
            mib(defaults.max_frame_bytes as f64)
        )
    } else {
        format!(
            "That is over the default ({}): set it, and count on up to {need_mib} MiB of memory per sensor.",
            mib(defaults.queue_bytes as f64)
        )
    };
    lines.push(format!(
        "  queue_bytes {need_mib} MiB per sensor (the setting is per sensor): while the writer writes and syncs (worst round {:.0} ms) the busiest sensor sends {} into its queue; twice that, rounded up to a whole MiB. {default_note}",
        worst * 1e3,
        mib(during),
    ));
    Advice {
        holds: true,
        fsync_interval_ms: Some(ms),
        queue_bytes: Some(queue),
        lines,
    }
}

/// `bench --disk DIR` (see [`crate::disk`]): measures, prints the table and the
/// advice (or one JSON object); `Ok(false)` (exit 1) when the disk does not hold the load,
/// a [`UsageError`] for bad arguments, the measurement's own error when it failed (exit 2).
pub fn run(
    dir: &Path,
    disk_mib: u64,
    load_mbps: f64,
    sensor_mbps: Option<f64>,
    json_out: bool,
) -> Result<bool> {
    if !dir.is_dir() {
        return Err(UsageError::DiskNotADirectory {
            dir: dir.to_path_buf(),
        }
        .into());
    }
    let sensor_mbps = sensor_mbps.unwrap_or(load_mbps);
    let positive = |v: f64| v.is_finite() && v > 0.0;
    if !positive(load_mbps) || !positive(sensor_mbps) || disk_mib == 0 {
        return Err(UsageError::DiskNotPositive {
            load_mbps,
            sensor_mbps,
            disk_mib,
        }
        .into());
    }
    if sensor_mbps > load_mbps {
        return Err(UsageError::SensorOverLoad {
            sensor_mbps,
            load_mbps,
        }
        .into());
    }
    let (load, sensor_load) = (load_mbps * 1e6, sensor_mbps * 1e6);
    let mut r = crate::disk::measure(dir, disk_mib << 20, 4 << 20, load)?;
    let a = advice(&r, load, sensor_load);
    if json_out {
        r["holds"] = json!(a.holds);
        r["busiest_sensor_bytes_per_s"] = json!(sensor_load);
        r["recommended"] = match (a.fsync_interval_ms, a.queue_bytes) {
            (Some(ms), Some(q)) => json!({"fsync_interval_ms": ms, "queue_bytes_per_sensor": q}),
            _ => Value::Null,
        };
        r["advice"] = json!(a.lines);
        println!("{r:#}");
        return Ok(a.holds);
    }
    println!(
        "disk of {} ({disk_mib} MiB per block size, fdatasync every 4 MiB)",
        dir.display(),
    );
    println!(
        "{:>8} {:>11} {:>11} {:>11} {:>11} {:>11} {:>11} {:>9}",
        "block",
        "write p50",
        "write p99",
        "write p99.9",
        "fsync p50",
        "fsync p99",
        "fsync p99.9",
        "MiB/s"
    );
    let ms = |v: &Value| {
        v.as_f64()
            .map_or("-".into(), |s| format!("{:.3} ms", s * 1e3))
    };
    for s in r["sizes"].as_array().into_iter().flatten() {
        println!(
            "{:>8} {:>11} {:>11} {:>11} {:>11} {:>11} {:>11} {:>9.1}",
            block(s["block_bytes"].as_u64().unwrap_or(0)),
            ms(&s["write_s"]["p50"]),
            ms(&s["write_s"]["p99"]),
            ms(&s["write_s"]["p999"]),
            ms(&s["fsync_s"]["p50"]),
            ms(&s["fsync_s"]["p99"]),
            ms(&s["fsync_s"]["p999"]),
            s["mb_per_s"].as_f64().unwrap_or(0.0) * 1e6 / MIB
        );
    }
    println!();
    for l in &a.lines {
        println!("{l}");
    }
    Ok(a.holds)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Figures as `measure` reports them: three block sizes at `mbps` MB/s (the 4 KiB one at
    /// `small_mbps`), and per interval the worst round in ms (`None`: not measured).
    fn measured(small_mbps: f64, mbps: f64, load: f64, rounds_ms: [Option<f64>; 5]) -> Value {
        let plan: Vec<Value> = crate::disk::INTERVALS_MS
            .iter()
            .zip(rounds_ms)
            .map(|(&ms, worst)| {
                let bytes = (load * ms as f64 / 1e3).ceil();
                match worst {
                    Some(w) => json!({"fsync_interval_ms": ms, "bytes_per_interval": bytes,
                        "worst_round_s": w / 1e3, "holds": w < ms as f64}),
                    None => json!({"fsync_interval_ms": ms, "bytes_per_interval": bytes,
                        "holds": false, "why": "the load is over the disk's 10.0 MB/s"}),
                }
            })
            .collect();
        json!({
            "sync_every_bytes": 4 << 20,
            "sizes": [
                {"block_bytes": 4096, "mb_per_s": small_mbps},
                {"block_bytes": 65536, "mb_per_s": mbps},
                {"block_bytes": 1 << 20, "mb_per_s": mbps},
            ],
            "plan": plan,
        })
    }

    fn text(a: &Advice) -> String {
        a.lines.join("\n")
    }

    #[test]
    fn a_fast_disk_gets_the_shortest_interval_that_fits_and_a_per_sensor_queue() {
        // 100 MB/s in all, the busiest sensor 40 MB/s; 100 ms does not fit (130 ms), 250 does
        // (150 ms worst round).
        let r = measured(
            900.0,
            2000.0,
            100e6,
            [
                Some(130.0),
                Some(150.0),
                Some(200.0),
                Some(300.0),
                Some(500.0),
            ],
        );
        let a = advice(&r, 100e6, 40e6);
        let t = text(&a);
        assert!(a.holds, "{t}");
        assert_eq!(a.fsync_interval_ms, Some(250));
        // 40 MB/s over 150 ms is 6 MB = 5.72 MiB; twice that is 11.4, rounded up: 12 MiB.
        assert_eq!(a.queue_bytes, Some(12 << 20), "{t}");
        assert!(
            t.contains("for a load of 95.4 MiB/s in all, the busiest sensor 38.1 MiB/s"),
            "{t}"
        );
        assert!(
            t.contains("fsync_interval_ms   100: 9.5 MiB in 130 ms: does NOT fit"),
            "{t}"
        );
        assert!(
            t.contains("fsync_interval_ms   250: 23.8 MiB in 150 ms: fits"),
            "{t}"
        );
        assert!(
            t.contains("fsync_interval_ms 250: the shortest interval whose data is written and synced within it (worst round 150 ms of 250 ms; the shorter ones do not fit: 100 ms took 130 ms), so the writer keeps up and a power cut loses at most 250 ms of data (23.8 MiB)"),
            "{t}"
        );
        assert!(
            t.contains("queue_bytes 12 MiB per sensor (the setting is per sensor): while the writer writes and syncs (worst round 150 ms) the busiest sensor sends 5.7 MiB into its queue; twice that, rounded up to a whole MiB. The default (64.0 MiB) is enough"),
            "{t}"
        );
        // One unit style: no bare byte counts, no decimal MB.
        assert!(
            !t.contains("MB/s") && !t.contains(" bytes/s") && !t.contains("12582912"),
            "{t}"
        );
        assert!(!t.contains("WARNING"), "{t}");
    }

    #[test]
    fn a_queue_over_the_default_and_an_interval_over_fsync_bytes_are_said() {
        // 400 MB/s, one sensor; only 2000 ms fits (worst round 1500 ms).
        let r = measured(
            900.0,
            900.0,
            400e6,
            [
                Some(300.0),
                Some(600.0),
                Some(900.0),
                Some(1100.0),
                Some(1500.0),
            ],
        );
        let a = advice(&r, 400e6, 400e6);
        let t = text(&a);
        assert_eq!((a.holds, a.fsync_interval_ms), (true, Some(2000)), "{t}");
        // 400 MB/s x 1.5 s = 600 MB = 572.2 MiB; twice: 1144.4, rounded up.
        assert_eq!(a.queue_bytes, Some(1145 << 20), "{t}");
        assert!(
            t.contains("That is over the default (64.0 MiB): set it"),
            "{t}"
        );
        assert!(
            t.contains("One interval is 762.9 MiB, over fsync_bytes (64.0 MiB by default)"),
            "{t}"
        );
        assert!(t.contains("the shorter ones do not fit: 100 ms took 300 ms, 250 ms took 600 ms, 500 ms took 900 ms, 1000 ms took 1100 ms"), "{t}");
    }

    #[test]
    fn a_disk_slower_than_the_load_is_a_warning_not_a_setting_that_holds() {
        // Every short round fits (a write cache absorbs them), but 4 KiB writes ran at 60 MB/s
        // under a 80 MB/s load: the disk does not hold it.
        let r = measured(
            60.0,
            900.0,
            80e6,
            [Some(20.0), Some(40.0), Some(90.0), Some(180.0), Some(400.0)],
        );
        let a = advice(&r, 80e6, 20e6);
        let t = text(&a);
        assert!(!a.holds, "{t}");
        assert_eq!((a.fsync_interval_ms, a.queue_bytes), (None, None));
        assert!(
            t.contains("WARNING: this disk is slower than the load. With 4 KiB writes it wrote 57.2 MiB/s (fdatasync every 4.0 MiB included), under the 76.3 MiB/s stated"),
            "{t}"
        );
        assert!(
            t.contains("no fsync interval holds this load (exit 1)"),
            "{t}"
        );
        assert!(!t.contains("recommended") && !t.contains("holds ("), "{t}");
    }

    #[test]
    fn no_interval_that_fits_is_said_with_the_shortest_round() {
        let r = measured(
            900.0,
            900.0,
            500e6,
            [
                Some(180.0),
                Some(400.0),
                Some(700.0),
                Some(1300.0),
                Some(2600.0),
            ],
        );
        let a = advice(&r, 500e6, 100e6);
        let t = text(&a);
        assert!(!a.holds);
        assert!(
            t.contains("no fsync interval holds this load: even 100 ms of it took 180 ms to write and sync (exit 1)"),
            "{t}"
        );
    }
}
