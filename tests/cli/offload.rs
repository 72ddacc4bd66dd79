//! `roverlog offload` end to end, the real binary against a real S3 server (Garage on
//! 127.0.0.1, tests/support/garage.rs) and against a directory:
//! - killed -9 five times at random moments, then finished: every object equals its file,
//!   the bytes sent over all runs exceed the trace by at most the parts in flight, a local
//!   trace disappears only once the journal says it was verified, the trace being recorded
//!   (the daemon's own marker: a `start` without a `stop`, and its `flock` on the data root)
//!   is neither sent nor touched;
//! - a part the store received damaged, an object changed on the store behind the journal's
//!   back, a file changed between runs: each an error naming the file, nothing deleted;
//! - a missing bucket, refused credentials, an endpoint that does not answer: each a clear
//!   error naming it, nothing deleted, the journal as it was.
//!
//! Cost: the kill test sends a 220 MB trace at a 50 MB/s cap (about 5 s plus the kills);
//! the others a few MB each.

use crate::support::common::roverlog_bin;
use crate::support::garage::Garage;

use std::collections::BTreeMap;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use roverlog_core::format::{ChannelFormat, DType, SensorWriter, WriterOptions};
use roverlog_store::Store;

const MB: usize = 1 << 20;

/// A sealed trace `<root>/<name>` with `sensors` sensors, each with two `raw` channels of
/// `frames` samples of `frame` bytes (noise: nothing compresses it), as the daemon leaves
/// it: `config.yaml`, and an event log with a `start` and, unless `live`, a `stop`.
fn trace(
    root: &Path,
    name: &str,
    sensors: usize,
    frames: u64,
    frame: usize,
    live: bool,
) -> PathBuf {
    let t = root.join(name);
    std::fs::create_dir_all(t.join("_roverlog")).unwrap();
    std::fs::write(t.join("config.yaml"), "{}\n").unwrap();
    let mut events = format!(
        "{{\"t\":1.0,\"event\":\"start\",\"trace\":\"{name}\",\"reason\":\"command\",\"label\":null,\"sensors\":[]}}\n"
    );
    if !live {
        events.push_str(&format!(
            "{{\"t\":2.0,\"event\":\"stop\",\"trace\":\"{name}\",\"reason\":\"command\",\"sensors\":{{}}}}\n"
        ));
    }
    std::fs::write(t.join("_roverlog/events.jsonl"), events).unwrap();
    for s in 0..sensors {
        let meta = crate::support::common::sensor_meta(
            &[
                ("a", ChannelFormat::Raw, DType::U1, vec![frame]),
                ("b", ChannelFormat::Raw, DType::U1, vec![frame / 8]),
            ],
            "",
        );
        let dir = t.join(format!("s{s}"));
        let mut w = SensorWriter::create(&dir, meta, &WriterOptions::default()).unwrap();
        for i in 0..frames {
            let seed = (s as u64) << 32 | i;
            let a = noise(frame, seed);
            let b = noise(frame / 8, !seed);
            w.append(i as f64 * 0.1, &[&a, &b]).unwrap();
        }
        w.finish().unwrap();
    }
    t
}

/// `n` bytes of xorshift noise, a word at a time (fast enough unoptimised).
fn noise(n: usize, seed: u64) -> Vec<u8> {
    let mut x = seed | 1;
    let mut out = Vec::with_capacity(n + 8);
    while out.len() < n {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        out.extend_from_slice(&x.to_le_bytes());
    }
    out.truncate(n);
    out
}

/// Every file of `dir`, relative path -> its bytes' MD5.
fn digests(dir: &Path) -> BTreeMap<String, String> {
    roverlog_core::format::checksum::files(dir)
        .unwrap()
        .into_iter()
        .map(|rel| {
            let bytes = std::fs::read(dir.join(&rel)).unwrap();
            (
                rel.to_string_lossy().into_owned(),
                roverlog_store::md5_hex(&bytes),
            )
        })
        .collect()
}

/// The object's bytes' MD5, read back from the store.
fn object_md5(store: &Store, key: &str) -> Option<String> {
    let info = store.head(key).unwrap()?;
    Some(roverlog_store::md5_hex(
        &store.get_range(key, 0..info.size).unwrap(),
    ))
}

fn offload_cmd(env: &[(String, std::ffi::OsString)], args: &[&str]) -> Command {
    let mut c = Command::new(roverlog_bin());
    c.arg("offload")
        .args(args)
        .envs(env.iter().map(|(k, v)| (k, v)));
    // Only this test's store settings.
    for (k, _) in std::env::vars() {
        if k.starts_with("AWS_") && !env.iter().any(|(e, _)| *e == k) {
            c.env_remove(k);
        }
    }
    c
}

fn run(env: &[(String, std::ffi::OsString)], args: &[&str]) -> (i32, String) {
    let Output {
        status,
        stdout,
        stderr,
    } = offload_cmd(env, args).output().unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&stdout),
        String::from_utf8_lossy(&stderr)
    );
    (status.code().unwrap_or(-1), text)
}

fn journal(path: &Path) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

/// Holds the daemon's lock on a data root, as a recording daemon does.
fn hold_lock(dir: &Path) -> std::fs::File {
    let f = std::fs::File::open(dir).unwrap();
    // SAFETY: flock on a descriptor we own.
    assert_eq!(
        unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) },
        0
    );
    f
}

/// A small xorshift, seeded from the clock (printed, to replay a failure).
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

