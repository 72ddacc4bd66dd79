//! A sensor whose channels hold a position, shown as `foxglove.LocationFix` (Foxglove's map
//! panel) on topic `/<sensor>/location`, beside its channels' own topics. Nothing in a
//! roverd trace says which numbers are a latitude, so a mapping does: per field, one
//! element of a channel, `name` (a channel with one element) or `name[i]` (element `i` of
//! the channel in row-major order):
//!
//! ```json
//! {"gps": {"latitude": "pos[0]", "longitude": "pos[1]", "altitude": "pos[2]"}}
//! ```
//!
//! `latitude` and `longitude` (degrees) are required, `altitude` (metres) is optional (0
//! without it). The daemon reads it from config `foxglove_location`, `roverlog export` from
//! `--location gps:latitude=pos[0],longitude=pos[1]`, or else from the config the daemon
//! recorded with the trace ([`recorded`]). A mapping is checked in two steps: its
//! text when it is read ([`LocationMapping::from_pairs`]), and against the sensor's channels
//! when the sensor is known ([`LocationMapping::resolve`]): the channel exists, is
//! fixed-size, holds real numbers, and has the element. The message's covariance is unknown
//! (nine zeros, type `UNKNOWN`); `frame_id` is the sensor's name.

use std::collections::BTreeMap;

use foxglove::messages::location_fix::PositionCovarianceType;
use foxglove::messages::LocationFix;
use foxglove::{Encode, Schema};

use roverlog_core::format::{DType, SensorMeta};

use crate::message::{encode, stamp};
use crate::source::TraceSource;

pub mod error;
use error::problem;
pub use error::{LocationError, LocationProblem, FIELDS};

/// The largest `config.yaml` read for its mappings (the daemon's is a few KiB).
const MAX_CONFIG_BYTES: u64 = 1 << 20;

/// The mappings the daemon recorded with a trace: key `foxglove_location` of its
/// `config.yaml` (the daemon's config, as JSON). Per sensor, its mapping or why it cannot be
/// read. None for a trace without them (an upstream trace's YAML config, a missing or
/// unreadable file, one over 1 MiB). The trace is local or read in place.
pub fn recorded(
    trace: &impl TraceSource,
) -> BTreeMap<String, Result<LocationMapping, LocationError>> {
    let Some(text) = trace.config(MAX_CONFIG_BYTES) else {
        return BTreeMap::new();
    };
    let Ok(serde_json::Value::Object(mut config)) = serde_json::from_slice(&text) else {
        return BTreeMap::new();
    };
    let Some(serde_json::Value::Object(sensors)) = config.remove("foxglove_location") else {
        return BTreeMap::new();
    };
    sensors
        .into_iter()
        .map(|(sensor, fields)| {
            let m = match &fields {
                serde_json::Value::Object(f) => f
                    .iter()
                    .map(|(k, v)| match v.as_str() {
                        Some(v) => Ok((k.as_str(), v)),
                        None => Err(problem(
                            &sensor,
                            k,
                            LocationProblem::NotAString {
                                json: v.to_string(),
                            },
                        )),
                    })
                    .collect::<Result<Vec<_>, _>>()
                    .and_then(|pairs| LocationMapping::from_pairs(&sensor, pairs)),
                other => Err(problem(
                    &sensor,
                    "latitude",
                    LocationProblem::NotAnObject {
                        json: other.to_string(),
                    },
                )),
            };
            (sensor, m)
        })
        .collect()
}

/// The mapping a sensor gets without configuration: its channels named `latitude` and
/// `longitude` (and `altitude` when present), when they fit ([`LocationMapping::resolve`]).
/// What `roverlog driver gps` writes; a configured or recorded mapping takes precedence.
pub fn by_channel_names(sensor: &str, meta: &SensorMeta) -> Option<LocationMapping> {
    let has = |name: &str| meta.data_channels().any(|(n, _)| n == name);
    if !(has("latitude") && has("longitude")) {
        return None;
    }
    let altitude = has("altitude").then_some(("altitude", "altitude"));
    let pairs = [("latitude", "latitude"), ("longitude", "longitude")]
        .into_iter()
        .chain(altitude);
    let m = LocationMapping::from_pairs(sensor, pairs).ok()?;
    m.resolve(sensor, meta).is_ok().then_some(m)
}

/// The topic of a sensor's fixes.
pub fn topic(sensor: &str) -> String {
    format!("/{sensor}/location")
}

