//! Writing a batch of frames: split by the sensor's frame layout and appended sample by
//! sample (data channels, then `ts`). A sensor with `lzmaf` channels sends each frame through
//! its lane of the daemon's compression pool (`crate::compress`) and appends the frames as
//! they come back, in order, while later frames compress: no barrier per batch or group. When
//! compression falls behind, a frame's `lzmaf` samples are stored uncompressed instead
//! (`fallback`), still in their turn. The flush timer is checked as frames are appended.

use std::sync::atomic::Ordering::Relaxed;
use std::time::{Duration, Instant};

use bytes::Bytes;

use super::Writer;
use crate::compress::Popped;
use crate::failure::SensorFailure;
use roverlog_core::format::stored_xz;

/// A frame of an `lzmaf` sensor in its lane: what is needed to append it once its `lzmaf`
/// channels are encoded.
pub(super) struct Pending {
    ts: f64,
    /// Every stored channel's sample as received (`ts_recv` last where the trace has it):
    /// slices of the batch, which stays in memory until the frame is appended.
    chans: Vec<Bytes>,
    /// Its `lzmaf` samples were stored uncompressed.
    stored: bool,
    /// The queue permits it holds, given back once it is appended (or discarded): so the
    /// sensor's queue counts its frames in the pool, for `status`, the `queue_high` alarm and
    /// the stored fallback.
    pub(super) permits: usize,
}

impl Writer {
    /// `in_hand`: the queue bytes this batch still holds (0 for a batch from the snapshot
    /// ring), which do not count as waiting behind it. The permits of the frames sent to the
    /// compression pool are added to `self.permits_in_lane`: they go back as those frames
    /// are appended, the caller gives back the rest.
    pub(super) fn write_batch(
        &mut self,
        data: &Bytes,
        frames: u32,
        seq: bool,
        recv: &[f64],
        in_hand: usize,
    ) {
        let Some(open) = self.open.as_ref() else {
            self.stats.discarded.fetch_add(u64::from(frames), Relaxed);
            return;
        };
        let with_recv = open.recv;
        let mut permits_left = in_hand;
        let mut pos = 0;
        let mut frame_no = 0usize;
        while pos + 4 <= data.len() {
            if self.open.is_none() {
                // An append failed: the rest of the batch is lost with the sensor.
                let lost = u64::from(frames).saturating_sub(frame_no as u64);
                self.stats.discarded.fetch_add(lost, Relaxed);
                break;
            }
            let len = u32::from_le_bytes(data[pos..pos + 4].try_into().expect("4 bytes")) as usize;
            let body = &data[pos + 4..pos + 4 + len];
            pos += 4 + len;
            let layout = &self.layouts[usize::from(seq)];
            let mut slices = Vec::with_capacity(layout.channel_count() + 1);
            let ts = layout.split(body, &mut slices);
            // The daemon's receive time of each frame, for the `ts_recv` channel.
            let r = with_recv.then(|| {
                recv.get(frame_no)
                    .copied()
                    .unwrap_or_else(crate::events::now_epoch)
                    .to_le_bytes()
            });
            if let Some(r) = &r {
                slices.push(r);
            }
            frame_no += 1;
            if self.lane.is_none() {
                self.append(ts, &slices, None);
            } else {
                let queued = self
                    .stats
                    .queue_limit
                    .saturating_sub(self.budget.available_permits() as u64);
                let store = self
                    .fallback
                    .behind(queued, in_hand as u64, self.stats.queue_limit);
                let permits = (4 + len).min(permits_left);
                permits_left -= permits;
                self.permits_in_lane += permits;
                self.send_to_lane(data, ts, &slices, with_recv, store, permits);
            }
            // A long batch (slow disk, compression) must not hold samples in user space past
            // the flush interval: that bounds what a kill -9 loses.
            if frame_no.is_multiple_of(16) {
                self.flush_if_due();
            }
        }
        self.append_done();
        self.flush_if_due();
    }

    /// Appends one frame: `slices` as received (`ts_recv` last where the trace has it),
    /// `encoded` the same with the `lzmaf` channels encoded (`None`: no `lzmaf` channel).
    fn append(&mut self, ts: f64, slices: &[&[u8]], encoded: Option<&[&[u8]]>) -> bool {
        let Some(o) = self.open.as_mut() else {
            self.stats.discarded.fetch_add(1, Relaxed);
            return false;
        };
        if !self.settings.debug_delay.is_zero() {
            std::thread::sleep(self.settings.debug_delay);
        }
        let r = match encoded {
            None => o.files.append(ts, slices),
            Some(enc) => o.files.append_encoded(ts, enc),
        };
        if let Err(e) = r {
            self.stats.discarded.fetch_add(1, Relaxed);
            self.fail("append", e);
            return false;
        }
        self.stats.beat(self.settings.epoch);
        if let Some(live) = self.live.as_mut() {
            live.offer(ts, slices);
        }
        // As received: the daemon's own `ts_recv` (last) is not counted.
        let received = &slices[..slices.len() - usize::from(o.recv)];
        let bytes = 8 + received.iter().map(|s| s.len() as u64).sum::<u64>();
        o.unflushed = true;
        o.unsynced_bytes += bytes;
        self.stats.samples.store(o.files.len(), Relaxed);
        self.stats.bytes.fetch_add(bytes, Relaxed);
        true
    }

