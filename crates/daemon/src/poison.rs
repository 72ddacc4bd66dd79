//! Poisoned-lock recovery in one place. A panic while a lock is held (a writer thread's bug,
//! caught by `Writer::run`) must not take the rest of the daemon down with it: every lock of
//! the daemon guards plain data that stays consistent between statements, so the guard is
//! taken back rather than the panic propagated.

use std::sync::{Mutex, MutexGuard};

/// [`Mutex::lock`] that recovers the guard from a poisoned lock.
pub trait LockExt<T> {
    fn lock_or_recover(&self) -> MutexGuard<'_, T>;
}

impl<T> LockExt<T> for Mutex<T> {
    fn lock_or_recover(&self) -> MutexGuard<'_, T> {
        self.lock().unwrap_or_else(|p| p.into_inner())
    }
}
