//! The default mapping of ROS messages to roverd channels (docs/ros.md is the user's copy):
//!
//! | message | channels |
//! | --- | --- |
//! | `sensor_msgs/CompressedImage` (JPEG) | `img` (`jpg` blob), or `video.avi` (`mjpg`) with [`ImageFormat::Mjpg`] |
//! | `sensor_msgs/Image` (`rgb8`, `bgr8`, `rgba8`, `bgra8`, `mono8`, `mono16`, `8UC1`, `16UC1`) | `img` raw `u1` `[h, w, 3\|4]` (BGR turned into RGB) or `[h, w]`, `u2` `[h, w]` for 16 bits |
//! | `sensor_msgs/Imu` | `rot` (`f4[3]`, Euler angles as upstream's collector: scipy `'XYZ'` of the quaternion, radians), `acc`, `avel` (`f4[3]`), `quat` (`f8[4]`, x y z w as in the message) |
//! | `sensor_msgs/NavSatFix` | `latitude`, `longitude`, `altitude` (`f8`), `status` (`i1`), `service` (`u2`), `position_covariance` (`f8[9]`), `position_covariance_type` (`u1`) |
//! | `sensor_msgs/PointCloud2` | one raw channel per field (`[w]` when `h` is 1, else `[h, w]`; `[.., count]`), in the field's type; a topic of unorganized clouds whose width changes is padded by [`crate::import::cloud`] |
//! | `sensor_msgs/LaserScan` | `ranges`, `intensities` (when not empty) (`f4[n]`), and its scalars (`angle_min` ... `range_max`, `f4`) |
//! | anything else | its numeric fields by dotted path (`pose.position.x`), fixed arrays and sequences of numbers shaped by their length; strings (and `wstring`s) are left out; a sequence of messages or strings makes the topic one we do not import |
//!
//! A message maps to a [`Mapped`]: channels with their type and shape, and the bytes of each.
//! A topic keeps the channels of its first message; a later message that maps to others
//! (another image size, an organized point cloud of another size) is a shape change.
//! Unorganized point clouds that change only their width are the exception
//! ([`crate::import::cloud`]): padded to the topic's widest.

use crate::error::MapError;
use crate::typesys::schema::Prim;
use crate::wire::decode::Value;

/// Where a sample's `ts` comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Stamp {
    /// The message's `header.stamp` (the log time for messages without a header).
    #[default]
    Header,
    /// The time the recorder logged (received) the message.
    Log,
}
use roverlog_core::format::{ChannelFormat, ChannelMeta, DType};

/// How JPEG images are stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ImageFormat {
    /// One `.jpg` file per sample (channel `img`).
    #[default]
    Jpg,
    /// One MJPEG AVI (channel `video.avi`, upstream's camera).
    Mjpg,
}

/// One message as channels.
#[derive(Debug, Clone, Default)]
pub struct Mapped {
    pub channels: Vec<(String, ChannelMeta)>,
    pub data: Vec<Vec<u8>>,
}

impl Mapped {
    fn push(&mut self, name: &str, dtype: DType, shape: Vec<usize>, desc: &str, bytes: Vec<u8>) {
        self.channels.push((
            name.to_string(),
            ChannelMeta::new(ChannelFormat::Raw, dtype, shape, desc),
        ));
        self.data.push(bytes);
    }

    /// Whether `other` has the same channels (blob and video shapes aside: their samples are
    /// whole compressed images of any size).
    pub fn same_layout(&self, other: &Mapped) -> Result<(), MapError> {
        let names = |m: &Mapped| {
            m.channels
                .iter()
                .map(|(n, _)| n.clone())
                .collect::<Vec<_>>()
        };
        if names(self) != names(other) {
            return Err(MapError::Channels {
                got: names(other),
                want: names(self),
            });
        }
        for ((n, a), (_, b)) in self.channels.iter().zip(&other.channels) {
            let fixed = matches!(a.format, ChannelFormat::Raw);
            if a.dtype != b.dtype || (fixed && a.shape != b.shape) {
                return Err(MapError::Channel {
                    name: n.clone(),
                    got: (b.dtype, b.shape.clone()),
                    want: (a.dtype, a.shape.clone()),
                });
            }
        }
        Ok(())
    }
}

