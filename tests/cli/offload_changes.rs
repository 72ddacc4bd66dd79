//! `roverlog offload` when what it sends changes under it, the real binary:
//! - against a real S3 server (Garage on 127.0.0.1): a file of a trace changed mid-upload
//!   (one being sent) and one already verified: the run fails naming the first, the journal
//!   intact and saying which file changed, nothing deleted; the same command again plans the
//!   trace again (the verified file whose bytes changed named loudly) and, killed -9 while
//!   it sends that file again, then run once more, finishes: every object equals the file as
//!   it now is, and the summary counts the bytes sent again as re-sent; a trace verified,
//!   then changed before `--delete` removed it: that run refuses, the next sends again only
//!   the file whose bytes changed (its files as sent read back from the destination's CSV);
//! - to a directory: a trace whose event log has a line that does not parse is named with
//!   the line (not called a trace without a `stop`), one whose last line a crash tore is
//!   one a crash cut; neither is sent (exit 1), a sealed one beside them is.
//!
//! Cost: about 81 MB to Garage at a 10 MB/s cap, twice at most (about 15 s), about 21 MB uncapped
//! (a few s), and a few KB to a directory.

use std::io::{Seek, SeekFrom, Write};
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant, SystemTime};

use roverlog_store::Store;

use crate::offload::{digests, journal, object_md5, offload_cmd, run, trace, MB};
use crate::support::garage::Garage;

/// Flips the first byte of `path` (its size kept) and moves its mtime on.
fn change(path: &Path) {
    let first = std::fs::read(path).unwrap()[0];
    let mut f = std::fs::OpenOptions::new().write(true).open(path).unwrap();
    f.seek(SeekFrom::Start(0)).unwrap();
    f.write_all(&[!first]).unwrap();
    f.set_modified(SystemTime::now() + Duration::from_secs(5))
        .unwrap();
}

/// The journal's state of file `rel` of trace `name`, and how many of its parts the store
/// acknowledged.
fn file_state(j: &serde_json::Value, name: &str, rel: &str) -> (String, usize) {
    let Some(f) = j["traces"][name]["files"]
        .as_array()
        .and_then(|fs| fs.iter().find(|f| f["path"] == rel))
    else {
        return (String::new(), 0);
    };
    let acked = f["state"]["parts"]
        .as_array()
        .map_or(0, |ps| ps.iter().filter(|p| !p.is_null()).count());
    (
        f["state"]["state"].as_str().unwrap_or("").to_string(),
        acked,
    )
}

/// The `N MB re-sent` figure of the summary.
fn resent_mb(out: &str) -> f64 {
    let end = out.find(" MB re-sent").unwrap_or_else(|| panic!("{out}"));
    let start = out[..end].rfind(' ').unwrap() + 1;
    out[start..end].parse().unwrap()
}

