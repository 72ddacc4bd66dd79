//! Which `.xz` encoder the `lzmaf` writer uses: MB/s per core and compression ratio of each
//! candidate at preset 0 (what upstream's collector uses) on realistic lidar frames
//! (`roverlog_bench::lidar`: the rig's 128 x 2048 `rfl` u1, `nir` u2, `rng` u2 images
//! ray-cast from a street scene), each channel of each frame compressed on its own as
//! `lzmaf` stores them. The same bytes go through Python's `lzma` (upstream's encoder) in the
//! same run. Also whether each decoder reads a multi-stream `.xz` file (what `lzma` channels
//! can hold). And the cost of the daemon's fallback for frames compression cannot keep up
//! with: the same `.xz` framing with the data stored uncompressed (`format::stored_xz`).
//!
//! Per core: every encoder runs on one thread; the rate is input bytes over that thread's CPU
//! time (`CLOCK_THREAD_CPUTIME_ID`, so other work on a shared machine does not count), with
//! the wall-clock rate beside it.
//!
//! Last, the writer's own `lzma::compress` under the daemon's glibc allocator thresholds
//! (`roverlog_daemon::malloc_policy`) against the ones it had before (every allocation of
//! 128 KiB or more its own mapping): the encoder allocates its tables afresh per frame, so
//! what those thresholds decide is whether each frame faults fresh pages in (system CPU, minor
//! faults per frame) or reuses the last frame's. Both must give the same bytes.
//!
//! Run: `cargo bench --bench lzma_codec` (needs the project venv: `scripts/py-env.sh`).

use std::io::Write;
use std::process::Command;
use std::time::Instant;

use roverlog_bench::lidar::{lidar_frame, RIG_SHAPE};
use roverlog_core::format::{lzma, stored_xz};

/// This thread's CPU time, seconds.
fn thread_cpu() -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: a valid clock id and a valid out-pointer.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}

/// One encoder's result over all the frames' channels.
struct Row {
    name: &'static str,
    out_bytes: usize,
    cpu_s: f64,
    wall_s: f64,
}

fn measure(name: &'static str, jobs: &[&[u8]], enc: impl Fn(&[u8]) -> Vec<u8>) -> Row {
    let (w, c) = (Instant::now(), thread_cpu());
    let out_bytes = jobs.iter().map(|j| enc(j).len()).sum();
    Row {
        name,
        out_bytes,
        cpu_s: thread_cpu() - c,
        wall_s: w.elapsed().as_secs_f64(),
    }
}

fn liblzma_xz(data: &[u8]) -> Vec<u8> {
    let mut e = liblzma::write::XzEncoder::new(Vec::new(), 0);
    e.write_all(data).unwrap();
    e.finish().unwrap()
}

fn lzma_rust2_xz(data: &[u8]) -> Vec<u8> {
    let mut w =
        lzma_rust2::XzWriter::new(Vec::new(), lzma_rust2::XzOptions::with_preset(0)).unwrap();
    w.write_all(data).unwrap();
    w.finish().unwrap()
}

fn lzma_rs_xz(data: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    lzma_rs::xz_compress(&mut &data[..], &mut out).unwrap();
    out
}

/// Python's `lzma.compress(preset=0)` over the same channel images: (bytes out, CPU s, wall s).
fn python(jobs: &[&[u8]]) -> (usize, f64, f64) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("frames.bin");
    std::fs::write(&path, jobs.concat()).unwrap();
    let sizes: Vec<String> = jobs.iter().map(|j| j.len().to_string()).collect();
    let py = String::from_utf8(
        Command::new("bash")
            .arg("scripts/py-env.sh")
            .current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
            .output()
            .expect("scripts/py-env.sh")
            .stdout,
    )
    .unwrap();
    let script = format!(
        "import lzma,time\nd=open({:?},'rb').read()\nsizes=[{}]\nbest=None\nfor _ in range({}):\n\
         \x20   w,c=time.perf_counter(),time.thread_time()\n    s=0;p=0\n    for n in sizes:\n\
         \x20       s+=len(lzma.compress(d[p:p+n],preset=0));p+=n\n\
         \x20   r=(time.thread_time()-c,time.perf_counter()-w)\n    best=r if best is None or r<best else best\n\
         print(s,*best)",
        path.display().to_string(),
        sizes.join(","),
        ROUNDS
    );
    let out = Command::new(py.trim())
        .arg("-c")
        .arg(script)
        .output()
        .expect("python");
    let text = String::from_utf8(out.stdout).unwrap();
    let v: Vec<&str> = text.split_whitespace().collect();
    assert_eq!(
        v.len(),
        3,
        "python printed {text:?}, stderr {:?}",
        out.stderr
    );
    (
        v[0].parse().unwrap(),
        v[1].parse().unwrap(),
        v[2].parse().unwrap(),
    )
}