/// The header stamp of a message whose first field is a `std_msgs/Header` named `header`,
/// epoch seconds.
pub fn header_stamp(msg: &Value) -> Option<f64> {
    let Value::Msg(fields) = msg else { return None };
    let (name, header) = fields.first()?;
    if *name != "header" {
        return None;
    }
    let stamp = header.get("stamp")?;
    let sec = stamp.get("sec")?.as_f64()?;
    let nsec = stamp
        .get("nanosec")
        .or_else(|| stamp.get("nsec"))?
        .as_f64()?;
    Some(sec + nsec * 1e-9)
}

/// The frame id of a message with a header.
pub fn frame_id(msg: &Value) -> Option<String> {
    msg.path("header.frame_id")?.as_str()
}

/// Maps one message of type `msgtype` (`pkg/Type`).
pub fn map(msgtype: &str, msg: &Value, images: ImageFormat) -> Result<Mapped, MapError> {
    match msgtype {
        "sensor_msgs/CompressedImage" => compressed_image(msg, images),
        "sensor_msgs/Image" => image(msg),
        "sensor_msgs/Imu" => imu(msg),
        "sensor_msgs/NavSatFix" => navsatfix(msg),
        "sensor_msgs/PointCloud2" => pointcloud2(msg),
        "sensor_msgs/LaserScan" => laserscan(msg),
        _ => generic(msg),
    }
}

fn field<'v, 'a>(msg: &'v Value<'a>, path: &str) -> Result<&'v Value<'a>, MapError> {
    msg.path(path)
        .ok_or_else(|| MapError::NoField { path: path.into() })
}

fn num(msg: &Value, path: &str) -> Result<f64, MapError> {
    field(msg, path)?
        .as_f64()
        .ok_or_else(|| MapError::NotNumber { path: path.into() })
}

fn uint(msg: &Value, path: &str) -> Result<usize, MapError> {
    field(msg, path)?
        .as_u64()
        .map(|v| v as usize)
        .ok_or_else(|| MapError::NotUnsigned { path: path.into() })
}

fn bytes<'v>(msg: &'v Value, path: &str) -> Result<&'v [u8], MapError> {
    match field(msg, path)? {
        Value::Prims {
            prim: Prim::U8 | Prim::I8,
            array: true,
            bytes,
            ..
        } => Ok(bytes),
        _ => Err(MapError::NotBytes { path: path.into() }),
    }
}

fn text(msg: &Value, path: &str) -> Result<String, MapError> {
    field(msg, path)?
        .as_str()
        .ok_or_else(|| MapError::NotString { path: path.into() })
}

fn compressed_image(msg: &Value, images: ImageFormat) -> Result<Mapped, MapError> {
    let format = text(msg, "format")?;
    let f = format.to_ascii_lowercase();
    let data = bytes(msg, "data")?;
    if data.is_empty() {
        return Err(MapError::EmptyImage);
    }
    // Some drivers leave `format` empty: the bytes say what they are.
    let jpeg = f.contains("jpeg")
        || f.contains("jpg")
        || (f.is_empty() && data.starts_with(&[0xff, 0xd8, 0xff]));
    if !jpeg {
        return Err(MapError::NotJpeg { format });
    }
    let (name, fmt) = match images {
        ImageFormat::Jpg => ("img", ChannelFormat::Blob("jpg".into())),
        ImageFormat::Mjpg => ("video.avi", ChannelFormat::Mjpg),
    };
    Ok(Mapped {
        channels: vec![(
            name.into(),
            ChannelMeta::new(fmt, DType::U1, vec![], "JPEG image (shape of the first)"),
        )],
        data: vec![data.to_vec()],
    })
}

