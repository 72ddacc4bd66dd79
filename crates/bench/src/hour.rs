//! The red-rover rig's one-hour trace, at full sample counts, written through the format
//! library (not in real time): what `roverlog bench --only full-size` reads and runs the
//! verbs on, and (at 100 samples per sensor) what the tests check is a valid trace.
//!
//! The rig (`../shared/UPSTREAM.md`, the collector's sensors) for an hour:
//!
//! | sensor | channels | rate | samples in an hour |
//! | --- | --- | --- | --- |
//! | `camera` | `video.avi` `mjpg` u1 `[h, w, 3]` | 30 Hz | 108,000 |
//! | `lidar` | `rfl` u1, `nir` u2, `rng` u2 `[rows, cols]`, `lzmaf` | 10 Hz | 36,000 |
//! | `radar` | `iq` i2 `[chirps, 3, 4, samples]` `raw`, `valid` u1 `raw` | 20 Hz | 72,000 |
//! | `imu` | `rot`, `acc`, `avel` f4 `[3]` `raw` | 100 Hz | 360,000 |
//!
//! Frames are smaller than the real rig's (a 64x48 JPEG, 16x64 lidar images, a 4x3x4x32
//! radar cube): a long drive changes the counts, which is what indexes and listings grow
//! with; the bytes of one frame only scale what reading it costs. Lidar frames are compressed
//! once per distinct image (a handful, cycled) and appended in their stored encoding, so an
//! hour's worth takes seconds, not the lidar's real hour of `.xz` work.
//!
//! [`write_formats_trace`] adds what the rig does not record, so that every format a channel
//! can have is there at rig counts: `jpg` (the camera's rate), `npz` (the radar's) and
//! whole-file `lzma` (the IMU's).

use std::fs;
use std::path::Path;

use roverlog_core::format::meta::write_file_atomic;
use roverlog_core::format::{
    lzma, ChannelFormat, ChannelMeta, DType, SensorMeta, SensorWriter, WriterOptions,
};
use roverlog_core::Result;

/// Samples per sensor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RigShape {
    pub camera: u64,
    pub lidar: u64,
    pub radar: u64,
    pub imu: u64,
}

/// Rates of the rig's sensors (Hz), in [`RigShape`]'s order.
pub const RATES: [f64; 4] = [30.0, 10.0, 20.0, 100.0];

impl RigShape {
    /// One hour of the rig.
    pub const HOUR: RigShape = RigShape::seconds(3600);

    /// `s` seconds of the rig.
    pub const fn seconds(s: u64) -> RigShape {
        RigShape {
            camera: 30 * s,
            lidar: 10 * s,
            radar: 20 * s,
            imu: 100 * s,
        }
    }

    /// The same shape with `n` samples in every sensor (the short trace the long one is
    /// compared with).
    pub const fn samples(n: u64) -> RigShape {
        RigShape {
            camera: n,
            lidar: n,
            radar: n,
            imu: n,
        }
    }

    /// Samples over all sensors.
    pub fn total(&self) -> u64 {
        self.camera + self.lidar + self.radar + self.imu
    }
}

/// Camera frame size (pixels).
pub const CAMERA_W: usize = 64;
pub const CAMERA_H: usize = 48;
/// Lidar image size.
pub const LIDAR_ROWS: usize = 16;
pub const LIDAR_COLS: usize = 64;
/// Radar cube: chirps x tx x rx x samples, i2.
pub const RADAR_SHAPE: [usize; 4] = [4, 3, 4, 32];
/// Distinct frames cycled per stream (JPEGs, lidar images).
const VARIANTS: usize = 16;
/// First timestamp: some day in 2024, epoch seconds.
const T0: f64 = 1.7e9;

/// The sensors the rig trace holds, in the order [`write_rig_trace`] writes them.
pub const RIG_SENSORS: [&str; 4] = ["camera", "lidar", "radar", "imu"];

