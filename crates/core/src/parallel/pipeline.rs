//! A pipeline of three stages: items made in order on one thread (reading a source that
//! cannot be shared), worked on by many (decoding, compressing), and taken in order by the
//! caller (writing a trace, sending to a daemon at a paced time).

use std::ops::ControlFlow;
use std::sync::mpsc;

/// Runs every item of `produce` (iterated on a thread of its own, in order) through `work`
/// on `workers` threads (worker `k` takes items `k, k + workers, ...`), and gives each result
/// to `take(i, result)` on the calling thread, in the order produced.
///
/// Memory: each worker holds at most `ahead` items queued, one in hand and `ahead + 1`
/// results; with the producer's and the taker's one, at most `workers x (2 x ahead + 2) + 2`
/// items are alive at once, whatever their count (`ahead` may be 0: every hand-over then
/// waits for its receiver).
///
/// An item that `produce` gives as an error, or that `work` fails on, is returned when its
/// turn comes, after every item before it was taken. `take` ends it early with an error or
/// with [`ControlFlow::Break`] (returned as `Ok`); the other threads then stop at their next
/// hand-over.
pub fn pipeline<J, T, E>(
    workers: usize,
    ahead: usize,
    produce: impl Iterator<Item = Result<J, E>> + Send,
    work: impl Fn(J) -> Result<T, E> + Sync,
    mut take: impl FnMut(usize, T) -> Result<ControlFlow<()>, E>,
) -> Result<(), E>
where
    J: Send,
    T: Send,
    E: Send,
{
    let workers = workers.max(1);
    let work = &work;
    std::thread::scope(|scope| {
        let mut jobs = Vec::with_capacity(workers);
        let mut results = Vec::with_capacity(workers);
        for _ in 0..workers {
            let (job_tx, job_rx) = mpsc::sync_channel::<Result<J, E>>(ahead);
            let (result_tx, result_rx) = mpsc::sync_channel::<Result<T, E>>(ahead);
            jobs.push(job_tx);
            results.push(result_rx);
            scope.spawn(move || {
                // Ends when the producer is done (its senders dropped) or gone.
                for job in job_rx {
                    let r = job.and_then(work);
                    let failed = r.is_err();
                    // A taker that stopped dropped the receivers.
                    if result_tx.send(r).is_err() || failed {
                        return;
                    }
                }
            });
        }
        scope.spawn(move || {
            for (i, item) in produce.enumerate() {
                let failed = item.is_err();
                // A worker that is gone stopped on an error or was stopped by the taker.
                if jobs[i % workers].send(item).is_err() || failed {
                    return;
                }
            }
        });
        // The receivers are dropped when this returns, so the workers blocked on a full
        // queue, and then the producer, end before the scope waits for them.
        for i in 0.. {
            match results[i % workers].recv() {
                Ok(r) => {
                    if take(i, r?)?.is_break() {
                        return Ok(());
                    }
                }
                // Item `i` was never produced: every item before it was taken. (A worker
                // that panicked ends here too, and the scope then panics with it.)
                Err(mpsc::RecvError) => return Ok(()),
            }
        }
        unreachable!("the loop over every index returns")
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
    use std::time::Duration;

    /// Runs `f` on a thread and waits at most a minute for it: a pipeline that deadlocks fails
    /// the test, naming what it waited for, instead of hanging it.
    fn bounded<R: Send + 'static>(what: &str, f: impl FnOnce() -> R + Send + 'static) -> R {
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(f());
        });
        rx.recv_timeout(Duration::from_secs(60))
            .unwrap_or_else(|e| panic!("{what}: no result within 60 s ({e}): a deadlock"))
    }

    #[test]
    fn results_come_in_order_from_many_workers_whatever_the_bound() {
        for (workers, ahead) in [(1, 0), (1, 3), (16, 0), (16, 1), (7, 2)] {
            let got = bounded("pipeline of 2000 uneven items", move || {
                let mut got = Vec::new();
                let r: Result<(), ()> = pipeline(
                    workers,
                    ahead,
                    (0..2000u64).map(Ok),
                    |i| {
                        // Uneven work, so workers finish out of order.
                        if i % 7 == 0 {
                            std::thread::sleep(Duration::from_micros(300));
                        }
                        Ok(i * 3)
                    },
                    |i, v| {
                        assert_eq!(v, i as u64 * 3);
                        got.push(v / 3);
                        Ok(ControlFlow::Continue(()))
                    },
                );
                (r, got)
            });
            assert_eq!(got.0, Ok(()), "{workers} workers, {ahead} ahead");
            assert_eq!(got.1, (0..2000).collect::<Vec<_>>(), "{workers}/{ahead}");
        }
        // Nothing to do is done.
        let r: Result<(), ()> = pipeline(4, 1, std::iter::empty(), Ok, |_, ()| {
            panic!("nothing to take")
        });
        assert_eq!(r, Ok(()));
    }

    #[test]
    fn items_alive_at_once_stay_within_the_bound() {
        static ALIVE: AtomicUsize = AtomicUsize::new(0);
        static MOST: AtomicUsize = AtomicUsize::new(0);
        struct Counted;
        impl Counted {
            fn new() -> Counted {
                let now = ALIVE.fetch_add(1, SeqCst) + 1;
                MOST.fetch_max(now, SeqCst);
                Counted
            }
        }
        impl Drop for Counted {
            fn drop(&mut self) {
                ALIVE.fetch_sub(1, SeqCst);
            }
        }
        let (workers, ahead) = (4, 1);
        let r = bounded("pipeline with a slow taker", move || {
            pipeline(
                workers,
                ahead,
                // Made as fast as the producer may, so it runs into the bound.
                (0..600).map(|_| Ok::<_, ()>(Counted::new())),
                Ok,
                |_, c| {
                    std::thread::sleep(Duration::from_micros(100));
                    drop(c);
                    Ok(ControlFlow::Continue(()))
                },
            )
        });
        assert_eq!(r, Ok(()));
        assert_eq!(ALIVE.load(SeqCst), 0);
        let most = MOST.load(SeqCst);
        assert!(
            most <= workers * (2 * ahead + 2) + 2,
            "{most} alive at once"
        );
        // The bound is reached, not avoided by running one at a time.
        assert!(most > workers, "{most} alive at once");
    }

    #[test]
    fn an_error_comes_in_its_turn_whoever_has_it() {
        // From the producer, from a worker, from the taker: every item before it is taken.
        for bad_in in ["produce", "work", "take"] {
            let (r, taken) = bounded("pipeline ending on an error", move || {
                let mut taken = 0;
                let r = pipeline(
                    8,
                    1,
                    (0..100_000usize).map(move |i| {
                        if bad_in == "produce" && i == 137 {
                            Err(format!("item {i}"))
                        } else {
                            Ok(i)
                        }
                    }),
                    move |i| {
                        if bad_in == "work" && i == 137 {
                            Err(format!("item {i}"))
                        } else {
                            Ok(i)
                        }
                    },
                    |i, v| {
                        assert_eq!(i, v);
                        if bad_in == "take" && i == 137 {
                            return Err(format!("item {i}"));
                        }
                        taken += 1;
                        Ok(ControlFlow::Continue(()))
                    },
                );
                (r, taken)
            });
            assert_eq!(r, Err("item 137".to_string()), "{bad_in}");
            assert_eq!(
                taken, 137,
                "{bad_in}: every item before the bad one, in order"
            );
        }
    }

    #[test]
    fn a_taker_that_stops_ends_an_endless_producer() {
        let made = std::sync::Arc::new(AtomicUsize::new(0));
        let m = made.clone();
        let r = bounded("pipeline stopped by its taker", move || {
            pipeline(
                3,
                2,
                (0..).map(move |i| {
                    m.fetch_add(1, SeqCst);
                    Ok::<usize, ()>(i)
                }),
                Ok,
                |i, _| {
                    Ok(if i == 50 {
                        ControlFlow::Break(())
                    } else {
                        ControlFlow::Continue(())
                    })
                },
            )
        });
        assert_eq!(r, Ok(()));
        // Made: the 51 taken, at most the bound's worth (20) alive when the taker stopped, and
        // at most `ahead + 1` more per worker (its queue and hand) and the producer's one
        // before each sees it gone.
        let made = made.load(SeqCst);
        assert!((51..=51 + 20 + 3 * 3 + 1).contains(&made), "{made} made");
    }
}
