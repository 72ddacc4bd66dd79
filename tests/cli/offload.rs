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
//!   error naming it, nothing deleted, the journal as it was; a full destination (a 4 MiB
//!   tmpfs) likewise;
//! - a real daemon recording: its open trace is skipped and untouched, the one a rotation
//!   sealed goes, and the last one goes once the daemon stopped;
//! - to a directory: the copy validates and its CSV checks it; a trace a crash cut is
//!   reported (exit 1), not sent; `--keep-free` on a 64 MiB tmpfs removes the oldest verified
//!   traces first and never the unverified one.
//!
//! Cost: the kill test sends a 220 MB trace at a 50 MB/s cap (about 5 s plus the kills);
//! the others a few MB each (about 60 s for the six tests in an unoptimised build).

use crate::support::common::roverlog_bin;
use crate::support::garage::Garage;

use std::collections::BTreeMap;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use roverlog_core::format::{ChannelFormat, DType, SensorWriter, WriterOptions};
use roverlog_store::Store;

pub(crate) const MB: usize = 1 << 20;

/// A sealed trace `<root>/<name>` with `sensors` sensors, each with two `raw` channels of
/// `frames` samples of `frame` bytes (noise: nothing compresses it), as the daemon leaves
/// it: `config.yaml`, and an event log with a `start` and, unless `live`, a `stop`.
pub(crate) fn trace(
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
pub(crate) fn digests(dir: &Path) -> BTreeMap<String, String> {
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
pub(crate) fn object_md5(store: &Store, key: &str) -> Option<String> {
    let info = store.head(key).unwrap()?;
    Some(roverlog_store::md5_hex(
        &store.get_range(key, 0..info.size).unwrap(),
    ))
}

pub(crate) fn offload_cmd(env: &[(String, std::ffi::OsString)], args: &[&str]) -> Command {
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

pub(crate) fn run(env: &[(String, std::ffi::OsString)], args: &[&str]) -> (i32, String) {
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

pub(crate) fn journal(path: &Path) -> serde_json::Value {
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
        "--jobs",
        "4",
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
    // The most parts the journal had booked in flight at once (seen by polling it).
    let mut most_in_flight = 0;
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
            let j = std::fs::read(&journal_path)
                .ok()
                .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok());
            let sent = j.as_ref().and_then(|j| j["sent"].as_u64()).unwrap_or(0);
            let flying = j
                .as_ref()
                .and_then(|j| j["in_flight"].as_array().map(Vec::len))
                .unwrap_or(0);
            assert!(flying <= 4, "{flying} parts in flight with --jobs 4");
            most_in_flight = most_in_flight.max(flying);
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
    // Bytes handed to the store over all six runs: the trace, plus at most the parts in
    // flight at each kill (4 of 5 MiB each), plus the CSVs. Every kill landed inside the
    // job (asserted above), past the first part.
    let j = journal(&journal_path);
    let sent = j["sent"].as_u64().unwrap();
    assert!(sent >= total, "{sent} < {total}");
    assert!(
        sent <= total + 5 * 4 * 5 * MB as u64 + 4096,
        "sent {sent} bytes for a {total}-byte trace over 5 kills"
    );
    eprintln!(
        "sent {sent} bytes for {total} ({} re-sent); at most {most_in_flight} parts seen in flight",
        sent - total
    );
    // Again: nothing to send.
    let (code, out) = run(&env, &args);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("0 traces sent"), "{out}");
}

/// The journal's text, or `None` when there is none.
fn journal_text(path: &Path) -> Option<Vec<u8>> {
    std::fs::read(path).ok()
}

#[test]
fn offload_bad_stores_and_damaged_uploads_are_errors_naming_them() {
    let g = Garage::start();
    let env = g.envs();
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    // Three sensors of 2 x 3 MiB + meta: files of 6 MiB go in two 5 MiB parts.
    let t = trace(&data, "t", 3, 6, MB, false);
    let before = digests(&t);
    let jp = tmp.path().join("journal.json");
    let jps = jp.to_str().unwrap();
    let d = data.to_str().unwrap();
    let with = |k: &str, v: &str| -> Vec<(String, std::ffi::OsString)> {
        let mut e: Vec<_> = env.iter().filter(|(n, _)| n != k).cloned().collect();
        e.push((k.to_string(), v.into()));
        e
    };
    let args = |dest: &'static str| [d, dest, "--delete", "--part-size", "5MiB", "--journal", jps];

    // A bucket that does not exist.
    let (code, out) = run(&env, &args("s3://nosuchbucket/x"));
    assert_eq!(code, 2, "{out}");
    assert!(
        out.contains("bucket \"nosuchbucket\" does not exist at http://127.0.0.1"),
        "{out}"
    );
    // Credentials the server refuses.
    let (code, out) = run(
        &with("AWS_SECRET_ACCESS_KEY", &"0".repeat(64)),
        &args("s3://traces"),
    );
    assert_eq!(code, 2, "{out}");
    assert!(
        out.contains("refused the credentials for bucket \"traces\""),
        "{out}"
    );
    // An endpoint nobody answers on (a port just freed), within a bound.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let t0 = Instant::now();
    let (code, out) = run(
        &with("AWS_ENDPOINT_URL", &format!("http://127.0.0.1:{port}")),
        &args("s3://traces"),
    );
    assert_eq!(code, 2, "{out}");
    assert!(
        out.contains(&format!(
            "http://127.0.0.1:{port} (bucket \"traces\") did not answer"
        )),
        "{out}"
    );
    assert!(t0.elapsed() < Duration::from_secs(60), "{:?}", t0.elapsed());
    // None of them touched the trace or wrote a journal.
    assert_eq!(digests(&t), before);
    assert!(journal_text(&jp).is_none());

    // A part the store received damaged (a byte flipped after it was hashed): named, the
    // file not marked done, nothing deleted.
    let bad = "t/s1/a";
    let mut e = env.clone();
    e.push(("ROVERLOG_OFFLOAD_CORRUPT".into(), bad.into()));
    let (code, out) = run(&e, &args("s3://traces"));
    assert_eq!(code, 2, "{out}");
    assert!(
        out.contains(&format!(
            "the object {bad} does not match: part 1: the store received other bytes"
        )),
        "{out}"
    );
    assert!(out.contains(&t.join("s1/a").display().to_string()), "{out}");
    assert_eq!(digests(&t), before);
    let j = journal(&jp);
    let files = j["traces"]["t"]["files"].as_array().unwrap();
    let state = |p: &str| {
        files.iter().find(|f| f["path"] == p).unwrap()["state"]["state"]
            .as_str()
            .unwrap()
            .to_string()
    };
    assert_eq!(state("s0/a"), "done");
    assert_ne!(state("s1/a"), "done");
    assert_eq!(j["traces"]["t"]["verified"], false);

    // An object changed on the store behind the journal's back (s0/a, done above): the
    // check before the trace is called verified finds it, names it, deletes nothing.
    let store = Store::open_env("s3://traces", &g.env()).unwrap();
    store.put("t/s0/a", b"not the file".to_vec()).unwrap();
    let (code, out) = run(&env, &args("s3://traces"));
    assert_eq!(code, 2, "{out}");
    assert!(
        out.contains("the object t/s0/a does not match: size"),
        "{out}"
    );
    assert_eq!(digests(&t), before);
    assert_eq!(journal(&jp)["traces"]["t"]["verified"], false);

    // A file changed since it was planned (appended to, as a late writer would): named.
    // (This run first sends s0/a again, as the journal now says.)
    {
        use std::io::Write;
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(t.join("s2/b"))
            .unwrap();
        f.write_all(b"late").unwrap();
    }
    let (code, out) = run(&env, &args("s3://traces"));
    assert_eq!(code, 2, "{out}");
    assert!(
        out.contains(&format!(
            "{}: changed during the upload",
            t.join("s2/b").display()
        )),
        "{out}"
    );
    assert!(t.join("config.yaml").exists(), "nothing deleted");
    // The journal kept what was done: the files sent are still done.
    let j = journal(&jp);
    let files = j["traces"]["t"]["files"].as_array().unwrap();
    assert!(files
        .iter()
        .any(|f| f["path"] == "s1/a" && f["state"]["state"] == "done"));
}

#[test]
fn offload_to_a_directory_skips_live_and_crashed_traces() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    // The destination below DATA: its copies are not traces to send again.
    let nas = data.join("nas");
    std::fs::create_dir_all(&nas).unwrap();
    // Two data roots: one a daemon records into, one a crash left with a torn trace.
    let sealed = trace(&data.join("rig"), "a", 2, 8, MB, false);
    let live = trace(&data.join("rig"), "b", 1, 2, 4096, true);
    let crashed = trace(&data.join("old"), "c", 1, 2, 4096, true);
    let _daemon = hold_lock(&data.join("rig"));
    let want = digests(&sealed);
    let jp = tmp.path().join("journal.json");
    let args = [
        data.to_str().unwrap(),
        nas.to_str().unwrap(),
        "--part-size",
        "5MiB",
        "--journal",
        jp.to_str().unwrap(),
    ];
    let (code, out) = run(&[], &args);
    // 1: the crashed trace is left for a person, and said so.
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains(&format!(
            "{}: not offloaded: its recording was cut by a crash",
            crashed.display()
        )),
        "{out}"
    );
    assert!(
        out.contains(&format!("{}: skipped: being recorded", live.display())),
        "{out}"
    );
    assert!(!nas.join("rig/b").exists() && !nas.join("old/c").exists());
    assert!(!nas.join("nas").exists(), "the copies sent again: {out}");
    // The copy is the trace, byte for byte, and reads as one; its CSV checks it.
    assert_eq!(digests(&nas.join("rig/a")), want);
    let r = crate::support::common::roverlog(&["validate", nas.join("rig/a").to_str().unwrap()]);
    assert_eq!(r.code, 0, "{}", r.text());
    let r = crate::support::common::roverlog(&[
        "checksum",
        "--compare",
        nas.join("rig/a.md5.csv").to_str().unwrap(),
        nas.join("rig/a").to_str().unwrap(),
    ]);
    assert_eq!(r.code, 0, "{}", r.text());
    // Nothing staged is left; a second run sends nothing; --delete then frees the disk.
    assert_eq!(
        std::fs::read_dir(nas.join(".roverlog-uploads"))
            .unwrap()
            .count(),
        0
    );
    let (code, out) = run(&[], &args);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("0 traces sent and verified (1 already)"),
        "{out}"
    );
    let mut del = args.to_vec();
    del.push("--delete");
    let (code, out) = run(&[], &del);
    assert_eq!(code, 1, "{out}");
    assert!(!sealed.exists(), "{out}");
    assert!(live.join("config.yaml").exists() && crashed.join("config.yaml").exists());
}

