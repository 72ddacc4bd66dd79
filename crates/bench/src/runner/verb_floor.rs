//! For `roverlog bench --only full-size`: what the verbs that decode would cost if decoding
//! were all they did (the "decode floor"), and `replay` of the hour trace into a real daemon.
//!
//! A floor is the bare decoder on the same frames in the same run, on one thread: every
//! frame of the named `lzmaf` channels through [`lzma::decompress`], every `mjpg` frame
//! through [`avi::decode_rgb`]. A verb's seconds over its floor say how much it spends
//! beyond the decoding it cannot avoid (reading, writing, encoding its output); a verb that
//! decodes on both cores can come in under its floor.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
use std::time::Instant;

use serde_json::{json, Value};

use super::child::{ctl, events_drops, sensors_sum, write_config, DaemonChild};
use super::error::{current_exe, DaemonError, Result, ScenarioError};
use crate::procfs;
use roverlog_core::format::{avi, lzma, ChannelFormat, ChannelReader, Trace};

/// Seconds, frames and decoded bytes of one decoder over one channel.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Decoded {
    pub(super) seconds: f64,
    pub(super) frames: u64,
    pub(super) bytes: u64,
}

impl Decoded {
    fn add(&mut self, o: Decoded) {
        self.seconds += o.seconds;
        self.frames += o.frames;
        self.bytes += o.bytes;
    }
}

/// The bare decoders over every decoded channel of `trace`: `sensor/channel` -> cost.
pub(super) struct Floors(BTreeMap<String, Decoded>);

impl Floors {
    /// Decodes every `lzmaf` and `mjpg` frame of `trace` once, timing each channel.
    pub(super) fn measure(trace: &Path) -> Result<Floors> {
        let t = Trace::open(trace)?;
        let mut out = BTreeMap::new();
        for s in t.sensors()? {
            for (name, ch) in s.meta().data_channels() {
                let key = format!("{}/{name}", s.name());
                let what = |e| ScenarioError::Read {
                    channel: s.dir().join(name),
                    error: Box::new(e),
                };
                let r = s.channel(name).map_err(what)?;
                let t0 = Instant::now();
                let (mut frames, mut bytes) = (0u64, 0u64);
                match (&ch.format, &r) {
                    (ChannelFormat::Lzmaf, ChannelReader::Lzmaf(l)) => {
                        let path = s.dir().join(name);
                        for i in 0..l.len() {
                            let f = lzma::decompress(l.compressed(i)?, ch.sample_bytes(), &path)
                                .map_err(what)?;
                            bytes += f.len() as u64;
                            frames += 1;
                        }
                    }
                    (ChannelFormat::Mjpg, ChannelReader::Mjpg(m)) => {
                        for i in 0..m.len() {
                            let f = avi::decode_rgb(m.frame(i)?).map_err(what)?;
                            bytes += f.len() as u64;
                            frames += 1;
                        }
                    }
                    _ => continue,
                }
                let seconds = t0.elapsed().as_secs_f64();
                out.insert(
                    key,
                    Decoded {
                        seconds,
                        frames,
                        bytes,
                    },
                );
            }
        }
        Ok(Floors(out))
    }

    /// The floor of a verb that decodes the channels `keep` accepts (`sensor/channel`).
    pub(super) fn of(&self, keep: impl Fn(&str) -> bool) -> Decoded {
        let mut d = Decoded::default();
        for (k, v) in &self.0 {
            if keep(k) {
                d.add(*v);
            }
        }
        d
    }

    /// Every channel's cost, for the report.
    pub(super) fn json(&self) -> Value {
        self.0
            .iter()
            .map(|(k, d)| {
                json!({"channel": k, "seconds": d.seconds, "frames": d.frames, "decoded_bytes": d.bytes,
                       "frames_per_second": d.frames as f64 / d.seconds.max(1e-9)})
            })
            .collect()
    }
}

/// What each verb of the table decodes: a predicate over `sensor/channel`, or `None` for a
/// verb that decodes nothing (`import` copies `lzmaf` frames as stored).
pub(super) fn decodes(verb: &str) -> Option<fn(&str) -> bool> {
    Some(match verb {
        "validate --deep" => |_| true,
        // MCAP and the ingest socket get JPEG frames as they are (`foxglove.CompressedImage`).
        "export" | "replay (into a daemon)" => |c| c.starts_with("lidar/"),
        "convert" => |c| c == "lidar/rng",
        _ => return None,
    })
}

/// `roverlog replay <trace> --max-speed --json` into a fresh `roverlog daemon`: both peak
/// RSS, wall time, drops (status and events) and every sensor's count against the source's.
/// `measure` runs the replay child (as the verbs are run).
pub(super) fn replay_row(
    work: &Path,
    trace: &Path,
    measure: impl FnOnce(Command, &Path) -> Result<(f64, u64, i32)>,
) -> Result<Value> {
    let (cfg, cfg_path) = write_config(work, "replay", None)?;
    let mut daemon = DaemonChild::start(&cfg, &cfg_path, work, "replay")?;
    let pid = daemon.child.id();
    let exe = current_exe()?;
    let mut cmd = Command::new(&exe);
    cmd.arg("replay")
        .arg(trace)
        .arg("--socket")
        .arg(&cfg.sockets.ingest)
        .args(["--max-speed", "--json"]);
    let log = work.join("verbs").join("replay.log");
    let (seconds, replay_rss, exit) = measure(cmd, &log)?;
    let status = ctl(&cfg.sockets.control, json!({"cmd": "status"}))?;
    let daemon_rss = procfs::status_bytes(pid, "VmHWM").unwrap_or(0);
    let drops_status = sensors_sum(&status, "drops");
    let stored_uncompressed = sensors_sum(&status, "lzmaf_stored");
    let t0 = Instant::now();
    let stop = daemon.stop()?;
    let stop_s = t0.elapsed().as_secs_f64();
    let drops_events = events_drops(&daemon.trace_dir).unwrap_or(u64::MAX);
    // Every sensor holds what the source holds, sample for sample in count.
    let src = Trace::open(trace)?;
    let got = Trace::open(&daemon.trace_dir)?;
    let mut counts = Vec::new();
    let mut equal = true;
    for s in src.sensors()? {
        let want = s.len()?;
        let have = got.sensor(s.name()).and_then(|g| g.len()).unwrap_or(0);
        equal &= want == have;
        counts.push(json!({"sensor": s.name(), "source": want, "daemon": have}));
    }
    if stop != Some(0) {
        return Err(DaemonError::BadExit {
            exit: stop,
            log: daemon.log.clone(),
        }
        .into());
    }
    Ok(json!({
        "verb": "replay (into a daemon)", "exit": exit, "seconds": seconds,
        "max_rss_bytes": replay_rss, "daemon_hwm_bytes": daemon_rss,
        "daemon_stop_seconds": stop_s,
        "drops": drops_status.max(drops_events), "lzmaf_stored_uncompressed": stored_uncompressed,
        "counts": counts, "counts_equal": equal,
    }))
}