    /// Puts a frame of an `lzmaf` sensor in its lane: to be compressed by the pool, or with
    /// `store` its `lzmaf` samples wrapped uncompressed now. Waits (appending this sensor's
    /// frames as they come back) while the pool's byte bound is reached.
    fn send_to_lane(
        &mut self,
        data: &Bytes,
        ts: f64,
        slices: &[&[u8]],
        with_recv: bool,
        store: bool,
        permits: usize,
    ) {
        let last = slices.len() - 1;
        let chans: Vec<Bytes> = slices
            .iter()
            .enumerate()
            .map(|(i, s)| {
                if with_recv && i == last {
                    Bytes::copy_from_slice(s)
                } else {
                    data.slice_ref(s)
                }
            })
            .collect();
        let bytes = chans.iter().map(Bytes::len).sum::<usize>();
        while !self.lane.as_mut().expect("an lzmaf sensor").reserve(bytes) {
            if !self.append_done() {
                self.wait_lane();
            }
        }
        let frame = Pending {
            ts,
            chans,
            stored: store,
            permits,
        };
        let lane = self.lane.as_mut().expect("an lzmaf sensor");
        if store {
            let out = self
                .lzmaf
                .iter()
                .map(|&ch| stored_xz::store(&frame.chans[ch]))
                .collect();
            lane.push_encoded(frame, out, bytes);
        } else {
            let inputs = self
                .lzmaf
                .iter()
                .map(|&ch| frame.chans[ch].clone())
                .collect();
            lane.push(frame, inputs, bytes);
        }
        self.append_done();
    }

    /// Appends the frames of the lane that are done, in order; whether there was one.
    pub(super) fn append_done(&mut self) -> bool {
        let mut any = false;
        while let Some(p) = self.lane.as_mut().and_then(|l| l.pop()) {
            any = true;
            self.append_popped(p);
        }
        any
    }

    /// Appends every frame in the lane, waiting for the pool: before anything that must see
    /// all frames queued before it written (a sync, a barrier, a trace switch, the end).
    pub(super) fn append_all(&mut self) {
        while self.lane.as_ref().is_some_and(|l| !l.is_empty()) {
            if !self.append_done() {
                self.wait_lane();
            }
        }
    }

    /// Waits for a result of this sensor's lane. The pool's progress (on any sensor's frame)
    /// counts as this writer's heartbeat: it waits on work that moves, it is not stuck.
    pub(super) fn wait_lane(&mut self) {
        let step =
            (self.settings.heartbeat.min(Duration::from_secs(1)) / 2).max(Duration::from_millis(5));
        let (Some(lane), stats) = (self.lane.as_mut(), &self.stats) else {
            return;
        };
        if lane.is_empty() || lane.front_done() {
            return;
        }
        let mut seen = lane.progress();
        while !lane.wait(step) {
            let now = lane.progress();
            if now != seen {
                seen = now;
                stats.beat(self.settings.epoch);
            }
        }
    }

    fn append_popped(&mut self, p: Popped<Pending>) {
        let frame = p.item;
        self.budget.add_permits(frame.permits);
        let out = match p.out {
            Ok(out) => out,
            Err(e) => {
                self.stats.discarded.fetch_add(1, Relaxed);
                self.fail_with(SensorFailure::Compress(e));
                return;
            }
        };
        let slices: Vec<&[u8]> = frame.chans.iter().map(|b| &b[..]).collect();
        let mut enc = slices.clone();
        for (c, &ch) in self.lzmaf.iter().enumerate() {
            enc[ch] = &out[c];
        }
        if !self.append(frame.ts, &slices, Some(&enc)) {
            return;
        }
        let o = self.open.as_ref().expect("appended");
        if frame.stored {
            self.fallback
                .stored(1, &self.stats, &o.events, &self.sensor);
        } else {
            self.fallback.report(&o.events, &self.sensor);
        }
    }

    /// Flushes to the kernel when the flush interval has passed since the last flush.
    fn flush_if_due(&mut self) {
        if self.open.as_ref().is_some_and(|o| {
            o.unflushed && Instant::now() >= o.last_flush + self.settings.flush_interval
        }) {
            self.flush();
        }
    }
}