#[test]
fn offload_keep_free_deletes_the_oldest_verified_traces_only() {
    // A 64 MiB filesystem (tmpfs: root) holding four 12 MiB traces, one cut by a crash.
    let mnt = crate::support::common::mount::Mounted::tmpfs("64m");
    let data = mnt.path().join("data");
    let tmp = tempfile::tempdir().unwrap();
    let nas = tmp.path().join("nas");
    std::fs::create_dir_all(&nas).unwrap();
    let names = [
        "2026.11.01-08.00.00",
        "2026.11.02-08.00.00",
        "2026.11.03-08.00.00",
    ];
    let sealed: Vec<PathBuf> = names
        .iter()
        .map(|n| trace(&data, n, 2, 6, MB, false))
        .collect();
    let crashed = trace(&data, "2026.11.04-08.00.00", 2, 6, MB, true);
    let jp = tmp.path().join("journal.json");
    let (code, out) = run(
        &[],
        &[
            data.to_str().unwrap(),
            nas.to_str().unwrap(),
            "--keep-free",
            "70%",
            "--journal",
            jp.to_str().unwrap(),
        ],
    );
    // 1: the crashed trace is left (and kept: never deleted unverified).
    assert_eq!(code, 1, "{out}");
    assert!(crashed.join("config.yaml").exists(), "{out}");
    // Oldest first, each once verified, until 70% was free: all three (one trace's 12 MiB
    // of 64 leaves 81% free).
    for (t, n) in sealed.iter().zip(names) {
        assert!(!t.exists(), "{n} kept: {out}");
        assert!(
            nas.join(n).join("config.yaml").exists(),
            "{n} not at the NAS"
        );
        assert!(out.contains(&format!("{}: deleted", t.display())), "{out}");
    }
    let order: Vec<usize> = names
        .iter()
        .map(|n| out.find(&format!("{n}: deleted")).unwrap())
        .collect();
    assert!(order.windows(2).all(|w| w[0] < w[1]), "oldest first: {out}");
    let (free, total) = roverlog_offload::free::free_space(&data).unwrap();
    assert!(free as f64 >= 0.7 * total as f64, "{free} of {total}");
}

