//! Config sections of the two network viewers: the dashboard ([`Http`]) and the live
//! Foxglove feed ([`FoxgloveFeed`]). Their listen addresses are parsed and checked here,
//! with the rules that keep them safe (a dashboard off loopback needs a token, the feed
//! serves loopback only), so `http` and `foxglove_live` receive an address they may bind.

use std::collections::BTreeMap;
use std::net::{IpAddr, SocketAddr};

use super::raw::RawConfig;
use crate::error::{ConfigProblem, Result};
use roverlog_export::location::LocationMapping;

/// Shortest accepted `http_token`.
pub const MIN_TOKEN_CHARS: usize = 16;

/// Keys `http_listen`, `http_token` and `http_allowed_hosts` (config/README.md, "Dashboard").
#[derive(Debug, Clone, PartialEq)]
pub struct Http {
    /// Where to serve the dashboard; `None`: no dashboard. Loopback unless `token` is set.
    pub listen: Option<SocketAddr>,
    /// The secret every command (and off loopback every read) needs; `None`: read-only.
    pub token: Option<String>,
    /// `Host` names a loopback dashboard answers besides loopback's own.
    pub allowed_hosts: Vec<AllowedHost>,
}

/// One `http_allowed_hosts` entry: a host name or IP address, and the port the browser
/// shows (`None`: any port, or none).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AllowedHost {
    /// Lower case; an IPv6 address without its brackets.
    pub name: String,
    pub port: Option<u16>,
}

impl AllowedHost {
    /// Parses an entry: `name`, `name:port`, `1.2.3.4:port`, `[v6]:port`. `None`: not one.
    pub fn parse(entry: &str) -> Option<AllowedHost> {
        let (name, port) = split_host(entry)?;
        let port = match port {
            None => None,
            Some(p) => Some(p.parse::<u16>().ok().filter(|&p| p != 0)?),
        };
        let bracketed = entry.starts_with('[');
        let valid = if bracketed {
            name.parse::<std::net::Ipv6Addr>().is_ok()
        } else {
            // A DNS name (letters, digits, '-', dots between labels) or an IPv4 address.
            !name.is_empty()
                && name.split('.').all(|label| {
                    !label.is_empty()
                        && !label.starts_with('-')
                        && label.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
                })
        };
        valid.then(|| AllowedHost {
            name: name.to_ascii_lowercase(),
            port,
        })
    }

    /// Whether a request's `Host` header names this entry.
    pub fn matches(&self, host: &str) -> bool {
        let Some((name, port)) = split_host(host) else {
            return false;
        };
        let same_ip = || matches!((name.parse::<IpAddr>(), self.name.parse::<IpAddr>()), (Ok(a), Ok(b)) if a == b);
        (name.eq_ignore_ascii_case(&self.name) || same_ip())
            && match self.port {
                None => true,
                Some(want) => port.and_then(|p| p.parse::<u16>().ok()) == Some(want),
            }
    }
}

/// Splits a `Host` value into its name (an IPv6 address without brackets) and its port text,
/// if any: `name`, `name:port`, `[v6]`, `[v6]:port`. `None`: not that shape.
pub fn split_host(host: &str) -> Option<(&str, Option<&str>)> {
    let (name, port) = match host.strip_prefix('[') {
        Some(rest) => match rest.split_once(']')? {
            (name, "") => (name, None),
            (name, port) => (name, Some(port.strip_prefix(':')?)),
        },
        None => match host.split_once(':') {
            Some((name, port)) => (name, Some(port)),
            None => (host, None),
        },
    };
    if port.is_some_and(|p| p.is_empty() || !p.bytes().all(|b| b.is_ascii_digit())) {
        return None;
    }
    Some((name, port))
}

impl Http {
    pub(super) fn from_raw(raw: &RawConfig) -> Result<Http> {
        if let Some(t) = &raw.http_token {
            if t.chars().count() < MIN_TOKEN_CHARS
                || t.chars().any(|c| c.is_whitespace() || c.is_control())
            {
                return Err(ConfigProblem::HttpToken {
                    min: MIN_TOKEN_CHARS,
                }
                .into());
            }
        }
        let allowed_hosts = raw
            .http_allowed_hosts
            .iter()
            .map(|entry| {
                AllowedHost::parse(entry).ok_or_else(|| ConfigProblem::AllowedHost {
                    entry: entry.clone(),
                })
            })
            .collect::<std::result::Result<Vec<_>, _>>()?;
        let Some(listen) = &raw.http_listen else {
            return Ok(Http {
                listen: None,
                token: raw.http_token.clone(),
                allowed_hosts,
            });
        };
        let addr: SocketAddr = listen.parse().map_err(|_| ConfigProblem::HttpListen {
            listen: listen.clone(),
        })?;
        if !addr.ip().is_loopback() && raw.http_token.is_none() {
            return Err(ConfigProblem::HttpNotLoopback {
                addr,
                min: MIN_TOKEN_CHARS,
            }
            .into());
        }
        Ok(Http {
            listen: Some(addr),
            token: raw.http_token.clone(),
            allowed_hosts,
        })
    }
}

