//! Import: any [`Source`] written straight to a roverd trace, no daemon involved.

use std::fs;
use std::path::Path;

use std::ops::ControlFlow;

use crate::error::{Error, IoContext, Result};
use crate::format::meta::{sync_dir, write_file_atomic};
use crate::format::{SensorWriter, WriterOptions};
use crate::parallel::pipeline;
use crate::replay::source::{check_sensors, Source};
use crate::replay::Fetched;

/// What an import wrote.
#[derive(Debug, Clone, Default)]
pub struct ImportReport {
    /// (sensor, samples) in source order.
    pub sensors: Vec<(String, u64)>,
}

/// Results each decoding thread may hold ahead of the writer (see
/// [`crate::parallel::pipeline()`]): a few frames per thread keep every core busy, and memory
/// stays a small multiple of the thread count whatever the trace's length.
const AHEAD: usize = 2;

/// Writes every sensor of `source` into a new trace at `out` (which must not exist), with a
/// `config.yaml` naming the source so upstream tools find the trace. `progress` is called
/// with (samples done, samples in all). The trace is written in a hidden sibling directory and
/// renamed to `out` when complete: a failure leaves nothing at `out`.
///
/// The source is read in order on one thread while `threads` others (0: every usable CPU,
/// [`crate::cpus::threads`]) decode its samples and compress its `lzmaf` channels; the
/// trace is the same byte for byte whatever their number.
pub fn import(
    source: &mut dyn Source,
    out: &Path,
    described_as: &str,
    threads: usize,
    progress: impl FnMut(u64, u64),
) -> Result<ImportReport> {
    into_new_trace(out, |tmp| {
        import_into(source, tmp, described_as, threads, progress)
    })
}

fn import_into(
    source: &mut dyn Source,
    out: &Path,
    described_as: &str,
    threads: usize,
    mut progress: impl FnMut(u64, u64),
) -> Result<ImportReport> {
    create_trace(source, out, described_as)?;
    let all_ts: Vec<Vec<f64>> = (0..source.sensors().len())
        .map(|i| source.timestamps(i))
        .collect::<Result<_>>()?;
    let total: u64 = all_ts.iter().map(|t| t.len() as u64).sum();
    let mut done = 0;
    let mut report = ImportReport::default();
    let opts = WriterOptions::default();
    let threads = crate::cpus::threads(threads);
    for (i, ts) in all_ts.iter().enumerate() {
        let sensor = source.sensors()[i].clone();
        let dir = out.join(&sensor.name);
        let mut w = SensorWriter::create(&dir, sensor.meta.clone(), &opts)?;
        for (name, bytes) in source.extra_files(i) {
            write_file_atomic(&dir.join(name), &bytes)?;
        }
        let src = &mut *source;
        // Stored `lzmaf` frames are copied, not decoded and compressed again.
        let reads = (0..ts.len() as u64).map(|k| src.fetch(i, k, Some(opts.lzmaf_preset)));
        pipeline(threads, AHEAD, reads, Fetched::finish, |k, buf| {
            let refs: Vec<&[u8]> = buf.iter().map(Vec::as_slice).collect();
            w.append_encoded(ts[k], &refs)?;
            done += 1;
            if done % 256 == 0 {
                progress(done, total);
            }
            Ok(ControlFlow::Continue(()))
        })?;
        w.finish()?;
        report.sensors.push((sensor.name, ts.len() as u64));
    }
    progress(done, total);
    Ok(report)
}

/// Writes a new trace at `out`, which must not exist: `write` fills a hidden sibling
/// directory (`.NAME.partial-PID`), which is renamed to `out` once `write` succeeded and
/// removed if it failed. A failed import (a message that does not decode, a full disk) so
/// leaves nothing at `out`, never a trace that looks whole and is not.
fn into_new_trace<T>(out: &Path, write: impl FnOnce(&Path) -> Result<T>) -> Result<T> {
    let exists = || {
        Error::io(
            out,
            std::io::Error::new(
                std::io::ErrorKind::AlreadyExists,
                "the output trace already exists",
            ),
        )
    };
    if out.exists() {
        return Err(exists());
    }
    let parent = match out.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => std::path::PathBuf::from("."),
    };
    let name = out.file_name().ok_or_else(|| {
        Error::io(
            out,
            std::io::Error::new(std::io::ErrorKind::InvalidInput, "not a directory name"),
        )
    })?;
    fs::create_dir_all(&parent).at(&parent)?;
    let tmp = parent.join(format!(
        ".{}.partial-{}",
        name.to_string_lossy(),
        std::process::id()
    ));
    // A leftover of a killed import whose process id this one now has.
    let _ = fs::remove_dir_all(&tmp);
    let result = write(&tmp).and_then(|v| {
        if out.exists() {
            return Err(exists());
        }
        fs::rename(&tmp, out).at(out)?;
        sync_dir(&parent)?;
        Ok(v)
    });
    if result.is_err() {
        let _ = fs::remove_dir_all(&tmp);
    }
    result
}

