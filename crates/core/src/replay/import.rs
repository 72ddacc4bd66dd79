//! Import: any [`Source`] written straight to a roverd trace, no daemon involved.

use std::fs;
use std::path::Path;

use super::source::{check_sensors, Source};
use crate::error::{Error, IoContext, Result};
use crate::format::{meta::write_file_atomic, SensorWriter, WriterOptions};

/// What an import wrote.
#[derive(Debug, Clone, Default)]
pub struct ImportReport {
    /// (sensor, samples) in source order.
    pub sensors: Vec<(String, u64)>,
}

/// Writes every sensor of `source` into a new trace at `out` (which must not exist), with a
/// `config.yaml` naming the source so upstream tools find the trace. `progress` is called
/// with (samples done, samples in all).
pub fn import(
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

/// Checks the sensors and makes the trace directory `out` (which must not exist) with its
/// `config.yaml`.
fn create_trace(source: &dyn Source, out: &Path, described_as: &str) -> Result<()> {
    check_sensors(source.sensors())?;
    if out.exists() {
        return Err(Error::io(
            out,
            std::io::Error::new(
                std::io::ErrorKind::AlreadyExists,
                "the output trace already exists",
            ),
        ));
    }
    fs::create_dir_all(out).at(out)?;
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
    let merge = super::merge::TimeMerge::from_timestamps(all)?;
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