/// The schema of the fixes (`foxglove.LocationFix`, protobuf).
pub fn schema() -> Schema {
    LocationFix::get_schema().expect("SDK messages have schemas")
}

/// One element of a channel: `channel` (its only element) or `channel[index]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ElementRef {
    pub channel: String,
    pub index: Option<usize>,
}

impl std::fmt::Display for ElementRef {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        match self.index {
            Some(i) => write!(f, "{}[{i}]", self.channel),
            None => f.write_str(&self.channel),
        }
    }
}

impl ElementRef {
    /// `name` or `name[i]`; `None` for anything else.
    pub fn parse(s: &str) -> Option<ElementRef> {
        let name_ok = |n: &str| {
            !n.is_empty()
                && !n
                    .chars()
                    .any(|c| c.is_whitespace() || "[](),=:\"'".contains(c))
        };
        let (name, index) = match s.strip_suffix(']') {
            Some(head) => {
                let (name, i) = head.split_once('[')?;
                if i.is_empty() || !i.bytes().all(|b| b.is_ascii_digit()) {
                    return None;
                }
                (name, Some(i.parse().ok()?))
            }
            None => (s, None),
        };
        name_ok(name).then(|| ElementRef {
            channel: name.to_owned(),
            index,
        })
    }
}

/// Where a sensor's position is, as written (checked for syntax, not yet against channels).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LocationMapping {
    pub latitude: ElementRef,
    pub longitude: ElementRef,
    pub altitude: Option<ElementRef>,
}

impl LocationMapping {
    /// The mapping of `sensor` from (field, element) pairs. Errors name the sensor, the
    /// field and what is wrong: an unknown field, a field twice, a missing `latitude` or
    /// `longitude`, an element that is not `name` or `name[index]`.
    pub fn from_pairs<'a>(
        sensor: &str,
        pairs: impl IntoIterator<Item = (&'a str, &'a str)>,
    ) -> Result<LocationMapping, LocationError> {
        let mut found: [Option<ElementRef>; 3] = [None, None, None];
        for (field, text) in pairs {
            let Some(k) = FIELDS.iter().position(|f| *f == field) else {
                return Err(problem(sensor, field, LocationProblem::UnknownField));
            };
            let Some(r) = ElementRef::parse(text) else {
                return Err(problem(
                    sensor,
                    field,
                    LocationProblem::NotAnElement {
                        text: text.to_owned(),
                    },
                ));
            };
            if found[k].replace(r).is_some() {
                return Err(problem(sensor, field, LocationProblem::Twice));
            }
        }
        let [lat, lon, alt] = found;
        let need = |r: Option<ElementRef>, field: &str| {
            r.ok_or_else(|| problem(sensor, field, LocationProblem::Missing))
        };
        Ok(LocationMapping {
            latitude: need(lat, "latitude")?,
            longitude: need(lon, "longitude")?,
            altitude: alt,
        })
    }

    /// The mapping against `meta`, the channels of `sensor`: each element found in a data
    /// channel that is fixed-size and holds real numbers.
    pub fn resolve(&self, sensor: &str, meta: &SensorMeta) -> Result<Location, LocationError> {
        let one = |field: &str, r: &ElementRef| -> Result<Element, LocationError> {
            let bad = |p: LocationProblem| problem(sensor, field, p);
            let element = r.to_string();
            let Some((channel, ch)) = meta
                .data_channels()
                .enumerate()
                .find(|(_, (n, _))| *n == r.channel)
                .map(|(i, (_, c))| (i, c))
            else {
                return Err(bad(LocationProblem::NoChannel {
                    element,
                    sensor: sensor.to_owned(),
                    channel: r.channel.clone(),
                    channels: meta.data_channels().map(|(n, _)| n.to_owned()).collect(),
                }));
            };
            if !ch.format.is_fixed_size() {
                return Err(bad(LocationProblem::NotFixedSize {
                    element,
                    channel: r.channel.clone(),
                    format: ch.format.as_str().to_owned(),
                }));
            }
            if matches!(ch.dtype, DType::C8 | DType::C16 | DType::B1) {
                return Err(bad(LocationProblem::NotReal {
                    element,
                    channel: r.channel.clone(),
                    dtype: ch.dtype.code(),
                }));
            }
            let n: usize = ch.shape.iter().product();
            let index = match r.index {
                Some(i) if i < n => i,
                Some(i) => {
                    return Err(bad(LocationProblem::IndexOutOfRange {
                        element,
                        channel: r.channel.clone(),
                        index: i,
                        elements: n,
                        shape: ch.shape.clone(),
                    }))
                }
                None if n == 1 => 0,
                None => {
                    return Err(bad(LocationProblem::WhichElement {
                        element,
                        channel: r.channel.clone(),
                        elements: n,
                        shape: ch.shape.clone(),
                    }))
                }
            };
            Ok(Element {
                channel,
                offset: index * ch.dtype.itemsize(),
                dtype: ch.dtype,
            })
        };
        Ok(Location {
            latitude: one("latitude", &self.latitude)?,
            longitude: one("longitude", &self.longitude)?,
            altitude: self
                .altitude
                .as_ref()
                .map(|r| one("altitude", r))
                .transpose()?,
        })
    }
}

