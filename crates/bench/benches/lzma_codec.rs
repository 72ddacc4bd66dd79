//! Why `lzma-rust2` and not `lzma-rs` (named in the design card): compression ratio and speed
//! of per-frame `.xz` on lidar-like frames, against Python's `lzma` (liblzma) in the same run,
//! and whether each reads a multi-stream `.xz` file (what `lzma` channels can hold).
//!
//! Run: `cargo bench --bench lzma_codec` (needs the project venv: `scripts/py-env.sh`).

use std::io::Write;
use std::process::Command;
use std::time::Instant;

use roverlog_core::format::lzma;

/// A lidar-like u2 range image: smooth rows with small noise (deterministic).
fn lidar_frame(seed: u64) -> Vec<u8> {
    let (rows, cols) = (64usize, 1024usize);
    let mut x = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    let mut out = Vec::with_capacity(rows * cols * 2);
    for r in 0..rows {
        for c in 0..cols {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let noise = (x >> 60) as i32 - 8;
            let base = 4000.0 + 3000.0 * ((c as f64 / 90.0 + r as f64 / 20.0 + seed as f64).sin());
            let v = (base as i32 + noise).clamp(0, 65535) as u16;
            out.extend_from_slice(&v.to_le_bytes());
        }
    }
    out
}

fn main() {
    let frames: Vec<Vec<u8>> = (0..20).map(lidar_frame).collect();
    let raw: usize = frames.iter().map(Vec::len).sum();
    println!(
        "{} lidar-like frames of {} bytes (u2 64x1024)",
        frames.len(),
        frames[0].len()
    );

    let t = Instant::now();
    let ours: usize = frames.iter().map(|f| lzma::compress(f, 0).len()).sum();
    let ours_s = t.elapsed().as_secs_f64();

    let t = Instant::now();
    let mut lzrs = 0;
    for f in &frames {
        let mut out = Vec::new();
        lzma_rs::xz_compress(&mut &f[..], &mut out).unwrap();
        lzrs += out.len();
    }
    let lzrs_s = t.elapsed().as_secs_f64();

    // liblzma through Python, on the same bytes.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("frames.bin");
    std::fs::File::create(&path)
        .unwrap()
        .write_all(&frames.concat())
        .unwrap();
    let py = String::from_utf8(
        Command::new("bash")
            .arg("scripts/py-env.sh")
            .output()
            .expect("py-env")
            .stdout,
    )
    .unwrap();
    let script = format!(
        "import lzma,time\nd=open({:?},'rb').read()\nn={}\nt=time.perf_counter()\ns=sum(len(lzma.compress(d[i*n:(i+1)*n],preset=0)) for i in range(len(d)//n))\nprint(s, time.perf_counter()-t)",
        path.display().to_string(),
        frames[0].len()
    );
    let out = Command::new(py.trim())
        .arg("-c")
        .arg(script)
        .output()
        .expect("python");
    let text = String::from_utf8(out.stdout).unwrap();
    let mut it = text.split_whitespace();
    let liblzma: usize = it.next().expect("python output").parse().unwrap();
    let liblzma_s: f64 = it.next().unwrap().parse().unwrap();

    let mb = raw as f64 / 1e6;
    println!("{:<26} {:>8} {:>10}", "encoder (preset 0)", "ratio", "MB/s");
    println!(
        "{:<26} {:>8.3} {:>10.1}",
        "lzma-rust2",
        raw as f64 / ours as f64,
        mb / ours_s
    );
    println!(
        "{:<26} {:>8.3} {:>10.1}",
        "lzma-rs xz_compress",
        raw as f64 / lzrs as f64,
        mb / lzrs_s
    );
    println!(
        "{:<26} {:>8.3} {:>10.1}",
        "liblzma (python lzma)",
        raw as f64 / liblzma as f64,
        mb / liblzma_s
    );

    // Multi-stream: two .xz containers back to back.
    let mut two = lzma::compress(&frames[0], 0);
    two.extend(lzma::compress(&frames[1], 0));
    let ours_ok = lzma::decompress(&two, 1 << 24, std::path::Path::new("two.xz"))
        .map(|v| v.len() == frames[0].len() * 2)
        .unwrap_or(false);
    let mut out = Vec::new();
    let lzrs_ok =
        lzma_rs::xz_decompress(&mut &two[..], &mut out).is_ok() && out.len() == frames[0].len() * 2;
    println!("multi-stream .xz read whole: lzma-rust2 {ours_ok}, lzma-rs {lzrs_ok}");
}
