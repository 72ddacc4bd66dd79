//! A blob channel's open files are bounded, whatever the frame rate and the fsync period
//! (issue 25): thousands of small `jpg` frames within one fsync period, into a daemon whose
//! open-file limit is 256, are all written and durable, and the sensor never fails.

use crate::support::daemon;

use std::os::unix::process::CommandExt;

use daemon::*;
use serde_json::json;

#[test]
fn thousands_of_small_blob_frames_in_one_fsync_period_under_an_open_file_limit_of_256() {
    // One fsync period (10 s) longer than the burst: without the bound every frame's file
    // would stay open until it.
    let mut d = TestDaemon::create(json!({"fsync_interval_ms": 10_000, "blob_max_open_files": 32}));
    let mut cmd = d.command();
    // SAFETY: setrlimit is async-signal-safe; nothing else runs between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            let lim = libc::rlimit {
                rlim_cur: 256,
                rlim_max: 256,
            };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &lim) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    d.spawn_cmd(cmd);
    // autostart (the default) has opened a trace.
    let hello = json!({"roverlog": 1, "sensor": "cam", "channels": [
        {"name": "img", "format": "jpg", "type": "u1", "shape": [8]}]});
    let (mut c, reply) = d.connect(&hello);
    assert_eq!(reply["ok"], true, "{reply}");
    let n = 3000u64;
    let mut burst = Vec::new();
    for i in 0..n {
        burst.extend(frame(i as f64 * 1e-3, None, &[(&sample(3, i, 40), true)]));
    }
    c.send(&burst);
    assert_eq!(c.sync(), n, "every frame durable; daemon log:\n{}", d.log());
    let st = d.status();
    let cam = &st["sensors"]["cam"];
    assert!(
        cam["failed"].is_null() && cam["samples"] == n,
        "the sensor failed: {cam}\n{}",
        d.log()
    );
    let trace = d.trace_dir();
    assert_eq!(d.ctl(json!({"cmd": "stop"}))["ok"], true);
    let (ts, data) = read_sensor(&trace, "cam", "img");
    assert_eq!(ts.len() as u64, n);
    for (i, got) in data.iter().enumerate() {
        assert_eq!(got, &sample(3, i as u64, 40), "frame {i}");
    }
}