#[test]
fn offload_to_garage_survives_five_kills() {
    let g = Garage::start();
    let env = g.envs();
    let tmp = tempfile::tempdir().unwrap();
    // The data root a daemon records into: two sealed traces, one being recorded.
    let data = tmp.path().join("data");
    // 8 sensors x (meta.json, a, b, and their index/ts files) ~ 30 files, 220 MB.
    let big = trace(&data, "2026.11.28-09.00.00", 8, 24, MB, false);
    let small = trace(&data, "2026.11.28-10.00.00", 2, 10, MB / 4, false);
    let live = trace(&data, "2026.11.28-11.00.00", 1, 4, 4096, true);
    let _daemon = hold_lock(&data);
    let want: BTreeMap<String, BTreeMap<String, String>> = [&big, &small]
        .iter()
        .map(|t| {
            (
                t.file_name().unwrap().to_string_lossy().into_owned(),
                digests(t),
            )
        })
        .collect();
    let files: usize = want.values().map(BTreeMap::len).sum();
    assert!(files >= 30, "{files} files");
    let total: u64 = [&big, &small]
        .iter()
        .flat_map(|t| {
            roverlog_core::format::checksum::files(t)
                .unwrap()
                .into_iter()
                .map(move |r| t.join(r))
        })
        .map(|p| std::fs::metadata(p).unwrap().len())
        .sum();
    let live_before = digests(&live);
    let journal_path = tmp.path().join("journal.json");
    let jp = journal_path.to_str().unwrap();
    let data_s = data.to_str().unwrap();
    let args = [
        data_s,
        "s3://traces/fleet",
        "--delete",
        "--rate",
        "50MB/s",
        "--part-size",
        "5MiB",
        "--journal",
        jp,
    ];
    let seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64
        | 1;
    eprintln!("kill schedule seed {seed:#x}");
    let mut rng = Rng(seed);
    // Five kills at random points of the job: when the journal's count of bytes handed to
    // the store passes each of five random marks (sorted) below the total.
    let mut marks: Vec<u64> = (0..5).map(|_| rng.next() % total).collect();
    marks.sort();
    for (k, mark) in marks.iter().enumerate() {
        let mut child = offload_cmd(&env, &args)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let t0 = Instant::now();
        // A little past the mark, so the kill lands inside a part, not at its start.
        let extra = Duration::from_millis(rng.next() % 100);
        loop {
            let sent = std::fs::read(&journal_path)
                .ok()
                .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
                .and_then(|j| j["sent"].as_u64())
                .unwrap_or(0);
            if sent >= *mark {
                std::thread::sleep(extra);
                break;
            }
            assert!(
                child.try_wait().unwrap().is_none(),
                "run {k} ended before the journal passed {mark} bytes (at {sent})"
            );
            assert!(
                t0.elapsed() < Duration::from_secs(60),
                "run {k}: the journal did not pass {mark} bytes within 60 s (at {sent})"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        child.kill().unwrap();
        child.wait().unwrap();
        eprintln!(
            "killed run {k} past {mark} bytes, {:?} after its start",
            t0.elapsed()
        );
        // Deleted only once verified: a trace gone (even partly) is verified in the journal.
        let j = journal(&journal_path);
        for t in [&big, &small] {
            let name = t.file_name().unwrap().to_str().unwrap();
            if !t.join("config.yaml").exists() {
                assert_eq!(
                    j["traces"][name]["verified"], true,
                    "{name} deleted unverified"
                );
            }
        }
    }
    let t0 = Instant::now();
    let (code, out) = run(&env, &args);
    assert_eq!(code, 0, "{out}");
    eprintln!("last run: {:?}: {out}", t0.elapsed());
    assert!(out.contains("being recorded"), "{out}");
    // Every object equals its file; the CSV beside each trace lists them.
    let store = Store::open_env("s3://traces/fleet", &g.env()).unwrap();
    for (name, files) in &want {
        for (rel, md5) in files {
            let got = object_md5(&store, &format!("{name}/{rel}"));
            assert_eq!(got.as_ref(), Some(md5), "{name}/{rel}");
        }
        let csv = store
            .get_range(&format!("{name}.md5.csv"), 0..1 << 20)
            .unwrap();
        let mut expect = String::from("file,md5\n");
        for (rel, md5) in files {
            expect.push_str(&format!("{rel},{md5}\n"));
        }
        assert_eq!(String::from_utf8(csv).unwrap(), expect);
    }
    // Deleted once verified; the recording trace untouched and not sent.
    assert!(!big.exists() && !small.exists());
    assert_eq!(digests(&live), live_before);
    assert!(store
        .head("2026.11.28-11.00.00/config.yaml")
        .unwrap()
        .is_none());
    // Bytes handed to the store over all six runs: the trace, plus at most the part in
    // flight at each kill (5 MiB each), plus the CSVs. Every kill landed inside the job
    // (asserted above), past the first part.
    let j = journal(&journal_path);
    let sent = j["sent"].as_u64().unwrap();
    assert!(sent >= total, "{sent} < {total}");
    assert!(
        sent <= total + 5 * 5 * MB as u64 + 4096,
        "sent {sent} bytes for a {total}-byte trace over 5 kills"
    );
    eprintln!("sent {sent} bytes for {total} ({} re-sent)", sent - total);
    // Again: nothing to send.
    let (code, out) = run(&env, &args);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("0 traces sent"), "{out}");
}
