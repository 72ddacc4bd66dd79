//! Import: any [`Source`] written straight to a roverd trace, no daemon involved.

use std::fs;
use std::path::Path;

use crate::error::{Error, IoContext, Result};
use crate::format::meta::{sync_dir, write_file_atomic};
use crate::format::{SensorWriter, WriterOptions};
use crate::replay::source::{check_sensors, Source};

/// What an import wrote.
#[derive(Debug, Clone, Default)]
pub struct ImportReport {
    /// (sensor, samples) in source order.
    pub sensors: Vec<(String, u64)>,
}

/// Writes every sensor of `source` into a new trace at `out` (which must not exist), with a
/// `config.yaml` naming the source so upstream tools find the trace. `progress` is called
/// with (samples done, samples in all). The trace is written in a hidden sibling directory and
/// renamed to `out` when complete: a failure leaves nothing at `out`.
pub fn import(
    source: &mut dyn Source,
    out: &Path,
    described_as: &str,
    progress: impl FnMut(u64, u64),
) -> Result<ImportReport> {
    into_new_trace(out, |tmp| import_into(source, tmp, described_as, progress))
}

fn import_into(
    source: &mut dyn Source,
    out: &Path,
    described_as: &str,
    mut progress: impl FnMut(u64, u64),
) -> Result<ImportReport> {
    create_trace(source, out, described_as)?;
    let all_ts: Vec<Vec<f64>> = (0..source.sensors().len())
        .map(|i| source.timestamps(i))
        .collect::<Result<_>>()?;
    let total: u64 = all_ts.iter().map(|t| t.len() as u64).sum();
    let mut done = 0;
    let mut report = ImportReport::default();
    let mut buf = Vec::new();
    let opts = WriterOptions::default();
    for (i, ts) in all_ts.iter().enumerate() {
        let sensor = source.sensors()[i].clone();
        let dir = out.join(&sensor.name);
        let mut w = SensorWriter::create(&dir, sensor.meta.clone(), &opts)?;
        for (name, bytes) in source.extra_files(i) {
            write_file_atomic(&dir.join(name), &bytes)?;
        }
        for (k, &t) in ts.iter().enumerate() {
            // Stored `lzmaf` frames are copied, not decoded and compressed again.
            source.read_encoded(i, k as u64, opts.lzmaf_preset, &mut buf)?;
            let refs: Vec<&[u8]> = buf.iter().map(Vec::as_slice).collect();
            w.append_encoded(t, &refs)?;
            done += 1;
            if done % 256 == 0 {
                progress(done, total);
            }
        }
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
    progress: impl FnMut(u64, u64),
) -> Result<ImportReport> {
    into_new_trace(out, |tmp| {
        import_in_time_order_into(source, tmp, described_as, opts, progress)
    })
}

fn import_in_time_order_into(
    source: &mut dyn Source,
    out: &Path,
    described_as: &str,
    opts: &WriterOptions,
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
    let mut buf = Vec::new();
    for m in merge {
        source.read(m.sensor, m.index, &mut buf)?;
        let refs: Vec<&[u8]> = buf.iter().map(Vec::as_slice).collect();
        writers[m.sensor].append(m.ts, &refs)?;
        counts[m.sensor] += 1;
        done += 1;
        if done % 256 == 0 {
            progress(done, total);
        }
    }
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
                    import_in_time_order(src, &out, "test", &WriterOptions::default(), |_, _| {})
                } else {
                    import(src, &out, "test", |_, _| {})
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
}
