//! Config section `offload`: the `roverlog offload` job run by the daemon in the background
//! (crates/daemon/src/offload). Its text values (rate, free space, when) are checked here.

use std::time::Duration;

use super::raw::RawConfig;
use crate::error::{ConfigProblem, Result};

/// When the background job sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OffloadWhen {
    /// Only while nothing is recorded (a recording that starts stops the job after its part).
    Idle,
    /// While recording too (under `rate`, the recording keeps its disk bandwidth).
    Always,
}

/// Key `offload` (config/README.md, "Offload").
#[derive(Debug, Clone, PartialEq)]
pub struct Offload {
    pub dest: String,
    pub when: OffloadWhen,
    /// Bytes per second.
    pub rate: Option<u64>,
    pub delete: bool,
    /// A fraction (0..1) of data_root's filesystem.
    pub keep_free: Option<f64>,
    pub interval: Duration,
}

impl Offload {
    pub(super) fn from_raw(raw: &RawConfig) -> Result<Option<Offload>> {
        let Some(o) = &raw.offload else {
            return Ok(None);
        };
        if o.dest.is_empty() {
            return Err(ConfigProblem::OffloadNoDest.into());
        }
        let when = match o.when.as_str() {
            "idle" => OffloadWhen::Idle,
            "always" => OffloadWhen::Always,
            w => {
                return Err(ConfigProblem::OffloadWhen {
                    when: w.to_string(),
                }
                .into())
            }
        };
        let rate = o
            .rate
            .as_deref()
            .map(roverlog_offload::rate::parse_bytes)
            .transpose()
            .map_err(ConfigProblem::OffloadRate)?;
        let keep_free = o.keep_free.as_deref().map(percent).transpose()?;
        if o.interval_ms == 0 {
            return Err(ConfigProblem::OffloadInterval.into());
        }
        Ok(Some(Offload {
            dest: o.dest.clone(),
            when,
            rate,
            delete: o.delete,
            keep_free,
            interval: Duration::from_millis(o.interval_ms),
        }))
    }
}

/// `"20%"`: 0.2.
fn percent(text: &str) -> std::result::Result<f64, ConfigProblem> {
    let n: f64 = text
        .trim()
        .trim_end_matches('%')
        .parse()
        .map_err(|_| ConfigProblem::KeepFreeNotPercent { text: text.into() })?;
    if !(0.0..100.0).contains(&n) {
        return Err(ConfigProblem::KeepFreeRange { text: text.into() });
    }
    Ok(n / 100.0)
}

#[cfg(test)]
mod tests {
    use crate::config::{Config, RawConfig};

    /// The config, or the message a user reads for why it was refused.
    fn load(text: &str) -> Result<Config, Box<dyn std::error::Error>> {
        let raw: RawConfig = serde_json::from_str(text)?;
        Ok(Config::try_from(raw)?)
    }

    #[test]
    fn offload_keys_are_checked_and_typed() {
        let c = load(
            r#"{"offload": {"dest": "s3://b/p", "when": "always", "rate": "20MB/s",
                "keep_free": "20%"}}"#,
        )
        .unwrap();
        let o = c.offload.unwrap();
        assert_eq!(o.rate, Some(20_000_000));
        assert_eq!(o.keep_free, Some(0.2));
        assert_eq!(o.when, super::OffloadWhen::Always);
        assert!(load("{}").unwrap().offload.is_none());
        for (text, err) in [
            (
                r#"{"offload": {"dest": "d", "speed": 1}}"#,
                "unknown field `speed`",
            ),
            (r#"{"offload": {}}"#, "offload: dest is missing"),
            (
                r#"{"offload": {"dest": "d", "when": "never"}}"#,
                "offload: when \"never\"",
            ),
            (
                r#"{"offload": {"dest": "d", "rate": "20 parsecs"}}"#,
                "unknown unit \"parsecs\"",
            ),
            (
                r#"{"offload": {"dest": "d", "keep_free": "120%"}}"#,
                "must be from 0%",
            ),
        ] {
            let e = load(text).unwrap_err().to_string();
            assert!(e.contains(err), "{text}: {e}");
        }
    }
}
