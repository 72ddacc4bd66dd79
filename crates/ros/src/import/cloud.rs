//! Unorganized point clouds whose width changes from message to message, as fixed-shape
//! channels (docs/ros.md, "Point clouds of changing width").
//!
//! A roverd channel has one shape for all its samples, but most lidar drivers (Velodyne,
//! Hesai, Livox, any filtered cloud, `roverlog rosbag`'s own `/points2`) publish
//! `sensor_msgs/PointCloud2` with `height` 1 and a `width` that changes every scan. Such a
//! topic keeps its fields ([`crate::import::mapping`] maps each to a channel `[w]` or `[w, count]`)
//! while only `w` changes, so its channels get the widest cloud's width (found by the scan at
//! open, which decodes every message anyway) and each sample is padded past its own width:
//! float fields with NaN, integer fields with 0. A `u4` channel (`points`, or `n_points` when
//! a field has that name) holds each sample's real width.
//!
//! What stays a shape change: an organized cloud (`height` > 1, or a topic moving between
//! organized and not) of another size, and a cloud whose fields (names, types, counts)
//! change. A cloud of fixed width maps as any other message: no padding, no count channel.

use crate::error::MapError;
use crate::import::mapping::Mapped;
use crate::wire::decode::Value;
use roverlog_core::format::{ChannelFormat, ChannelMeta, DType};

/// Most bytes one padded sample may take, all its channels together: beyond it the topic is
/// skipped, so one huge outlier cloud cannot make every sample of a trace that large.
pub const MAX_PADDED_SAMPLE: usize = 256 << 20;

/// The message type this module pads.
pub const POINTCLOUD2: &str = "sensor_msgs/PointCloud2";

/// `(height, width)` of a `sensor_msgs/PointCloud2` message; `None` for other types.
pub fn dims(msgtype: &str, msg: &Value) -> Option<(usize, usize)> {
    if msgtype != POINTCLOUD2 {
        return None;
    }
    let h = msg.get("height")?.as_u64()?;
    let w = msg.get("width")?.as_u64()?;
    Some((usize::try_from(h).ok()?, usize::try_from(w).ok()?))
}

/// What the scan has seen of a point cloud topic's sizes: a few numbers per topic, whatever
/// its message count.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Widths {
    first: (usize, usize),
    /// The widest cloud seen.
    pub max: usize,
    /// Whether any message's width differs from the first's.
    pub varies: bool,
}

impl Widths {
    /// The first message's `(height, width)`.
    pub fn new(first: (usize, usize)) -> Self {
        Widths {
            first,
            max: first.1,
            varies: false,
        }
    }

    /// Takes a later message of `(height, width)` `dims`, mapped as `m`, against the topic's
    /// first (`first`): the same size must map the same (as any message); another width is
    /// taken when both are unorganized (`height` 1) with the same fields. The error says
    /// what changed.
    pub fn admit(
        &mut self,
        first: &Mapped,
        m: &Mapped,
        dims: (usize, usize),
    ) -> Result<(), MapError> {
        if dims == self.first {
            return first.same_layout(m);
        }
        let (h0, w0) = self.first;
        let (h, w) = dims;
        if h != 1 || h0 != 1 {
            return Err(MapError::CloudShape { w, h, w0, h0 });
        }
        same_fields(first, m)?;
        self.max = self.max.max(w);
        self.varies = true;
        Ok(())
    }
}

/// Whether `m` has the channels of `first` (names, types, and shapes past the first
/// dimension, the point count).
fn same_fields(first: &Mapped, m: &Mapped) -> Result<(), MapError> {
    fn names(m: &Mapped) -> Vec<String> {
        m.channels.iter().map(|(n, _)| n.clone()).collect()
    }
    if names(first) != names(m) {
        return Err(MapError::PointFields {
            got: names(m),
            want: names(first),
        });
    }
    for ((n, a), (_, b)) in first.channels.iter().zip(&m.channels) {
        if a.dtype != b.dtype || a.shape.get(1..) != b.shape.get(1..) {
            let per = |c: &ChannelMeta| match c.shape.get(1..) {
                Some([count]) => (c.dtype, Some(*count)),
                _ => (c.dtype, None),
            };
            return Err(MapError::PointField {
                name: n.clone(),
                got: per(b),
                want: per(a),
            });
        }
    }
    Ok(())
}

/// Bytes of one point over `channels` (each channel's shape past its first dimension).
fn point_bytes(channels: &[(String, ChannelMeta)]) -> usize {
    channels
        .iter()
        .map(|(_, c)| c.dtype.itemsize() * c.shape.iter().skip(1).product::<usize>())
        .sum()
}

/// The name of the point count channel: `points`, or `n_points` (then `n_points_2`, ...)
/// when a field already has it.
pub fn count_channel_name(channels: &[(String, ChannelMeta)]) -> String {
    let taken = |n: &str| channels.iter().any(|(c, _)| c == n);
    if !taken("points") {
        return "points".into();
    }
    let mut name = "n_points".to_string();
    let mut k = 2;
    while taken(&name) {
        name = format!("n_points_{k}");
        k += 1;
    }
    name
}

