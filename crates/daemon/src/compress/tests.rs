//! Unit tests of the pool: order and the byte bound, with many threads on whatever cores
//! there are.

use super::*;
use roverlog_core::format::lzma;

/// A small deterministic generator (xorshift64*), for frame sizes and contents.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// A frame of `0..max` bytes, half compressible.
    fn frame(&mut self, max: u64) -> Vec<u8> {
        let n = (self.next() % max) as usize;
        (0..n)
            .map(|i| {
                if i % 2 == 0 {
                    (i / 64) as u8
                } else {
                    self.next() as u8
                }
            })
            .collect()
    }
}

fn lane(pool: &Arc<CompressPool>) -> Lane<usize> {
    Lane::new(pool.clone(), 0, Duration::ZERO, Arc::new(|| {}))
}

/// Pops what is done, or waits for the oldest frame (bounded: the pool always progresses).
fn pop_or_wait(l: &mut Lane<usize>) -> Popped<usize> {
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    loop {
        if let Some(p) = l.pop() {
            return p;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "waited 60 s for the oldest of {} frames in the lane",
            l.len()
        );
        l.wait(Duration::from_millis(100));
    }
}

#[test]
fn frames_come_out_in_order_as_compressed_by_one_thread() {
    let pool = CompressPool::new(16, 50_000);
    let mut l = lane(&pool);
    let mut rng = Rng(7);
    let frames: Vec<Vec<u8>> = (0..150).map(|_| rng.frame(6_000)).collect();
    let mut out = Vec::new();
    for (i, f) in frames.iter().enumerate() {
        while !l.reserve(f.len()) {
            let p = pop_or_wait(&mut l);
            out.push(p);
        }
        // Every 5th frame is "stored": already encoded, it must still wait for its turn.
        if i % 5 == 4 {
            l.push_encoded(i, vec![f.clone()], f.len());
        } else {
            l.push(i, vec![Bytes::from(f.clone())], f.len());
        }
        while let Some(p) = l.pop() {
            out.push(p);
        }
    }
    while !l.is_empty() {
        out.push(pop_or_wait(&mut l));
    }
    assert_eq!(out.len(), frames.len());
    for (k, p) in out.into_iter().enumerate() {
        assert_eq!(p.item, k, "frame {k} came out as {}", p.item);
        let got = p.out.unwrap();
        let want = if k % 5 == 4 {
            frames[k].clone()
        } else {
            lzma::compress(&frames[k], 0)
        };
        assert_eq!(got, vec![want], "frame {k}'s bytes");
    }
    assert_eq!(pool.inflight(), 0, "every byte released");
    assert!(pool.high_water() <= 50_000, "{}", pool.high_water());
}

#[test]
fn the_byte_bound_holds_for_many_lanes_on_many_threads() {
    const LIMIT: usize = 40_000;
    const MAX_FRAME: u64 = 8_000;
    const LANES: usize = 6;
    let pool = CompressPool::new(16, LIMIT);
    std::thread::scope(|s| {
        for t in 0..LANES {
            let pool = pool.clone();
            s.spawn(move || {
                let mut l = lane(&pool);
                let mut rng = Rng(100 + t as u64);
                let mut next_out = 0;
                for i in 0..60 {
                    let f = rng.frame(MAX_FRAME);
                    while !l.reserve(f.len()) {
                        assert_eq!(pop_or_wait(&mut l).item, next_out);
                        next_out += 1;
                    }
                    let n = f.len();
                    l.push(i, vec![Bytes::from(f)], n);
                }
                while !l.is_empty() {
                    assert_eq!(pop_or_wait(&mut l).item, next_out);
                    next_out += 1;
                }
                assert_eq!(next_out, 60);
            });
        }
    });
    let hw = pool.high_water();
    // Over the bound only by the one frame a lane holding nothing may always send.
    assert!(
        hw <= LIMIT + LANES * MAX_FRAME as usize,
        "high water {hw} past {LIMIT} + {LANES} frames"
    );
    assert!(hw > LIMIT / 2, "the test never filled the bound: {hw}");
    assert_eq!(pool.inflight(), 0);
}

#[test]
fn one_lane_never_passes_the_bound_and_a_huge_frame_still_goes_through() {
    let pool = CompressPool::new(4, 10_000);
    let mut l = lane(&pool);
    for (i, n) in [4_000, 4_000, 4_000, 50_000, 3_000].into_iter().enumerate() {
        while !l.reserve(n) {
            pop_or_wait(&mut l);
        }
        assert!(
            pool.inflight() <= 10_000 || l.is_empty(),
            "{}",
            pool.inflight()
        );
        l.push(i, vec![Bytes::from(vec![1u8; n])], n);
    }
    while !l.is_empty() {
        pop_or_wait(&mut l);
    }
    // 4000 + 4000 fit, the third waited; 50 000 went alone.
    assert_eq!(pool.high_water(), 50_000);
}

#[test]
fn discarded_frames_release_their_bytes_and_late_results_are_dropped() {
    let pool = CompressPool::new(2, 1 << 20);
    let mut l = Lane::new(pool.clone(), 0, Duration::from_millis(50), Arc::new(|| {}));
    for i in 0..4 {
        assert!(l.reserve(1000));
        l.push(i, vec![Bytes::from(vec![0u8; 1000])], 1000);
    }
    assert_eq!(l.discard(), [0, 1, 2, 3]);
    assert_eq!(pool.inflight(), 0);
    assert!(l.reserve(10));
    l.push(99, vec![Bytes::from_static(b"after")], 10);
    let p = pop_or_wait(&mut l);
    assert_eq!(
        p.item, 99,
        "a discarded frame's late result took the new frame's place"
    );
    assert_eq!(p.out.unwrap(), vec![lzma::compress(b"after", 0)]);
}
