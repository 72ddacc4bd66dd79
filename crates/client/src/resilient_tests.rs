//! [`ResilientDriver`] against a scripted stand-in daemon on a Unix socket: each accepted
//! connection answers the hello with a chosen trace and sample count, records the frames it
//! gets, answers durability requests, and may hang up after a number of frames like a daemon
//! that stops. The real daemon's restarts are tested in the root package (tests/).

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::net::UnixListener;
use std::thread::JoinHandle;

use roverlog_core::format::{ChannelFormat, ChannelMeta, DType};

use super::*;

/// What one connection of the stand-in daemon does.
#[derive(Clone)]
struct Conn {
    /// The hello reply.
    hello: Hello,
    /// Hang up (no reply) after this many frames.
    hang_up_after: Option<usize>,
    /// At the hang-up, first send the final durable count (protocol.md 6.1).
    final_line: bool,
}

/// How the stand-in daemon answers a hello.
#[derive(Clone)]
enum Hello {
    /// `{"ok": true, "trace": ..., "samples": ...}`.
    Accept { trace: &'static str, samples: u64 },
    /// `{"ok": false, "error": ...}`: the daemon's error line, word for word.
    Refuse(String),
}

fn accept(trace: &'static str, samples: u64, hang_up_after: Option<usize>) -> Conn {
    Conn {
        hello: Hello::Accept { trace, samples },
        hang_up_after,
        final_line: false,
    }
}

/// Serves `script`, one connection per entry; returns the timestamps each connection got.
fn serve(listener: UnixListener, script: Vec<Conn>) -> JoinHandle<Vec<Vec<f64>>> {
    std::thread::spawn(move || {
        let mut got = Vec::new();
        for c in script {
            let (mut s, _) = listener.accept().unwrap();
            s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
            let mut r = BufReader::new(s.try_clone().unwrap());
            let mut hello = String::new();
            r.read_line(&mut hello).unwrap();
            let (trace, samples) = match c.hello {
                Hello::Accept { trace, samples } => (trace, samples),
                Hello::Refuse(msg) => {
                    let line = serde_json::json!({"ok": false, "error": msg});
                    writeln!(s, "{line}").unwrap();
                    got.push(Vec::new());
                    continue;
                }
            };
            writeln!(
                s,
                r#"{{"ok": true, "trace": "{trace}", "samples": {samples}}}"#
            )
            .unwrap();
            let mut ts = Vec::new();
            loop {
                if c.hang_up_after == Some(ts.len()) {
                    if c.final_line {
                        let durable = samples + ts.len() as u64;
                        writeln!(
                            s,
                            r#"{{"ok": true, "durable": {durable}, "recording": true, "final": true}}"#
                        )
                        .unwrap();
                    }
                    break;
                }
                let mut len = [0; 4];
                if r.read_exact(&mut len).is_err() {
                    break;
                }
                let len = u32::from_le_bytes(len) as usize;
                if len == 0 {
                    let durable = samples + ts.len() as u64;
                    writeln!(
                        s,
                        r#"{{"ok": true, "durable": {durable}, "recording": true}}"#
                    )
                    .unwrap();
                    continue;
                }
                let mut frame = vec![0; len];
                r.read_exact(&mut frame).unwrap();
                ts.push(f64::from_le_bytes(frame[..8].try_into().unwrap()));
            }
            got.push(ts);
        }
        got
    })
}

fn meta() -> SensorMeta {
    SensorMeta {
        channels: vec![(
            "x".into(),
            ChannelMeta::new(ChannelFormat::Raw, DType::U1, vec![], ""),
        )],
    }
}

fn opts(max_retained: usize) -> ResilientOptions {
    ResilientOptions {
        max_bytes: 1 << 20,
        max_retained,
        reconnect_timeout: Duration::from_secs(10),
        ..Default::default()
    }
}

fn setup() -> (tempfile::TempDir, PathBuf, UnixListener) {
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("ingest.sock");
    let listener = UnixListener::bind(&socket).unwrap();
    (dir, socket, listener)
}

fn send_range(d: &mut ResilientDriver, r: std::ops::Range<u64>) {
    for i in r {
        d.push(i as f64, None, &[&[i as u8]]).unwrap();
    }
}

#[test]
fn after_a_hang_up_in_the_same_trace_only_what_the_daemon_lacks_is_resent() {
    let (_dir, socket, listener) = setup();
    // The daemon had 4 samples of the sensor; it keeps 7 of our 10 when it goes away.
    let daemon = serve(
        listener,
        vec![accept("t1", 4, Some(10)), accept("t1", 4 + 7, None)],
    );
    let mut d = ResilientDriver::connect(&socket, "s", meta(), false, &opts(1 << 20)).unwrap();
    assert_eq!((d.durable(), d.trace()), (4, "t1"));
    send_range(&mut d, 0..10);
    d.flush().unwrap();
    assert_eq!(d.sync().unwrap(), 14, "4 before ours, then our 10");
    assert_eq!(d.retained_bytes(), 0, "acknowledged durable: released");
    assert_eq!(d.expected_durable(), 14);
    drop(d);
    let got = daemon.join().unwrap();
    assert_eq!(got[0], (0..10).map(|i| i as f64).collect::<Vec<_>>());
    assert_eq!(got[1], [7.0, 8.0, 9.0], "frames 7.. resent, nothing else");
}

#[test]
fn after_a_hang_up_into_a_new_trace_everything_not_acknowledged_is_resent() {
    let (_dir, socket, listener) = setup();
    let daemon = serve(
        listener,
        vec![accept("t1", 0, Some(8)), accept("t2", 0, None)],
    );
    let mut d = ResilientDriver::connect(&socket, "s", meta(), false, &opts(1 << 20)).unwrap();
    send_range(&mut d, 0..5);
    assert_eq!(d.sync().unwrap(), 5);
    send_range(&mut d, 5..8);
    d.flush().unwrap();
    send_range(&mut d, 8..10);
    // The first connection hangs up after frame 7: 5.. go to the new trace, 8 and 9 with them.
    assert_eq!(d.sync().unwrap(), 5);
    assert_eq!((d.trace(), d.expected_durable(), d.sent()), ("t2", 5, 10));
    drop(d);
    let got = daemon.join().unwrap();
    assert_eq!(got[0].len(), 8);
    assert_eq!(got[1], [5.0, 6.0, 7.0, 8.0, 9.0]);
}

#[test]
fn after_a_final_count_only_what_the_stopped_trace_lacks_goes_to_the_new_one() {
    let (_dir, socket, listener) = setup();
    let stopping = Conn {
        final_line: true,
        ..accept("t1", 0, Some(8))
    };
    let daemon = serve(listener, vec![stopping, accept("t2", 0, None)]);
    let mut d = ResilientDriver::connect(&socket, "s", meta(), false, &opts(1 << 20)).unwrap();
    assert!(d.flags().final_ack, "asked for by default");
    send_range(&mut d, 0..5);
    assert_eq!(d.sync().unwrap(), 5);
    send_range(&mut d, 5..8);
    d.flush().unwrap();
    send_range(&mut d, 8..10);
    // The first connection ends after frame 7 with its final count 8: only 8 and 9 go on.
    assert_eq!(d.sync().unwrap(), 2);
    assert_eq!((d.trace(), d.expected_durable(), d.sent()), ("t2", 2, 10));
    assert_eq!(d.retained_bytes(), 0);
    drop(d);
    let got = daemon.join().unwrap();
    assert_eq!(got[0].len(), 8);
    assert_eq!(got[1], [8.0, 9.0]);
}

#[test]
fn a_daemon_that_does_not_know_an_opt_in_is_spoken_to_without_it() {
    let (_dir, socket, listener) = setup();
    let old = "hello: unknown key \"final_ack\" (expected roverlog, sensor, channels, seq)";
    let daemon = serve(
        listener,
        vec![
            Conn {
                hello: Hello::Refuse(old.into()),
                hang_up_after: None,
                final_line: false,
            },
            accept("t1", 0, None),
        ],
    );
    let mut d = ResilientDriver::connect(&socket, "s", meta(), true, &opts(1 << 20)).unwrap();
    let f = d.flags();
    assert!(f.seq && !f.final_ack && !f.dedup, "{f:?}");
    send_range(&mut d, 0..3);
    assert_eq!(d.sync().unwrap(), 3);
    drop(d);
    daemon.join().unwrap();
}

#[test]
fn frames_forgotten_by_a_full_retain_buffer_are_reported_when_needed() {
    let (_dir, socket, listener) = setup();
    // Frames are 13 bytes (length, ts, one byte): 30 bytes keep the last two.
    let daemon = serve(
        listener,
        vec![accept("t1", 0, Some(5)), accept("t1", 1, None)],
    );
    let mut d = ResilientDriver::connect(&socket, "s", meta(), false, &opts(30)).unwrap();
    send_range(&mut d, 0..5);
    assert_eq!(d.retained_bytes(), 26);
    let e = d.sync().unwrap_err();
    assert!(
        matches!(
            e,
            Error::Resume(ResumeError::RetainedLost {
                have: 1,
                retained_from: 3,
                ..
            })
        ),
        "{e}"
    );
    assert!(e.to_string().contains("raise max_retained"), "{e}");
    drop(d);
    daemon.join().unwrap();
}

#[test]
fn a_busy_sensor_is_retried_and_a_refusal_is_not() {
    let (_dir, socket, listener) = setup();
    let busy = "sensor \"s\" already has a live connection".to_string();
    let daemon = serve(
        listener,
        vec![
            Conn {
                hello: Hello::Refuse(busy),
                hang_up_after: None,
                final_line: false,
            },
            accept("t1", 0, None),
            Conn {
                hello: Hello::Refuse("channel \"x\": no".into()),
                hang_up_after: None,
                final_line: false,
            },
        ],
    );
    let mut d = ResilientDriver::connect(&socket, "s", meta(), false, &opts(1 << 20)).unwrap();
    d.send(1.0, None, &[&[1]]).unwrap();
    assert_eq!(d.sync().unwrap(), 1);
    drop(d);
    let e = ResilientDriver::connect(&socket, "s", meta(), false, &opts(1 << 20))
        .err()
        .unwrap();
    assert!(matches!(e, Error::Refused { .. }), "{e:?}");
    assert!(!is_daemon_gone(&e));
    assert!(
        e.to_string().ends_with("sensor \"s\": channel \"x\": no"),
        "{e}"
    );
    daemon.join().unwrap();
}

#[test]
fn a_daemon_that_stays_away_is_given_up_on_after_the_timeout() {
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("none.sock");
    let t0 = Instant::now();
    let o = ResilientOptions {
        reconnect_timeout: Duration::from_millis(200),
        ..Default::default()
    };
    let e = ResilientDriver::connect(&socket, "s", meta(), false, &o)
        .err()
        .unwrap();
    assert!(matches!(e, Error::NoDaemon { missing: true, .. }), "{e:?}");
    assert!(e.to_string().contains("none.sock"), "{e}");
    let took = t0.elapsed();
    // 20 + 40 + 80 ms of back-off, the last wait cut to end at the timeout.
    assert!(
        took >= Duration::from_millis(200) && took < Duration::from_secs(5),
        "{took:?}"
    );
}

#[test]
fn bad_samples_are_refused_before_anything_is_kept() {
    let (_dir, socket, listener) = setup();
    let daemon = serve(listener, vec![accept("t1", 0, None)]);
    let mut d = ResilientDriver::connect(&socket, "s", meta(), false, &opts(1 << 20)).unwrap();
    let e = d.push(1.0, None, &[&[1, 2]]).unwrap_err();
    assert_eq!(
        e.to_string(),
        "protocol error: sensor \"s\": channel 0: 2 bytes, expected 1"
    );
    let e = d.push(1.0, None, &[]).unwrap_err();
    assert!(
        e.to_string().ends_with("0 channel buffers for 1 channels"),
        "{e}"
    );
    assert_eq!((d.sent(), d.pending_bytes(), d.retained_bytes()), (0, 0, 0));
    assert_eq!(d.oldest_pending(), None);
    drop(d);
    daemon.join().unwrap();
}

#[test]
fn the_back_off_doubles_from_20_ms_up_to_1_s() {
    let mut b = Backoff::new();
    let waits: Vec<u64> = (0..9).map(|_| b.next_wait().as_millis() as u64).collect();
    assert_eq!(waits, [20, 40, 80, 160, 320, 640, 1000, 1000, 1000]);
}
