//! The daemon's one `lzmaf` compression pool: `compress_threads` worker threads (0: every CPU
//! the process may use, [`roverlog_core::cpus::usable`]) shared by all sensors.
//!
//! A sensor's writer feeds it frame by frame through its [`Lane`] and takes the results back
//! in the order it sent the frames, appending each as soon as it and every frame before it are
//! compressed: the next frames compress while earlier ones are written and synced, with no
//! barrier per group. Frames in flight are bounded by bytes, all sensors together
//! (`compress_inflight_bytes`, see [`Lane::reserve`]); a writer over the bound waits for its
//! *own* oldest frame, so no writer ever waits on another one and nothing can deadlock.
//!
//! The pool is plain threads over a crossbeam channel (first come, first served across
//! sensors); the results go back on each lane's own channel, which the writer selects on
//! together with its queue.

use std::sync::atomic::Ordering::Relaxed;
use std::sync::atomic::{AtomicU64, AtomicUsize};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use crossbeam_channel::{Receiver, Sender};

use roverlog_core::format::lzma;

mod lane;

pub use lane::{Lane, Popped};

/// A frame's compressed channels, in the order they were given, or why there are none.
pub type Compressed = Result<Vec<Vec<u8>>, CompressError>;

/// Why a frame was not compressed.
#[derive(Debug, Clone, thiserror::Error)]
pub enum CompressError {
    /// A bug: the worker compressing frame `seq` of its lane panicked; `panic`: the text the
    /// panic carried (its own payload, not a sentence of ours).
    #[error("the compression of frame {seq} panicked: {panic}")]
    Panic { seq: u64, panic: String },
}

/// A frame to compress.
struct Job {
    /// Its lane's number for it: results are put back in this order.
    seq: u64,
    /// Its `lzmaf` channels' samples.
    inputs: Vec<Bytes>,
    preset: u32,
    /// Test knob: the compression takes this much longer.
    delay: Duration,
    /// Called as compression progresses (the sensor's watchdog heartbeat).
    beat: Arc<dyn Fn() + Send + Sync>,
    reply: Sender<Done>,
}

/// A compressed frame, back to its lane.
pub struct Done {
    seq: u64,
    out: Compressed,
}

/// The pool: see the module's doc.
pub struct CompressPool {
    jobs: Sender<Job>,
    threads: usize,
    /// The bound on the bytes of frames in flight (sent to a lane and not yet taken back out
    /// of it), all lanes together.
    limit: usize,
    /// Those bytes now, and the most there were.
    inflight: AtomicUsize,
    high_water: AtomicUsize,
    /// Bumped at every step of compression: a writer waiting for its frame beats its
    /// heartbeat while this moves (the pool is working, not stuck).
    progress: Arc<AtomicU64>,
}

impl CompressPool {
    /// A pool of `threads` workers (at least 1) with `limit` bytes in flight.
    pub fn new(threads: usize, limit: usize) -> Arc<CompressPool> {
        let threads = threads.max(1);
        let (jobs, rx) = crossbeam_channel::unbounded::<Job>();
        let progress = Arc::new(AtomicU64::new(0));
        for i in 0..threads {
            let rx = rx.clone();
            let progress = progress.clone();
            std::thread::Builder::new()
                .name(format!("compress-{i}"))
                .spawn(move || work(rx, progress))
                .expect("spawning a compression thread");
        }
        Arc::new(CompressPool {
            jobs,
            threads,
            limit: limit.max(1),
            inflight: AtomicUsize::new(0),
            high_water: AtomicUsize::new(0),
            progress,
        })
    }

    pub fn threads(&self) -> usize {
        self.threads
    }

    pub fn limit(&self) -> usize {
        self.limit
    }

    /// Bytes of frames in flight now, all lanes together.
    pub fn inflight(&self) -> usize {
        self.inflight.load(Relaxed)
    }

    /// The most bytes that were in flight at once.
    pub fn high_water(&self) -> usize {
        self.high_water.load(Relaxed)
    }

    fn progress(&self) -> u64 {
        self.progress.load(Relaxed)
    }
}

/// A worker: compresses jobs until the pool is gone. A panic (a bug) is answered as an error
/// of that frame, so its writer fails the sensor instead of waiting for it forever.
fn work(rx: Receiver<Job>, progress: Arc<AtomicU64>) {
    for job in rx {
        let out = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            if !job.delay.is_zero() {
                std::thread::sleep(job.delay);
            }
            job.inputs
                .iter()
                .map(|input| {
                    lzma::compress_with_progress(input, job.preset, &mut || {
                        progress.fetch_add(1, Relaxed);
                        (job.beat)();
                    })
                })
                .collect::<Vec<_>>()
        }))
        .map_err(|p| CompressError::Panic {
            seq: job.seq,
            panic: panic_message(&*p),
        });
        progress.fetch_add(1, Relaxed);
        // A lane that is gone (its writer ended) no longer wants the result.
        let _ = job.reply.send(Done { seq: job.seq, out });
    }
}

/// The message a panic carried.
fn panic_message(p: &(dyn std::any::Any + Send)) -> String {
    p.downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "(no message)".into())
}

#[cfg(test)]
mod tests;
