//! Writer processes started together: each prints `ready` when set up, all get `go` on stdin
//! at one instant, and each prints one JSON line when its stream is on disk. Used by the rig
//! scenario for our driver processes and for the Python writers alike, so both sides are
//! timed the same way: from `go` to the moment their result line arrives.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::error::{PeerError, PeerProblem, Result, RunError};

/// How long a process may take to get ready (load its frames, connect).
const READY_WITHIN: Duration = Duration::from_secs(300);

/// One process's result line and when it arrived, counted from `go`.
#[derive(Debug)]
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
    log_dir: &Path,
    deadline: Duration,
    at_go: impl FnOnce(),
) -> Result<Vec<Finished>> {
    let mut group = Group::start(what, commands, log_dir)?;
    group.wait_ready()?;
    at_go();
    let go = group.release()?;
    let done = group.results(go, deadline)?;
    group.reap()?;
    Ok(done)
}

/// The processes of one [`run_together`], and their stdout lines as they come.
struct Group {
    what: String,
    peers: Vec<Peer>,
    lines: mpsc::Receiver<Line>,
}

impl Group {
    /// Starts every process, each with a thread forwarding its stdout lines.
    fn start(what: &str, commands: Vec<(String, Command)>, log_dir: &Path) -> Result<Group> {
        let (tx, lines) = mpsc::channel();
        let mut peers = Vec::new();
        for (i, (name, mut cmd)) in commands.into_iter().enumerate() {
            let log = log_dir.join(format!("{what}-{name}.log"));
            let err = std::fs::File::create(&log).map_err(|e| RunError::io("creating", &log, e))?;
            let mut child = cmd
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(err)
                .spawn()
                .map_err(|error| PeerError::Start {
                    group: what.to_owned(),
                    peer: name.clone(),
                    command: format!("{cmd:?}"),
                    error,
                })?;
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
        Ok(Group {
            what: what.to_owned(),
            peers,
            lines,
        })
    }

    /// Peer `i` failed: the error names it and shows the end of its log.
    fn failed(&self, i: usize, problem: PeerProblem) -> RunError {
        let p = &self.peers[i];
        let text = std::fs::read_to_string(&p.log).unwrap_or_default();
        let tail: Vec<&str> = text.lines().rev().take(20).collect();
        let tail: Vec<&str> = tail.into_iter().rev().collect();
        PeerError::Failed {
            group: self.what.clone(),
            peer: p.name.clone(),
            problem,
            log: p.log.clone(),
            tail: tail.join("\n"),
        }
        .into()
    }

    /// The names of the peers `pending` says are still awaited.
    fn late(&self, pending: impl Iterator<Item = bool>) -> Vec<String> {
        self.peers
            .iter()
            .zip(pending)
            .filter(|(_, late)| *late)
            .map(|(p, _)| p.name.clone())
            .collect()
    }

    /// Waits (READY_WITHIN at most) until every peer has printed `ready`.
    fn wait_ready(&self) -> Result<()> {
        let mut ready = vec![false; self.peers.len()];
        let until = Instant::now() + READY_WITHIN;
        while !ready.iter().all(|r| *r) {
            let left = until.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(Line::Out(i, l, _)) if l.trim() == "ready" => ready[i] = true,
                Ok(Line::Out(i, line, _)) => {
                    return Err(self.failed(i, PeerProblem::BeforeReady { line }))
                }
                Ok(Line::Eof(i)) => return Err(self.failed(i, PeerProblem::ExitedBeforeReady)),
                Err(_) => {
                    return Err(PeerError::NotReady {
                        group: self.what.clone(),
                        late: self.late(ready.iter().map(|r| !r)),
                        within_s: READY_WITHIN.as_secs(),
                    }
                    .into())
                }
            }
        }
        Ok(())
    }

    /// Writes `go` to every peer, at once; the instant they were released.
    fn release(&mut self) -> Result<Instant> {
        let go = Instant::now();
        for p in &mut self.peers {
            let mut stdin = p.stdin.take().expect("stdin");
            stdin
                .write_all(b"go\n")
                .map_err(|error| PeerError::Release {
                    group: self.what.clone(),
                    peer: p.name.clone(),
                    error,
                })?;
        }
        Ok(go)
    }

