//! The control socket: one JSON command per line, one JSON reply line per command.
//!
//! ```text
//! {"cmd": "status"}                  -> {"ok": true, "recording": ..., "sensors": {...}, ...}
//! {"cmd": "start", "label": "x"}     -> {"ok": true, "trace": "...", "dir": "..."}
//! {"cmd": "stop"}                    -> {"ok": true, "trace": "...", "sensors": {...}}
//! {"cmd": "rotate", "label": "x"}    -> {"ok": true, "trace": "...", "dir": "..."} (no label: the current trace's)
//! {"cmd": "mark", "text": "..."}     -> {"ok": true, "trace": "..."}
//! anything else                      -> {"ok": false, "error": "..."}
//! ```
//!
//! Roles (config `control_operator_*`, `control_monitor_*`): operators run every command,
//! monitors only `status`; a peer in neither list is refused when it connects. With no
//! operator list configured everyone who can open the socket is an operator. A connection
//! idle for `control_idle_timeout_ms` is closed (with a reply saying so), so idle clients
//! cannot hold every connection slot.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{UnixListener, UnixStream};

use super::config::Config;
use super::protocol::line;
use super::recording::Recorder;
use super::shutdown::Shutdown;

/// What a control peer may do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    Operator,
    Monitor,
}

/// The role of the peer on `stream` under `cfg`, or why it is refused.
fn role(stream: &UnixStream, cfg: &Config) -> Result<Role, String> {
    if cfg.sockets.operator_uids.is_empty() && cfg.sockets.operator_gids.is_empty() {
        return Ok(Role::Operator);
    }
    let cred = stream
        .peer_cred()
        .map_err(|e| format!("cannot read peer credentials: {e}"))?;
    let (uid, gid) = (cred.uid(), cred.gid());
    if cfg.sockets.operator_uids.contains(&uid) || cfg.sockets.operator_gids.contains(&gid) {
        Ok(Role::Operator)
    } else if cfg.sockets.monitor_uids.contains(&uid) || cfg.sockets.monitor_gids.contains(&gid) {
        Ok(Role::Monitor)
    } else {
        Err(format!(
            "peer uid {uid} gid {gid} is in neither control_operator_* nor control_monitor_*"
        ))
    }
}

/// Longest command line accepted.
const MAX_COMMAND_BYTES: u64 = 64 << 10;
/// Most control connections at once.
const MAX_CONTROL_CONNECTIONS: usize = 16;

/// Accepts control connections until shutdown.
pub async fn accept_loop(listener: UnixListener, rec: Arc<Recorder>, mut shutdown: Shutdown) {
    let conns = Arc::new(tokio::sync::Semaphore::new(MAX_CONTROL_CONNECTIONS));
    loop {
        let accepted = tokio::select! {
            r = listener.accept() => r,
            _ = shutdown.recv() => return,
        };
        let Ok((stream, _)) = accepted else {
            tokio::time::sleep(Duration::from_millis(50)).await;
            continue;
        };
        let Ok(permit) = conns.clone().try_acquire_owned() else {
            // An answer rather than a silent close, which `roverlog ctl` would report as an
            // unreachable daemon.
            let _ = stream.try_write(&line(json!({"ok": false, "error": format!(
                    "too many control connections (at most {MAX_CONTROL_CONNECTIONS} at once)")})));
            continue;
        };
        let role = match role(&stream, &rec.cfg) {
            Ok(r) => r,
            Err(why) => {
                let _ = stream.try_write(&line(json!({"ok": false, "error": why})));
                continue;
            }
        };
        let (rec, shutdown) = (rec.clone(), shutdown.clone());
        tokio::spawn(async move {
            serve(stream, rec, shutdown, role).await;
            drop(permit);
        });
    }
}