#[test]
fn offload_a_trace_changed_mid_upload_fails_then_the_next_run_finishes_it() {
    let g = Garage::start();
    let env = g.envs();
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    // Three sensors of a 24 MiB file (five 5 MiB parts) and a 3 MiB one: about 81 MB,
    // sent in order, s0's files before s1's.
    let t = trace(&data, "t", 3, 24, MB, false);
    let jp = tmp.path().join("journal.json");
    let args = [
        data.to_str().unwrap(),
        "s3://traces/fleet",
        "--delete",
        "--rate",
        "10MB/s",
        "--part-size",
        "5MiB",
        "--jobs",
        "2",
        "--journal",
        jp.to_str().unwrap(),
    ];
    let mut child = offload_cmd(&env, &args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Once s0/a is verified and s1/a has parts at the store (about 3 s in, with 2 s of
    // s1/a left): s1/a changes mid-upload, s0/a after its verification.
    let t0 = Instant::now();
    loop {
        let j = std::fs::read(&jp)
            .ok()
            .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok());
        if let Some(j) = j {
            let (s0, _) = file_state(&j, "t", "s0/a");
            let (s1, acked) = file_state(&j, "t", "s1/a");
            assert!(s1 != "done", "s1/a was done before the test changed it");
            if s0 == "done" && s1 == "uploading" && acked >= 1 {
                break;
            }
        }
        assert!(
            child.try_wait().unwrap().is_none(),
            "the run ended before s1/a was being sent"
        );
        assert!(
            t0.elapsed() < Duration::from_secs(60),
            "s1/a did not start within 60 s"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    change(&t.join("s1/a"));
    change(&t.join("s0/a"));
    let out = child.wait_with_output().unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(out.status.code(), Some(2), "{text}");
    assert!(
        text.contains(&format!(
            "{}: changed during the upload",
            t.join("s1/a").display()
        )) && text.contains("nothing deleted: the next run plans its trace again"),
        "{text}"
    );
    // Nothing deleted; the journal reads, keeps s0/a verified, and names the changed file.
    assert!(t.join("config.yaml").exists() && t.join("s1/a").exists());
    let j = journal(&jp);
    assert_eq!(j["dest"], "s3://traces/fleet");
    assert_eq!(j["traces"]["t"]["verified"], false);
    assert_eq!(j["traces"]["t"]["changed"], serde_json::json!(["s1/a"]));
    assert_eq!(file_state(&j, "t", "s0/a").0, "done");

    // The way forward: the same command. It plans the trace again and sends s0/a (first)
    // again; killed -9 once that is under way, then run again, it finishes.
    let want = digests(&t);
    let total: u64 = want
        .keys()
        .map(|rel| std::fs::metadata(t.join(rel)).unwrap().len())
        .sum();
    let sent_before = journal(&jp)["sent"].as_u64().unwrap();
    let mut child = offload_cmd(&env, &args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let t0 = Instant::now();
    loop {
        let j = std::fs::read(&jp)
            .ok()
            .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok());
        if let Some(j) = j.filter(|j| j["traces"]["t"].get("changed").is_none()) {
            let (s0, acked) = file_state(&j, "t", "s0/a");
            assert!(
                s0 != "done",
                "s0/a was sent again before the test killed the run"
            );
            if s0 == "uploading" && acked >= 1 {
                break;
            }
        }
        assert!(
            child.try_wait().unwrap().is_none(),
            "the run ended before s0/a was being sent again"
        );
        assert!(
            t0.elapsed() < Duration::from_secs(60),
            "s0/a was not sent again within 60 s"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    child.kill().unwrap();
    let out = child.wait_with_output().unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.contains(&format!(
            "{}: CHANGED AFTER IT WAS VERIFIED at the destination",
            t.join("s0/a").display()
        )),
        "{text}"
    );
    assert!(
        text.contains(&format!(
            "{}: changed before its upload was complete",
            t.join("s1/a").display()
        )),
        "{text}"
    );
    assert!(t.join("config.yaml").exists(), "nothing deleted: {text}");
    // What the killed run left: s0/a's parts the store acknowledged (of five).
    let acked = file_state(&journal(&jp), "t", "s0/a").1 as u64;
    let (code, out) = run(&env, &args);
    eprintln!("the killed run:\n{text}\nthe last run:\n{out}");
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("1 files changed after they were verified and were sent again")
            && out.contains("t/s0/a"),
        "{out}"
    );
    // Re-sent in this run: at least the rest of s0/a (all of it was at the store before).
    let rest = (24 * MB as u64).saturating_sub(acked * 5 * MB as u64);
    let resent = resent_mb(&out);
    assert!(
        resent >= rest as f64 / 1e6 - 0.05,
        "{resent} MB re-sent, {acked} parts acknowledged before: {out}"
    );
    // Over all runs the store was handed the trace, s0/a once more, and at most what was in
    // flight at the kill (2 parts) and the parts of s1/a sent before it changed (5).
    let sent = journal(&jp)["sent"].as_u64().unwrap();
    assert!(
        sent >= total + 24 * MB as u64,
        "{sent} bytes sent for {total}"
    );
    assert!(
        sent <= total + (24 + 7 * 5) * MB as u64 + 4096,
        "{sent} bytes sent for {total} (before the re-plan: {sent_before})"
    );
    // Verified, then deleted; every object is the file as it was when the run began.
    assert!(!t.exists(), "{out}");
    let j = journal(&jp);
    assert_eq!(j["traces"]["t"]["verified"], true);
    assert!(j["traces"]["t"].get("changed").is_none(), "{j}");
    let store = Store::open_env("s3://traces/fleet", &g.env()).unwrap();
    for (rel, md5) in &want {
        assert_eq!(
            object_md5(&store, &format!("t/{rel}")).as_ref(),
            Some(md5),
            "{rel}"
        );
    }
    let csv = String::from_utf8(store.get_range("t.md5.csv", 0..1 << 20).unwrap()).unwrap();
    for (rel, md5) in &want {
        assert!(csv.contains(&format!("{rel},{md5}\n")), "{rel}: {csv}");
    }
}

#[test]
fn offload_names_the_event_log_line_that_does_not_parse() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let nas = tmp.path().join("nas");
    std::fs::create_dir_all(&nas).unwrap();
    let sealed = trace(&data, "a", 1, 2, 4096, false);
    // A sealed log with a line in the middle that is not JSON.
    let bad = trace(&data, "b", 1, 2, 4096, false);
    let log = bad.join("_roverlog/events.jsonl");
    let text = std::fs::read_to_string(&log).unwrap();
    let (first, rest) = text.split_once('\n').unwrap();
    std::fs::write(&log, format!("{first}\n{{\"t\": 1.5, \"ev\n{rest}")).unwrap();
    // A log a crash tore while writing its `stop`.
    let torn = trace(&data, "c", 1, 2, 4096, false);
    let log = torn.join("_roverlog/events.jsonl");
    let text = std::fs::read_to_string(&log).unwrap();
    std::fs::write(&log, &text[..text.len() - 20]).unwrap();
    let jp = tmp.path().join("journal.json");
    let (code, out) = run(
        &[],
        &[
            data.to_str().unwrap(),
            nas.to_str().unwrap(),
            "--journal",
            jp.to_str().unwrap(),
        ],
    );
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains(&format!(
            "{}: not offloaded: line 2 of {} does not parse as an event (",
            bad.display(),
            bad.join("_roverlog/events.jsonl").display()
        )) && out.contains(
            "so whether its recording was closed cannot be told; mend or remove that line"
        ),
        "{out}"
    );
    assert!(
        out.contains(&format!(
            "{}: not offloaded: its recording was cut by a crash (a `start` without a `stop` in \
             _roverlog/events.jsonl, whose last line the crash tore",
            torn.display()
        )),
        "{out}"
    );
    // Said of the torn one only.
    assert_eq!(
        out.matches("a `start` without a `stop`").count(),
        1,
        "{out}"
    );
    assert!(out.contains("1 traces sent and verified"), "{out}");
    assert_eq!(digests(&nas.join("a")), digests(&sealed));
    assert!(!nas.join("b").exists() && !nas.join("c").exists());
}

#[test]
fn offload_a_verified_trace_changed_before_its_deletion_is_sent_again_where_it_changed() {
    let g = Garage::start();
    let env = g.envs();
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    // Files of 6 MiB (two 5 MiB parts: multipart objects) and 768 KiB.
    let t = trace(&data, "t", 2, 6, MB, false);
    let jp = tmp.path().join("journal.json");
    let mut args = vec![
        data.to_str().unwrap(),
        "s3://traces",
        "--part-size",
        "5MiB",
        "--journal",
        jp.to_str().unwrap(),
    ];
    let (code, out) = run(&env, &args);
    assert_eq!(code, 0, "{out}");
    assert_eq!(journal(&jp)["traces"]["t"]["verified"], true);
    // After verification: s1/a's bytes change, s0/b is only touched.
    change(&t.join("s1/a"));
    std::fs::File::options()
        .write(true)
        .open(t.join("s0/b"))
        .unwrap()
        .set_modified(SystemTime::now() + Duration::from_secs(5))
        .unwrap();
    args.push("--delete");
    let (code, out) = run(&env, &args);
    assert_eq!(code, 2, "{out}");
    assert!(
        out.contains(&format!(
            "{}: its files changed since it was verified",
            t.display()
        )) && out.contains("not deleted; the next run checks them against the destination"),
        "{out}"
    );
    assert!(t.join("s1/a").exists(), "{out}");
    let j = journal(&jp);
    assert_eq!(j["traces"]["t"]["verified"], false);
    assert_eq!(j["traces"]["t"]["changed_since_verified"], true);
    // The next run: only s1/a goes again, then the trace is deleted.
    let want = digests(&t);
    let (code, out) = run(&env, &args);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains(&format!(
            "{}: CHANGED AFTER IT WAS VERIFIED at the destination",
            t.join("s1/a").display()
        )) && out.contains("1 files changed after they were verified and were sent again")
            && out.contains("t/s1/a"),
        "{out}"
    );
    assert!(
        out.contains(", 1 files, "),
        "only s1/a was sent again: {out}"
    );
    let resent = resent_mb(&out);
    assert!(
        (resent - 6.0 * MB as f64 / 1e6).abs() < 0.05,
        "{resent} MB re-sent: {out}"
    );
    assert!(!t.exists(), "{out}");
    let store = Store::open_env("s3://traces", &g.env()).unwrap();
    for (rel, md5) in &want {
        assert_eq!(
            object_md5(&store, &format!("t/{rel}")).as_ref(),
            Some(md5),
            "{rel}"
        );
    }
}
