//! Helpers for the daemon integration tests: start the real `roverlog daemon` binary on
//! sockets and a data directory in a temp dir, speak raw bytes to it like a driver.

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

// For the tests that read events; each test crate uses some of them.
#[allow(unused_imports)]
pub use roverlog_core::format::events::{read_events, ClockStepKind, Count, Event, EventLine};

pub mod http;

pub struct TestDaemon {
    pub dir: tempfile::TempDir,
    pub config: PathBuf,
    pub child: Option<Child>,
}

pub fn base_config(dir: &Path) -> Value {
    json!({
        "data_root": dir.join("data"),
        "ingest_socket": dir.join("run/ingest.sock"),
        "control_socket": dir.join("run/control.sock"),
        "min_free_bytes": 0,
        "stats_interval_ms": 1000,
    })
}

impl TestDaemon {
    /// Starts a daemon with the base config plus `extra` keys.
    pub fn start(extra: Value) -> TestDaemon {
        let mut d = TestDaemon::create(extra);
        d.spawn();
        d
    }

    /// Writes the config (base plus `extra`) without starting the daemon; start it with
    /// [`TestDaemon::spawn`] or [`TestDaemon::spawn_cmd`].
    pub fn create(extra: Value) -> TestDaemon {
        let dir = tempfile::tempdir().unwrap();
        let mut cfg = base_config(dir.path());
        for (k, v) in extra.as_object().unwrap() {
            cfg[k] = v.clone();
        }
        let config = dir.path().join("roverlog.json");
        std::fs::write(&config, serde_json::to_vec_pretty(&cfg).unwrap()).unwrap();
        TestDaemon {
            dir,
            config,
            child: None,
        }
    }

    /// `roverlog daemon --config <config>`, not started.
    pub fn command(&self) -> Command {
        let mut cmd = Command::new(crate::common::roverlog_bin());
        cmd.args(["daemon", "--config"]).arg(&self.config);
        cmd
    }

    /// (Re)starts the daemon process with the same config and data.
    pub fn spawn(&mut self) {
        let cmd = self.command();
        self.spawn_cmd(cmd);
    }

    /// Starts `cmd` (which must run the daemon, e.g. [`TestDaemon::command`] with an
    /// environment) with stderr to `daemon.log`, and waits until the control socket answers.
    pub fn spawn_cmd(&mut self, mut cmd: Command) {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir.path().join("daemon.log"))
            .unwrap();
        let child = cmd.stdout(Stdio::null()).stderr(log).spawn().unwrap();
        self.child = Some(child);
        let t0 = Instant::now();
        loop {
            if UnixStream::connect(self.control_path()).is_ok() {
                let st = self.ctl(json!({"cmd": "status"}));
                if st["ok"] == true {
                    return;
                }
            }
            if let Some(status) = self.child.as_mut().unwrap().try_wait().unwrap() {
                panic!("daemon exited at start: {status}\n{}", self.log());
            }
            assert!(
                t0.elapsed() < Duration::from_secs(20),
                "daemon did not start"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("daemon.log")).unwrap_or_default()
    }

    pub fn ingest_path(&self) -> PathBuf {
        self.dir.path().join("run/ingest.sock")
    }

    pub fn control_path(&self) -> PathBuf {
        self.dir.path().join("run/control.sock")
    }

