//! The retain buffer of a [`ResilientDriver`](crate::ResilientDriver): the encoded frames a
//! driver sent but the daemon has not yet acknowledged durable, kept so that they can be
//! resent after a reconnect (docs/protocol.md 5 and 7).
//!
//! Frames are numbered from 0 in the order the driver sent them. The buffer holds frames
//! `first() .. first() + len()` back to back in one allocation; a durable acknowledgement
//! releases the frames it covers ([`Retained::release_before`]), and a full buffer forgets its
//! oldest frames: what a reconnect then turns out to need is reported by the driver, never
//! silently lost.

use std::collections::VecDeque;

/// Frames not yet acknowledged durable, at most `max_bytes` of them (but always the newest
/// frame, however large).
#[derive(Debug)]
pub struct Retained {
    /// Frames `first ..` back to back.
    bytes: Vec<u8>,
    /// End offset in `bytes` of each frame.
    ends: VecDeque<usize>,
    first: u64,
    max_bytes: usize,
}

impl Retained {
    /// An empty buffer bounded to `max_bytes` (0 keeps only the newest frame).
    pub fn new(max_bytes: usize) -> Retained {
        Retained {
            bytes: Vec::new(),
            ends: VecDeque::new(),
            first: 0,
            max_bytes,
        }
    }

    /// The number of the oldest frame retained (the count of frames forgotten before it).
    pub fn first(&self) -> u64 {
        self.first
    }

    /// Frames retained.
    pub fn len(&self) -> u64 {
        self.ends.len() as u64
    }

    /// Whether no frame is retained.
    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// Bytes retained.
    pub fn bytes(&self) -> usize {
        self.bytes.len()
    }

    /// Keeps one encoded frame (numbered `first() + len()`); forgets the oldest frames while
    /// the buffer is over its bound.
    pub fn push(&mut self, frame: &[u8]) {
        self.bytes.extend_from_slice(frame);
        self.ends.push_back(self.bytes.len());
        while self.bytes.len() > self.max_bytes && self.ends.len() > 1 {
            self.release_before(self.first + 1);
        }
    }

    /// Forgets the frames numbered before `upto` (acknowledged durable, or pushed out).
    pub fn release_before(&mut self, upto: u64) {
        let n = upto.saturating_sub(self.first).min(self.ends.len() as u64) as usize;
        if n == 0 {
            return;
        }
        let cut = self.ends[n - 1];
        self.bytes.drain(..cut);
        self.ends.drain(..n);
        for e in self.ends.iter_mut() {
            *e -= cut;
        }
        self.first += n as u64;
    }

    /// The frames numbered `from ..`, back to back (`from` at least [`Retained::first`]).
    pub fn frames_from(&self, from: u64) -> &[u8] {
        let k = from.saturating_sub(self.first) as usize;
        let start = match k {
            0 => 0,
            k if k > self.ends.len() => self.bytes.len(),
            k => self.ends[k - 1],
        };
        &self.bytes[start..]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(i: u8, len: usize) -> Vec<u8> {
        vec![i; len]
    }

    #[test]
    fn frames_are_released_by_acknowledgement_and_resent_from_any_point() {
        let mut r = Retained::new(1 << 20);
        for i in 0..5 {
            r.push(&frame(i, i as usize + 1));
        }
        assert_eq!((r.first(), r.len(), r.bytes()), (0, 5, 15));
        assert_eq!(r.frames_from(3), [3, 3, 3, 3, 4, 4, 4, 4, 4]);
        assert_eq!(
            r.frames_from(5),
            [] as [u8; 0],
            "nothing after the last frame"
        );
        r.release_before(2);
        assert_eq!((r.first(), r.len(), r.bytes()), (2, 3, 12));
        assert_eq!(r.frames_from(2)[0], 2);
        assert_eq!(r.frames_from(4), [4, 4, 4, 4, 4]);
        // Acknowledgements of what is already released, or beyond what was sent, are harmless.
        r.release_before(1);
        assert_eq!(r.first(), 2);
        r.release_before(100);
        assert_eq!((r.first(), r.len(), r.bytes()), (5, 0, 0));
        assert!(r.is_empty());
        r.push(&frame(5, 2));
        assert_eq!((r.first(), r.frames_from(5)), (5, &[5, 5][..]));
    }

    #[test]
    fn a_full_buffer_forgets_its_oldest_frames_but_keeps_the_newest() {
        let mut r = Retained::new(10);
        for i in 0..4 {
            r.push(&frame(i, 4));
        }
        // 16 bytes pushed, 10 allowed: frames 0 and 1 are forgotten.
        assert_eq!((r.first(), r.len(), r.bytes()), (2, 2, 8));
        // A frame larger than the bound is still kept, alone.
        r.push(&frame(9, 32));
        assert_eq!((r.first(), r.len(), r.bytes()), (4, 1, 32));
        let mut none = Retained::new(0);
        none.push(&frame(1, 3));
        none.push(&frame(2, 3));
        assert_eq!((none.first(), none.len()), (1, 1));
    }
}