#[test]
fn offload_leaves_the_trace_a_real_daemon_records_into() {
    use crate::support::daemon::{frame, raw_hello, sample, TestDaemon};
    use serde_json::json;
    let mut d = TestDaemon::start(json!({}));
    let (mut imu, _) = d.connect(&raw_hello("imu", 4096));
    for i in 0..50u64 {
        imu.send(&frame(
            i as f64 * 0.01,
            None,
            &[(&sample(1, i, 4096), false)],
        ));
    }
    imu.sync();
    let first = d.trace_dir();
    // A rotation seals the first trace (its `stop`) and records into a second one.
    assert_eq!(d.ctl(json!({"cmd": "rotate"}))["ok"], true, "{}", d.log());
    for i in 50..100u64 {
        imu.send(&frame(
            i as f64 * 0.01,
            None,
            &[(&sample(1, i, 4096), false)],
        ));
    }
    imu.sync();
    let live = d.trace_dir();
    assert_ne!(first, live);
    let nas = tempfile::tempdir().unwrap();
    let jp = nas.path().join("journal.json");
    let args = [
        d.data_root().to_str().unwrap().to_string(),
        nas.path().join("dest").to_str().unwrap().to_string(),
        "--journal".into(),
        jp.to_str().unwrap().to_string(),
    ];
    std::fs::create_dir(nas.path().join("dest")).unwrap();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let (code, out) = run(&[], &args);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains(&format!("{}: skipped: being recorded", live.display())),
        "{out}"
    );
    let name = |t: &Path| t.file_name().unwrap().to_str().unwrap().to_string();
    assert_eq!(
        digests(&nas.path().join("dest").join(name(&first))),
        digests(&first)
    );
    assert!(!nas.path().join("dest").join(name(&live)).exists());
    // The daemon records on, unharmed; once stopped, its last trace is sealed and goes too.
    for i in 100..120u64 {
        imu.send(&frame(
            i as f64 * 0.01,
            None,
            &[(&sample(1, i, 4096), false)],
        ));
    }
    imu.sync();
    drop(imu);
    assert!(d.stop().success(), "{}", d.log());
    let (code, out) = run(&[], &args);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("1 traces sent and verified (1 already)"),
        "{out}"
    );
    assert_eq!(
        digests(&nas.path().join("dest").join(name(&live))),
        digests(&live)
    );
    let r = crate::support::common::roverlog(&[
        "validate",
        nas.path().join("dest").join(name(&live)).to_str().unwrap(),
    ]);
    assert_eq!(r.code, 0, "{}", r.text());
}

#[test]
fn offload_to_a_full_directory_is_an_error_naming_it() {
    // A NAS of 4 MiB (tmpfs: root) for a trace of about 14 MiB.
    let nas = crate::support::common::mount::Mounted::tmpfs("4m");
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let t = trace(&data, "t", 2, 6, MB, false);
    let before = digests(&t);
    let jp = tmp.path().join("journal.json");
    let args = [
        data.to_str().unwrap(),
        nas.path().to_str().unwrap(),
        "--delete",
        "--part-size",
        "5MiB",
        "--journal",
        jp.to_str().unwrap(),
    ];
    let (code, out) = run(&[], &args);
    assert_eq!(code, 2, "{out}");
    assert!(out.contains("No space left on device"), "{out}");
    assert!(
        out.contains(": sending it to t/s"),
        "names the file and its object: {out}"
    );
    // Nothing deleted; the journal readable, nothing in it verified.
    assert_eq!(digests(&t), before);
    let j = journal(&jp);
    assert_eq!(j["traces"]["t"]["verified"], false);
}