/// Rounds over the frames per encoder (the fastest counts).
const ROUNDS: usize = 3;

fn main() {
    let (rows, cols) = RIG_SHAPE;
    let n = 6u64;
    // Every 5th metre of the drive, so the frames are not near-copies.
    let frames: Vec<_> = (0..n).map(|i| lidar_frame(rows, cols, 5 * i)).collect();
    let jobs: Vec<&[u8]> = frames
        .iter()
        .flat_map(|f| f.channels().map(|(_, _, b)| b))
        .collect();
    let raw: usize = jobs.iter().map(|j| j.len()).sum();
    println!(
        "{n} lidar frames {rows}x{cols} (rfl u1 + nir u2 + rng u2 = {} bytes each), every channel \
         its own .xz at preset 0; best of {ROUNDS} alternating rounds",
        raw / n as usize
    );

    // Rounds alternate the encoders, and each keeps its fastest round: on a shared machine a
    // burst of other work then hurts one round, not one encoder.
    let mut rows_out: Vec<Row> = Vec::new();
    for _ in 0..ROUNDS {
        let round = [
            measure("liblzma 5.8 (liblzma crate)", &jobs, liblzma_xz),
            measure("lzma-rust2 0.25", &jobs, lzma_rust2_xz),
            measure("lzma-rs 0.3 xz_compress", &jobs, lzma_rs_xz),
            measure("stored .xz (lzmaf fallback)", &jobs, stored_xz::store),
        ];
        if rows_out.is_empty() {
            rows_out.extend(round);
        } else {
            for (best, r) in rows_out.iter_mut().zip(round) {
                if r.cpu_s < best.cpu_s {
                    *best = r;
                }
            }
        }
    }
    let (py_out, py_cpu, py_wall) = python(&jobs);
    rows_out.push(Row {
        name: "Python lzma (liblzma)",
        out_bytes: py_out,
        cpu_s: py_cpu,
        wall_s: py_wall,
    });

    let mb = raw as f64 / 1e6;
    println!(
        "{:<30} {:>7} {:>14} {:>11} {:>16}",
        "encoder (preset 0)", "ratio", "MB/s per core", "wall MB/s", "CPU ms per frame"
    );
    for r in &rows_out {
        println!(
            "{:<30} {:>7.3} {:>14.1} {:>11.1} {:>16.1}",
            r.name,
            raw as f64 / r.out_bytes as f64,
            mb / r.cpu_s,
            mb / r.wall_s,
            r.cpu_s * 1e3 / n as f64
        );
    }

    // The writer's choice must produce what upstream reads: decode ours with liblzma's
    // decoder and lzma-rust2's.
    let frame = liblzma_xz(jobs[2]);
    let mut back = Vec::new();
    std::io::Read::read_to_end(&mut lzma_rust2::XzReader::new(&frame[..], true), &mut back)
        .unwrap();
    assert_eq!(back, jobs[2]);

    // Multi-stream: two .xz containers back to back.
    let two = [liblzma_xz(jobs[0]), liblzma_xz(jobs[1])].concat();
    let whole = jobs[0].len() + jobs[1].len();
    let mut out = Vec::new();
    let rust2_ok =
        std::io::Read::read_to_end(&mut lzma_rust2::XzReader::new(&two[..], true), &mut out)
            .is_ok()
            && out.len() == whole;
    out.clear();
    let lzrs_ok = lzma_rs::xz_decompress(&mut &two[..], &mut out).is_ok() && out.len() == whole;
    println!("multi-stream .xz read whole: lzma-rust2 {rust2_ok}, lzma-rs {lzrs_ok}");
    allocator_policies(&jobs, n);
}