fn image(msg: &Value) -> Result<Mapped, MapError> {
    let h = uint(msg, "height")?;
    let w = uint(msg, "width")?;
    let step = uint(msg, "step")?;
    let encoding = text(msg, "encoding")?;
    let big = num(msg, "is_bigendian")? != 0.0;
    let data = bytes(msg, "data")?;
    // (bytes per pixel, channels, bytes per value, swap BGR)
    let (bpp, chans, size, bgr) = match encoding.as_str() {
        "rgb8" => (3, 3, 1, false),
        "bgr8" => (3, 3, 1, true),
        "rgba8" => (4, 4, 1, false),
        "bgra8" => (4, 4, 1, true),
        "mono8" | "8UC1" => (1, 1, 1, false),
        "mono16" | "16UC1" => (2, 1, 2, false),
        e => {
            return Err(MapError::ImageEncoding {
                encoding: e.to_string(),
            })
        }
    };
    let row = w.checked_mul(bpp).ok_or(MapError::ImageWidth)?;
    // Without pixels nothing bounds `height` (a step of 0 fits any), and a sensor's sample
    // needs at least one byte.
    if row == 0 || h == 0 {
        return Err(MapError::NoPixels { w, h, encoding });
    }
    if step < row || h.checked_mul(step).is_none_or(|n| n > data.len()) {
        return Err(MapError::ImageShort {
            w,
            h,
            encoding,
            step,
            len: data.len(),
        });
    }
    let mut out = Vec::with_capacity(row * h);
    for r in 0..h {
        let line = &data[r * step..r * step + row];
        if bgr {
            for px in line.chunks_exact(bpp) {
                out.extend([px[2], px[1], px[0]]);
                out.extend(&px[3..]);
            }
        } else if size == 2 && big {
            out.extend(line.chunks_exact(2).flat_map(|v| [v[1], v[0]]));
        } else {
            out.extend_from_slice(line);
        }
    }
    let shape = if chans == 1 {
        vec![h, w]
    } else {
        vec![h, w, chans]
    };
    let dtype = if size == 2 { DType::U2 } else { DType::U1 };
    let mut m = Mapped::default();
    m.push(
        "img",
        dtype,
        shape,
        &format!("image ({encoding} as {})", if bgr { "RGB" } else { "sent" }),
        out,
    );
    Ok(m)
}

/// Euler angles (roll, pitch, yaw) of a unit quaternion in scipy's intrinsic `'XYZ'`
/// convention (`Rotation.from_quat(q).as_euler('XYZ')`), which is what upstream's `rosbag`
/// verb inverts: `R = Rx(a) Ry(b) Rz(c)`. At gimbal lock the third angle is 0, as scipy.
pub fn euler_xyz(x: f64, y: f64, z: f64, w: f64) -> [f64; 3] {
    let n = (x * x + y * y + z * z + w * w).sqrt();
    if !(n.is_finite() && n > 0.0) {
        return [f64::NAN; 3];
    }
    let (x, y, z, w) = (x / n, y / n, z / n, w / n);
    let r00 = 1.0 - 2.0 * (y * y + z * z);
    let r01 = 2.0 * (x * y - z * w);
    let r02 = 2.0 * (x * z + y * w);
    let r11 = 1.0 - 2.0 * (x * x + z * z);
    let r12 = 2.0 * (y * z - x * w);
    let r21 = 2.0 * (y * z + x * w);
    let r22 = 1.0 - 2.0 * (x * x + y * y);
    let b = r02.clamp(-1.0, 1.0).asin();
    if r02.abs() > 1.0 - 1e-12 {
        return [r21.atan2(r11), b, 0.0];
    }
    [(-r12).atan2(r22), b, (-r01).atan2(r00)]
}

fn f4s(v: &[f64]) -> Vec<u8> {
    v.iter().flat_map(|&x| (x as f32).to_le_bytes()).collect()
}

fn vec3(msg: &Value, path: &str) -> Result<[f64; 3], MapError> {
    Ok([
        num(msg, &format!("{path}.x"))?,
        num(msg, &format!("{path}.y"))?,
        num(msg, &format!("{path}.z"))?,
    ])
}

fn imu(msg: &Value) -> Result<Mapped, MapError> {
    let q = [
        num(msg, "orientation.x")?,
        num(msg, "orientation.y")?,
        num(msg, "orientation.z")?,
        num(msg, "orientation.w")?,
    ];
    let mut m = Mapped::default();
    let rot = euler_xyz(q[0], q[1], q[2], q[3]);
    m.push(
        "rot",
        DType::F4,
        vec![3],
        "Orientation (Euler angles, scipy 'XYZ', radians)",
        f4s(&rot),
    );
    m.push(
        "acc",
        DType::F4,
        vec![3],
        "Linear acceleration",
        f4s(&vec3(msg, "linear_acceleration")?),
    );
    m.push(
        "avel",
        DType::F4,
        vec![3],
        "Angular velocity",
        f4s(&vec3(msg, "angular_velocity")?),
    );
    m.push(
        "quat",
        DType::F8,
        vec![4],
        "Orientation quaternion x y z w (as in the message)",
        q.iter().flat_map(|v| v.to_le_bytes()).collect(),
    );
    Ok(m)
}