/// Keys `foxglove_listen`, `foxglove_max_hz`, `foxglove_sensor_hz`, `foxglove_location`
/// (config/README.md, "Live Foxglove feed").
#[derive(Debug, Clone, PartialEq)]
pub struct FoxgloveFeed {
    /// The feed's WebSocket address, always loopback; `None`: no feed.
    pub listen: Option<SocketAddr>,
    /// Messages per second per channel, at most.
    pub max_hz: f64,
    /// Per sensor: its own `max_hz`.
    pub sensor_hz: BTreeMap<String, f64>,
    /// Per sensor: where its position is; checked for syntax here, against the sensor's
    /// channels when it connects (`foxglove_live`).
    pub locations: BTreeMap<String, LocationMapping>,
}

impl FoxgloveFeed {
    pub(super) fn from_raw(raw: &RawConfig) -> Result<FoxgloveFeed> {
        if !(raw.foxglove_max_hz.is_finite() && raw.foxglove_max_hz > 0.0) {
            return Err(ConfigProblem::MessageRate {
                sensor: None,
                hz: raw.foxglove_max_hz,
            }
            .into());
        }
        for (sensor, &hz) in &raw.foxglove_sensor_hz {
            if !(hz.is_finite() && hz > 0.0) {
                return Err(ConfigProblem::MessageRate {
                    sensor: Some(sensor.clone()),
                    hz,
                }
                .into());
            }
        }
        let listen = match &raw.foxglove_listen {
            None => None,
            Some(listen) => {
                let addr: SocketAddr =
                    listen.parse().map_err(|_| ConfigProblem::FoxgloveListen {
                        listen: listen.clone(),
                    })?;
                if !addr.ip().is_loopback() {
                    return Err(ConfigProblem::FoxgloveNotLoopback { addr }.into());
                }
                Some(addr)
            }
        };
        let mut locations = BTreeMap::new();
        for (sensor, fields) in &raw.foxglove_location {
            let pairs = fields.iter().map(|(k, v)| (k.as_str(), v.as_str()));
            let m = LocationMapping::from_pairs(sensor, pairs)
                .map_err(ConfigProblem::FoxgloveLocation)?;
            locations.insert(sensor.clone(), m);
        }
        Ok(FoxgloveFeed {
            listen,
            max_hz: raw.foxglove_max_hz,
            sensor_hz: raw.foxglove_sensor_hz.clone(),
            locations,
        })
    }

