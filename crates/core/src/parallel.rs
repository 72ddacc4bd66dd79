//! Ordered work on every core: items `0..n` produced by several threads, consumed in order.
//!
//! The verbs that decode or encode many independent frames (`export`, `convert`) run their
//! per-frame work through [`ordered`]; `rosbag` and `validate --deep` have their own
//! loops of the same shape, sized with the same [`crate::cpus::usable`]. The verbs that read
//! a source in order (`import`, `replay`) decode its samples through [`pipeline()`]: one thread
//! reads, many decode, the caller takes the results in order.

use std::sync::mpsc;

mod pipeline;
pub use pipeline::pipeline;

/// Runs `work(state, i)` for every `i` in `0..n` on `workers` threads (worker `k` takes
/// `k, k + workers, ...` with a `state` of its own from `init`, at most `ahead` results
/// ahead of the consumer), and gives each result to `take(i, result)` on the calling thread,
/// in order. Memory: at most `workers x (ahead + 1)` results at once. The first error, of
/// `init`, `work` or `take`, ends it and is returned (the workers stop at their next result).
pub fn ordered<S, T, E>(
    n: usize,
    workers: usize,
    ahead: usize,
    init: impl Fn() -> Result<S, E> + Sync,
    work: impl Fn(&mut S, usize) -> Result<T, E> + Sync,
    mut take: impl FnMut(usize, T) -> Result<(), E>,
) -> Result<(), E>
where
    T: Send,
    E: Send,
{
    let workers = workers.clamp(1, n.max(1));
    let (init, work) = (&init, &work);
    std::thread::scope(|scope| {
        let mut results = Vec::with_capacity(workers);
        for k in 0..workers {
            let (tx, rx) = mpsc::sync_channel::<Result<T, E>>(ahead);
            results.push(rx);
            scope.spawn(move || {
                let mut state = match init() {
                    Ok(s) => s,
                    Err(e) => {
                        let _ = tx.send(Err(e));
                        return;
                    }
                };
                for i in (k..n).step_by(workers) {
                    let r = work(&mut state, i);
                    let failed = r.is_err();
                    // A consumer that stopped (its own error) drops the receivers.
                    if tx.send(r).is_err() || failed {
                        return;
                    }
                }
            });
        }
        // The receivers are dropped when this returns, so workers blocked on a full queue
        // end before the scope waits for them.
        let mut consume = move || -> Result<(), E> {
            for i in 0..n {
                let r = results[i % workers]
                    .recv()
                    .expect("a worker sends every result of its turn or an error first");
                take(i, r?)?;
            }
            Ok(())
        };
        consume()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};

    #[test]
    fn results_come_in_order_from_many_workers() {
        let mut got = Vec::new();
        let r: Result<(), ()> = ordered(
            1000,
            16,
            2,
            || Ok(0u64),
            |calls, i| {
                *calls += 1;
                // Uneven work, so workers finish out of order.
                if i % 7 == 0 {
                    std::thread::sleep(std::time::Duration::from_micros(200));
                }
                Ok(i * 3)
            },
            |i, v| {
                assert_eq!(v, i * 3);
                got.push(i);
                Ok(())
            },
        );
        assert_eq!(r, Ok(()));
        assert_eq!(got, (0..1000).collect::<Vec<_>>());
    }

    #[test]
    fn memory_is_bounded_by_workers_and_ahead() {
        let alive = AtomicUsize::new(0);
        let most = AtomicUsize::new(0);
        struct Counted<'a>(&'a AtomicUsize);
        impl Drop for Counted<'_> {
            fn drop(&mut self) {
                self.0.fetch_sub(1, SeqCst);
            }
        }
        let r: Result<(), ()> = ordered(
            500,
            4,
            2,
            || Ok(()),
            |_, _| {
                let now = alive.fetch_add(1, SeqCst) + 1;
                most.fetch_max(now, SeqCst);
                Ok(Counted(&alive))
            },
            |_, c| {
                std::thread::sleep(std::time::Duration::from_micros(50));
                drop(c);
                Ok(())
            },
        );
        assert_eq!(r, Ok(()));
        // Per worker: `ahead` queued, one being sent, one in the making; one being consumed.
        assert!(
            most.load(SeqCst) <= 4 * (2 + 2) + 1,
            "{}",
            most.load(SeqCst)
        );
    }

    #[test]
    fn the_first_error_ends_it_whoever_has_it() {
        let mut taken = 0;
        let r = ordered(
            10_000,
            8,
            2,
            || Ok(()),
            |_, i| {
                if i == 137 {
                    Err(format!("frame {i}"))
                } else {
                    Ok(i)
                }
            },
            |_, _| {
                taken += 1;
                Ok(())
            },
        );
        assert_eq!(r, Err("frame 137".to_string()));
        assert_eq!(taken, 137, "every frame before the bad one, in order");
        let r: Result<(), &str> = ordered(
            100,
            3,
            1,
            || Err("no reader"),
            |_: &mut (), i| Ok(i),
            |_, _| Ok(()),
        );
        assert_eq!(r, Err("no reader"));
        let r: Result<(), usize> = ordered(
            100,
            3,
            1,
            || Ok(()),
            |_, i| Ok(i),
            |i, _| if i == 50 { Err(i) } else { Ok(()) },
        );
        assert_eq!(r, Err(50));
    }
}
