//! How many CPUs this process may use, and how many it kept busy.
//!
//! Every verb that works on many independent frames (and the daemon's compression pool) sizes
//! its workers with [`usable`], and reports the cores it kept busy with [`CoresBusy`].

use std::time::{Duration, Instant};

/// The CPUs this process may run on: its affinity mask (`sched_getaffinity`, so `taskset`
/// and cpusets count), capped by its cgroup CPU quota (v2 `cpu.max`, v1
/// `cpu.cfs_quota_us / cpu.cfs_period_us`, rounded down, at least 1). This is what
/// `std::thread::available_parallelism` computes on Linux (it reads both); 1 where it cannot
/// tell.
pub fn usable() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// A configured thread count: `0` means [`usable`], anything else is taken as given.
pub fn threads(configured: usize) -> usize {
    match configured {
        0 => usable(),
        n => n,
    }
}

/// User + system CPU time of this whole process (every thread) so far, from `getrusage`.
pub fn process_cpu() -> Duration {
    // SAFETY: an all-zero rusage is a valid value; getrusage fills the one we own.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: RUSAGE_SELF with a valid out-pointer.
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) } != 0 {
        return Duration::ZERO;
    }
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

/// Measures the cores a piece of work kept busy: this process's CPU time over the wall time
/// since [`CoresBusy::start`].
#[derive(Debug, Clone, Copy)]
pub struct CoresBusy {
    cpu: Duration,
    at: Instant,
}

/// What [`CoresBusy::finish`] measured.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Busy {
    /// CPU seconds (user + system, every thread).
    pub cpu: f64,
    /// Wall seconds.
    pub wall: f64,
}

impl Busy {
    /// CPU time per wall time: the cores kept busy on average.
    pub fn cores(&self) -> f64 {
        if self.wall > 0.0 {
            self.cpu / self.wall
        } else {
            0.0
        }
    }
}

impl std::fmt::Display for Busy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{:.2} cores busy ({:.2} CPU s over {:.2} wall s, {} usable)",
            self.cores(),
            self.cpu,
            self.wall,
            usable()
        )
    }
}

impl CoresBusy {
    pub fn start() -> CoresBusy {
        CoresBusy {
            cpu: process_cpu(),
            at: Instant::now(),
        }
    }

    pub fn finish(&self) -> Busy {
        Busy {
            cpu: process_cpu().saturating_sub(self.cpu).as_secs_f64(),
            wall: self.at.elapsed().as_secs_f64(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zero_means_usable_and_usable_follows_the_affinity_mask() {
        assert_eq!(threads(0), usable());
        assert_eq!(threads(5), 5);
        // SAFETY: zeroed cpu_set_t is valid; sched_getaffinity fills it.
        let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
        let r = unsafe { libc::sched_getaffinity(0, std::mem::size_of_val(&set), &mut set) };
        assert_eq!(r, 0);
        let mask = unsafe { libc::CPU_COUNT(&set) } as usize;
        assert!(usable() >= 1 && usable() <= mask, "{} of {mask}", usable());
    }

    /// This thread's own CPU time.
    fn thread_cpu() -> Duration {
        // SAFETY: a zeroed timespec is valid; clock_gettime fills the one we own.
        let mut t: libc::timespec = unsafe { std::mem::zeroed() };
        assert_eq!(
            unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) },
            0
        );
        Duration::new(t.tv_sec as u64, t.tv_nsec as u32)
    }

    #[test]
    fn busy_counts_the_cpu_of_every_thread() {
        let m = CoresBusy::start();
        // Each thread burns 0.1 s of its own CPU time, however long that takes on a busy
        // machine: the process's CPU time grows by at least 0.2 s.
        let spin = || {
            let mut x = 0u64;
            while thread_cpu() < Duration::from_millis(100) {
                x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(7));
            }
            x
        };
        std::thread::scope(|s| {
            s.spawn(spin);
            s.spawn(spin);
        });
        let b = m.finish();
        assert!(b.cpu >= 0.2, "{b}");
        assert!(b.wall > 0.0 && b.cores() == b.cpu / b.wall, "{b}");
    }
}