/// Writes the rig trace into `dir` (which must not exist): `config.yaml` and the four
/// sensors with `shape`'s counts. `progress(samples written)` is called every few thousand
/// samples.
pub fn write_rig_trace(dir: &Path, shape: &RigShape, progress: &mut dyn FnMut(u64)) -> Result<()> {
    fs::create_dir(dir).map_err(|e| roverlog_core::Error::io(dir, e))?;
    write_file_atomic(
        &dir.join("config.yaml"),
        b"{\"generator\": \"roverlog-bench hour\", \"sensors\": [\"camera\", \"lidar\", \"radar\", \"imu\"]}\n",
    )?;
    let opts = WriterOptions::default();
    let mut count = Count { done: 0, progress };
    write_camera(&dir.join("camera"), shape.camera, &opts, &mut count)?;
    write_lidar(&dir.join("lidar"), shape.lidar, &opts, &mut count)?;
    write_radar(&dir.join("radar"), shape.radar, &opts, &mut count)?;
    write_imu(&dir.join("imu"), shape.imu, &opts, &mut count)?;
    (count.progress)(count.done);
    Ok(())
}

/// Samples written so far, reported every few thousand.
struct Count<'a> {
    done: u64,
    progress: &'a mut dyn FnMut(u64),
}

impl Count<'_> {
    fn one(&mut self) {
        self.done += 1;
        if self.done.is_multiple_of(4096) {
            (self.progress)(self.done);
        }
    }
}

/// The camera: `n` JPEG frames (VARIANTS of them, repeated) in an MJPEG AVI.
fn write_camera(dir: &Path, n: u64, opts: &WriterOptions, count: &mut Count) -> Result<()> {
    let jpegs: Vec<Vec<u8>> = (0..VARIANTS).map(jpeg_frame).collect();
    // No `args`: the collector writes none, and upstream roverd's VideoChannel takes no
    // `fps` (a `meta.json` with `args.fps` fails there); the AVI header's default is 30 fps.
    let camera_meta = ChannelMeta::new(
        ChannelFormat::Mjpg,
        DType::U1,
        vec![CAMERA_H, CAMERA_W, 3],
        "camera video (MJPEG AVI)",
    );
    let mut w = SensorWriter::create(dir, sensor_meta(vec![("video.avi", camera_meta)]), opts)?;
    for i in 0..n {
        w.append(ts(i, RATES[0]), &[&jpegs[i as usize % VARIANTS]])?;
        count.one();
    }
    w.finish()?;
    Ok(())
}

/// The lidar: `n` frames of three `lzmaf` channels, each variant compressed once, and the
/// sensor's `lidar.json`.
fn write_lidar(dir: &Path, n: u64, opts: &WriterOptions, count: &mut Count) -> Result<()> {
    let lidar = |name: &'static str, dtype: DType| {
        (
            name,
            ChannelMeta::new(
                ChannelFormat::Lzmaf,
                dtype,
                vec![LIDAR_ROWS, LIDAR_COLS],
                "lidar image",
            ),
        )
    };
    let frames: Vec<[Vec<u8>; 3]> = (0..VARIANTS)
        .map(|v| {
            let (rfl, nir, rng) = lidar_images(v);
            [
                lzma::compress(&rfl, lzma::DEFAULT_PRESET),
                lzma::compress(&nir, lzma::DEFAULT_PRESET),
                lzma::compress(&rng, lzma::DEFAULT_PRESET),
            ]
        })
        .collect();
    let mut w = SensorWriter::create(
        dir,
        sensor_meta(vec![
            lidar("rfl", DType::U1),
            lidar("nir", DType::U2),
            lidar("rng", DType::U2),
        ]),
        opts,
    )?;
    for i in 0..n {
        let [a, b, c] = &frames[i as usize % VARIANTS];
        w.append_encoded(ts(i, RATES[1]), &[a, b, c])?;
        count.one();
    }
    w.finish()?;
    // The sensor's metadata beside the channels, as the collector saves it: what upstream
    // roverd's Ouster transforms (and ours) read.
    let lidar_json = crate::lidar::ouster_metadata(LIDAR_ROWS, LIDAR_COLS);
    write_file_atomic(
        &dir.join("lidar.json"),
        &serde_json::to_vec_pretty(&lidar_json).expect("lidar.json"),
    )?;
    Ok(())
}