/// One element of a sample: its data channel (index in `data_channels` order), byte
/// offset and type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Element {
    channel: usize,
    offset: usize,
    dtype: DType,
}

impl Element {
    /// The element's value; NaN when the sample is too short to hold it (the callers pass
    /// whole samples: this keeps a writer thread from a panic all the same).
    fn read(&self, slices: &[&[u8]]) -> f64 {
        let end = self.offset + self.dtype.itemsize();
        let Some(b) = slices
            .get(self.channel)
            .and_then(|s| s.get(self.offset..end))
        else {
            return f64::NAN;
        };
        let a = |n: usize| -> [u8; 8] {
            let mut x = [0u8; 8];
            x[..n].copy_from_slice(&b[..n]);
            x
        };
        let (a2, a4, a8) = (
            || [b[0], b[1]],
            || a(4)[..4].try_into().expect("4 bytes"),
            || a(8),
        );
        match self.dtype {
            DType::U1 => f64::from(b[0]),
            DType::I1 => f64::from(b[0] as i8),
            DType::U2 => f64::from(u16::from_le_bytes(a2())),
            DType::I2 => f64::from(i16::from_le_bytes(a2())),
            DType::U4 => f64::from(u32::from_le_bytes(a4())),
            DType::I4 => f64::from(i32::from_le_bytes(a4())),
            DType::U8 => u64::from_le_bytes(a8()) as f64,
            DType::I8 => i64::from_le_bytes(a8()) as f64,
            DType::F2 => f64::from(roverlog_core::format::dtype::f16_to_f32(
                u16::from_le_bytes(a2()),
            )),
            DType::F4 => f64::from(f32::from_le_bytes(a4())),
            DType::F8 => f64::from_le_bytes(a8()),
            // Refused by `resolve`.
            DType::C8 | DType::C16 | DType::B1 => f64::NAN,
        }
    }
}

/// A mapping checked against its sensor's channels: reads the position out of a sample.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Location {
    latitude: Element,
    longitude: Element,
    altitude: Option<Element>,
}

impl Location {
    /// The data channels (indices in `data_channels` order) a position is read from.
    pub fn channels(&self) -> Vec<usize> {
        let mut v: Vec<usize> = [Some(self.latitude), Some(self.longitude), self.altitude]
            .into_iter()
            .flatten()
            .map(|e| e.channel)
            .collect();
        v.sort_unstable();
        v.dedup();
        v
    }

    /// Latitude, longitude, altitude of a sample given as its data channels' bytes (only
    /// those of [`Location::channels`] are read; the others may be empty).
    pub fn read(&self, slices: &[&[u8]]) -> [f64; 3] {
        [
            self.latitude.read(slices),
            self.longitude.read(slices),
            self.altitude.map_or(0.0, |a| a.read(slices)),
        ]
    }

    /// The message of a position of sensor `frame_id` at `ts` (epoch seconds).
    pub fn message(
        frame_id: &str,
        ts: f64,
        [latitude, longitude, altitude]: [f64; 3],
    ) -> LocationFix {
        LocationFix {
            timestamp: Some(stamp(ts)),
            frame_id: frame_id.to_owned(),
            latitude,
            longitude,
            altitude,
            position_covariance: vec![0.0; 9],
            position_covariance_type: PositionCovarianceType::Unknown as i32,
            ..Default::default()
        }
    }

    /// [`Location::message`] as protobuf bytes.
    pub fn encode(frame_id: &str, ts: f64, position: [f64; 3]) -> Vec<u8> {
        encode(&Location::message(frame_id, ts, position))
    }
}

#[cfg(test)]
mod tests;
