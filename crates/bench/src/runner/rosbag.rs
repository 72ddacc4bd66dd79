//! `roverlog bench --only rosbag`: the `rosbag` verb on a full-size trace against upstream's
//! `roverd rosbag`, same run. The trace (`crate::rosbag_trace`: `--lidar-frames`
//! OS1-128 frames of 128 x 2048, `rfl`, `nir`, `rng` as `lzmaf`, a real-shaped `lidar.json`,
//! a 100 Hz IMU) is written once; then the rounds alternate upstream and ours, each a child
//! process writing a ROS 1 bag with `--min_range 0.5` into the working directory. Each run's
//! CPU time (user + system, its own `getrusage` through `wait4`) and wall time are reported,
//! and the ratios of the totals. Upstream runs when `--upstream-python` (or
//! `$ROVERLOG_UPSTREAM_PYTHON`) names a Python where `roverd` with its `ros` extra imports
//! (roverd is not on the package index: it is never run in CI); without it, ours alone.
//!
//! Both bags must hold the same message counts: checked from the verbs' own reports (ours
//! prints them; upstream's is read back with `rosbags` in its Python).

use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use super::error::{current_exe, CommandError, Result, UsageError};
use super::{finish, load_average, make_work_dir, progress, rig::UPSTREAM_ENV, Options};

/// One verb's run.
struct Run {
    cpu_s: f64,
    wall_s: f64,
    bag_bytes: u64,
}

/// Runs `cmd` to completion; its own CPU time from `wait4`.
fn run(mut cmd: Command, what: &str, bag: &Path) -> Result<Run> {
    let start = Instant::now();
    let child = cmd
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|error| CommandError::Start {
            command: what.to_owned(),
            error,
        })?;
    let pid = child.id() as libc::pid_t;
    let mut status = 0;
    // SAFETY: an all-zero rusage is a valid out-value.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: waiting for our own child, valid out-pointers.
    let r = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    let wall_s = start.elapsed().as_secs_f64();
    if r != pid {
        return Err(CommandError::Wait {
            command: what.to_owned(),
            error: std::io::Error::last_os_error(),
        }
        .into());
    }
    let ok = libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0;
    if !ok {
        let mut err = String::new();
        if let Some(mut e) = child.stderr {
            use std::io::Read;
            let _ = e.read_to_string(&mut err);
        }
        return Err(CommandError::Failed {
            command: what.to_owned(),
            status: std::process::ExitStatus::from_raw(status),
            stderr: err.trim().to_owned(),
        }
        .into());
    }
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 * 1e-6;
    let bag_bytes = std::fs::metadata(bag)
        .map_err(|error| CommandError::NoOutput {
            command: what.to_owned(),
            path: bag.to_path_buf(),
            error,
        })?
        .len();
    Ok(Run {
        cpu_s: tv(usage.ru_utime) + tv(usage.ru_stime),
        wall_s,
        bag_bytes,
    })
}