fn navsatfix(msg: &Value) -> Result<Mapped, MapError> {
    let mut m = Mapped::default();
    for (name, desc) in [
        ("latitude", "Latitude (degrees)"),
        ("longitude", "Longitude (degrees)"),
        ("altitude", "Altitude (m above the WGS 84 ellipsoid)"),
    ] {
        m.push(
            name,
            DType::F8,
            vec![],
            desc,
            num(msg, name)?.to_le_bytes().to_vec(),
        );
    }
    let status = num(msg, "status.status")?;
    m.push(
        "status",
        DType::I1,
        vec![],
        "NavSatStatus status (-1 no fix, 0 fix, 1 SBAS, 2 GBAS)",
        vec![status as i8 as u8],
    );
    let service = num(msg, "status.service")?;
    m.push(
        "service",
        DType::U2,
        vec![],
        "NavSatStatus service bits",
        (service as u16).to_le_bytes().to_vec(),
    );
    let cov = field(msg, "position_covariance")?;
    let cov: Vec<u8> = (0..9)
        .map(|i| cov.f64_at(i).ok_or(MapError::Covariance))
        .collect::<Result<Vec<_>, _>>()?
        .iter()
        .flat_map(|v| v.to_le_bytes())
        .collect();
    m.push(
        "position_covariance",
        DType::F8,
        vec![9],
        "Position covariance (m^2, ENU, row-major)",
        cov,
    );
    let t = num(msg, "position_covariance_type")?;
    m.push(
        "position_covariance_type",
        DType::U1,
        vec![],
        "0 unknown, 1 approximated, 2 diagonal known, 3 known",
        vec![t as u8],
    );
    Ok(m)
}

fn dtype_of(prim: Prim) -> DType {
    match prim {
        Prim::Bool => DType::B1,
        Prim::I8 => DType::I1,
        Prim::U8 => DType::U1,
        Prim::I16 => DType::I2,
        Prim::U16 => DType::U2,
        Prim::I32 => DType::I4,
        Prim::U32 => DType::U4,
        Prim::I64 => DType::I8,
        Prim::U64 => DType::U8,
        Prim::F32 => DType::F4,
        Prim::F64 => DType::F8,
    }
}

/// A field name as a channel name: `ts` is the timestamp channel, so a field called that is
/// `ts_field`; names that cannot be file names are refused.
fn channel_name(name: &str) -> Result<String, MapError> {
    let n = if name == roverlog_core::format::TS_CHANNEL {
        "ts_field".to_string()
    } else {
        name.to_string()
    };
    roverlog_core::format::meta::validate_name("channel", &n).map_err(|e| match e {
        roverlog_core::Error::InvalidName { reason, .. } => MapError::ChannelName {
            name: n.clone(),
            reason,
        },
        _ => MapError::ChannelName {
            name: n.clone(),
            reason: "not a valid name",
        },
    })?;
    Ok(n)
}

