//! Config section: the two Unix sockets (paths, mode, group) and who may use them. Checked
//! here so that `sockets` and the accept loops get bits and lists they can apply as they are.

use std::path::PathBuf;
use std::time::Duration;

use super::raw::RawConfig;
use crate::error::{ConfigProblem, Result};

/// Keys `ingest_socket` to `control_idle_timeout_ms` (config/README.md, "Paths and sockets").
#[derive(Debug, Clone, PartialEq)]
pub struct Sockets {
    pub ingest: PathBuf,
    pub control: PathBuf,
    /// Permission bits of both sockets (`socket_mode`, at most 0o777).
    pub mode: u32,
    /// Group (name or numeric gid) given to both sockets; `None` keeps the daemon's group.
    pub group: Option<String>,
    /// Peer uids allowed on the ingest socket (with `allow_gids` empty too: anyone).
    pub allow_uids: Vec<u32>,
    pub allow_gids: Vec<u32>,
    /// Control socket peers that may run every command. With both operator lists empty,
    /// everyone who can open the socket is an operator (the socket's mode and group decide).
    pub operator_uids: Vec<u32>,
    pub operator_gids: Vec<u32>,
    /// Control socket peers that may only ask for `status`.
    pub monitor_uids: Vec<u32>,
    pub monitor_gids: Vec<u32>,
    /// A control connection that sends no complete command for this long is closed.
    pub control_idle_timeout: Duration,
}

impl Sockets {
    pub(super) fn from_raw(raw: &RawConfig) -> Result<Sockets> {
        if raw.ingest_socket == raw.control_socket {
            return Err(ConfigProblem::SameSocket {
                path: raw.ingest_socket.clone(),
            }
            .into());
        }
        if raw.control_idle_timeout_ms == 0 {
            return Err(ConfigProblem::NotPositive {
                keys: vec!["control_idle_timeout_ms"],
            }
            .into());
        }
        let no_operators =
            raw.control_operator_uids.is_empty() && raw.control_operator_gids.is_empty();
        if no_operators
            && !(raw.control_monitor_uids.is_empty() && raw.control_monitor_gids.is_empty())
        {
            return Err(ConfigProblem::MonitorsWithoutOperators.into());
        }
        Ok(Sockets {
            ingest: raw.ingest_socket.clone(),
            control: raw.control_socket.clone(),
            mode: mode_bits(&raw.socket_mode)?,
            group: raw.socket_group.clone(),
            allow_uids: raw.allow_uids.clone(),
            allow_gids: raw.allow_gids.clone(),
            operator_uids: raw.control_operator_uids.clone(),
            operator_gids: raw.control_operator_gids.clone(),
            monitor_uids: raw.control_monitor_uids.clone(),
            monitor_gids: raw.control_monitor_gids.clone(),
            control_idle_timeout: Duration::from_millis(raw.control_idle_timeout_ms),
        })
    }
}

/// `socket_mode` (octal text, `"0660"` or `"0o660"`) as permission bits.
fn mode_bits(text: &str) -> std::result::Result<u32, ConfigProblem> {
    let m = u32::from_str_radix(text.trim_start_matches("0o"), 8)
        .map_err(|_| ConfigProblem::SocketModeNotOctal { text: text.into() })?;
    if m > 0o777 {
        return Err(ConfigProblem::SocketModeTooLarge { text: text.into() });
    }
    Ok(m)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn convert(raw: RawConfig) -> Result<Sockets> {
        Sockets::from_raw(&raw)
    }

    #[test]
    fn socket_mode_becomes_permission_bits() {
        for (text, bits) in [("0660", 0o660), ("0o600", 0o600), ("777", 0o777)] {
            let s = convert(RawConfig {
                socket_mode: text.into(),
                ..RawConfig::default()
            })
            .unwrap();
            assert_eq!(s.mode, bits, "{text}");
        }
        for (text, msg) in [
            ("rw-rw----", r#"socket_mode "rw-rw----" is not octal"#),
            ("0668", r#"socket_mode "0668" is not octal"#),
            ("1777", r#"socket_mode "1777" is over 0777"#),
        ] {
            let e = convert(RawConfig {
                socket_mode: text.into(),
                ..RawConfig::default()
            })
            .unwrap_err();
            assert_eq!(e.to_string(), format!("config: {msg}"));
        }
    }

    #[test]
    fn both_sockets_cannot_share_a_path() {
        let e = convert(RawConfig {
            control_socket: "./run/ingest.sock".into(),
            ..RawConfig::default()
        })
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            "config: ingest_socket and control_socket are the same path (./run/ingest.sock)"
        );
    }

    #[test]
    fn monitors_need_operators() {
        let monitors_only = RawConfig {
            control_monitor_gids: vec![5],
            ..RawConfig::default()
        };
        let e = convert(monitors_only.clone()).unwrap_err();
        assert_eq!(
            e.to_string(),
            "config: control_monitor_uids/gids need control_operator_uids/gids too (else nobody could stop the daemon)"
        );
        let s = convert(RawConfig {
            control_operator_uids: vec![0],
            ..monitors_only
        })
        .unwrap();
        assert_eq!((s.operator_uids, s.monitor_gids), (vec![0], vec![5]));
    }

    #[test]
    fn control_idle_timeout_is_a_positive_duration() {
        let s = convert(RawConfig {
            control_idle_timeout_ms: 1500,
            ..RawConfig::default()
        })
        .unwrap();
        assert_eq!(s.control_idle_timeout, Duration::from_millis(1500));
        let e = convert(RawConfig {
            control_idle_timeout_ms: 0,
            ..RawConfig::default()
        })
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            "config: control_idle_timeout_ms must be positive"
        );
    }
}
