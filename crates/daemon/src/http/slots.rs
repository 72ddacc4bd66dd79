//! The dashboard's connection slots: at most [`MAX_CONNECTIONS`](super::MAX_CONNECTIONS)
//! connections are served at once, and idle ones cannot lock the crew out.
//!
//! The rule (docs/dashboard.md, "Security"): while a slot is free, a new connection takes it.
//! When every slot is taken, a new connection takes the slot of the connection that has been
//! idle longest (no request in progress: a keep-alive connection between requests, one that
//! never sent a byte, one still trickling its request head), and that one is closed at once.
//! Only when every connection is in the middle of a request is the new one answered 503; a
//! request's body is read under a deadline, so that lasts seconds. A browser opens a fresh
//! connection and sends its request at once, so it is never the one idle longest.
//!
//! A connection is chosen only while idle, and a request that starts on a connection already
//! chosen is refused without running (`begin` returns `None`), so closing one never cuts a
//! command in half.

use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Instant;

use tokio::sync::Notify;

/// A request is in progress on the connection.
const BUSY: u8 = 1;
/// The connection gave its slot to a newer one and is being closed.
const EVICTED: u8 = 2;

/// The registry of served connections.
pub struct Slots {
    limit: usize,
    conns: Mutex<Vec<Arc<Conn>>>,
}

/// One served connection, as the registry and its requests see it.
pub struct Conn {
    state: AtomicU8,
    /// When it last was busy (or was accepted): the longest idle is chosen first.
    idle_since: Mutex<Instant>,
    /// Told when the connection is chosen to give up its slot.
    evict: Notify,
}

/// A connection's hold on its slot; dropping it frees the slot (if it still has one).
pub struct Slot {
    slots: Arc<Slots>,
    conn: Arc<Conn>,
}

/// A request in progress on a connection (not chosen while this lives).
pub struct Busy(Arc<Conn>);

/// Whether a new connection was given a slot.
pub enum Admission {
    /// A free slot.
    Free(Slot),
    /// The slot of a connection idle longest, which is being closed.
    Evicted(Slot),
    /// Every connection is in the middle of a request.
    Full,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // Nothing here can leave the list half-updated: a panic elsewhere does not spoil it.
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Slots {
    pub fn new(limit: usize) -> Arc<Slots> {
        Arc::new(Slots {
            limit,
            conns: Mutex::new(Vec::with_capacity(limit)),
        })
    }

    /// A slot for a connection just accepted (see the module doc for the rule).
    pub fn admit(self: &Arc<Self>) -> Admission {
        let mut conns = lock(&self.conns);
        let mut evicted = false;
        if conns.len() >= self.limit {
            let Some(victim) = Self::longest_idle(&conns) else {
                return Admission::Full;
            };
            let gone = conns.swap_remove(victim);
            gone.evict.notify_one();
            evicted = true;
        }
        let conn = Arc::new(Conn {
            state: AtomicU8::new(0),
            idle_since: Mutex::new(Instant::now()),
            evict: Notify::new(),
        });
        conns.push(conn.clone());
        let slot = Slot {
            slots: self.clone(),
            conn,
        };
        if evicted {
            Admission::Evicted(slot)
        } else {
            Admission::Free(slot)
        }
    }

    /// The index of the connection idle longest, now marked evicted; `None`: all are busy.
    fn longest_idle(conns: &[Arc<Conn>]) -> Option<usize> {
        let mut idle: Vec<(Instant, usize)> = conns
            .iter()
            .enumerate()
            .filter(|(_, c)| c.state.load(Ordering::Acquire) == 0)
            .map(|(i, c)| (*lock(&c.idle_since), i))
            .collect();
        idle.sort_unstable();
        // A connection may start a request between the look and the mark: then try the next.
        idle.into_iter().map(|(_, i)| i).find(|&i| {
            conns[i]
                .state
                .compare_exchange(0, EVICTED, Ordering::AcqRel, Ordering::Acquire)
                .is_ok()
        })
    }

    /// Connections holding a slot.
    #[cfg(test)]
    fn len(&self) -> usize {
        lock(&self.conns).len()
    }
}

impl Slot {
    /// The connection, for its requests ([`Conn::begin`]).
    pub fn conn(&self) -> Arc<Conn> {
        self.conn.clone()
    }

    /// Resolves when the connection has been chosen to give up its slot.
    pub async fn evicted(&self) {
        self.conn.evict.notified().await
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut conns = lock(&self.slots.conns);
        if let Some(i) = conns.iter().position(|c| Arc::ptr_eq(c, &self.conn)) {
            conns.swap_remove(i);
        }
    }
}

impl Conn {
    /// Marks a request in progress; `None` when the connection already gave up its slot
    /// (the request must not run).
    pub fn begin(self: &Arc<Self>) -> Option<Busy> {
        self.state
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |s| {
                (s & EVICTED == 0).then_some(s | BUSY)
            })
            .ok()?;
        Some(Busy(self.clone()))
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        *lock(&self.0.idle_since) = Instant::now();
        self.0.state.fetch_and(!BUSY, Ordering::AcqRel);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn slot(a: Admission) -> Slot {
        match a {
            Admission::Free(s) | Admission::Evicted(s) => s,
            Admission::Full => panic!("no slot"),
        }
    }

    #[test]
    fn a_full_house_gives_the_longest_idle_slot_away_and_never_a_busy_one() {
        let slots = Slots::new(3);
        let a = slot(slots.admit());
        let b = slot(slots.admit());
        let c = slot(slots.admit());
        assert_eq!(slots.len(), 3);
        // b and c are in the middle of requests; a is idle: a goes.
        let (b_busy, c_busy) = (b.conn().begin().unwrap(), c.conn().begin().unwrap());
        let d = match slots.admit() {
            Admission::Evicted(s) => s,
            _ => panic!("a was idle: its slot should be given away"),
        };
        assert_eq!(slots.len(), 3);
        assert!(
            a.conn().begin().is_none(),
            "a request on an evicted connection ran"
        );
        // a's own drop (its connection closing) frees nothing more.
        drop(a);
        assert_eq!(slots.len(), 3);
        // All busy: refused.
        let d_busy = d.conn().begin().unwrap();
        assert!(matches!(slots.admit(), Admission::Full));
        // c finishes first, then b: c has been idle longer, so c goes.
        drop(c_busy);
        std::thread::sleep(std::time::Duration::from_millis(5));
        drop(b_busy);
        let _e = slot(slots.admit());
        assert!(c.conn().begin().is_none(), "c was idle longest");
        assert!(b.conn().begin().is_some(), "b should keep its slot");
        drop(d_busy);
        // A slot freed by a connection closing is free again.
        drop(d);
        assert!(matches!(slots.admit(), Admission::Free(_)));
    }
}
