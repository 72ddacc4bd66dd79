//! Reference figures the daemon is judged against, measured on the same directory.
//!
//! - [`dd_fdatasync`]: `dd bs=1M conv=fdatasync`, the disk's sequential write speed through
//!   the page cache with one flush at the end. No logger writing the same bytes durably can
//!   beat it.
//! - [`dd_direct`]: `dd bs=1M oflag=direct`, bypassing the page cache (fails on file systems
//!   without `O_DIRECT`, such as tmpfs).
//! - [`socket_sink`]: a length-prefixed Unix-socket server appending each message to a file
//!   with one `write()`, fed one record per `write()`: the cost of the socket and the
//!   syscalls alone, with no format, checks or fsync policy. The daemon's per-sample
//!   overhead is measured against this.
//! - [`socket_discard`]: the same sender, and a reader that only counts what it receives: the
//!   most any server behind a one-`write()`-per-record driver can take on this machine.
//! - [`tokio_discard`]: `n` such readers as tasks of one tokio runtime, as the daemon's
//!   connection tasks are: the same ceiling for a server built that way.

use std::fs::{File, OpenOptions};
use std::io::{BufReader, Read, Write};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::Path;
use std::process::Command;
use std::time::Instant;

use super::Throughput;
use crate::error::{Error, Result};
use roverlog_core::error::IoContext;

/// What becomes of a baseline's file once it is timed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Leave {
    /// Removed at once.
    Removed,
    /// Left for the caller to remove (give each call its own directory): a disk whose speed
    /// depends on how much recently written data it holds then sees the same from every side.
    Kept,
}

/// What `dd` copies.
#[derive(Debug, Clone, Copy)]
pub enum Input<'a> {
    /// `/dev/zero`. Some virtual disks store zeros almost for free (this VM's did), so on
    /// those this is not the speed of the disk for real data.
    Zeros,
    /// A file of the same size, e.g. from [`random_source`] (in memory), read as dd writes.
    File(&'a Path),
}

/// `dd if=<input> of=<dir>/dd.bench bs=1M count=<mib> conv=fdatasync`, timed from spawn to
/// exit.
pub fn dd_fdatasync(dir: &Path, mib: u64, input: Input, leave: Leave) -> Result<Throughput> {
    dd(
        dir,
        mib,
        "conv=fdatasync",
        "dd bs=1M conv=fdatasync",
        input,
        leave,
    )
}

/// `dd if=<input> of=<dir>/dd.bench bs=1M count=<mib> oflag=direct conv=fdatasync`.
pub fn dd_direct(dir: &Path, mib: u64, input: Input, leave: Leave) -> Result<Throughput> {
    dd(
        dir,
        mib,
        "oflag=direct conv=fdatasync",
        "dd bs=1M oflag=direct",
        input,
        leave,
    )
}

/// A file of `mib` MiB of random bytes for [`Input::File`], in `/dev/shm` when there is one
/// (so reading it costs a memory copy, not a disk read), else the system temp directory.
/// The caller removes it.
pub fn random_source(mib: u64) -> Result<std::path::PathBuf> {
    let shm = Path::new("/dev/shm");
    let dir = if shm.is_dir() {
        shm.to_path_buf()
    } else {
        std::env::temp_dir()
    };
    let path = dir.join(format!("roverlog-bench-{}.random", std::process::id()));
    let mut f = File::create(&path).at(&path)?;
    let mut x = 0x2545_f491_4f6c_dd1du64;
    let mut block = vec![0u8; 1 << 20];
    for _ in 0..mib {
        for chunk in block.chunks_mut(8) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            chunk.copy_from_slice(&x.to_le_bytes()[..chunk.len()]);
        }
        f.write_all(&block).at(&path)?;
    }
    Ok(path)
}