/// Message counts of a ROS 1 bag, read with `rosbags` in `python`.
fn counts(python: &Path, bag: &Path) -> Result<String> {
    let out = Command::new(python)
        .arg("-c")
        .arg(
            "import sys\nfrom rosbags.rosbag1 import Reader\n\
             with Reader(sys.argv[1]) as r:\n\
             \x20   c = {}\n\
             \x20   for x in r.connections: c[x.topic] = c.get(x.topic, 0) + x.msgcount\n\
             print(' '.join(f'{k}={v}' for k, v in sorted(c.items())))",
        )
        .arg(bag)
        .output();
    let command = || format!("rosbags reading {}", bag.display());
    let out = out.map_err(|error| CommandError::Start {
        command: command(),
        error,
    })?;
    if !out.status.success() {
        return Err(CommandError::Failed {
            command: command(),
            status: out.status,
            stderr: String::from_utf8_lossy(&out.stderr).trim().to_owned(),
        }
        .into());
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

pub(super) fn run_bench(args: &Options) -> Result<bool> {
    let frames = args.lidar_frames;
    if frames == 0 {
        return Err(UsageError::Zero {
            option: "--lidar-frames",
        }
        .into());
    }
    let rounds = args.rounds.unwrap_or(3).max(1);
    let upstream: Option<PathBuf> = args
        .upstream_python
        .clone()
        .or_else(|| std::env::var_os(UPSTREAM_ENV).map(PathBuf::from));
    let work = make_work_dir(args.dir.as_deref())?;
    let trace = work.join("trace");
    progress(&format!(
        "writing {} ({frames} lidar frames, {} IMU samples)",
        trace.display(),
        frames * crate::rosbag_trace::IMU_PER_FRAME
    ));
    crate::rosbag_trace::write(&trace, frames)?;
    let exe = current_exe()?;

    let mut ours = Vec::new();
    let mut theirs = Vec::new();
    let mut checked = None;
    for round in 0..rounds {
        if let Some(py) = &upstream {
            let bag = work.join(format!("upstream-{round}.bag"));
            let mut cmd = Command::new(py);
            cmd.arg("-c")
                .arg("import sys; from roverd import _cli; sys.argv[0] = 'roverd'; sys.exit(_cli.cli_main())")
                .args(["rosbag"])
                .arg(&trace)
                .arg("--out")
                .arg(&bag)
                .args(["--min_range", "0.5"])
                .env("TQDM_DISABLE", "1");
            let r = run(cmd, "upstream roverd rosbag", &bag)?;
            progress(&format!(
                "round {round}: upstream {:.2} s CPU, {:.2} s wall",
                r.cpu_s, r.wall_s
            ));
            theirs.push(r);
            if round == 0 {
                checked = Some((py.clone(), bag.clone()));
            } else {
                let _ = std::fs::remove_file(&bag);
            }
        }
        let bag = work.join(format!("ours-{round}.bag"));
        let mut cmd = Command::new(&exe);
        cmd.arg("rosbag")
            .arg(&trace)
            .arg("--out")
            .arg(&bag)
            .args(["--min-range", "0.5"]);
        let r = run(cmd, "roverlog rosbag", &bag)?;
        progress(&format!(
            "round {round}: ours {:.2} s CPU, {:.2} s wall",
            r.cpu_s, r.wall_s
        ));
        ours.push(r);
        if round > 0 || upstream.is_none() {
            let _ = std::fs::remove_file(&bag);
        }
    }

    let mut ok = true;
    if let Some((py, theirs_bag)) = &checked {
        let a = counts(py, theirs_bag)?;
        let b = counts(py, &work.join("ours-0.bag"))?;
        println!("messages: upstream {a}; ours {b}");
        if a != b {
            println!("FAIL: the bags hold different message counts");
            ok = false;
        }
    }
    let line = |name: &str, runs: &[Run]| {
        let cpu: Vec<String> = runs.iter().map(|r| format!("{:.2}", r.cpu_s)).collect();
        let wall: Vec<String> = runs.iter().map(|r| format!("{:.2}", r.wall_s)).collect();
        println!(
            "{name}: CPU {} s, wall {} s, bag {:.0} MB",
            cpu.join(" / "),
            wall.join(" / "),
            runs.first().map_or(0, |r| r.bag_bytes) as f64 / 1e6
        );
    };
    println!(
        "rosbag: {frames} lidar frames 128 x 2048, {} IMU samples, --min-range 0.5, {rounds} rounds alternating",
        frames * crate::rosbag_trace::IMU_PER_FRAME
    );
    if !theirs.is_empty() {
        line("upstream roverd rosbag", &theirs);
    }
    line("roverlog rosbag", &ours);
    if !theirs.is_empty() {
        let sum = |v: &[Run], f: fn(&Run) -> f64| v.iter().map(f).sum::<f64>();
        println!(
            "upstream / ours: CPU {:.2}x, wall {:.2}x",
            sum(&theirs, |r| r.cpu_s) / sum(&ours, |r| r.cpu_s),
            sum(&theirs, |r| r.wall_s) / sum(&ours, |r| r.wall_s)
        );
    } else {
        println!("upstream not run (no --upstream-python or {UPSTREAM_ENV})");
    }
    println!(
        "load average at the end: {}",
        load_average().unwrap_or_default()
    );
    finish(&work, args.keep, ok);
    Ok(ok)
}