/// The radar: `n` IQ cubes and their `valid` flags.
fn write_radar(dir: &Path, n: u64, opts: &WriterOptions, count: &mut Count) -> Result<()> {
    let cube: usize = RADAR_SHAPE.iter().product();
    let mut w = SensorWriter::create(
        dir,
        sensor_meta(vec![
            (
                "iq",
                ChannelMeta::new(
                    ChannelFormat::Raw,
                    DType::I2,
                    RADAR_SHAPE.to_vec(),
                    "radar IQ cube",
                ),
            ),
            (
                "valid",
                ChannelMeta::new(ChannelFormat::Raw, DType::U1, vec![], "frame complete"),
            ),
        ]),
        opts,
    )?;
    let mut iq = vec![0u8; cube * 2];
    for i in 0..n {
        for (k, v) in iq.chunks_exact_mut(2).enumerate() {
            let x = ((k as f64 * 0.37 + i as f64 * 0.05).sin() * 2000.0) as i16;
            v.copy_from_slice(&x.to_le_bytes());
        }
        w.append(ts(i, RATES[2]), &[&iq, &[1]])?;
        count.one();
    }
    w.finish()?;
    Ok(())
}

/// The IMU: `n` samples of three `f4[3]` vectors.
fn write_imu(dir: &Path, n: u64, opts: &WriterOptions, count: &mut Count) -> Result<()> {
    let vec3 = |name: &'static str| {
        (
            name,
            ChannelMeta::new(ChannelFormat::Raw, DType::F4, vec![3], "imu vector"),
        )
    };
    let mut w = SensorWriter::create(
        dir,
        sensor_meta(vec![vec3("rot"), vec3("acc"), vec3("avel")]),
        opts,
    )?;
    for i in 0..n {
        let t = i as f32 * 0.01;
        let rot = f4s([t.sin(), t.cos(), 0.1]);
        let acc = f4s([0.0, 0.0, 9.81 + (t * 7.0).sin() * 0.05]);
        let avel = f4s([(t * 3.0).cos() * 0.01, 0.0, 0.02]);
        w.append(ts(i, RATES[3]), &[&rot, &acc, &avel])?;
        count.one();
    }
    w.finish()?;
    Ok(())
}

/// The channel formats the rig does not record, one sensor each at rig counts (scaled like
/// `shape`): `jpg` (camera rate), `npz` (radar rate), `lzma` (IMU rate). Written into `dir`
/// (which must not exist) as a trace of its own.
pub fn write_formats_trace(
    dir: &Path,
    shape: &RigShape,
    progress: &mut dyn FnMut(u64),
) -> Result<()> {
    fs::create_dir(dir).map_err(|e| roverlog_core::Error::io(dir, e))?;
    write_file_atomic(
        &dir.join("config.yaml"),
        b"{\"generator\": \"roverlog-bench hour (formats)\"}\n",
    )?;
    let opts = WriterOptions::default();
    let mut done = 0u64;

    let jpegs: Vec<Vec<u8>> = (0..VARIANTS).map(jpeg_frame).collect();
    let mut w = SensorWriter::create(
        &dir.join("jpg"),
        sensor_meta(vec![(
            "img",
            ChannelMeta::new(
                ChannelFormat::Blob("jpg".into()),
                DType::U1,
                vec![CAMERA_H, CAMERA_W, 3],
                "camera frame",
            ),
        )]),
        &opts,
    )?;
    for i in 0..shape.camera {
        w.append(ts(i, RATES[0]), &[&jpegs[i as usize % VARIANTS]])?;
        done += 1;
        if done.is_multiple_of(4096) {
            progress(done);
        }
    }
    w.finish()?;

    let cube: usize = RADAR_SHAPE.iter().product();
    let mut w = SensorWriter::create(
        &dir.join("npz"),
        sensor_meta(vec![(
            "iq",
            ChannelMeta::new(
                ChannelFormat::Blob("npz".into()),
                DType::I2,
                RADAR_SHAPE.to_vec(),
                "radar IQ cube",
            ),
        )]),
        &opts,
    )?;
    for i in 0..shape.radar {
        let data: Vec<u8> = (0..cube)
            .flat_map(|k| ((k as u64 + i) as i16).to_le_bytes())
            .collect();
        w.append(ts(i, RATES[2]), &[&npz("<i2", &RADAR_SHAPE, &data)])?;
        done += 1;
        if done.is_multiple_of(4096) {
            progress(done);
        }
    }
    w.finish()?;

    // Whole-file lzma is not appendable (upstream writes it in one go): the sensor's `ts`
    // goes through a writer, the channel is one `.xz` of every sample.
    let sensor = dir.join("lzma");
    let channel = ChannelMeta::new(ChannelFormat::Lzma, DType::F4, vec![3], "imu acc");
    let meta = sensor_meta(vec![("acc", channel)]);
    // Only `ts` is written by the writer: declare it alone, then add the channel's meta.
    let ts_only = sensor_meta(vec![]);
    let mut w = SensorWriter::create(&sensor, ts_only, &opts)?;
    let mut all = Vec::with_capacity(shape.imu as usize * 12);
    for i in 0..shape.imu {
        w.append(ts(i, RATES[3]), &[])?;
        let t = i as f32 * 0.01;
        all.extend(f4s([0.0, (t * 2.0).sin(), 9.81]));
        done += 1;
        if done.is_multiple_of(4096) {
            progress(done);
        }
    }
    w.finish()?;
    let path = sensor.join("acc");
    fs::write(&path, lzma::compress(&all, 6)).map_err(|e| roverlog_core::Error::io(&path, e))?;
    let mut full = meta;
    full.channels
        .insert(0, ("ts".into(), ChannelMeta::timestamps()));
    full.write_atomic(&sensor)?;
    progress(done);
    Ok(())
}