fn dd(
    dir: &Path,
    mib: u64,
    flags: &str,
    name: &str,
    input: Input,
    leave: Leave,
) -> Result<Throughput> {
    let target = dir.join("dd.bench");
    let (input, name) = match input {
        Input::Zeros => (Path::new("/dev/zero"), format!("{name}, zeros")),
        Input::File(p) => (p, format!("{name}, random data")),
    };
    let mut cmd = Command::new("dd");
    cmd.arg(format!("if={}", input.display()))
        .arg(format!("of={}", target.display()))
        .arg("bs=1M")
        .arg(format!("count={mib}"))
        .args(flags.split_whitespace())
        // dd's own summary is locale-dependent; we time it ourselves.
        .env("LC_ALL", "C");
    let start = Instant::now();
    let out = cmd.output().at(Path::new("dd"))?;
    let elapsed = start.elapsed();
    if leave == Leave::Removed || !out.status.success() {
        let _ = std::fs::remove_file(&target);
    }
    if !out.status.success() {
        return Err(Error::io(
            &target,
            std::io::Error::other(format!(
                "{name} failed: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            )),
        ));
    }
    Ok(Throughput {
        name,
        bytes: mib << 20,
        samples: 0,
        elapsed,
    })
}

/// Sends `records` records of `record_bytes` each through a Unix socket in `dir` to a
/// server thread that appends every message to a file in `dir` with one `write()` and
/// fdatasyncs at the end. Each record goes out as one `write()` of `u32 len` + payload.
/// Timed from the first send until the server's fdatasync returns.
pub fn socket_sink(
    dir: &Path,
    records: u64,
    record_bytes: usize,
    leave: Leave,
) -> Result<Throughput> {
    socket_server(dir, records, record_bytes, Some(leave))
}

/// [`socket_sink`] with a server that reads (64 KiB at a time) and counts, and writes nothing.
pub fn socket_discard(dir: &Path, records: u64, record_bytes: usize) -> Result<Throughput> {
    socket_server(dir, records, record_bytes, None)
}

/// `sink`: write what is read to a file, then leave it so; `None`: only count.
fn socket_server(
    dir: &Path,
    records: u64,
    record_bytes: usize,
    sink: Option<Leave>,
) -> Result<Throughput> {
    let sock_path = dir.join("sink.bench.sock");
    let file_path = dir.join("sink.bench");
    let _ = std::fs::remove_file(&sock_path);
    let listener = UnixListener::bind(&sock_path).at(&sock_path)?;
    let file = OpenOptions::new()
        .create(true)
        .truncate(true)
        .write(true)
        .open(&file_path)
        .at(&file_path)?;

    let server = std::thread::spawn(move || -> std::io::Result<(u64, u64)> {
        let (stream, _) = listener.accept()?;
        match sink {
            Some(_) => write_all_to(stream, file),
            None => discard(stream, record_bytes),
        }
    });

    let run = || -> std::io::Result<Instant> {
        let mut client = UnixStream::connect(&sock_path)?;
        let record = record(record_bytes);
        let start = Instant::now();
        for _ in 0..records {
            client.write_all(&record)?;
        }
        Ok(start)
    };
    let started = run();
    if started.is_err() {
        // The server may still be waiting in accept(): give it a connection that closes.
        let _ = UnixStream::connect(&sock_path);
    }
    // The client is dropped: the server sees EOF, syncs and returns.
    let served = server.join().expect("sink thread panicked");
    let elapsed = started.at(&sock_path)?.elapsed();
    let _ = std::fs::remove_file(&sock_path);
    if sink != Some(Leave::Kept) {
        let _ = std::fs::remove_file(&file_path);
    }
    let (got, bytes) = served.at(&file_path)?;
    if got != records {
        return Err(Error::Short {
            what: "socket sink",
            got,
            sent: records,
        });
    }
    Ok(Throughput {
        name: match sink {
            Some(_) => format!("socket sink {record_bytes} B records"),
            None => format!("socket reader {record_bytes} B records, no work"),
        },
        bytes,
        samples: got,
        elapsed,
    })
}

/// The sink server: `u32 len` + payload per message, one `write()` per message; returns
/// (messages, payload bytes) once the peer closes and the file is synced.
fn write_all_to(stream: UnixStream, mut file: File) -> std::io::Result<(u64, u64)> {
    // Reading is buffered (as any sane server does); writing is not: one write() each.
    let mut r = BufReader::with_capacity(1 << 16, stream);
    let mut buf = Vec::new();
    let (mut n, mut bytes) = (0u64, 0u64);
    loop {
        let mut len = [0u8; 4];
        match r.read_exact(&mut len) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => break,
            Err(e) => return Err(e),
        }
        let len = u32::from_le_bytes(len) as usize;
        buf.resize(len, 0);
        r.read_exact(&mut buf)?;
        file.write_all(&buf)?;
        n += 1;
        bytes += len as u64;
    }
    file.sync_data()?;
    Ok((n, bytes))
}

/// `n` connections (socket pairs), each fed `records` records of `record_bytes` by its own
/// thread with one `write()` per record (`u32 len` + payload), each read by a task of one
/// multi-thread tokio runtime (a worker per CPU, the daemon's default) that reads 64 KiB at a
/// time and counts. Timed from the first send until every reader has seen EOF.
pub fn tokio_discard(n: usize, records: u64, record_bytes: usize) -> Result<Throughput> {
    use tokio::io::AsyncReadExt;
    let io = |e: std::io::Error| Error::io(Path::new("socketpair"), e);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_io()
        .build()
        .map_err(io)?;
    let (mut senders, mut readers) = (Vec::new(), Vec::new());
    for _ in 0..n {
        let (a, b) = UnixStream::pair().map_err(io)?;
        b.set_nonblocking(true).map_err(io)?;
        senders.push(a);
        readers.push(b);
    }
    let record = record(record_bytes);
    let start = Instant::now();
    let threads: Vec<_> = senders
        .into_iter()
        .map(|mut a| {
            let record = record.clone();
            std::thread::spawn(move || -> std::io::Result<()> {
                for _ in 0..records {
                    a.write_all(&record)?;
                }
                Ok(())
            })
        })
        .collect();
    let totals: Vec<std::io::Result<u64>> = rt.block_on(async {
        let tasks: Vec<_> = readers
            .into_iter()
            .map(|b| {
                tokio::spawn(async move {
                    let mut s = tokio::net::UnixStream::from_std(b)?;
                    let mut buf = vec![0u8; 1 << 16];
                    let mut total = 0u64;
                    loop {
                        match s.read(&mut buf).await? {
                            0 => return Ok(total),
                            k => total += k as u64,
                        }
                    }
                })
            })
            .collect();
        let mut out = Vec::new();
        for t in tasks {
            out.push(t.await.unwrap_or_else(|e| Err(std::io::Error::other(e))));
        }
        out
    });
    let elapsed = start.elapsed();
    for t in threads {
        t.join().expect("sender thread panicked").map_err(io)?;
    }
    let total: u64 = totals
        .into_iter()
        .sum::<std::io::Result<u64>>()
        .map_err(io)?;
    let got = total / (4 + record_bytes as u64);
    if got != n as u64 * records {
        return Err(Error::Short {
            what: "tokio readers",
            got,
            sent: n as u64 * records,
        });
    }
    Ok(Throughput {
        name: format!("{n} x socket reader {record_bytes} B records, tokio tasks, no work"),
        bytes: got * record_bytes as u64,
        samples: got,
        elapsed,
    })
}

/// One message as the socket baselines send it: `u32 len`, then `len` bytes.
fn record(record_bytes: usize) -> Vec<u8> {
    let mut record = Vec::with_capacity(4 + record_bytes);
    record.extend_from_slice(&(record_bytes as u32).to_le_bytes());
    record.extend((0..record_bytes).map(|i| (i * 31) as u8));
    record
}

/// Reads until EOF and counts: (messages, payload bytes), from the stream's length alone.
fn discard(mut stream: UnixStream, record_bytes: usize) -> std::io::Result<(u64, u64)> {
    let mut buf = vec![0u8; 1 << 16];
    let mut total = 0u64;
    loop {
        match stream.read(&mut buf)? {
            0 => break,
            n => total += n as u64,
        }
    }
    let n = total / (4 + record_bytes as u64);
    Ok((n, n * record_bytes as u64))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn socket_sink_counts_every_record() {
        let dir = tempfile::tempdir().unwrap();
        let t = socket_sink(dir.path(), 1000, 44, Leave::Removed).unwrap();
        assert_eq!((t.samples, t.bytes), (1000, 44_000));
        // Nothing left behind in the target directory.
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
        // Kept: the file stays, with every record's payload.
        socket_sink(dir.path(), 1000, 44, Leave::Kept).unwrap();
        let kept = std::fs::metadata(dir.path().join("sink.bench")).unwrap();
        assert_eq!(kept.len(), 44_000);
    }

    #[test]
    fn dd_copies_a_random_source_byte_for_byte() {
        let dir = tempfile::tempdir().unwrap();
        let src = random_source(2).unwrap();
        let t = dd_fdatasync(dir.path(), 2, Input::File(&src), Leave::Kept).unwrap();
        assert!(t.name.ends_with("random data"), "{}", t.name);
        let (a, b) = (
            std::fs::read(&src).unwrap(),
            std::fs::read(dir.path().join("dd.bench")),
        );
        std::fs::remove_file(&src).unwrap();
        assert_eq!(a.len(), 2 << 20);
        assert!(a == b.unwrap(), "dd wrote other bytes");
        // Not zeros, and not one repeated block.
        assert!(a.iter().filter(|&&x| x == 0).count() < a.len() / 100);
        assert_ne!(a[..1 << 20], a[1 << 20..]);
    }

    #[test]
    fn socket_discard_counts_every_record() {
        let dir = tempfile::tempdir().unwrap();
        let t = socket_discard(dir.path(), 1000, 44).unwrap();
        assert_eq!((t.samples, t.bytes), (1000, 44_000));
        assert!(t.name.contains("no work"), "{}", t.name);
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }

    #[test]
    fn tokio_discard_counts_every_record() {
        let t = tokio_discard(3, 1000, 44).unwrap();
        assert_eq!((t.samples, t.bytes), (3000, 132_000));
        assert!(t.name.contains("tokio"), "{}", t.name);
    }

    #[test]
    fn dd_writes_and_cleans_up() {
        let dir = tempfile::tempdir().unwrap();
        let t = dd_fdatasync(dir.path(), 2, Input::Zeros, Leave::Removed).unwrap();
        assert_eq!(t.bytes, 2 << 20);
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
        dd_fdatasync(dir.path(), 2, Input::Zeros, Leave::Kept).unwrap();
        assert_eq!(
            std::fs::metadata(dir.path().join("dd.bench"))
                .unwrap()
                .len(),
            2 << 20
        );
        assert!(t.mb_per_sec() > 0.0);
    }

    #[test]
    fn dd_failure_is_an_error_naming_the_target() {
        let err =
            dd_fdatasync(Path::new("/nonexistent-dir"), 1, Input::Zeros, Leave::Kept).unwrap_err();
        assert!(err.to_string().contains("/nonexistent-dir"), "{err}");
    }
}
