//! The sensor's metadata (`sensor_info`, what `http://SENSOR/api/v1/sensor/metadata` serves
//! on firmware 2 and later, and what ouster-sdk saves): the packet layout the driver decodes,
//! checked to be a `lidar.json` our reader (`roverlog_core::ouster`) projects.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

use super::packet::{Layout, Profile};
use crate::camera::http::{self, HttpError};
use roverlog_core::ouster::{LidarIntrinsics, MAX_BEAMS, MAX_COLUMNS, MAX_LIDAR_JSON_BYTES};

/// The IMU packet profile (`lidar_data_format.udp_profile_imu`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ImuProfile {
    /// 48 bytes, one measurement a packet (every firmware's default): decoded.
    Legacy,
    /// Another profile (`ACCEL32_GYRO32_NMEA`, `OFF`), named as the metadata names it: the
    /// IMU port is not read (the lidar is recorded all the same).
    NotDecoded(String),
}

/// The metadata file, read and understood.
#[derive(Debug, Clone)]
pub struct Metadata {
    /// The file's bytes as read (written unchanged beside the trace's frames).
    pub text: Vec<u8>,
    pub layout: Layout,
    pub imu: ImuProfile,
    pub source: PathBuf,
}

/// Why the metadata file cannot drive the decoder.
#[derive(Debug, thiserror::Error)]
pub enum MetadataError {
    #[error("{}: {error}", path.display())]
    Read {
        path: PathBuf,
        error: std::io::Error,
    },
    #[error("{}: {got} bytes, over the limit of {MAX_LIDAR_JSON_BYTES}", path.display())]
    TooLarge { path: PathBuf, got: u64 },
    #[error("{}: invalid JSON: {error}", path.display())]
    Json {
        path: PathBuf,
        error: serde_json::Error,
    },
    #[error("{}: no `lidar_data_format` object: not the sensor_info of firmware 2 or later (fetch http://SENSOR/api/v1/sensor/metadata)", path.display())]
    NotSensorInfo { path: PathBuf },
    #[error("{}: lidar_data_format.{key} is missing or not {expected}", path.display())]
    Field {
        path: PathBuf,
        key: &'static str,
        expected: &'static str,
    },
    #[error("{}: lidar_data_format.udp_profile_lidar {got:?} is not decoded (LEGACY, RNG19_RFL8_SIG16_NIR16 are)", path.display())]
    LidarProfile { path: PathBuf, got: String },
    #[error("{}: lidar_data_format.column_window {window:?} outside the {columns} columns", path.display())]
    Window {
        path: PathBuf,
        window: (usize, usize),
        columns: usize,
    },
    #[error(transparent)]
    Fetch(#[from] HttpError),
    #[error("{url}: reading the body: {error}")]
    FetchBody { url: String, error: std::io::Error },
    #[error("{url}: the body is over {MAX_LIDAR_JSON_BYTES} bytes")]
    FetchTooLarge { url: String },
    #[error("{}: not a lidar.json the reader projects: {error}", path.display())]
    Intrinsics {
        path: PathBuf,
        error: roverlog_core::error::Error,
    },
}

impl Metadata {
    /// Reads and checks `path` (at most [`MAX_LIDAR_JSON_BYTES`]).
    pub fn open(path: &Path) -> Result<Metadata, MetadataError> {
        let read = |error| MetadataError::Read {
            path: path.to_path_buf(),
            error,
        };
        let len = std::fs::metadata(path).map_err(read)?.len();
        if len > MAX_LIDAR_JSON_BYTES {
            return Err(MetadataError::TooLarge {
                path: path.to_path_buf(),
                got: len,
            });
        }
        let text = std::fs::read(path).map_err(read)?;
        Metadata::parse(path, text)
    }

    /// Fetches `http://HOST/api/v1/sensor/metadata` (firmware 2 and later) from the sensor.
    pub fn fetch(host: &str, timeout: Duration) -> Result<Metadata, MetadataError> {
        let url = format!("http://{host}/api/v1/sensor/metadata");
        let stop = Arc::new(AtomicBool::new(false));
        let stream = http::open_peer(&url, timeout, timeout, stop, "the lidar")?;
        let mut text = Vec::new();
        stream
            .body
            .take(MAX_LIDAR_JSON_BYTES + 1)
            .read_to_end(&mut text)
            .map_err(|error| MetadataError::FetchBody {
                url: url.clone(),
                error,
            })?;
        if text.len() as u64 > MAX_LIDAR_JSON_BYTES {
            return Err(MetadataError::FetchTooLarge { url });
        }
        Metadata::parse(Path::new(&url), text)
    }

    /// Parses the text of a metadata file; `source` names it in errors.
    pub fn parse(source: &Path, text: Vec<u8>) -> Result<Metadata, MetadataError> {
        let path = source.to_path_buf();
        let doc: Value = serde_json::from_slice(&text).map_err(|error| MetadataError::Json {
            path: path.clone(),
            error,
        })?;
        let Some(fmt) = doc.get("lidar_data_format").filter(|v| v.is_object()) else {
            return Err(MetadataError::NotSensorInfo { path });
        };
        let field = |key: &'static str, expected: &'static str| MetadataError::Field {
            path: path.clone(),
            key,
            expected,
        };
        let uint = |key: &'static str, max: usize| {
            fmt.get(key)
                .and_then(Value::as_u64)
                .filter(|&n| n >= 1 && n as usize <= max)
                .map(|n| n as usize)
                .ok_or_else(|| field(key, "a positive integer in range"))
        };
        let beams = uint("pixels_per_column", MAX_BEAMS)?;
        let columns = uint("columns_per_frame", MAX_COLUMNS)?;
        let columns_per_packet = uint("columns_per_packet", columns)?;
        let window = match fmt.get("column_window") {
            None => (0, columns - 1),
            Some(v) => {
                let w = v
                    .as_array()
                    .filter(|a| a.len() == 2)
                    .and_then(|a| Some((a[0].as_u64()? as usize, a[1].as_u64()? as usize)))
                    .ok_or_else(|| field("column_window", "two column numbers"))?;
                if w.0 >= columns || w.1 >= columns {
                    return Err(MetadataError::Window {
                        path,
                        window: w,
                        columns,
                    });
                }
                w
            }
        };
        // Firmware before the profiles existed sends no profile names: legacy packets.
        let name = |key: &'static str| match fmt.get(key) {
            None => Ok("LEGACY".to_string()),
            Some(v) => v
                .as_str()
                .map(str::to_string)
                .ok_or_else(|| field(key, "a string")),
        };
        let lidar = name("udp_profile_lidar")?;
        let profile = Profile::from_name(&lidar).ok_or_else(|| MetadataError::LidarProfile {
            path: path.clone(),
            got: lidar,
        })?;
        let imu = match name("udp_profile_imu")? {
            n if n == "LEGACY" => ImuProfile::Legacy,
            other => ImuProfile::NotDecoded(other),
        };
        LidarIntrinsics::parse(source, &text).map_err(|error| MetadataError::Intrinsics {
            path: path.clone(),
            error,
        })?;
        Ok(Metadata {
            text,
            layout: Layout {
                profile,
                pixels_per_column: beams,
                columns_per_frame: columns,
                columns_per_packet,
                column_window: window,
            },
            imu,
            source: path,
        })
    }
}