fn sensor_meta(channels: Vec<(&str, ChannelMeta)>) -> SensorMeta {
    SensorMeta {
        channels: channels
            .into_iter()
            .map(|(n, c)| (n.to_string(), c))
            .collect(),
    }
}

/// Sample `i`'s timestamp at `hz`: the nominal period with a little deterministic jitter
/// (well under half a period, so `ts` ascends).
fn ts(i: u64, hz: f64) -> f64 {
    let jitter = ((i.wrapping_mul(2654435761) % 1000) as f64 / 1000.0 - 0.5) * 0.2 / hz;
    T0 + i as f64 / hz + jitter
}

fn f4s(v: [f32; 3]) -> [u8; 12] {
    let mut out = [0u8; 12];
    for (o, x) in out.chunks_exact_mut(4).zip(v) {
        o.copy_from_slice(&x.to_le_bytes());
    }
    out
}

/// A small camera frame with structure (gradients and a moving bar), as JPEG.
fn jpeg_frame(variant: usize) -> Vec<u8> {
    let mut rgb = vec![0u8; CAMERA_W * CAMERA_H * 3];
    for y in 0..CAMERA_H {
        for x in 0..CAMERA_W {
            let p = (y * CAMERA_W + x) * 3;
            let bar = (x + variant * 4) % CAMERA_W < 6;
            rgb[p] = (x * 4) as u8;
            rgb[p + 1] = (y * 5) as u8;
            rgb[p + 2] = if bar { 255 } else { (variant * 16) as u8 };
        }
    }
    let mut out = Vec::new();
    image::codecs::jpeg::JpegEncoder::new_with_quality(&mut out, 85)
        .encode(
            &rgb,
            CAMERA_W as u32,
            CAMERA_H as u32,
            image::ColorType::Rgb8,
        )
        .expect("encoding a JPEG into memory");
    out
}

