//! The `status` reply as a type. It is built here from the recorder's state and serialized
//! only where it leaves the daemon (the control socket, `GET /api/status`); `health`, the
//! dashboard's history and the `STATUS=` line read its fields. The field order is the JSON
//! key order users have always seen (serde_json keeps insertion order in this workspace).

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::Serialize;

use super::Recorder;
use crate::foxglove_live::LiveStatus;
use crate::health::{Alarm, Watch};
use crate::offload::{OffloadStatus, Offloader};
use crate::poison::LockExt;
use crate::snapshot::SnapshotStatus;
use crate::stats::SensorCounters;

/// The `status` reply (without its `ok`, added by `command::reply`).
#[derive(Debug, Clone, Serialize)]
pub struct Status {
    pub recording: bool,
    pub trace: Option<String>,
    pub trace_dir: Option<PathBuf>,
    /// Why recording stopped on its own (disk guard, ENOSPC, a failed autostart).
    pub stopped_reason: Option<String>,
    pub alarms: Vec<Alarm>,
    pub disk: DiskStatus,
    pub sensors: BTreeMap<String, SensorStatus>,
    pub snapshot: Option<SnapshotStatus>,
    /// Sensors the config names (`sensors`) that have no entry in `sensors` (not connected,
    /// and not part of the open trace), so a page can show them as absent, not leave them out.
    pub absent_sensors: BTreeMap<String, AbsentSensor>,
    /// Present once the dashboard listens.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub http: Option<HttpStatus>,
    /// Present when the live Foxglove feed is configured.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub foxglove: Option<LiveStatus>,
    /// Present when the background offload is configured (config `offload`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub offload: Option<OffloadStatus>,
}

/// `status` `disk`: the last free-space reading against the guard's bound.
#[derive(Debug, Clone, Serialize)]
pub struct DiskStatus {
    pub data_root: PathBuf,
    pub free_bytes: Option<u64>,
    pub min_free_bytes: u64,
    pub low: bool,
    /// The failed writes and fsyncs not yet over (one per sensor, see `disk_fault`): each
    /// raises a `disk_error` alarm.
    pub errors: Vec<crate::disk_fault::Fault>,
}

/// One sensor in `status`: its counters, then its active alarms.
#[derive(Debug, Clone, Serialize)]
pub struct SensorStatus {
    #[serde(flatten)]
    pub counters: SensorCounters,
    pub alarms: Vec<Alarm>,
}

/// A sensor of the config's `sensors` that has not connected: what is expected of it.
#[derive(Debug, Clone, Serialize)]
pub struct AbsentSensor {
    pub required: bool,
    pub expected_hz: Option<f64>,
}

/// `status` `http`: the dashboard's address and whether it takes commands.
#[derive(Debug, Clone, Serialize)]
pub struct HttpStatus {
    pub url: String,
    pub read_only: bool,
}

impl Recorder {
    /// Shows the dashboard in `status` once it listens.
    pub fn set_http_status(&self, http: HttpStatus) {
        *self.http.lock_or_recover() = Some(http);
    }

    /// Shows the background offload in `status`.
    pub fn set_offload(&self, offload: std::sync::Arc<Offloader>) {
        *self.offload.lock_or_recover() = Some(offload);
    }

    /// The health alarms' handle (written by the health task).
    pub fn alarms(&self) -> &crate::health::Alarms {
        &self.alarms
    }

    /// The faults the writers met (`disk_error`).
    pub fn faults(&self) -> &crate::disk_fault::Faults {
        &self.settings.faults
    }

    /// What a health tick looks at now.
    pub fn watch(&self) -> Watch {
        let st = self.lock();
        Watch {
            events: st.trace.as_ref().map(|t| t.events.clone()),
            now_ms: self.epoch.elapsed().as_millis() as u64,
            slots: st.slots.values().cloned().collect(),
            free_bytes: st.disk_free,
            faults: self.settings.faults.for_alarms(),
        }
    }

    /// The `status` reply.
    pub fn status(&self) -> Status {
        let st = self.lock();
        let now_ms = self.epoch.elapsed().as_millis() as u64;
        let sensors = st
            .slots
            .iter()
            .map(|(n, s)| {
                let sensor = SensorStatus {
                    counters: s.stats.counters(s.queue_fill(), now_ms),
                    alarms: self.alarms.for_sensor(n),
                };
                (n.clone(), sensor)
            })
            .collect();
        let absent_sensors = self
            .cfg
            .health
            .sensors
            .iter()
            .filter(|(n, _)| !st.slots.contains_key(*n))
            .map(|(n, h)| {
                let absent = AbsentSensor {
                    required: h.required,
                    expected_hz: h.expected_hz,
                };
                (n.clone(), absent)
            })
            .collect();
        let trace = st.trace.as_ref().map(|t| t.name.clone());
        let snapshot = self.settings.snapshot.as_ref().map(|r| {
            let mut s = r.status();
            s.trigger_stops_in_s = self
                .triggers
                .stops_in(trace.as_deref(), std::time::Instant::now())
                .map(|s| (s * 10.0).round() / 10.0);
            s
        });
        Status {
            recording: st.trace.is_some(),
            trace,
            trace_dir: st.trace.as_ref().map(|t| t.dir.clone()),
            stopped_reason: st.stopped_reason.clone(),
            alarms: self.alarms.all(),
            disk: DiskStatus {
                data_root: self.cfg.recording.data_root.clone(),
                free_bytes: st.disk_free,
                min_free_bytes: self.cfg.recording.min_free_bytes,
                low: st
                    .disk_free
                    .is_some_and(|f| f < self.cfg.recording.min_free_bytes),
                errors: self.settings.faults.all(),
            },
            sensors,
            snapshot,
            absent_sensors,
            http: self.http.lock_or_recover().clone(),
            foxglove: self.live().map(|l| l.status()),
            offload: self.offload.lock_or_recover().as_ref().map(|o| o.status()),
        }
    }
}