/// Makes a cloud topic's channels (those of its first message) padded ones: first dimension
/// `max`, then the count channel. Refused, with the reason, when a padded sample would pass
/// [`MAX_PADDED_SAMPLE`].
pub fn pad_channels(channels: &mut Vec<(String, ChannelMeta)>, max: usize) -> Result<(), MapError> {
    let point = point_bytes(channels);
    let sample = max
        .checked_mul(point)
        .and_then(|b| b.checked_add(4))
        .filter(|&b| b <= MAX_PADDED_SAMPLE);
    if sample.is_none() {
        return Err(MapError::PaddedTooLarge {
            max,
            point,
            limit_mib: MAX_PADDED_SAMPLE >> 20,
        });
    }
    let name = count_channel_name(channels);
    for (_, c) in channels.iter_mut() {
        c.shape[0] = max;
        c.desc = format!(
            "{} (padded past `{name}` with {})",
            c.desc,
            if is_float(c.dtype) { "NaN" } else { "0" }
        );
    }
    channels.push((
        name,
        ChannelMeta::new(
            ChannelFormat::Raw,
            DType::U4,
            vec![],
            &format!("Points in the cloud (the channels beside it are padded to {max})"),
        ),
    ));
    Ok(())
}

fn is_float(d: DType) -> bool {
    matches!(d, DType::F4 | DType::F8)
}