    /// The most messages per second per channel of `sensor` on the feed.
    pub fn max_hz_of(&self, sensor: &str) -> f64 {
        self.sensor_hz.get(sensor).copied().unwrap_or(self.max_hz)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn http(listen: Option<&str>, token: Option<&str>) -> Result<Http> {
        Http::from_raw(&RawConfig {
            http_listen: listen.map(str::to_owned),
            http_token: token.map(str::to_owned),
            ..RawConfig::default()
        })
    }

    fn message(r: Result<impl std::fmt::Debug>) -> String {
        r.unwrap_err().to_string()
    }

    #[test]
    fn dashboard_listen_rules() {
        assert_eq!(http(None, None).unwrap().listen, None);
        let local = http(Some("127.0.0.1:0"), None).unwrap();
        assert_eq!(local.listen, Some("127.0.0.1:0".parse().unwrap()));
        assert_eq!(local.token, None);
        assert!(http(Some("[::1]:8080"), None).unwrap().listen.is_some());
        let open = http(Some("0.0.0.0:8080"), Some("0123456789abcdef")).unwrap();
        assert_eq!(open.token.as_deref(), Some("0123456789abcdef"));
        assert_eq!(
            message(http(Some("0.0.0.0:8080"), None)),
            "config: http_listen 0.0.0.0:8080 is not a loopback address: set http_token (a secret of at least 16 characters) so nobody else on the network can control the daemon"
        );
        assert_eq!(
            message(http(Some("localhost:80"), None)),
            r#"config: http_listen "localhost:80" is not an IP address with a port ("127.0.0.1:8080", "[::1]:8080")"#
        );
        let short = "config: http_token must be at least 16 characters, without spaces or control characters";
        assert_eq!(message(http(Some("127.0.0.1:1"), Some("short"))), short);
        assert_eq!(message(http(None, Some("0123456789 abcdef"))), short);
    }

    #[test]
    fn allowed_hosts_are_host_names_with_an_optional_port() {
        let hosts = |entries: &[&str]| {
            Http::from_raw(&RawConfig {
                http_listen: Some("127.0.0.1:8080".into()),
                http_allowed_hosts: entries.iter().map(|e| e.to_string()).collect(),
                ..RawConfig::default()
            })
            .map(|h| h.allowed_hosts)
        };
        let ok = hosts(&[
            "Rover.local:9000",
            "rover-vpn",
            "10.8.0.2:8080",
            "[fd00::2]:8080",
        ])
        .unwrap();
        assert_eq!(
            ok[0],
            AllowedHost {
                name: "rover.local".into(),
                port: Some(9000)
            }
        );
        assert_eq!(ok[3].name, "fd00::2");
        for bad in [
            "",
            "http://rover.local",
            "rover.local/",
            "rover.local:",
            "rover.local:0",
            "rover.local:65536",
            "rover.local:+80",
            "*.local",
            "rover..local",
            "-rover",
            "rover local",
            "[fd00::2",
            "[not-v6]:80",
            "fd00::2",
        ] {
            let msg = message(hosts(&["rover.local", bad]));
            assert_eq!(
                msg,
                format!("config: http_allowed_hosts entry {bad:?} is not a host name or IP address with an optional port (\"rover.local\", \"rover.local:9000\", \"10.8.0.2:8080\", \"[fd00::2]:8080\")"),
            );
        }
        // Matching: the name in any case; the port when the entry names one.
        let with_port = AllowedHost::parse("rover.local:9000").unwrap();
        assert!(with_port.matches("ROVER.local:9000"));
        assert!(!with_port.matches("rover.local:9001"));
        assert!(!with_port.matches("rover.local"));
        assert!(!with_port.matches("rover.local.evil.example:9000"));
        let any_port = AllowedHost::parse("rover-vpn").unwrap();
        for h in ["rover-vpn", "rover-vpn:8080", "Rover-VPN:80"] {
            assert!(any_port.matches(h), "{h}");
        }
        assert!(!any_port.matches("rover-vpn.evil.example"));
        assert!(AllowedHost::parse("[fd00::2]:8080")
            .unwrap()
            .matches("[FD00::2]:8080"));
    }

    fn feed(listen: Option<&str>, max_hz: f64, imu_hz: Option<f64>) -> Result<FoxgloveFeed> {
        FoxgloveFeed::from_raw(&RawConfig {
            foxglove_listen: listen.map(str::to_owned),
            foxglove_max_hz: max_hz,
            foxglove_sensor_hz: imu_hz
                .map(|hz| ("imu".to_string(), hz))
                .into_iter()
                .collect(),
            ..RawConfig::default()
        })
    }

    #[test]
    fn foxglove_listen_and_rates() {
        let f = feed(Some("127.0.0.1:8765"), 10.0, Some(50.0)).unwrap();
        assert_eq!(f.listen, Some("127.0.0.1:8765".parse().unwrap()));
        assert_eq!((f.max_hz_of("imu"), f.max_hz_of("cam")), (50.0, 10.0));
        assert_eq!(feed(None, 10.0, None).unwrap().listen, None);
        assert_eq!(
            message(feed(Some("0.0.0.0:8765"), 10.0, None)),
            "config: foxglove_listen 0.0.0.0:8765 is not a loopback address: the live feed has no authentication, so it serves this machine only (reach it from elsewhere through an SSH tunnel)"
        );
        assert_eq!(
            message(feed(Some("8765"), 10.0, None)),
            r#"config: foxglove_listen "8765" is not an IP address with a port ("127.0.0.1:8765")"#
        );
        assert_eq!(
            message(feed(None, 0.0, None)),
            "config: foxglove_max_hz must be a positive number of messages per second, not 0"
        );
        assert_eq!(
            message(feed(None, 10.0, Some(-1.0))),
            "config: foxglove_sensor_hz.imu must be a positive number of messages per second, not -1"
        );
    }

    fn located(gps: serde_json::Value) -> Result<FoxgloveFeed> {
        FoxgloveFeed::from_raw(&RawConfig {
            foxglove_location: serde_json::from_value(serde_json::json!({ "gps": gps })).unwrap(),
            ..RawConfig::default()
        })
    }

    #[test]
    fn foxglove_location_is_checked_at_load() {
        let f = located(serde_json::json!({"latitude": "pos[0]", "longitude": "pos[1]"})).unwrap();
        assert_eq!(f.locations["gps"].latitude.to_string(), "pos[0]");
        assert_eq!(f.locations["gps"].altitude, None);
        assert_eq!(
            message(located(serde_json::json!({"latitude": "pos[0]", "longitude": "pos[1]", "alt": "pos[2]"}))),
            "config: foxglove_location.gps.alt: unknown field (the fields: latitude, longitude, altitude)"
        );
        assert_eq!(
            message(located(serde_json::json!({"latitude": "pos[0]", "longitude": "pos[one]"}))),
            "config: foxglove_location.gps.longitude: \"pos[one]\" is not a channel element (`name`, or `name[index]` for element index of the channel)"
        );
        assert_eq!(
            message(located(serde_json::json!({"latitude": "pos[0]"}))),
            "config: foxglove_location.gps.longitude: missing (latitude and longitude are required, altitude is optional)"
        );
    }
}