fn pointcloud2(msg: &Value) -> Result<Mapped, MapError> {
    let h = uint(msg, "height")?;
    let w = uint(msg, "width")?;
    let point_step = uint(msg, "point_step")?;
    let row_step = uint(msg, "row_step")?;
    let big = num(msg, "is_bigendian")? != 0.0;
    let data = bytes(msg, "data")?;
    let Value::List(fields) = field(msg, "fields")? else {
        return Err(MapError::FieldsNotList);
    };
    let n = h.checked_mul(w).ok_or(MapError::PointCount)?;
    if h > 0
        && (h - 1)
            .checked_mul(row_step)
            .and_then(|r| r.checked_add(w.saturating_sub(1) * point_step))
            .is_none_or(|e| e > data.len())
    {
        return Err(MapError::RowsShort {
            w,
            h,
            row_step,
            len: data.len(),
        });
    }
    // What the fields decode to is bounded by the message: rows do not overlap (a cloud of
    // `row_step` 0 and a million rows would otherwise turn one point's bytes into a million),
    // and neither do the fields, in total (a thousand fields at one offset would turn each
    // point's bytes into a thousand copies).
    if n.checked_mul(point_step).is_none_or(|b| b > data.len()) {
        return Err(MapError::RowsOverlap {
            w,
            h,
            point_step,
            row_step,
            len: data.len(),
        });
    }
    let mut field_bytes = 0usize;
    let mut m = Mapped::default();
    for f in fields {
        let name = text(f, "name")?;
        let offset = uint(f, "offset")?;
        let count = uint(f, "count")?.max(1);
        let prim = match uint(f, "datatype")? {
            1 => Prim::I8,
            2 => Prim::U8,
            3 => Prim::I16,
            4 => Prim::U16,
            5 => Prim::I32,
            6 => Prim::U32,
            7 => Prim::F32,
            8 => Prim::F64,
            d => return Err(MapError::PointDatatype { name, datatype: d }),
        };
        let size = prim
            .size()
            .checked_mul(count)
            .filter(|&z| offset.checked_add(z).is_some_and(|e| e <= point_step))
            .ok_or_else(|| MapError::FieldPastStep {
                name: name.clone(),
                offset,
                count,
                size: prim.size(),
                point_step,
            })?;
        field_bytes += size;
        if field_bytes > point_step {
            return Err(MapError::FieldsOverlap {
                bytes: field_bytes,
                name,
                point_step,
            });
        }
        let ch = channel_name(&name)?;
        if m.channels.iter().any(|(c, _)| *c == ch) {
            return Err(MapError::FieldTwice { name });
        }
        let mut out = Vec::with_capacity(n * size);
        // Rows of no points copy nothing, however many are declared (a width of 0 leaves
        // `height` unbounded by the data: billions of empty rows would take seconds).
        for r in 0..if w == 0 { 0 } else { h } {
            for c in 0..w {
                let at = r * row_step + c * point_step + offset;
                let v = data
                    .get(at..at + size)
                    .ok_or(MapError::PointPastData { row: r, col: c })?;
                if big && prim.size() > 1 {
                    out.extend(v.chunks_exact(prim.size()).flat_map(|e| e.iter().rev()));
                } else {
                    out.extend_from_slice(v);
                }
            }
        }
        let mut shape = if h == 1 { vec![w] } else { vec![h, w] };
        if count > 1 {
            shape.push(count);
        }
        m.push(
            &ch,
            dtype_of(prim),
            shape,
            &format!("point field {name}"),
            out,
        );
    }
    if m.channels.is_empty() {
        return Err(MapError::NoPointFields);
    }
    Ok(m)
}

fn laserscan(msg: &Value) -> Result<Mapped, MapError> {
    let mut m = Mapped::default();
    for name in ["ranges", "intensities"] {
        let (_, n, b) = field(msg, name)?
            .le_bytes()
            .ok_or(MapError::NotNumbers { name })?;
        if n > 0 || name == "ranges" {
            m.push(
                name,
                DType::F4,
                vec![n],
                if name == "ranges" {
                    "Ranges (m)"
                } else {
                    "Intensities"
                },
                b,
            );
        }
    }
    for name in [
        "angle_min",
        "angle_max",
        "angle_increment",
        "time_increment",
        "scan_time",
        "range_min",
        "range_max",
    ] {
        m.push(
            name,
            DType::F4,
            vec![],
            name,
            (num(msg, name)? as f32).to_le_bytes().to_vec(),
        );
    }
    Ok(m)
}

/// Every numeric field by its dotted path; the header is the timestamp, not a channel.
fn generic(msg: &Value) -> Result<Mapped, MapError> {
    let mut m = Mapped::default();
    flatten("", msg, &mut m, true)?;
    if m.channels.is_empty() {
        return Err(MapError::NoNumericFields);
    }
    Ok(m)
}

fn flatten(prefix: &str, v: &Value, m: &mut Mapped, top: bool) -> Result<(), MapError> {
    match v {
        Value::Msg(fields) => {
            for (i, (name, f)) in fields.iter().enumerate() {
                if top && i == 0 && *name == "header" {
                    continue;
                }
                let path = if prefix.is_empty() {
                    name.to_string()
                } else {
                    format!("{prefix}.{name}")
                };
                flatten(&path, f, m, false)?;
            }
        }
        Value::Prims { prim, array, .. } => {
            let (_, n, b) = v.le_bytes().expect("numbers");
            if *array && n == 0 {
                return Ok(());
            }
            let shape = if *array { vec![n] } else { vec![] };
            m.push(&channel_name(prefix)?, dtype_of(*prim), shape, prefix, b);
        }
        Value::Str(_) | Value::WStr { .. } => {}
        Value::List(items) if items.is_empty() => {}
        Value::List(items) => {
            let what = if matches!(items[0], Value::Str(_) | Value::WStr { .. }) {
                "strings"
            } else {
                "messages"
            };
            return Err(MapError::Sequence {
                path: prefix.to_string(),
                what,
            });
        }
    }
    Ok(())
}

#[cfg(test)]
#[path = "mapping_tests.rs"]
mod tests;