/// Pads one mapped cloud of `width` points to `max` (the channels of [`pad_channels`]): each
/// field's values past `width` NaN for floats, 0 for integers; then the count.
pub fn pad(m: &mut Mapped, width: usize, max: usize) -> Result<(), MapError> {
    if width > max {
        return Err(MapError::WiderThanPadded { width, max });
    }
    let count = u32::try_from(width).map_err(|_| MapError::TooManyPoints { width })?;
    for ((name, c), data) in m.channels.iter().zip(&mut m.data) {
        let per = c.dtype.itemsize() * c.shape.iter().skip(1).product::<usize>();
        if data.len() != width * per {
            return Err(MapError::FieldLength {
                name: name.clone(),
                len: data.len(),
                width,
            });
        }
        let fill: &[u8] = match c.dtype {
            DType::F4 => &f32::NAN.to_le_bytes(),
            DType::F8 => &f64::NAN.to_le_bytes(),
            _ => &[0],
        };
        data.reserve_exact((max - width) * per);
        while data.len() < max * per {
            data.extend_from_slice(fill);
        }
    }
    m.data.push(count.to_le_bytes().to_vec());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cloud(fields: &[(&str, DType, usize)], width: usize) -> Mapped {
        let mut m = Mapped::default();
        for (k, &(name, dtype, count)) in fields.iter().enumerate() {
            let mut shape = vec![width];
            if count > 1 {
                shape.push(count);
            }
            let n = width * count.max(1) * dtype.itemsize();
            m.channels.push((
                name.to_string(),
                ChannelMeta::new(ChannelFormat::Raw, dtype, shape, "point field"),
            ));
            m.data.push((0..n).map(|i| (i + k + 1) as u8).collect());
        }
        m
    }

    const FIELDS: &[(&str, DType, usize)] = &[
        ("x", DType::F4, 1),
        ("ring", DType::U2, 1),
        ("normal", DType::F8, 3),
    ];

    #[test]
    fn pads_floats_with_nan_and_integers_with_zero() {
        let mut channels = cloud(FIELDS, 2).channels;
        pad_channels(&mut channels, 5).unwrap();
        let shapes: Vec<_> = channels.iter().map(|(_, c)| c.shape.clone()).collect();
        assert_eq!(shapes, [vec![5], vec![5], vec![5, 3], vec![]]);
        assert_eq!(channels[3].0, "points");
        assert_eq!(channels[3].1.dtype, DType::U4);

        let mut m = cloud(FIELDS, 2);
        let kept = m.data.clone();
        pad(&mut m, 2, 5).unwrap();
        assert_eq!(m.data.len(), 4);
        for ((k, d), c) in kept.iter().enumerate().zip(&channels) {
            assert_eq!(m.data[k].len(), 5 * d.len() / 2, "{}", c.0);
            assert_eq!(&m.data[k][..d.len()], &d[..], "{}: its points kept", c.0);
        }
        let tail = |k: usize, from: usize| m.data[k][from..].to_vec();
        let x: Vec<f32> = tail(0, 8)
            .chunks(4)
            .map(|b| f32::from_le_bytes(b.try_into().unwrap()))
            .collect();
        assert!(x.len() == 3 && x.iter().all(|v| v.is_nan()), "{x:?}");
        assert_eq!(tail(1, 4), vec![0; 6]);
        let normal: Vec<f64> = tail(2, 48)
            .chunks(8)
            .map(|b| f64::from_le_bytes(b.try_into().unwrap()))
            .collect();
        assert!(normal.len() == 9 && normal.iter().all(|v| v.is_nan()));
        assert_eq!(m.data[3], 2u32.to_le_bytes());

        // The widest cloud is its own points; an empty one all padding.
        let mut m = cloud(FIELDS, 5);
        let kept = m.data.clone();
        pad(&mut m, 5, 5).unwrap();
        assert_eq!(m.data[..3], kept[..]);
        assert_eq!(m.data[3], 5u32.to_le_bytes());
        let mut m = cloud(FIELDS, 0);
        pad(&mut m, 0, 5).unwrap();
        assert_eq!(m.data[1], vec![0; 10]);
        assert_eq!(m.data[3], 0u32.to_le_bytes());

        let mut m = cloud(FIELDS, 6);
        let e = pad(&mut m, 6, 5).unwrap_err().to_string();
        assert!(e.contains("6 points, more than the 5"), "{e}");
        let mut m = cloud(FIELDS, 3);
        assert!(pad(&mut m, 2, 5)
            .unwrap_err()
            .to_string()
            .contains("point field x"));
    }

    #[test]
    fn the_count_channel_goes_around_field_names() {
        let c = |names: &[&str]| {
            let f: Vec<_> = names.iter().map(|&n| (n, DType::F4, 1)).collect();
            count_channel_name(&cloud(&f, 1).channels)
        };
        assert_eq!(c(&["x", "y"]), "points");
        assert_eq!(c(&["x", "points"]), "n_points");
        assert_eq!(c(&["points", "n_points"]), "n_points_2");
    }

    #[test]
    fn a_padded_sample_past_the_bound_is_refused() {
        // x y z f4 + ring u2: 14 bytes a point.
        let f = [
            ("x", DType::F4, 1),
            ("y", DType::F4, 1),
            ("z", DType::F4, 1),
        ];
        let mut ok = cloud(&f, 1).channels;
        let fits = (MAX_PADDED_SAMPLE - 4) / 12;
        pad_channels(&mut ok, fits).unwrap();
        let mut over = cloud(&f, 1).channels;
        let e = pad_channels(&mut over, fits + 1).unwrap_err().to_string();
        assert!(
            e.contains(&format!("{} points of 12 bytes", fits + 1)) && e.contains("256 MiB"),
            "{e}"
        );
        assert_eq!(over.len(), 3, "left as it was");
        assert!(pad_channels(&mut over, usize::MAX).is_err());
    }

    #[test]
    fn only_unorganized_clouds_of_the_same_fields_change_width() {
        let first = cloud(FIELDS, 4);
        let mut w = Widths::new((1, 4));
        w.admit(&first, &cloud(FIELDS, 4), (1, 4)).unwrap();
        assert!(!w.varies);
        w.admit(&first, &cloud(FIELDS, 9), (1, 9)).unwrap();
        w.admit(&first, &cloud(FIELDS, 0), (1, 0)).unwrap();
        assert_eq!((w.max, w.varies), (9, true));

        let e = w
            .admit(&first, &cloud(FIELDS, 8), (2, 4))
            .unwrap_err()
            .to_string();
        assert!(e.contains("4x2 points instead of 4x1"), "{e}");
        let other = [
            ("x", DType::F4, 1),
            ("ring", DType::U1, 1),
            ("normal", DType::F8, 3),
        ];
        let e = w
            .admit(&first, &cloud(&other, 3), (1, 3))
            .unwrap_err()
            .to_string();
        assert_eq!(e, "point field ring is u1 instead of u2");
        let e = w
            .admit(&first, &cloud(&FIELDS[..2], 3), (1, 3))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("point fields [x, ring] instead of [x, ring, normal]"),
            "{e}"
        );
        let counts = [
            ("x", DType::F4, 1),
            ("ring", DType::U2, 1),
            ("normal", DType::F8, 4),
        ];
        let e = w
            .admit(&first, &cloud(&counts, 3), (1, 3))
            .unwrap_err()
            .to_string();
        assert_eq!(e, "point field normal is f8 x4 instead of f8 x3");
        // The same size still maps the same, as any message.
        assert!(w.admit(&first, &cloud(&other, 4), (1, 4)).is_err());
        assert_eq!(w.max, 9);

        // An organized cloud keeps its size.
        let first = cloud(FIELDS, 8);
        let mut w = Widths::new((2, 4));
        let e = w
            .admit(&first, &cloud(FIELDS, 10), (2, 5))
            .unwrap_err()
            .to_string();
        assert!(e.contains("5x2 points instead of 4x2"), "{e}");
        let e = w
            .admit(&first, &cloud(FIELDS, 8), (1, 8))
            .unwrap_err()
            .to_string();
        assert!(e.contains("only an unorganized cloud"), "{e}");
    }
}
