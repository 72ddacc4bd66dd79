//! Writer processes started together: each prints `ready` when set up, all get `go` on stdin
//! at one instant, and each prints one JSON line when its stream is on disk. Used by the rig
//! scenario for our driver processes and for the Python writers alike, so both sides are
//! timed the same way: from `go` to the moment their result line arrives.

use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use serde_json::Value;

/// How long a process may take to get ready (load its frames, connect).
const READY_WITHIN: Duration = Duration::from_secs(300);

/// One process's result line and when it arrived, counted from `go`.
pub(super) struct Finished {
    pub(super) name: String,
    pub(super) result: Value,
    pub(super) after: Duration,
}

struct Peer {
    name: String,
    child: Child,
    stdin: Option<ChildStdin>,
    log: PathBuf,
}

impl Drop for Peer {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
        }
        let _ = self.child.wait();
    }
}

enum Line {
    Out(usize, String, Instant),
    Eof(usize),
}

/// Starts every `(name, command)` (stderr to `<log_dir>/<what>-<name>.log`), waits until all
/// are ready, calls `at_go` and releases them at once, and waits for every result line
/// (`deadline` after `go` at most). A process that exits without one, or prints something
/// that is not JSON, fails the run with its log.
pub(super) fn run_together(
    what: &str,
    commands: Vec<(String, Command)>,
    log_dir: &std::path::Path,
    deadline: Duration,
    at_go: impl FnOnce(),
) -> Result<Vec<Finished>> {
    let (tx, rx) = mpsc::channel();
    let mut peers = Vec::new();
    for (i, (name, mut cmd)) in commands.into_iter().enumerate() {
        let log = log_dir.join(format!("{what}-{name}.log"));
        let err = std::fs::File::create(&log).with_context(|| log.display().to_string())?;
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(err)
            .spawn()
            .with_context(|| format!("starting {what} {name}: {cmd:?}"))?;
        let out = child.stdout.take().expect("piped stdout");
        let stdin = child.stdin.take();
        let tx = tx.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines() {
                let Ok(line) = line else { break };
                if tx.send(Line::Out(i, line, Instant::now())).is_err() {
                    return;
                }
            }
            let _ = tx.send(Line::Eof(i));
        });
        peers.push(Peer {
            name,
            child,
            stdin,
            log,
        });
    }
    drop(tx);
    let log_of = |p: &Peer| {
        let text = std::fs::read_to_string(&p.log).unwrap_or_default();
        let tail: Vec<&str> = text.lines().rev().take(20).collect();
        let tail: Vec<&str> = tail.into_iter().rev().collect();
        format!("its log {}:\n{}", p.log.display(), tail.join("\n"))
    };
    let failed = |p: &Peer, why: &str| anyhow::anyhow!("{what} {}: {why}; {}", p.name, log_of(p));

    let mut ready = vec![false; peers.len()];
    let until = Instant::now() + READY_WITHIN;
    while !ready.iter().all(|r| *r) {
        let left = until.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok(Line::Out(i, l, _)) if l.trim() == "ready" => ready[i] = true,
            Ok(Line::Out(i, l, _)) => {
                return Err(failed(
                    &peers[i],
                    &format!("printed {l:?} before \"ready\""),
                ))
            }
            Ok(Line::Eof(i)) => return Err(failed(&peers[i], "exited before it was ready")),
            Err(_) => {
                let late: Vec<&str> = peers
                    .iter()
                    .zip(&ready)
                    .filter(|(_, r)| !**r)
                    .map(|(p, _)| p.name.as_str())
                    .collect();
                bail!(
                    "{what}: {} not ready within {} s",
                    late.join(", "),
                    READY_WITHIN.as_secs()
                );
            }
        }
    }

    at_go();
    let go = Instant::now();
    for p in &mut peers {
        let mut stdin = p.stdin.take().expect("stdin");
        stdin
            .write_all(b"go\n")
            .with_context(|| format!("releasing {what} {}", p.name))?;
    }
    let mut done: Vec<Option<Finished>> = peers.iter().map(|_| None).collect();
    let until = go + deadline;
    while done.iter().any(Option::is_none) {
        let left = until.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok(Line::Out(i, l, at)) => {
                let result: Value = serde_json::from_str(&l)
                    .map_err(|e| failed(&peers[i], &format!("printed {l:?}: {e}")))?;
                done[i] = Some(Finished {
                    name: peers[i].name.clone(),
                    result,
                    after: at.saturating_duration_since(go),
                });
            }
            Ok(Line::Eof(i)) if done[i].is_none() => {
                return Err(failed(&peers[i], "exited without a result"))
            }
            Ok(Line::Eof(_)) => {}
            Err(_) => {
                let late: Vec<&str> = peers
                    .iter()
                    .zip(&done)
                    .filter(|(_, d)| d.is_none())
                    .map(|(p, _)| p.name.as_str())
                    .collect();
                bail!(
                    "{what}: {} did not finish within {} s of the start",
                    late.join(", "),
                    deadline.as_secs()
                );
            }
        }
    }
    for p in &mut peers {
        let status = p.child.wait()?;
        if !status.success() {
            return Err(failed(p, &format!("exited with {status}")));
        }
    }
    Ok(done.into_iter().flatten().collect())
}