/// Checks the sensors and makes the trace directory `out` (which must not exist) with its
/// `config.yaml`.
fn create_trace(source: &dyn Source, out: &Path, described_as: &str) -> Result<()> {
    check_sensors(source.sensors())?;
    fs::create_dir(out).at(out)?;
    let config = serde_json::json!({"imported_from": described_as, "tool": "roverlog import"});
    write_file_atomic(
        &out.join("config.yaml"),
        &serde_json::to_vec_pretty(&config).expect("JSON"),
    )?;
    Ok(())
}

/// Like [`import`], but every sensor's writer is open at once and samples are read in time
/// order over all sensors: for a source whose samples are stored interleaved in time (a ROS
/// recording's chunks), each stored block is then read once rather than once per sensor.
/// Each sensor's samples are still appended in its own order.
pub fn import_in_time_order(
    source: &mut dyn Source,
    out: &Path,
    described_as: &str,
    opts: &WriterOptions,
    threads: usize,
    progress: impl FnMut(u64, u64),
) -> Result<ImportReport> {
    into_new_trace(out, |tmp| {
        import_in_time_order_into(source, tmp, described_as, opts, threads, progress)
    })
}

fn import_in_time_order_into(
    source: &mut dyn Source,
    out: &Path,
    described_as: &str,
    opts: &WriterOptions,
    threads: usize,
    mut progress: impl FnMut(u64, u64),
) -> Result<ImportReport> {
    create_trace(source, out, described_as)?;
    let n = source.sensors().len();
    let mut all = Vec::with_capacity(n);
    let mut writers = Vec::with_capacity(n);
    for i in 0..n {
        let sensor = source.sensors()[i].clone();
        let dir = out.join(&sensor.name);
        writers.push(SensorWriter::create(&dir, sensor.meta.clone(), opts)?);
        for (name, bytes) in source.extra_files(i) {
            write_file_atomic(&dir.join(name), &bytes)?;
        }
        all.push((sensor.name, source.timestamps(i)?));
    }
    let merge = crate::replay::merge::TimeMerge::from_timestamps(all)?;
    let total = merge.len_in_window();
    let mut counts = vec![0u64; n];
    let mut done = 0;
    let src = &mut *source;
    // The `lzmaf` channels are compressed by the decoding threads, at the writer's preset.
    let reads = merge.map(|m| {
        let f = src.fetch(m.sensor, m.index, Some(opts.lzmaf_preset))?;
        Ok::<_, Error>((m.sensor, m.ts, f))
    });
    let decode = |(sensor, ts, f): (usize, f64, Fetched)| Ok((sensor, ts, f.finish()?));
    pipeline(
        crate::cpus::threads(threads),
        AHEAD,
        reads,
        decode,
        |_, (sensor, ts, buf)| {
            let refs: Vec<&[u8]> = buf.iter().map(Vec::as_slice).collect();
            writers[sensor].append_encoded(ts, &refs)?;
            counts[sensor] += 1;
            done += 1;
            if done % 256 == 0 {
                progress(done, total);
            }
            Ok(ControlFlow::Continue(()))
        },
    )?;
    let mut report = ImportReport::default();
    for (i, w) in writers.into_iter().enumerate() {
        w.finish()?;
        report
            .sensors
            .push((source.sensors()[i].name.clone(), counts[i]));
    }
    progress(done, total);
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::{ChannelFormat, ChannelMeta, DType, SensorMeta, Trace};
    use crate::replay::source::SourceSensor;

    /// One sensor of `n` one-byte samples; reading sample `fail_at` fails.
    struct Failing {
        sensors: Vec<SourceSensor>,
        n: usize,
        fail_at: Option<u64>,
    }

    impl Failing {
        fn new(n: usize, fail_at: Option<u64>) -> Failing {
            let meta = SensorMeta {
                channels: vec![(
                    "v".to_string(),
                    ChannelMeta::new(ChannelFormat::Raw, DType::U1, vec![], "v"),
                )],
            };
            Failing {
                sensors: vec![SourceSensor {
                    name: "s".into(),
                    meta,
                }],
                n,
                fail_at,
            }
        }
    }

    impl Source for Failing {
        fn sensors(&self) -> &[SourceSensor] {
            &self.sensors
        }
        fn timestamps(&mut self, _sensor: usize) -> Result<Vec<f64>> {
            Ok((0..self.n).map(|i| 1.7e9 + i as f64).collect())
        }
        fn read(&mut self, _sensor: usize, index: u64, out: &mut Vec<Vec<u8>>) -> Result<()> {
            if Some(index) == self.fail_at {
                return Err(Error::io(
                    Path::new("source"),
                    std::io::Error::other(format!("sample {index} is damaged")),
                ));
            }
            out.resize(1, Vec::new());
            out[0] = vec![index as u8];
            Ok(())
        }
    }

    fn entries(dir: &Path) -> Vec<String> {
        let mut v: Vec<String> = fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }

    #[test]
    fn a_failed_import_leaves_nothing_and_a_whole_one_is_renamed_in() {
        let tmp = tempfile::tempdir().unwrap();
        for time_order in [false, true] {
            let out = tmp.path().join(format!("t{time_order}"));
            let run = |src: &mut Failing| {
                if time_order {
                    import_in_time_order(src, &out, "test", &WriterOptions::default(), 4, |_, _| {})
                } else {
                    import(src, &out, "test", 4, |_, _| {})
                }
            };
            let e = run(&mut Failing::new(600, Some(300))).unwrap_err();
            assert!(e.to_string().contains("sample 300 is damaged"), "{e}");
            assert!(!out.exists());
            assert!(
                !entries(tmp.path()).iter().any(|n| n.contains("partial")),
                "{:?}",
                entries(tmp.path())
            );

            let r = run(&mut Failing::new(600, None)).unwrap();
            assert_eq!(r.sensors, vec![("s".to_string(), 600)]);
            let t = Trace::open(&out).unwrap();
            let mut v = t.sensor("s").unwrap().channel("v").unwrap();
            assert_eq!(v.len().unwrap(), 600);
            assert_eq!(v.get(299).unwrap(), vec![43u8]);

            // An existing output is refused and left as it was.
            let e = run(&mut Failing::new(3, None)).unwrap_err();
            assert!(e.to_string().contains("already exists"), "{e}");
            assert_eq!(
                t.sensor("s").unwrap().channel("v").unwrap().len().unwrap(),
                600
            );
        }
        assert_eq!(entries(tmp.path()), ["tfalse", "ttrue"]);
    }

    /// Two sensors of `n` samples whose timestamps interleave: `lidar` (an `lzmaf` channel of
    /// 4 KiB, compressed by the decoding threads, and a `raw` one) and `imu` (`raw`). Sample
    /// `k` takes longer to decode when `k % 5 == 0`, so the threads finish out of order.
    struct Mixed {
        sensors: Vec<SourceSensor>,
        n: u64,
        /// Fetches made: the reading order, to check it stays the sequential one.
        fetched: Vec<(usize, u64)>,
    }

    impl Mixed {
        fn new(n: u64) -> Mixed {
            let ch = |f, shape: Vec<usize>| ChannelMeta::new(f, DType::U1, shape, "test");
            let sensor = |name: &str, channels| SourceSensor {
                name: name.into(),
                meta: SensorMeta { channels },
            };
            Mixed {
                sensors: vec![
                    sensor(
                        "lidar",
                        vec![
                            ("points".into(), ch(ChannelFormat::Lzmaf, vec![4096])),
                            ("n".into(), ch(ChannelFormat::Raw, vec![8])),
                        ],
                    ),
                    sensor("imu", vec![("v".into(), ch(ChannelFormat::Raw, vec![3]))]),
                ],
                n,
                fetched: Vec::new(),
            }
        }

        fn sample(sensor: usize, index: u64) -> Vec<Vec<u8>> {
            let mut x = index.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
            let mut noise = |len: usize, keep: u64| -> Vec<u8> {
                (0..len)
                    .map(|i| {
                        x ^= x << 13;
                        x ^= x >> 7;
                        x ^= x << 17;
                        // Compressible, not constant: runs of a value with noise now and then.
                        if x % 8 < keep {
                            (i / 64) as u8
                        } else {
                            x as u8
                        }
                    })
                    .collect()
            };
            match sensor {
                0 => vec![noise(4096, 6), index.to_le_bytes().to_vec()],
                _ => vec![noise(3, 0)],
            }
        }
    }

    impl Source for Mixed {
        fn sensors(&self) -> &[SourceSensor] {
            &self.sensors
        }
        fn timestamps(&mut self, sensor: usize) -> Result<Vec<f64>> {
            // imu at 3x lidar's rate, offset so the merge interleaves them.
            let (step, off) = if sensor == 0 {
                (0.03, 0.0)
            } else {
                (0.01, 0.005)
            };
            Ok((0..self.n).map(|k| 1.7e9 + off + k as f64 * step).collect())
        }
        fn read(&mut self, sensor: usize, index: u64, out: &mut Vec<Vec<u8>>) -> Result<()> {
            *out = Mixed::sample(sensor, index);
            Ok(())
        }
        fn fetch(
            &mut self,
            sensor: usize,
            index: u64,
            encode: Option<u32>,
        ) -> Result<crate::replay::Fetched> {
            self.fetched.push((sensor, index));
            let f = crate::replay::Fetched::later(move || {
                if index.is_multiple_of(5) {
                    std::thread::sleep(std::time::Duration::from_micros(300));
                }
                Ok(Mixed::sample(sensor, index))
            });
            Ok(match encode {
                Some(p) => f.compressing_lzmaf(&self.sensors[sensor].meta, p),
                None => f,
            })
        }
    }

    /// Every file below `dir` (relative path, contents).
    fn tree(dir: &Path) -> std::collections::BTreeMap<String, Vec<u8>> {
        let mut out = std::collections::BTreeMap::new();
        let mut todo = vec![dir.to_path_buf()];
        while let Some(d) = todo.pop() {
            for e in fs::read_dir(&d).unwrap() {
                let p = e.unwrap().path();
                if p.is_dir() {
                    todo.push(p);
                } else {
                    let rel = p.strip_prefix(dir).unwrap().to_string_lossy().into_owned();
                    out.insert(rel, fs::read(&p).unwrap());
                }
            }
        }
        out
    }

    #[test]
    fn an_import_is_the_same_byte_for_byte_on_one_thread_or_many() {
        let tmp = tempfile::tempdir().unwrap();
        for time_order in [false, true] {
            let mut runs = Vec::new();
            for threads in [1, 2, 16] {
                let out = tmp.path().join(format!("t{time_order}-{threads}"));
                let mut src = Mixed::new(300);
                let r = if time_order {
                    import_in_time_order(
                        &mut src,
                        &out,
                        "test",
                        &WriterOptions::default(),
                        threads,
                        |_, _| {},
                    )
                } else {
                    import(&mut src, &out, "test", threads, |_, _| {})
                }
                .unwrap();
                assert_eq!(
                    r.sensors,
                    vec![("lidar".to_string(), 300), ("imu".to_string(), 300)]
                );
                runs.push((threads, tree(&out), src.fetched));
            }
            let (_, one, read_by_one) = &runs[0];
            // The data are there: every lidar frame decodes to what the source gave.
            let t = Trace::open(&tmp.path().join(format!("t{time_order}-1"))).unwrap();
            let mut points = t.sensor("lidar").unwrap().channel("points").unwrap();
            for k in [0u64, 1, 137, 299] {
                assert_eq!(points.get(k).unwrap().into_owned(), Mixed::sample(0, k)[0]);
            }
            assert!(
                one.keys().any(|f| f.ends_with("points")),
                "{:?}",
                one.keys()
            );
            for (threads, files, read) in &runs[1..] {
                assert_eq!(
                    files.keys().collect::<Vec<_>>(),
                    one.keys().collect::<Vec<_>>(),
                    "{threads} threads, time order {time_order}"
                );
                for (name, bytes) in files {
                    assert!(
                        bytes == &one[name],
                        "{name} differs with {threads} threads (time order {time_order})"
                    );
                }
                assert_eq!(read, read_by_one, "the source is read in the same order");
            }
        }
    }

    #[test]
    fn a_sample_of_the_wrong_size_for_its_lzmaf_channel_is_refused() {
        struct Short(Mixed);
        impl Source for Short {
            fn sensors(&self) -> &[SourceSensor] {
                self.0.sensors()
            }
            fn timestamps(&mut self, sensor: usize) -> Result<Vec<f64>> {
                self.0.timestamps(sensor)
            }
            fn read(&mut self, sensor: usize, index: u64, out: &mut Vec<Vec<u8>>) -> Result<()> {
                self.0.read(sensor, index, out)?;
                if sensor == 0 && index == 7 {
                    out[0].truncate(100);
                }
                Ok(())
            }
        }
        let tmp = tempfile::tempdir().unwrap();
        let out = tmp.path().join("t");
        let e = import(&mut Short(Mixed::new(20)), &out, "test", 3, |_, _| {}).unwrap_err();
        assert!(
            matches!(&e, Error::SampleSize { channel, expected: 4096, got: 100 } if channel == "points"),
            "{e:?}"
        );
        assert!(!out.exists());
    }
}