/// glibc's thresholds as the daemon set them before issue 25: every allocation of 128 KiB or
/// more its own mapping, unmapped on free.
fn policy_before() {
    // SAFETY: mallopt only changes allocator tuning.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 128 << 10);
        libc::mallopt(libc::M_TRIM_THRESHOLD, 128 << 10);
    }
}

/// This thread's minor page faults so far.
fn thread_faults() -> i64 {
    // SAFETY: rusage is plain data; a valid `who` and out-pointer.
    unsafe {
        let mut u: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_THREAD, &mut u);
        u.ru_minflt
    }
}

/// One policy's run: the thread's CPU s (user and system: `getrusage`'s split is counted in
/// whole ticks, too coarse here), minor faults, and the frames it wrote.
struct PolicyRun {
    cpu: f64,
    faults: i64,
    out: Vec<Vec<u8>>,
}

/// `lzma::compress` (the `lzmaf` writer's) over `jobs` under the thresholds `set` makes, on a
/// thread of its own: a thread arena, as the daemon's compress threads have.
fn under(set: fn(), jobs: &[&[u8]]) -> PolicyRun {
    set();
    std::thread::scope(|s| {
        s.spawn(|| {
            let (c, f) = (thread_cpu(), thread_faults());
            let out: Vec<Vec<u8>> = jobs
                .iter()
                .map(|j| lzma::compress(j, lzma::DEFAULT_PRESET))
                .collect();
            PolicyRun {
                cpu: thread_cpu() - c,
                faults: thread_faults() - f,
                out,
            }
        })
        .join()
        .expect("compress thread")
    })
}

/// The daemon's thresholds before and after issue 25, rounds alternating, the best round of
/// each (least CPU); the frames must be the same bytes under both.
fn allocator_policies(jobs: &[&[u8]], frames: u64) {
    use roverlog_daemon::malloc_policy::{MMAP_THRESHOLD, TRIM_THRESHOLD};
    let mut best: [Option<PolicyRun>; 2] = [None, None];
    for _ in 0..ROUNDS {
        let sets: [fn(); 2] = [policy_before, roverlog_daemon::malloc_policy::apply];
        for (slot, set) in best.iter_mut().zip(sets) {
            let r = under(set, jobs);
            if slot.as_ref().is_none_or(|b| r.cpu < b.cpu) {
                *slot = Some(r);
            }
        }
    }
    let [Some(before), Some(after)] = best else {
        unreachable!("ROUNDS > 0")
    };
    assert!(
        before.out == after.out,
        "the allocator thresholds changed the encoder's output"
    );
    let fresh: Vec<Vec<u8>> = jobs.iter().map(|j| lzma_rust2_xz(j)).collect();
    assert!(
        after.out == fresh,
        "lzma::compress differs from a fresh XzWriter"
    );
    println!(
        "lzma::compress under the daemon's glibc thresholds, per rig frame ({} channel frames), \
         best of {ROUNDS} alternating rounds:",
        jobs.len()
    );
    println!(
        "{:<44} {:>8} {:>13}",
        "thresholds", "CPU ms", "minor faults"
    );
    let f = frames as f64;
    let now = format!(
        "now: mmap >= {} KiB, trim {} KiB",
        MMAP_THRESHOLD >> 10,
        TRIM_THRESHOLD >> 10
    );
    for (name, r) in [
        ("before: mmap >= 128 KiB, trim 128 KiB", &before),
        (now.as_str(), &after),
    ] {
        println!(
            "{:<44} {:>8.1} {:>13.0}",
            name,
            r.cpu * 1e3 / f,
            r.faults as f64 / f
        );
    }
}
