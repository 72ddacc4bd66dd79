//! What `roverlog bench` reads from `/proc` about the daemon it drives and the disk it writes
//! to: a process's resident memory (`VmRSS`, `VmHWM`), sampled from a thread while a load runs,
//! and which filesystem a directory is on. Linux only; every reader returns `None` elsewhere.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

/// A `kB` field of `/proc/<pid>/status` (`VmRSS`, `VmHWM`, ...), in bytes.
pub fn status_bytes(pid: u32, field: &str) -> Option<u64> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    parse_status_field(&text, field)
}

fn parse_status_field(text: &str, field: &str) -> Option<u64> {
    text.lines().find_map(|l| {
        let rest = l.strip_prefix(field)?.strip_prefix(':')?;
        let kib: u64 = rest.trim().strip_suffix("kB")?.trim().parse().ok()?;
        Some(kib * 1024)
    })
}

/// A process's CPU time so far (user + system, all its threads), from `/proc/<pid>/stat`.
pub fn cpu_seconds(pid: u32) -> Option<f64> {
    cpu_split(pid).map(|c| c.user + c.system)
}

/// A process's CPU time so far split into user and system, and its minor page faults (all
/// its threads).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct CpuSplit {
    pub user: f64,
    pub system: f64,
    pub minor_faults: u64,
}

impl CpuSplit {
    /// What was spent since `before`.
    pub fn since(self, before: CpuSplit) -> CpuSplit {
        CpuSplit {
            user: self.user - before.user,
            system: self.system - before.system,
            minor_faults: self.minor_faults.saturating_sub(before.minor_faults),
        }
    }
}

/// [`CpuSplit`] from `/proc/<pid>/stat`.
pub fn cpu_split(pid: u32) -> Option<CpuSplit> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // SAFETY: sysconf has no preconditions.
    let ticks = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    parse_stat_cpu(&text, ticks as f64)
}

/// `minflt`, `utime` and `stime` are fields 10, 14 and 15; the command name (field 2, in
/// parentheses) may hold spaces, so fields are counted after its closing parenthesis.
fn parse_stat_cpu(text: &str, ticks_per_s: f64) -> Option<CpuSplit> {
    let rest = &text[text.rfind(')')? + 1..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    let (u, s): (f64, f64) = (f.get(11)?.parse().ok()?, f.get(12)?.parse().ok()?);
    let minor_faults = f.get(7)?.parse().ok()?;
    (ticks_per_s > 0.0).then(|| CpuSplit {
        user: u / ticks_per_s,
        system: s / ticks_per_s,
        minor_faults,
    })
}

/// Polls a process's `VmRSS` every `period` on its own thread and keeps the largest value
/// seen since the last [`RssSampler::take_max`].
pub struct RssSampler {
    max: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl RssSampler {
    pub fn start(pid: u32, period: Duration) -> RssSampler {
        let max = Arc::new(AtomicU64::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let (m, s) = (Arc::clone(&max), Arc::clone(&stop));
        let thread = std::thread::Builder::new()
            .name("rss-sampler".into())
            .spawn(move || {
                while !s.load(Relaxed) {
                    if let Some(rss) = status_bytes(pid, "VmRSS") {
                        m.fetch_max(rss, Relaxed);
                    }
                    std::thread::sleep(period);
                }
            })
            .expect("spawning the RSS sampler");
        RssSampler {
            max,
            stop,
            thread: Some(thread),
        }
    }

    /// The largest `VmRSS` seen since the last call (0 if none was read); starts a new window.
    pub fn take_max(&self) -> u64 {
        self.max.swap(0, Relaxed)
    }
}

impl Drop for RssSampler {
    fn drop(&mut self) {
        self.stop.store(true, Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// The filesystem holding a directory, from `/proc/self/mountinfo`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Filesystem {
    pub mount_point: PathBuf,
    /// e.g. `ext4`, `tmpfs`, `overlay`.
    pub fs_type: String,
    /// e.g. `/dev/vda`.
    pub source: String,
}

/// The filesystem `dir` is on (the mount with the longest matching mount point).
pub fn filesystem_of(dir: &Path) -> Option<Filesystem> {
    let dir = dir.canonicalize().ok()?;
    let text = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    parse_mountinfo(&text)
        .into_iter()
        .filter(|f| dir.starts_with(&f.mount_point))
        .max_by_key(|f| f.mount_point.as_os_str().len())
}

/// mountinfo lines: `id parent maj:min root mount-point options [optional...] - type source
/// super-options`.
fn parse_mountinfo(text: &str) -> Vec<Filesystem> {
    text.lines()
        .filter_map(|l| {
            let fields: Vec<&str> = l.split(' ').collect();
            let sep = fields.iter().position(|&f| f == "-")?;
            Some(Filesystem {
                mount_point: PathBuf::from(unescape(fields.get(4)?)),
                fs_type: fields.get(sep + 1)?.to_string(),
                source: unescape(fields.get(sep + 2)?),
            })
        })
        .collect()
}

/// mountinfo escapes space, tab, newline and backslash as `\ooo`.
fn unescape(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\' && i + 3 < b.len() && b[i + 1..i + 4].iter().all(u8::is_ascii_digit) {
            let code = std::str::from_utf8(&b[i + 1..i + 4])
                .ok()
                .and_then(|o| u8::from_str_radix(o, 8).ok());
            if let Some(c) = code {
                out.push(c);
                i += 4;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_fields_are_read_in_bytes() {
        let text = "Name:\troverlog\nVmHWM:\t   20480 kB\nVmRSS:\t   10240 kB\nThreads:\t5\n";
        assert_eq!(parse_status_field(text, "VmRSS"), Some(10 << 20));
        assert_eq!(parse_status_field(text, "VmHWM"), Some(20 << 20));
        assert_eq!(parse_status_field(text, "Threads"), None);
        assert_eq!(parse_status_field(text, "VmSwap"), None);
    }

    #[test]
    fn cpu_time_is_read_from_stat() {
        let line = "42 (a b) c) S 1 42 42 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 3 0 1 1 1";
        let want = CpuSplit {
            user: 2.5,
            system: 0.5,
            minor_faults: 100,
        };
        assert_eq!(parse_stat_cpu(line, 100.0), Some(want));
        assert_eq!(parse_stat_cpu("garbage", 100.0), None);
        assert!(cpu_seconds(std::process::id()).is_some());
    }

    #[test]
    fn our_own_rss_is_sampled() {
        let s = RssSampler::start(std::process::id(), Duration::from_millis(1));
        std::thread::sleep(Duration::from_millis(20));
        assert!(s.take_max() > 0);
    }

    #[test]
    fn mountinfo_longest_match_and_escapes() {
        let text = "\
22 1 252:0 / / rw,relatime shared:1 - ext4 /dev/vda rw
40 22 0:35 / /work/my\\040dir rw,nosuid - tmpfs tmpfs rw,size=1024k
";
        let all = parse_mountinfo(text);
        assert_eq!(all.len(), 2);
        assert_eq!(all[1].mount_point, Path::new("/work/my dir"));
        assert_eq!(
            (all[0].fs_type.as_str(), all[0].source.as_str()),
            ("ext4", "/dev/vda")
        );
        // The root's filesystem is found for any real directory.
        let here = filesystem_of(Path::new(".")).unwrap();
        assert!(!here.fs_type.is_empty());
    }
}