    /// Every peer's result line, each timed from `go` (`deadline` after it at most).
    fn results(&self, go: Instant, deadline: Duration) -> Result<Vec<Finished>> {
        let mut done: Vec<Option<Finished>> = self.peers.iter().map(|_| None).collect();
        let until = go + deadline;
        while done.iter().any(Option::is_none) {
            let left = until.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(Line::Out(i, line, at)) => {
                    let result: Value = match serde_json::from_str(&line) {
                        Ok(v) => v,
                        Err(error) => {
                            return Err(self.failed(i, PeerProblem::NotJson { line, error }))
                        }
                    };
                    done[i] = Some(Finished {
                        name: self.peers[i].name.clone(),
                        result,
                        after: at.saturating_duration_since(go),
                    });
                }
                Ok(Line::Eof(i)) if done[i].is_none() => {
                    return Err(self.failed(i, PeerProblem::NoResult))
                }
                Ok(Line::Eof(_)) => {}
                Err(_) => {
                    return Err(PeerError::NotFinished {
                        group: self.what.clone(),
                        late: self.late(done.iter().map(Option::is_none)),
                        within_s: deadline.as_secs(),
                    }
                    .into())
                }
            }
        }
        Ok(done.into_iter().flatten().collect())
    }

    /// Waits for every peer to exit; each must exit 0.
    fn reap(&mut self) -> Result<()> {
        for i in 0..self.peers.len() {
            match self.peers[i].child.wait() {
                Ok(status) if status.success() => {}
                Ok(status) => return Err(self.failed(i, PeerProblem::Exit(status))),
                Err(e) => return Err(self.failed(i, PeerProblem::Wait(e))),
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runner::error::RunError;

    /// `sh -c script` as a peer named `name`.
    fn sh(name: &str, script: &str) -> (String, Command) {
        let mut c = Command::new("sh");
        c.args(["-c", script]);
        (name.to_owned(), c)
    }

    /// A peer that does it right: ready, waits for `go`, one JSON line, exit 0.
    const GOOD: &str = "echo ready; read go; echo '{\"n\": 1}'";

    #[test]
    fn peers_released_together_give_their_results_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let mut went = false;
        let done = run_together(
            "t",
            vec![sh("a", GOOD), sh("b", GOOD)],
            dir.path(),
            Duration::from_secs(60),
            || went = true,
        )
        .unwrap();
        assert!(went);
        let names: Vec<&str> = done.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names, ["a", "b"]);
        assert!(done.iter().all(|f| f.result["n"] == 1));
    }

    #[test]
    fn a_peer_talking_before_ready_is_named_with_its_log() {
        let dir = tempfile::tempdir().unwrap();
        let bad = "echo 'no numpy here' >&2; echo hello; exec sleep 30";
        let e = run_together(
            "t",
            vec![sh("a", GOOD), sh("b", bad)],
            dir.path(),
            Duration::from_secs(60),
            || panic!("released although b never was ready"),
        )
        .unwrap_err();
        let RunError::Peers(p) = &e else {
            panic!("{e:?}")
        };
        assert!(
            matches!(&**p, PeerError::Failed { peer, problem: PeerProblem::BeforeReady { line }, .. }
                     if peer == "b" && line == "hello"),
            "{e:?}"
        );
        let text = e.to_string();
        let log = dir.path().join("t-b.log");
        assert!(text.contains(&log.display().to_string()), "{text}");
        assert!(text.ends_with("no numpy here"), "{text}");
    }

    #[test]
    fn a_peer_failing_after_its_result_fails_the_run() {
        let dir = tempfile::tempdir().unwrap();
        let e = run_together(
            "t",
            vec![sh("a", &format!("{GOOD}; exit 3"))],
            dir.path(),
            Duration::from_secs(60),
            || {},
        )
        .unwrap_err();
        assert!(
            e.to_string().starts_with("t a: exited with exit status: 3"),
            "{e}"
        );
    }

    #[test]
    fn a_late_peer_is_named_after_the_deadline() {
        let dir = tempfile::tempdir().unwrap();
        let slow = "echo ready; read go; exec sleep 30";
        let e = run_together(
            "t",
            vec![sh("a", GOOD), sh("slow", slow)],
            dir.path(),
            Duration::from_secs(1),
            || {},
        )
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            "t: slow did not finish within 1 s of the start"
        );
    }
}
