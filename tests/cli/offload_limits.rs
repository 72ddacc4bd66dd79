//! `roverlog offload` against the limits of a real run, the real binary and a real S3 server
//! (Garage on 127.0.0.1):
//! - `--rate`: the bytes the job hands to the store (the journal's `sent`, booked as each
//!   part starts) over every 10 s window of the run stay under the cap, within one part
//!   (a booking whose journal write straddles one of the test's reads), and the run is not
//!   far under it;
//! - a full remote (the bucket's size quota, `garage bucket set-quotas --max-size`): an
//!   error naming the bucket and that it is full, nothing deleted, the journal intact; once
//!   the quota is raised the same command finishes, every object equal to its file.
//!
//! Cost: the rate test sends about 113 MB at 10 MB/s (about 13 s; `--jobs 1`, and every
//! byte sent once); the quota test 14 MB (`--jobs 2`).

use std::collections::BTreeMap;
use std::process::Stdio;
use std::time::{Duration, Instant};

use roverlog_store::Store;

use crate::offload::{digests, journal, object_md5, offload_cmd, run, trace, MB};
use crate::support::garage::Garage;

#[test]
fn offload_rate_caps_every_ten_second_window_of_a_real_run() {
    let g = Garage::start();
    let env = g.envs();
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    // 4 sensors x 24 frames of 1 MiB (and 1/8 MiB): about 113 MB, 12 s at the cap.
    let t = trace(&data, "2026.11.28-09.00.00", 4, 24, MB, false);
    let total: u64 = roverlog_core::format::checksum::files(&t)
        .unwrap()
        .into_iter()
        .map(|r| std::fs::metadata(t.join(r)).unwrap().len())
        .sum();
    let jp = tmp.path().join("journal.json");
    let rate: u64 = 10_000_000;
    let part = 5 * MB as u64;
    let mut child = offload_cmd(
        &env,
        &[
            data.to_str().unwrap(),
            "s3://traces",
            "--rate",
            "10MB/s",
            "--part-size",
            "5MiB",
            // One at a time: each file must be sent once (a file answered before the job
            // looked at its queue again was sent again, endlessly, with --jobs 1).
            "--jobs",
            "1",
            "--journal",
            jp.to_str().unwrap(),
        ],
    )
    .stdout(Stdio::piped())
    .stderr(std::fs::File::create(tmp.path().join("stderr")).unwrap())
    .spawn()
    .unwrap();
    // (when, bytes booked so far, parts in flight), every 50 ms until the job ends.
    let t0 = Instant::now();
    let mut samples: Vec<(Duration, u64)> = Vec::new();
    let status = loop {
        if let Some(j) = std::fs::read(&jp)
            .ok()
            .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
        {
            let flying = j["in_flight"].as_array().map_or(0, Vec::len);
            assert!(flying <= 1, "{flying} parts in flight with --jobs 1");
            samples.push((t0.elapsed(), j["sent"].as_u64().unwrap_or(0)));
        }
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(120),
            "the capped job did not end within 120 s"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    let took = t0.elapsed();
    let out = std::io::read_to_string(child.stdout.take().unwrap()).unwrap()
        + &std::fs::read_to_string(tmp.path().join("stderr")).unwrap();
    assert!(status.success(), "{status}: {out}");
    // Every window of 10 s between two reads: at most the cap, plus one part of tolerance.
    let window = Duration::from_secs(10);
    let mut most = 0;
    for (i, (a, sa)) in samples.iter().enumerate() {
        let sb = samples[i..]
            .iter()
            .take_while(|(b, _)| *b <= *a + window)
            .map(|(_, s)| *s)
            .max()
            .unwrap_or(*sa);
        most = most.max(sb - sa);
    }
    eprintln!(
        "{total} bytes in {took:?}; at most {most} bytes in a 10 s window (cap {})",
        rate * 10
    );
    assert!(
        most <= rate * 10 + part,
        "{most} bytes in a 10 s window, over the cap of {} (+ one part)",
        rate * 10
    );
    // The cap is what bounded the run: it lasted about the trace over the cap, and a full
    // window carried most of the cap.
    assert!(
        took.as_secs_f64() >= total as f64 / rate as f64 * 0.9,
        "{total} bytes in {took:?}: faster than the cap"
    );
    assert!(
        most >= rate * 10 / 2,
        "{most} bytes at best in a 10 s window"
    );
    // Each byte went once (the trace and its CSV), and it all arrived.
    let sent = journal(&jp)["sent"].as_u64().unwrap();
    assert!(
        (total..total + 4096).contains(&sent),
        "{sent} bytes handed to the store for {total}"
    );
    let store = Store::open_env("s3://traces", &g.env()).unwrap();
    for (rel, md5) in digests(&t) {
        let key = format!("2026.11.28-09.00.00/{rel}");
        assert_eq!(object_md5(&store, &key).as_ref(), Some(&md5), "{key}");
    }
}

#[test]
fn offload_to_a_full_bucket_is_an_error_naming_it_and_a_rerun_finishes() {
    let g = Garage::start();
    let env = g.envs();
    // 8 MiB for a trace of about 14 MiB.
    g.run(&["bucket", "set-quotas", "traces", "--max-size", "8MiB"]);
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let t = trace(&data, "t", 2, 6, MB, false);
    let before = digests(&t);
    let jp = tmp.path().join("journal.json");
    let args = [
        data.to_str().unwrap(),
        "s3://traces/fleet",
        "--delete",
        "--part-size",
        "5MiB",
        "--jobs",
        "2",
        "--journal",
        jp.to_str().unwrap(),
    ];
    let (code, out) = run(&env, &args);
    eprintln!("with the quota: {out}");
    assert_eq!(code, 2, "{out}");
    assert!(
        out.contains("bucket \"traces\"") && out.contains("is full"),
        "names the bucket and that it is full: {out}"
    );
    assert!(out.contains(": sending it to t/s"), "names the file: {out}");
    // Nothing deleted; the journal readable, the trace not verified, what went recorded.
    assert_eq!(digests(&t), before);
    let j = journal(&jp);
    assert_eq!(j["traces"]["t"]["verified"], false, "{j}");
    assert_eq!(
        j["traces"]["t"]["files"].as_array().unwrap().len(),
        before.len()
    );
    // Room again: the same command finishes, every object its file, then deletes.
    g.run(&["bucket", "set-quotas", "traces", "--max-size", "none"]);
    let (code, out) = run(&env, &args);
    assert_eq!(code, 0, "{out}");
    let store = Store::open_env("s3://traces/fleet", &g.env()).unwrap();
    let got: BTreeMap<String, String> = before
        .keys()
        .map(|rel| {
            let key = format!("t/{rel}");
            (rel.clone(), object_md5(&store, &key).unwrap_or_default())
        })
        .collect();
    assert_eq!(got, before);
    assert!(!t.exists(), "verified, then deleted: {out}");
}
