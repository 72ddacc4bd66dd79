//! Config section: what the health alarms expect (per-sensor rates, thresholds, the alarm
//! command) and how often they look. Rates and fractions are checked here so the alarm
//! task can divide by them without asking.

use std::collections::BTreeMap;
use std::time::Duration;

use super::raw::{RawConfig, SensorHealth};
use crate::error::{ConfigProblem, Result};
use roverlog_core::format::validate_name;

/// Keys `sensors` to `health_interval_ms` and `clock_step_threshold_s` (config/README.md,
/// "Operations").
#[derive(Debug, Clone, PartialEq)]
pub struct Health {
    /// Per sensor: its expected rate and whether it must be there.
    pub sensors: BTreeMap<String, SensorHealth>,
    /// `silent` after this many expected periods without a sample.
    pub silent_periods: f64,
    /// `missing` when a required sensor has not connected this long after a trace started.
    pub missing_after: Duration,
    /// A sensor without `expected_hz` that sent steadily this long gets its rate as expected.
    pub learn_rate: Duration,
    /// The window over which rates are measured for `rate_low`/`rate_high`.
    pub rate_window: Duration,
    /// `queue_high` when a sensor's queue holds more than this fraction of its budget.
    pub queue_high_fraction: f64,
    /// `disk_low` when the free space lasts less than this at the current write rate.
    pub disk_low: Duration,
    /// Run on every alarm raised and cleared, with the alarm as JSON on stdin (empty: none).
    pub alarm_command: Vec<String>,
    /// An alarm command still running after this long is killed.
    pub alarm_command_timeout: Duration,
    /// How often the alarms are evaluated.
    pub interval: Duration,
    /// A `clock_step` event when a sensor's median clock offset moves by more than this
    /// many seconds.
    pub clock_step_threshold_s: f64,
}

impl Health {
    pub(super) fn from_raw(raw: &RawConfig) -> Result<Health> {
        for (name, h) in &raw.sensors {
            validate_name("sensor", name)?;
            if h.expected_hz
                .is_some_and(|hz| !(hz.is_finite() && hz > 0.0))
            {
                return Err(ConfigProblem::ExpectedHz {
                    sensor: name.clone(),
                }
                .into());
            }
            if !(h.tolerance.is_finite() && h.tolerance >= 0.0) {
                return Err(ConfigProblem::Tolerance {
                    sensor: name.clone(),
                }
                .into());
            }
        }
        if !(raw.clock_step_threshold_s.is_finite() && raw.clock_step_threshold_s > 0.0) {
            return Err(ConfigProblem::NotPositiveNumber {
                key: "clock_step_threshold_s",
            }
            .into());
        }
        if !(raw.silent_periods.is_finite() && raw.silent_periods > 0.0) {
            return Err(ConfigProblem::NotPositiveNumber {
                key: "silent_periods",
            }
            .into());
        }
        if !(raw.queue_high_fraction > 0.0 && raw.queue_high_fraction <= 1.0) {
            return Err(ConfigProblem::QueueHighFraction {
                fraction: raw.queue_high_fraction,
            }
            .into());
        }
        if raw.health_interval_ms == 0
            || raw.rate_window_ms == 0
            || raw.alarm_command_timeout_ms == 0
        {
            return Err(ConfigProblem::NotPositive {
                keys: vec![
                    "health_interval_ms",
                    "rate_window_ms",
                    "alarm_command_timeout_ms",
                ],
            }
            .into());
        }
        Ok(Health {
            sensors: raw.sensors.clone(),
            silent_periods: raw.silent_periods,
            missing_after: Duration::from_millis(raw.missing_after_ms),
            learn_rate: Duration::from_millis(raw.learn_rate_ms),
            rate_window: Duration::from_millis(raw.rate_window_ms),
            queue_high_fraction: raw.queue_high_fraction,
            disk_low: Duration::from_secs(raw.disk_low_seconds),
            alarm_command: raw.alarm_command.clone(),
            alarm_command_timeout: Duration::from_millis(raw.alarm_command_timeout_ms),
            interval: Duration::from_millis(raw.health_interval_ms),
            clock_step_threshold_s: raw.clock_step_threshold_s,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn convert(raw: RawConfig) -> Result<Health> {
        Health::from_raw(&raw)
    }

    fn sensor(expected_hz: Option<f64>, tolerance: f64) -> RawConfig {
        let h = SensorHealth {
            expected_hz,
            tolerance,
            required: true,
        };
        RawConfig {
            sensors: BTreeMap::from([("imu".to_string(), h)]),
            ..RawConfig::default()
        }
    }

    #[test]
    fn sensor_expectations() {
        let h = convert(sensor(Some(100.0), 0.1)).unwrap();
        assert_eq!(h.sensors["imu"].expected_hz, Some(100.0));
        assert!(h.sensors["imu"].required);
        let e = convert(sensor(Some(0.0), 0.1)).unwrap_err();
        assert_eq!(
            e.to_string(),
            "config: sensors.imu.expected_hz must be a positive number"
        );
        let e = convert(sensor(None, -0.5)).unwrap_err();
        assert_eq!(
            e.to_string(),
            "config: sensors.imu.tolerance must be a number >= 0"
        );
    }

    #[test]
    fn thresholds_and_intervals() {
        let h = convert(RawConfig {
            missing_after_ms: 1500,
            disk_low_seconds: 60,
            health_interval_ms: 100,
            ..RawConfig::default()
        })
        .unwrap();
        assert_eq!(h.missing_after, Duration::from_millis(1500));
        assert_eq!(h.disk_low, Duration::from_secs(60));
        assert_eq!(h.interval, Duration::from_millis(100));
        for (raw, msg) in [
            (
                RawConfig {
                    queue_high_fraction: 1.5,
                    ..RawConfig::default()
                },
                "queue_high_fraction must be in (0, 1]",
            ),
            (
                RawConfig {
                    silent_periods: f64::INFINITY,
                    ..RawConfig::default()
                },
                "silent_periods must be a positive number",
            ),
            (
                RawConfig {
                    clock_step_threshold_s: 0.0,
                    ..RawConfig::default()
                },
                "clock_step_threshold_s must be a positive number",
            ),
            (
                RawConfig {
                    rate_window_ms: 0,
                    ..RawConfig::default()
                },
                "health_interval_ms, rate_window_ms and alarm_command_timeout_ms must be positive",
            ),
        ] {
            let e = convert(raw).unwrap_err();
            assert_eq!(e.to_string(), format!("config: {msg}"));
        }
    }
}
