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
//! A line is parsed once into a [`Command`] (`command`), checked against the peer's role, and
//! run by [`execute`], which the dashboard's `POST /api/command` shares.
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

use crate::command::{refused, reply, Command, Refusal};
use crate::config::Config;
use crate::protocol::line;
use crate::recording::Recorder;
use crate::shutdown::Shutdown;

/// What a control peer may do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    Operator,
    Monitor,
}

/// The role of the peer on `stream` under `cfg`, or why it is refused.
fn role(stream: &UnixStream, cfg: &Config) -> Result<Role, Refusal> {
    if cfg.sockets.operator_uids.is_empty() && cfg.sockets.operator_gids.is_empty() {
        return Ok(Role::Operator);
    }
    let cred = stream.peer_cred().map_err(Refusal::PeerCredentials)?;
    let (uid, gid) = (cred.uid(), cred.gid());
    if cfg.sockets.operator_uids.contains(&uid) || cfg.sockets.operator_gids.contains(&gid) {
        Ok(Role::Operator)
    } else if cfg.sockets.monitor_uids.contains(&uid) || cfg.sockets.monitor_gids.contains(&gid) {
        Ok(Role::Monitor)
    } else {
        Err(Refusal::NoRole { uid, gid })
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
                let _ = stream.try_write(&line(refused(why)));
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
                Ok(v) => match (Command::parse(&v), role) {
                    (Ok(cmd), Role::Monitor) if !cmd.monitor_may_run() => {
                        refused(operators_only(&v))
                    }
                    // A monitor's malformed command is refused as not theirs to send, unless
                    // it is a malformed `status`.
                    (Err(_), Role::Monitor) if v.get("cmd") != Some(&json!("status")) => {
                        refused(operators_only(&v))
                    }
                    (Ok(cmd), _) => execute(&rec, cmd).await,
                    (Err(e), _) => refused(e),
                },
                Err(e) => refused(format!("not valid JSON: {e}")),
            },
        };
        if wr.write_all(&line(reply)).await.is_err() {
            return;
        }
    }
}

/// The refusal of a command a monitor may not run, naming its `cmd` as sent.
fn operators_only(v: &Value) -> Refusal {
    Refusal::OperatorsOnly {
        cmd: v
            .get("cmd")
            .map_or("this command".into(), |c| c.to_string()),
    }
}

/// Runs one command; its reply (docs/protocol.md).
pub async fn execute(rec: &Arc<Recorder>, cmd: Command) -> Value {
    match cmd {
        Command::Status => reply(Ok(rec.status())),
        Command::Start { label } => {
            let label = label.as_deref().or(rec.cfg.recording.label.as_deref());
            if let Some(why) = rec.disk_low() {
                return refused(Refusal::DiskLow(why));
            }
            reply(rec.start(label, "command").await)
        }
        Command::Stop => reply(rec.stop("command").await),
        Command::Rotate { label } => reply(rec.rotate("command", label.as_deref()).await),
        Command::Snapshot { on } => match rec.snapshot_ring() {
            Some(ring) => {
                ring.set_enabled(on);
                tracing::info!(on, "snapshot mode switched by command");
                reply(Ok(json!({"snapshot": ring.status()})))
            }
            None => refused(Refusal::NoSnapshotRing),
        },
        Command::Trigger { label, after } => {
            let label = label.as_deref().or(rec.cfg.recording.label.as_deref());
            if let Some(why) = rec.disk_low() {
                return refused(Refusal::DiskLow(why));
            }
            reply(rec.trigger(label, Command::after(after)).await)
        }
        Command::Mark { text } => reply(rec.mark(&text)),
    }
}
