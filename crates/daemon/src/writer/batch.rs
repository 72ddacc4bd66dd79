//! Writing a batch of frames: split by the sensor's frame layout, `lzmaf` channels compressed
//! on worker threads (or stored uncompressed when compression falls behind: `fallback`),
//! appended sample by sample (data channels, then `ts`), flushed when the flush interval
//! passed during a long batch.

use std::sync::atomic::Ordering::Relaxed;
use std::time::Instant;

use super::Writer;
use roverlog_core::format::{lzma, stored_xz};

impl Writer {
    /// `in_hand`: the queue bytes this batch still holds (0 for a batch from the snapshot
    /// ring), which do not count as waiting behind it.
    pub(super) fn write_batch(
        &mut self,
        data: &[u8],
        frames: u32,
        seq: bool,
        recv: &[f64],
        in_hand: usize,
    ) {
        let Some(open) = self.open.as_ref() else {
            self.stats.discarded.fetch_add(u64::from(frames), Relaxed);
            return;
        };
        // The daemon's receive time of each frame, for the `ts_recv` channel.
        let recv: Vec<[u8; 8]> = if open.recv {
            (0..frames as usize)
                .map(|k| {
                    recv.get(k)
                        .copied()
                        .unwrap_or_else(crate::events::now_epoch)
                        .to_le_bytes()
                })
                .collect()
        } else {
            Vec::new()
        };
        let mut frame_no = 0usize;
        // Frames are written in chunks: `lzmaf` samples of a chunk are compressed in
        // parallel first, and the flush timer is checked between chunks.
        let chunk = if self.lzmaf.is_empty() {
            16
        } else {
            4 * self.settings.compress_threads
        };
        let mut frames_of_chunk: Vec<(f64, Vec<&[u8]>)> = Vec::with_capacity(chunk);
        let mut pos = 0;
        let mut written = 0u64;
        let mut bytes = 0u64;
        let mut error = None;
        while pos + 4 <= data.len() && error.is_none() {
            frames_of_chunk.clear();
            while pos + 4 <= data.len() && frames_of_chunk.len() < chunk {
                let len =
                    u32::from_le_bytes(data[pos..pos + 4].try_into().expect("4 bytes")) as usize;
                let body = &data[pos + 4..pos + 4 + len];
                pos += 4 + len;
                let layout = &self.layouts[usize::from(seq)];
                let mut slices = Vec::with_capacity(layout.channel_count());
                let ts = layout.split(body, &mut slices);
                if let Some(r) = recv.get(frame_no) {
                    slices.push(r);
                }
                frame_no += 1;
                frames_of_chunk.push((ts, slices));
            }
            let queued = self
                .stats
                .queue_limit
                .saturating_sub(self.budget.available_permits() as u64);
            let store = !self.lzmaf.is_empty()
                && self
                    .fallback
                    .behind(queued, in_hand as u64, self.stats.queue_limit);
            let compressed = self.compress(&frames_of_chunk, store);
            let o = self.open.as_mut().expect("checked above");
            if !store {
                self.fallback.report(&o.events, &self.sensor);
            }
            let written_before = written;
            for (k, (ts, slices)) in frames_of_chunk.iter().enumerate() {
                if !self.settings.debug_delay.is_zero() {
                    std::thread::sleep(self.settings.debug_delay);
                }
                let r = if self.lzmaf.is_empty() {
                    o.files.append(*ts, slices)
                } else {
                    let mut enc = slices.clone();
                    for (c, &ch) in self.lzmaf.iter().enumerate() {
                        enc[ch] = &compressed[k * self.lzmaf.len() + c];
                    }
                    o.files.append_encoded(*ts, &enc)
                };
                if let Err(e) = r {
                    error = Some(e);
                    break;
                }
                self.stats.beat(self.settings.epoch);
                if let Some(live) = self.live.as_mut() {
                    live.offer(*ts, slices);
                }
                written += 1;
                // As received: the daemon's own `ts_recv` (last) is not counted.
                let received = &slices[..slices.len() - usize::from(!recv.is_empty())];
                bytes += 8 + received.iter().map(|s| s.len() as u64).sum::<u64>();
            }
            if store {
                let n = written - written_before;
                self.fallback
                    .stored(n, &self.stats, &o.events, &self.sensor);
            }
            // A long batch (slow disk, compression) must not hold samples in user space
            // past the flush interval: that bounds what a kill -9 loses.
            if error.is_none() && Instant::now() >= o.last_flush + self.settings.flush_interval {
                match o.files.flush() {
                    Ok(()) => {
                        o.last_flush = Instant::now();
                        o.unflushed = false;
                    }
                    Err(e) => error = Some(e),
                }
            }
        }
        let o = self.open.as_mut().expect("checked above");
        // (A flush with nothing buffered costs no syscall.)
        o.unflushed |= written > 0;
        o.unsynced_bytes += bytes;
        self.stats.samples.store(o.files.len(), Relaxed);
        self.stats.bytes.fetch_add(bytes, Relaxed);
        if let Some(e) = error {
            let lost = u64::from(frames) - written;
            self.stats.discarded.fetch_add(lost, Relaxed);
            self.fail("append", e);
        }
    }

    /// Compresses the `lzmaf` channels of `frames` on up to `compress_threads` threads, or
    /// with `store` wraps them uncompressed in the same `.xz` framing; result
    /// `k * lzmaf.len() + c` is frame k's c-th `lzmaf` channel.
    fn compress(&self, frames: &[(f64, Vec<&[u8]>)], store: bool) -> Vec<Vec<u8>> {
        if self.lzmaf.is_empty() {
            return Vec::new();
        }
        let jobs: Vec<&[u8]> = frames
            .iter()
            .flat_map(|(_, s)| self.lzmaf.iter().map(move |&ch| s[ch]))
            .collect();
        if store {
            return jobs.iter().map(|j| stored_xz::store(j)).collect();
        }
        let preset = self.settings.opts.lzmaf_preset;
        let delay = self.settings.compress_delay;
        // Compressing a chunk of large samples takes long, and one huge frame at a high
        // preset alone can outlast the watchdog: every step of input encoded is progress
        // (see `lzma::compress_with_progress`), so only a compression that is really stuck
        // stops the pings.
        let (stats, epoch) = (&*self.stats, self.settings.epoch);
        let compress = move |j: &&[u8]| {
            if !delay.is_zero() {
                std::thread::sleep(delay);
            }
            lzma::compress_with_progress(j, preset, &mut || stats.beat(epoch))
        };
        let threads = self.settings.compress_threads.max(1).min(jobs.len());
        if threads <= 1 {
            return jobs.iter().map(compress).collect();
        }
        let per = jobs.len().div_ceil(threads);
        std::thread::scope(|scope| {
            let handles: Vec<_> = jobs
                .chunks(per)
                .map(|part| scope.spawn(move || part.iter().map(compress).collect::<Vec<_>>()))
                .collect();
            handles
                .into_iter()
                .flat_map(|h| h.join().expect("compression thread"))
                .collect()
        })
    }
}
