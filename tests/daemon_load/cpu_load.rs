//! "Under CPU load (a compile beside it on both cores), steady sensors raise no alarm": the
//! real daemon with an imu at 200 Hz, a gps at 10 Hz and a camera at 30 Hz (64 KiB frames)
//! while busy processes, one more than the machine has CPUs and at the default priority as a
//! compile runs, keep every core saturated for 12 s. No alarm (`silent`, `rate_*`,
//! `queue_high` or any other) in status or `events.jsonl`, no drop, and every sample the
//! drivers were told is durable is on disk, byte for byte.
//!
//! The burner is a child process tree the test always stops: a guard kills it on drop
//! (a failed assertion unwinds through it), and each burner asks the kernel to kill it when
//! the test's thread ends (`PR_SET_PDEATHSIG`), so a killed test leaves none behind.

use crate::support::daemon;

use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use daemon::*;
use serde_json::{json, Value};

/// (sensor, rate, bytes per sample, salt).
const SENSORS: [(&str, f64, usize, u8); 3] = [
    ("imu", 200.0, 48, 1),
    ("gps", 10.0, 64, 2),
    ("camera", 30.0, 64 << 10, 3),
];
/// How long the load lasts.
const LOAD: Duration = Duration::from_secs(12);

/// Busy processes, killed when dropped.
struct Burner(Vec<Child>);

impl Burner {
    fn start(n: usize) -> Burner {
        let children = (0..n)
            .map(|_| {
                let mut cmd = Command::new("sh");
                cmd.args(["-c", "while :; do :; done"])
                    .stdin(Stdio::null())
                    .stdout(Stdio::null())
                    .stderr(Stdio::null());
                // SAFETY: prctl is async-signal-safe; it only sets this child's death signal.
                unsafe {
                    cmd.pre_exec(|| {
                        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                        Ok(())
                    });
                }
                cmd.spawn().expect("sh for the CPU burner")
            })
            .collect();
        Burner(children)
    }
}

impl Drop for Burner {
    fn drop(&mut self) {
        for c in &mut self.0 {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// (busy, total) jiffies of all CPUs, from `/proc/stat`.
fn cpu_jiffies() -> (u64, u64) {
    let stat = std::fs::read_to_string("/proc/stat").unwrap();
    let v: Vec<u64> = stat
        .lines()
        .next()
        .unwrap()
        .split_whitespace()
        .skip(1)
        .map(|x| x.parse().unwrap())
        .collect();
    let total: u64 = v.iter().sum();
    let idle = v[3] + v[4]; // idle, iowait
    (total - idle, total)
}

/// A driver sending at `hz` until `stop`, on a schedule against one start (a late frame is
/// sent at once, so the rate holds on a busy machine). Returns (frames sent, durable count
/// the daemon acknowledged after the last one).
fn steady(
    d: &TestDaemon,
    (name, hz, n, salt): (&'static str, f64, usize, u8),
    stop: &Arc<AtomicBool>,
) -> JoinHandle<(u64, u64)> {
    let (mut c, r) = d.connect(&raw_hello(name, n));
    assert_eq!(r["ok"], true, "{name}: {r}");
    let stop = stop.clone();
    std::thread::spawn(move || {
        let t0 = Instant::now();
        let mut i = 0u64;
        while !stop.load(Ordering::Relaxed) {
            let due = t0 + Duration::from_secs_f64(i as f64 / hz);
            if let Some(wait) = due.checked_duration_since(Instant::now()) {
                std::thread::sleep(wait);
            }
            c.send(&frame(
                1.7e9 + i as f64 / hz,
                None,
                &[(&sample(salt, i, n), false)],
            ));
            i += 1;
        }
        (i, c.sync())
    })
}

/// Waits until every sensor's `rate_hz` in status is within 20% of its rate.
fn wait_for_rates(d: &TestDaemon) {
    d.wait_status("every sensor's rate live within 20%", |st| {
        SENSORS.iter().all(|(n, hz, _, _)| {
            st["sensors"][n]["rate_hz"]
                .as_f64()
                .is_some_and(|r| (r - hz).abs() <= 0.2 * hz)
        })
    });
}

#[test]
fn steady_sensors_raise_no_alarm_with_every_core_busy() {
    let mut d = TestDaemon::start(json!({
        "sensors": {
            "imu": {"expected_hz": 200.0},
            "gps": {"expected_hz": 10.0},
            "camera": {"expected_hz": 30.0},
        },
        "health_interval_ms": 100,
        "stats_interval_ms": 500,
    }));
    let trace = d.trace_dir();
    let stop = Arc::new(AtomicBool::new(false));
    let drivers: Vec<_> = SENSORS.iter().map(|s| steady(&d, *s, &stop)).collect();
    wait_for_rates(&d);

    let cpus = std::thread::available_parallelism().map_or(2, |n| n.get());
    let burner = Burner::start(cpus.max(2) + 1);
    let (busy0, total0) = cpu_jiffies();
    let t0 = Instant::now();
    let mut alarmed: Vec<Value> = Vec::new();
    while t0.elapsed() < LOAD {
        std::thread::sleep(Duration::from_millis(250));
        let st = d.status();
        if st["alarms"] != json!([]) {
            alarmed.push(st["alarms"].clone());
        }
    }
    let (busy1, total1) = cpu_jiffies();
    drop(burner);
    let busy = (busy1 - busy0) as f64 / (total1 - total0).max(1) as f64;
    eprintln!("CPUs {:.1}% busy over {LOAD:?} of load", busy * 100.0);

    stop.store(true, Ordering::Relaxed);
    let counts: Vec<(u64, u64)> = drivers.into_iter().map(|t| t.join().unwrap()).collect();
    let st = d.status();
    assert!(d.stop().success(), "{}", d.log());

    // The load was real: the CPUs were (nearly) never idle.
    assert!(
        busy > 0.9,
        "the burner kept the CPUs only {:.0}% busy",
        busy * 100.0
    );
    assert!(
        alarmed.is_empty(),
        "alarms under load: {alarmed:#?}\n{st:#}\n{}",
        d.log()
    );
    let bad: Vec<EventLine> = events(&trace)
        .into_iter()
        .filter(|e| matches!(e.event, Event::Alarm { .. } | Event::Drop { .. }))
        .collect();
    assert!(bad.is_empty(), "alarms or drops under load: {bad:#?}");
    for ((name, hz, n, salt), (sent, durable)) in SENSORS.iter().zip(counts) {
        assert_eq!(
            durable, sent,
            "{name}: every frame sent is acknowledged durable"
        );
        // The rate held: at least 90% of the frames its schedule called for.
        let expected = hz * LOAD.as_secs_f64();
        assert!(
            sent as f64 >= 0.9 * expected,
            "{name}: {sent} frames sent, expected {expected}"
        );
        let (ts, data) = read_sensor(&trace, name, "x");
        assert_eq!(ts.len() as u64, sent, "{name}: samples on disk");
        for (i, (t, x)) in ts.iter().zip(&data).enumerate() {
            let i = i as u64;
            assert_eq!(*t, 1.7e9 + i as f64 / hz, "{name} sample {i}");
            assert_eq!(*x, sample(*salt, i, *n), "{name} sample {i}");
        }
    }
}
