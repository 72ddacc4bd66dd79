//! The worker pool: lidar frames decoded (`lzmaf`), projected through the Ouster table and
//! serialised as `PointCloud2` messages by one thread per usable CPU, worker `k` taking
//! frames `k, k + workers, ...`, each up to two ahead; the ordered writer takes them back in
//! frame order ([`Frames::next`]) and returns each message buffer for reuse.

use std::path::Path;
use std::sync::mpsc;
use std::thread::Scope;

use roverlog_core::format::dtype::{decode_vec, view, Element};
use roverlog_core::format::{ChannelReader, DType, Sensor};
use roverlog_core::ouster::XyzLut;

use super::rosbag_error;
use crate::error::{Result, RosbagProblem};
use crate::wire::encode::{CloudWriter, Stamp};

/// What every worker reads: the lidar sensor, its range channel's type, the projection and
/// the frames' (corrected) times.
pub(super) struct Lidar<'a> {
    pub sensor: &'a Sensor,
    pub dir: &'a Path,
    pub rng_type: DType,
    pub lut: &'a XyzLut,
    pub min_range: Option<f32>,
    pub ts: &'a [f64],
    /// Frames to write.
    pub frames: usize,
    /// Serialise as CDR (ROS 2) rather than ROS 1.
    pub ros2: bool,
}

/// The pool's output, taken in frame order.
pub(super) struct Frames<'a> {
    dir: &'a Path,
    rx: Vec<mpsc::Receiver<Result<Cloud>>>,
    spares: Vec<mpsc::Sender<Vec<u8>>>,
}

impl<'a> Frames<'a> {
    /// Starts `workers` threads in `scope` over `lidar`'s frames.
    pub(super) fn spawn<'scope>(
        scope: &'scope Scope<'scope, '_>,
        lidar: &'scope Lidar<'scope>,
        workers: usize,
    ) -> Frames<'scope> {
        let mut rx = Vec::with_capacity(workers);
        let mut spares = Vec::with_capacity(workers);
        for k in 0..workers {
            let (frames_tx, frames_rx) = mpsc::sync_channel::<Result<Cloud>>(2);
            let (spare_tx, spare) = mpsc::channel::<Vec<u8>>();
            rx.push(frames_rx);
            spares.push(spare_tx);
            scope.spawn(move || worker(lidar, k, workers, &frames_tx, &spare));
        }
        Frames {
            dir: lidar.dir,
            rx,
            spares,
        }
    }

    /// Frame `j`'s message (frames are taken in order).
    pub(super) fn next(&self, j: usize) -> Result<Cloud> {
        self.rx[j % self.rx.len()]
            .recv()
            .map_err(|_| rosbag_error(self.dir, RosbagProblem::WorkerStopped { frame: j }))?
    }

    /// Gives frame `j`'s message buffer back to its worker for reuse.
    pub(super) fn give_back(&self, j: usize, msg: Vec<u8>) {
        let _ = self.spares[j % self.spares.len()].send(msg);
    }
}

/// Worker `k` of `workers`: its frames, in order, until the writer stops taking them or a
/// frame fails (the error is its last message).
fn worker(
    lidar: &Lidar,
    k: usize,
    workers: usize,
    frames_tx: &mpsc::SyncSender<Result<Cloud>>,
    spare: &mpsc::Receiver<Vec<u8>>,
) {
    let mut rng = match lidar.sensor.channel("rng") {
        Ok(r) => r,
        Err(e) => {
            let _ = frames_tx.send(Err(e.into()));
            return;
        }
    };
    let mut bufs = WorkerBufs::default();
    for j in (k..lidar.frames).step_by(workers) {
        let msg = spare.try_recv().unwrap_or_default();
        let stamp = Stamp::from_secs(lidar.ts[j]);
        let r = cloud(lidar, &mut rng, j, stamp, &mut bufs, msg);
        let stop = r.is_err();
        if frames_tx.send(r).is_err() || stop {
            return;
        }
    }
}

/// One lidar frame as a serialised `PointCloud2` message, made by a worker thread.
pub(super) struct Cloud {
    pub msg: Vec<u8>,
    pub points: usize,
}

/// Buffers a worker keeps from frame to frame.
#[derive(Default)]
struct WorkerBufs {
    /// The decompressed frame (`lzmaf`).
    raw: Vec<u8>,
}

/// Decodes lidar frame `j`, and projects it straight into the `PointCloud2` message `msg`
/// (cleared first).
fn cloud(
    lidar: &Lidar,
    rng: &mut ChannelReader,
    j: usize,
    stamp: Stamp,
    bufs: &mut WorkerBufs,
    mut msg: Vec<u8>,
) -> Result<Cloud> {
    let (lut, min_range) = (lidar.lut, lidar.min_range);
    msg.clear();
    msg.reserve(lut.pixels() * 12 + 256);
    let w = if lidar.ros2 {
        CloudWriter::cdr(&mut msg, stamp)
    } else {
        CloudWriter::ros1(&mut msg, stamp)
    }
    .map_err(|e| rosbag_error(lidar.dir, RosbagProblem::Stamp(e)))?;
    let mut project = |bytes: &[u8]| match lidar.rng_type {
        DType::U2 => project_frame::<u16>(lut, bytes, min_range, &mut msg),
        _ => project_frame::<u32>(lut, bytes, min_range, &mut msg),
    };
    match rng {
        ChannelReader::Lzmaf(r) => {
            r.get_into(j as u64, &mut bufs.raw)?;
            project(&bufs.raw)?;
        }
        other => project(&other.get(j as u64)?)?,
    }
    let points = w.finish(&mut msg);
    Ok(Cloud { points, msg })
}

/// Appends the kept points of a range frame to `msg`, 12 bytes each (x, y, z little-endian).
fn project_frame<T: Element + Into<f64>>(
    lut: &XyzLut,
    bytes: &[u8],
    min_range: Option<f32>,
    msg: &mut Vec<u8>,
) -> roverlog_core::Result<()> {
    let emit = |p: [f32; 3]| {
        let mut b = [0u8; 12];
        b[..4].copy_from_slice(&p[0].to_le_bytes());
        b[4..8].copy_from_slice(&p[1].to_le_bytes());
        b[8..].copy_from_slice(&p[2].to_le_bytes());
        msg.extend_from_slice(&b);
    };
    match view::<T>(bytes) {
        Some(v) => lut.project_with(v, min_range, emit),
        None => lut.project_with(&decode_vec::<T>(bytes), min_range, emit),
    }
}
