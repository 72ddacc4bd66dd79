//! A writer's ordered view of the pool: frames go in one by one, each with the bytes it holds;
//! they come out in the same order, each once it and every frame before it are done.

use std::collections::VecDeque;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use crossbeam_channel::{Receiver, RecvTimeoutError, Sender};

use super::{CompressPool, Compressed, Done, Job};

/// A frame back out of a [`Lane`], in order.
pub struct Popped<T> {
    /// What the writer gave with it.
    pub item: T,
    /// Its compressed channels (or the encoded ones given to [`Lane::push_encoded`]).
    pub out: Compressed,
}

struct Slot<T> {
    item: T,
    bytes: usize,
    out: Option<Compressed>,
}

/// One writer's lane: see the module's doc.
pub struct Lane<T> {
    pool: Arc<CompressPool>,
    reply: Sender<Done>,
    done: Receiver<Done>,
    /// Frames not yet popped, oldest first; the first one has number `front`.
    pending: VecDeque<Slot<T>>,
    front: u64,
    /// Bytes this lane holds in the pool's bound (reserved and not yet popped).
    held: usize,
    preset: u32,
    delay: Duration,
    beat: Arc<dyn Fn() + Send + Sync>,
}

impl<T> Lane<T> {
    /// A lane compressing at `preset` (`delay`: the test knob), calling `beat` as compression
    /// of its frames progresses.
    pub fn new(
        pool: Arc<CompressPool>,
        preset: u32,
        delay: Duration,
        beat: Arc<dyn Fn() + Send + Sync>,
    ) -> Lane<T> {
        let (reply, done) = crossbeam_channel::unbounded();
        Lane {
            pool,
            reply,
            done,
            pending: VecDeque::new(),
            front: 0,
            held: 0,
            preset,
            delay,
            beat,
        }
    }

    /// No frame waits in the lane.
    pub fn is_empty(&self) -> bool {
        self.pending.is_empty()
    }

    /// Frames in the lane (compressing or done, not yet popped).
    pub fn len(&self) -> usize {
        self.pending.len()
    }

    /// The channel the results come back on: for a `select!` with the writer's queue (then
    /// give what it received to [`Lane::take`]).
    pub fn results(&self) -> &Receiver<Done> {
        &self.done
    }

    /// The pool's progress counter (see `CompressPool::progress`).
    pub fn progress(&self) -> u64 {
        self.pool.progress()
    }

    /// Reserves `bytes` in the pool's bound for the next frame. Refused only while this lane
    /// already holds some and the bound would be passed: then pop (or wait for) this lane's
    /// own frames and ask again. A lane holding nothing always gets its frame in, so a frame
    /// larger than the bound still goes through, and no lane waits on another: the bound is
    /// passed by at most one frame per lane.
    pub fn reserve(&mut self, bytes: usize) -> bool {
        let limit = self.pool.limit;
        let first = self.held == 0;
        let r = self.pool.inflight.fetch_update(Relaxed, Relaxed, |now| {
            (first || now + bytes <= limit).then_some(now + bytes)
        });
        match r {
            Ok(before) => {
                self.pool.high_water.fetch_max(before + bytes, Relaxed);
                self.held += bytes;
                true
            }
            Err(_) => false,
        }
    }

    /// Sends a frame whose `bytes` were [reserved](Lane::reserve) to the pool: its `inputs`
    /// are compressed and come back with `item`.
    pub fn push(&mut self, item: T, inputs: Vec<Bytes>, bytes: usize) {
        let seq = self.front + self.pending.len() as u64;
        self.pending.push_back(Slot {
            item,
            bytes,
            out: None,
        });
        let job = Job {
            seq,
            inputs,
            preset: self.preset,
            delay: self.delay,
            beat: self.beat.clone(),
            reply: self.reply.clone(),
        };
        self.pool
            .jobs
            .send(job)
            .expect("the pool's workers live as long as the pool");
    }

    /// Queues a frame whose channels are already encoded (stored uncompressed): it comes out
    /// in its turn, after every frame pushed before it.
    pub fn push_encoded(&mut self, item: T, out: Vec<Vec<u8>>, bytes: usize) {
        self.pending.push_back(Slot {
            item,
            bytes,
            out: Some(Ok(out)),
        });
    }

    /// Puts a result received from [`Lane::results`] in its place. A result of a frame
    /// [discarded](Lane::discard) is dropped.
    pub fn take(&mut self, d: Done) {
        let Some(i) = d.seq.checked_sub(self.front) else {
            return;
        };
        if let Some(slot) = self.pending.get_mut(i as usize) {
            slot.out = Some(d.out);
        }
    }

    /// Takes every result already back, without waiting.
    pub fn poll(&mut self) {
        while let Ok(d) = self.done.try_recv() {
            self.take(d);
        }
    }

    /// The oldest frame, if it is done (after taking the results already back).
    pub fn pop(&mut self) -> Option<Popped<T>> {
        if self.pending.front().is_some_and(|s| s.out.is_none()) {
            self.poll();
        }
        if !self.front_done() {
            return None;
        }
        let slot = self.pending.pop_front().expect("checked");
        self.front += 1;
        self.release(slot.bytes);
        Some(Popped {
            item: slot.item,
            out: slot.out.expect("checked"),
        })
    }

    /// Whether the oldest frame is done.
    pub fn front_done(&self) -> bool {
        self.pending.front().is_some_and(|s| s.out.is_some())
    }

    /// Waits up to `timeout` for one result; `false`: none came.
    pub fn wait(&mut self, timeout: Duration) -> bool {
        match self.done.recv_timeout(timeout) {
            Ok(d) => {
                self.take(d);
                true
            }
            Err(RecvTimeoutError::Timeout) => false,
            Err(RecvTimeoutError::Disconnected) => unreachable!("the lane holds a sender"),
        }
    }

    /// Drops every frame in the lane (their files failed) and gives back what was given with
    /// them. Results still on their way are dropped when they come.
    pub fn discard(&mut self) -> Vec<T> {
        self.front += self.pending.len() as u64;
        self.release(self.held);
        self.pending.drain(..).map(|s| s.item).collect()
    }

    fn release(&mut self, bytes: usize) {
        self.held -= bytes;
        self.pool.inflight.fetch_sub(bytes, Relaxed);
    }
}

impl<T> Drop for Lane<T> {
    fn drop(&mut self) {
        self.release(self.held);
    }
}