async fn serve(stream: UnixStream, rec: Arc<Recorder>, mut shutdown: Shutdown, role: Role) {
    let (rd, mut wr) = stream.into_split();
    let mut rd = BufReader::new(rd);
    let idle = rec.cfg.sockets.control_idle_timeout;
    loop {
        let mut buf = Vec::new();
        let mut limited = (&mut rd).take(MAX_COMMAND_BYTES + 1);
        let n = tokio::select! {
            r = tokio::time::timeout(idle, limited.read_until(b'\n', &mut buf)) => match r {
                Ok(r) => r,
                Err(_) => {
                    let why = format!("idle for {} ms: connection closed", idle.as_millis());
                    let _ = wr.write_all(&line(json!({"ok": false, "error": why}))).await;
                    return;
                }
            },
            _ = shutdown.recv() => return,
        };
        let reply = match n {
            Ok(0) | Err(_) => return,
            Ok(_) if buf.last() != Some(&b'\n') => {
                let _ = wr
                    .write_all(&line(
                        json!({"ok": false, "error": "command line too long or unterminated"}),
                    ))
                    .await;
                return;
            }
            Ok(_) => match serde_json::from_slice::<Value>(&buf) {
                Ok(cmd)
                    if role == Role::Monitor
                        && cmd.get("cmd").and_then(Value::as_str) != Some("status") =>
                {
                    json!({"ok": false, "error": format!(
                        "{} is for operators; this peer may only ask for status (control_monitor_*)",
                        cmd.get("cmd").map_or("this command".into(), |c| c.to_string()))})
                }
                Ok(cmd) => execute(&rec, &cmd).await,
                Err(e) => json!({"ok": false, "error": format!("not valid JSON: {e}")}),
            },
        };
        if wr.write_all(&line(reply)).await.is_err() {
            return;
        }
    }
}

/// Runs one command.
pub async fn execute(rec: &Arc<Recorder>, cmd: &Value) -> Value {
    let label = match cmd.get("label") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.as_str()),
        Some(_) => return json!({"ok": false, "error": "\"label\" must be a string"}),
    };
    match cmd.get("cmd").and_then(Value::as_str) {
        Some("status") => rec.status(),
        Some("start") => {
            let label = label.or(rec.cfg.recording.label.as_deref());
            if let Some(why) = rec.disk_low() {
                return json!({"ok": false, "error": why});
            }
            rec.start(label, "command").await
        }
        Some("stop") => rec.stop("command").await,
        Some("rotate") => rec.rotate("command", label).await,
        Some("snapshot") => match (cmd.get("on").and_then(Value::as_bool), rec.snapshot_ring()) {
            (Some(on), Some(ring)) => {
                ring.set_enabled(on);
                tracing::info!(on, "snapshot mode switched by command");
                json!({"ok": true, "snapshot": ring.status()})
            }
            (None, _) => json!({"ok": false, "error": "snapshot needs \"on\": true or false"}),
            (_, None) => json!({"ok": false, "error": "this daemon has no snapshot ring"}),
        },
        Some("trigger") => {
            let after = match cmd.get("after") {
                None | Some(Value::Null) => super::snapshot::DEFAULT_AFTER,
                Some(v) => match v.as_f64().filter(|s| (0.0..=86_400.0).contains(s)) {
                    Some(s) => std::time::Duration::from_secs_f64(s),
                    None => {
                        return json!({"ok": false, "error": format!(
                            "\"after\" must be seconds from 0 to 86400, not {v}")})
                    }
                },
            };
            let label = label.or(rec.cfg.recording.label.as_deref());
            if let Some(why) = rec.disk_low() {
                return json!({"ok": false, "error": why});
            }
            super::snapshot::trigger(rec, label, after).await
        }
        Some("mark") => match cmd.get("text").and_then(Value::as_str) {
            Some(t) if t.len() <= 4096 => rec.mark(t),
            Some(_) => json!({"ok": false, "error": "mark text is over 4096 bytes"}),
            None => json!({"ok": false, "error": "mark needs \"text\" (a string)"}),
        },
        Some(other) => json!({"ok": false, "error": format!(
            "unknown command {other:?} (status, start, stop, rotate, mark, trigger, snapshot)")}),
        None => {
            json!({"ok": false, "error": "expected {\"cmd\": \"status\" | \"start\" | \"stop\" | \"rotate\" | \"mark\" | \"trigger\"}"})
        }
    }
}