    pub fn data_root(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    /// One control command, one reply.
    pub fn ctl(&self, cmd: Value) -> Value {
        let mut s = UnixStream::connect(self.control_path()).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        let mut l = serde_json::to_vec(&cmd).unwrap();
        l.push(b'\n');
        s.write_all(&l).unwrap();
        let mut reply = String::new();
        BufReader::new(s).read_line(&mut reply).unwrap();
        serde_json::from_str(&reply).unwrap_or_else(|e| panic!("{e}: {reply:?}"))
    }

    pub fn status(&self) -> Value {
        self.ctl(json!({"cmd": "status"}))
    }

    /// The open trace's directory.
    pub fn trace_dir(&self) -> PathBuf {
        let st = self.status();
        PathBuf::from(st["trace_dir"].as_str().expect("recording"))
    }

    pub fn signal(&self, sig: i32) {
        let pid = self.child.as_ref().unwrap().id() as i32;
        // SAFETY: sending a signal to our own child.
        assert_eq!(unsafe { libc::kill(pid, sig) }, 0);
    }

    /// Waits for the process to exit (panics after `secs`).
    pub fn wait(&mut self, secs: u64) -> ExitStatus {
        let t0 = Instant::now();
        let child = self.child.as_mut().unwrap();
        loop {
            if let Some(s) = child.try_wait().unwrap() {
                self.child = None;
                return s;
            }
            assert!(
                t0.elapsed() < Duration::from_secs(secs),
                "daemon did not exit"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// SIGTERM and wait; returns the exit status.
    pub fn stop(&mut self) -> ExitStatus {
        self.signal(libc::SIGTERM);
        self.wait(30)
    }

    pub fn kill9(&mut self) {
        let mut c = self.child.take().unwrap();
        c.kill().unwrap();
        c.wait().unwrap();
    }

    /// Polls `status` until `ok` holds (at most 60 s, then fails naming `what`); returns it.
    pub fn wait_status(&self, what: &str, ok: impl Fn(&Value) -> bool) -> Value {
        let t0 = Instant::now();
        loop {
            let st = self.status();
            if ok(&st) {
                return st;
            }
            assert!(t0.elapsed() < Duration::from_secs(60), "{what}: {st}");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// For each of the daemon's open descriptors of `file`: whether it has `O_DIRECT`, from
    /// `/proc/<pid>/fdinfo` (`flags` is octal).
    pub fn open_with_direct(&self, file: &Path) -> Vec<bool> {
        let pid = self.child.as_ref().expect("daemon running").id();
        let want = std::fs::canonicalize(file).unwrap();
        let mut found = Vec::new();
        for e in std::fs::read_dir(format!("/proc/{pid}/fd")).unwrap() {
            let e = e.unwrap();
            if std::fs::read_link(e.path()).ok().as_deref() != Some(want.as_path()) {
                continue;
            }
            let fd = e.file_name();
            let info =
                std::fs::read_to_string(format!("/proc/{pid}/fdinfo/{}", fd.to_str().unwrap()))
                    .unwrap();
            let flags = info
                .lines()
                .find_map(|l| l.strip_prefix("flags:"))
                .map(|f| u32::from_str_radix(f.trim(), 8).unwrap())
                .unwrap();
            found.push(flags & libc::O_DIRECT as u32 != 0);
        }
        found
    }

    pub fn connect(&self, hello: &Value) -> (Driver, Value) {
        Driver::connect(&self.ingest_path(), hello)
    }
}

impl Drop for TestDaemon {
    fn drop(&mut self) {
        if let Some(c) = self.child.as_mut() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// A driver connection.
pub struct Driver {
    pub stream: UnixStream,
    reader: BufReader<UnixStream>,
}

impl Driver {
    pub fn connect(path: &Path, hello: &Value) -> (Driver, Value) {
        let mut line = serde_json::to_vec(hello).unwrap();
        line.push(b'\n');
        Self::connect_raw(path, &line)
    }

    pub fn connect_raw(path: &Path, hello: &[u8]) -> (Driver, Value) {
        let mut stream = UnixStream::connect(path).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(30)))
            .unwrap();
        let reader = BufReader::new(stream.try_clone().unwrap());
        stream.write_all(hello).unwrap();
        let mut d = Driver { stream, reader };
        let reply = d.read_reply();
        (d, reply)
    }

    pub fn read_reply(&mut self) -> Value {
        let mut l = String::new();
        self.reader.read_line(&mut l).unwrap();
        serde_json::from_str(&l).unwrap_or_else(|e| panic!("{e}: {l:?}"))
    }

    pub fn send(&mut self, bytes: &[u8]) {
        self.stream.write_all(bytes).unwrap();
    }

    /// `len = 0`: asks for durability, returns the durable count.
    pub fn sync(&mut self) -> u64 {
        self.send(&0u32.to_le_bytes());
        let r = self.read_reply();
        assert_eq!(r["ok"], true, "{r}");
        r["durable"].as_u64().unwrap()
    }

    /// Whether the daemon closed the connection (reads to EOF; returns trailing text).
    pub fn read_to_end(&mut self) -> String {
        let mut s = String::new();
        let _ = self.reader.read_to_string(&mut s);
        s
    }
}

/// A frame: `len`, `ts`, optional `seq`, then channel bytes (`var` marks channels that get a
/// `u32` length prefix).
pub fn frame(ts: f64, seq: Option<u64>, channels: &[(&[u8], bool)]) -> Vec<u8> {
    let mut body = ts.to_le_bytes().to_vec();
    if let Some(s) = seq {
        body.extend(s.to_le_bytes());
    }
    for (c, var) in channels {
        if *var {
            body.extend((c.len() as u32).to_le_bytes());
        }
        body.extend(*c);
    }
    let mut f = (body.len() as u32).to_le_bytes().to_vec();
    f.extend(body);
    f
}

/// The hello of a sensor with one raw `u1 [n]` channel `x`.
pub fn raw_hello(sensor: &str, n: usize) -> Value {
    json!({"roverlog": 1, "sensor": sensor,
           "channels": [{"name": "x", "format": "raw", "type": "u1", "shape": [n], "desc": "test"}]})
}

/// Deterministic sample bytes for sample `i` of sensor `salt`.
pub fn sample(salt: u8, i: u64, n: usize) -> Vec<u8> {
    (0..n)
        .map(|k| (i as usize * 31 + k * 7 + salt as usize) as u8)
        .collect()
}

/// Reads a sensor back with the format library: timestamps and channel `ch` samples; checks
/// consistency with `check_sensor`.
pub fn read_sensor(trace: &Path, sensor: &str, ch: &str) -> (Vec<f64>, Vec<Vec<u8>>) {
    let dir = trace.join(sensor);
    let check =
        roverlog_core::format::check_sensor(&dir, roverlog_core::format::Depth::Structure).unwrap();
    assert!(check.is_ok(), "{:?}", check.all_problems());
    let t = roverlog_core::format::Trace::open(trace).unwrap();
    let s = t.sensor(sensor).unwrap();
    let ts = s.timestamps().unwrap();
    let mut r = s.channel(ch).unwrap();
    let n = r.len().unwrap();
    assert_eq!(n, ts.len() as u64, "channel {ch} vs ts");
    let data = (0..n).map(|i| r.get(i).unwrap().into_owned()).collect();
    (ts, data)
}

/// Every event of a trace's log; a line that is not an event fails the test.
pub fn events(trace: &Path) -> Vec<EventLine> {
    read_events(trace).unwrap_or_else(|e| panic!("reading the events: {e}"))
}

/// The write end of a pipe whose reader is already gone: a command's stdout as in
/// `roverlog ... | head -0`.
pub fn closed_pipe() -> std::os::fd::OwnedFd {
    use std::os::fd::{FromRawFd, OwnedFd};
    let mut fds = [0; 2];
    // SAFETY: pipe() fills two new descriptors, each then owned exactly once.
    assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
    let (read_end, write_end) =
        unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    drop(read_end);
    write_end
}

/// Asserts that a command whose stdout was a [`closed_pipe`] ended as other Unix tools do:
/// successfully, or killed by SIGPIPE when it printed; not a panic, not a failure.
pub fn assert_quiet_on_closed_pipe(out: &std::process::Output) {
    use std::os::unix::process::ExitStatusExt;
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() || out.status.signal() == Some(libc::SIGPIPE),
        "{:?}: {err}",
        out.status
    );
}

/// Sends `n` frames of a 4-byte raw sample to `sensor` one at a time, each read by the
/// daemon before the next is sent: each becomes its own queue message, so the writer proves
/// progress after every sample. (Such a frame costs 16 bytes of queue budget until written.)
pub fn feed_one_by_one(d: &TestDaemon, c: &mut Driver, sensor: &str, n: u64) {
    for i in 0..n {
        c.send(&frame(i as f64, None, &[(&[1, 2, 3, 4], false)]));
        d.wait_status("frame read", |st| {
            let s = &st["sensors"][sensor];
            s["samples"].as_u64().unwrap() * 16 + s["queue_bytes"].as_u64().unwrap() >= (i + 1) * 16
        });
    }
}

/// Waits for `child` (its output piped or not) to exit within `secs`, collecting its output;
/// on timeout kills it and panics naming `what` was awaited.
pub fn output_within(child: Child, secs: u64, what: &str) -> std::process::Output {
    let pid = child.id() as i32;
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    match rx.recv_timeout(Duration::from_secs(secs)) {
        Ok(out) => out.unwrap(),
        Err(_) => {
            // SAFETY: a signal to our own child, which has not been reaped (its waiter
            // has not returned).
            unsafe { libc::kill(pid, libc::SIGKILL) };
            panic!("{what}: no exit within {secs} s (killed)");
        }
    }
}

/// Starts the daemon with `extra` config keys and expects it to refuse them: exit code 2
/// within 20 s, `msg` on stderr, and no control socket left behind.
pub fn refused(extra: Value, msg: &str) {
    let d = TestDaemon::create(extra);
    let child = d
        .command()
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let out = output_within(
        child,
        20,
        &format!("the daemon refusing a bad config ({msg})"),
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains(msg), "expected {msg:?} in: {err}");
    assert!(
        !d.control_path().exists(),
        "a refused daemon left its control socket"
    );
}
