//! `alarm_command`: every alarm raised and cleared, as JSON on the command's stdin, on a
//! thread of its own (at most [`MAX_COMMANDS`] at once, each killed after
//! `alarm_command_timeout_ms`): it never blocks the health task.

use std::io::Write;
use std::process::{Command, Stdio};
use std::sync::atomic::Ordering::Relaxed;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::Health;

/// Most alarm commands running at once.
const MAX_COMMANDS: usize = 4;

impl Health {
    /// Runs `alarm_command` with `alarm` on stdin, on a thread of its own: never waits.
    pub(super) fn run_command(&self, alarm: &Value) {
        let Some((prog, args)) = self.cfg.health.alarm_command.split_first() else {
            return;
        };
        if self.running.fetch_add(1, Relaxed) >= MAX_COMMANDS {
            self.running.fetch_sub(1, Relaxed);
            tracing::warn!("alarm_command: {MAX_COMMANDS} still running, not started for {alarm}");
            return;
        }
        let mut cmd = Command::new(prog);
        cmd.args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        let line = format!("{alarm}\n");
        let timeout = self.cfg.health.alarm_command_timeout;
        let running = self.running.clone();
        std::thread::spawn(move || {
            match cmd.spawn() {
                Ok(mut child) => {
                    if let Some(mut stdin) = child.stdin.take() {
                        let _ = stdin.write_all(line.as_bytes());
                    }
                    let t0 = Instant::now();
                    loop {
                        match child.try_wait() {
                            Ok(Some(status)) if !status.success() => {
                                tracing::warn!("alarm_command exited with {status}");
                                break;
                            }
                            Ok(Some(_)) => break,
                            Ok(None) if t0.elapsed() >= timeout => {
                                tracing::warn!(
                                    "alarm_command still running after {timeout:?}: killed"
                                );
                                let _ = child.kill();
                                let _ = child.wait();
                                break;
                            }
                            Ok(None) => std::thread::sleep(Duration::from_millis(20)),
                            Err(e) => {
                                tracing::warn!("alarm_command: {e}");
                                break;
                            }
                        }
                    }
                }
                Err(e) => tracing::warn!("alarm_command could not start: {e}"),
            }
            running.fetch_sub(1, Relaxed);
        });
    }
}