/// A lidar frame's `rfl` (u1), `nir` (u2) and `rng` (u2) images: smooth surfaces, an edge, a
/// few bits of noise.
fn lidar_images(variant: usize) -> (Vec<u8>, Vec<u8>, Vec<u8>) {
    let n = LIDAR_ROWS * LIDAR_COLS;
    let mut rfl = Vec::with_capacity(n);
    let (mut nir, mut rng) = (Vec::with_capacity(2 * n), Vec::with_capacity(2 * n));
    let noise = roverlog_core::noise(n, variant as u64 + 1);
    for r in 0..LIDAR_ROWS {
        for c in 0..LIDAR_COLS {
            let wall = (c + variant) % LIDAR_COLS > LIDAR_COLS / 2;
            let bits = (noise[r * LIDAR_COLS + c] & 7) as u16;
            let range = if wall {
                4000 + r as u16 * 10
            } else {
                12000 - c as u16 * 30
            } + bits;
            rng.extend(range.to_le_bytes());
            nir.extend((300 + (r * c) as u16 % 200 + bits).to_le_bytes());
            rfl.push(if wall { 180 } else { 40 + (c as u8 & 15) });
        }
    }
    (rfl, nir, rng)
}

/// A one-array `.npz` (numpy's `savez`: a zip, stored, holding `data.npy`).
fn npz(descr: &str, shape: &[usize], data: &[u8]) -> Vec<u8> {
    let dims: Vec<String> = shape.iter().map(|d| d.to_string()).collect();
    let shape_text = if dims.len() == 1 {
        format!("({},)", dims[0])
    } else {
        format!("({})", dims.join(", "))
    };
    let mut header =
        format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': {shape_text}, }}");
    // magic (6) + version (2) + length (2) + header, a multiple of 64, ending in '\n'
    while (10 + header.len() + 1) % 64 != 0 {
        header.push(' ');
    }
    header.push('\n');
    let mut npy = b"\x93NUMPY\x01\x00".to_vec();
    npy.extend((header.len() as u16).to_le_bytes());
    npy.extend(header.as_bytes());
    npy.extend(data);

    let name = b"data.npy";
    let crc = crc32fast::hash(&npy);
    let size = npy.len() as u32;
    let mut z = Vec::with_capacity(npy.len() + 128);
    let common = |z: &mut Vec<u8>| {
        z.extend(20u16.to_le_bytes()); // version needed
        z.extend(0u16.to_le_bytes()); // flags
        z.extend(0u16.to_le_bytes()); // stored
        z.extend(0u16.to_le_bytes()); // time
        z.extend(0x21u16.to_le_bytes()); // date 1980-01-01
        z.extend(crc.to_le_bytes());
        z.extend(size.to_le_bytes());
        z.extend(size.to_le_bytes());
        z.extend((name.len() as u16).to_le_bytes());
        z.extend(0u16.to_le_bytes()); // extra
    };
    z.extend(0x0403_4b50u32.to_le_bytes());
    common(&mut z);
    z.extend(name);
    z.extend(&npy);
    let cd = z.len() as u32;
    z.extend(0x0201_4b50u32.to_le_bytes());
    z.extend(20u16.to_le_bytes()); // version made by
    common(&mut z);
    z.extend(0u16.to_le_bytes()); // comment
    z.extend(0u16.to_le_bytes()); // disk
    z.extend(0u16.to_le_bytes()); // internal attributes
    z.extend(0u32.to_le_bytes()); // external attributes
    z.extend(0u32.to_le_bytes()); // local header offset
    z.extend(name);
    let cd_len = z.len() as u32 - cd;
    z.extend(0x0605_4b50u32.to_le_bytes());
    z.extend([0u8; 4]); // disk numbers
    z.extend(1u16.to_le_bytes());
    z.extend(1u16.to_le_bytes());
    z.extend(cd_len.to_le_bytes());
    z.extend(cd.to_le_bytes());
    z.extend(0u16.to_le_bytes());
    z
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn npz_is_a_zip_holding_data_npy() {
        let z = npz("<u2", &[2, 3], &[0u8; 12]);
        assert_eq!(&z[..4], b"PK\x03\x04");
        assert_eq!(&z[30..38], b"data.npy");
        assert_eq!(&z[38..44], b"\x93NUMPY");
        let hlen = u16::from_le_bytes([z[46], z[47]]) as usize;
        assert_eq!((10 + hlen) % 64, 0);
        assert_eq!(&z[z.len() - 22..z.len() - 18], b"PK\x05\x06");
    }
}
