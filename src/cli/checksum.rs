//! `roverlog checksum <trace|dir> <out.csv>` writes the `file,md5` CSV upstream `roverd
//! checksum` writes (every file under the directory, path relative to it, sorted; hashed in
//! parallel); `roverlog checksum --compare <a> <b>` compares two such CSVs or directories
//! (a directory is hashed on the spot) and exits 1 on any mismatch or on a file missing from
//! *either* side (upstream reports only files missing from the copy). `--hash blake3` is the
//! faster choice beside md5; a CSV says in its header which one it holds.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use anyhow::{bail, Context, Result};
use clap::{Args, ValueEnum};
use md5::Digest;
use roverlog_core::format::checksum::fields;

use super::exit::outln;
use super::Outcome;

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Hash {
    Md5,
    Blake3,
}

impl Hash {
    fn name(self) -> &'static str {
        match self {
            Hash::Md5 => "md5",
            Hash::Blake3 => "blake3",
        }
    }
}

#[derive(Args)]
pub struct ChecksumArgs {
    /// Without --compare: the trace or directory to hash. With it: the expected side (a CSV
    /// or a directory).
    pub src: PathBuf,
    /// Without --compare: the CSV to write (must not exist). With it: the actual side.
    pub dst: PathBuf,
    /// Compare `src` against `dst` instead of writing a CSV.
    #[arg(long)]
    pub compare: bool,
    /// The hash for directories hashed here (a CSV's header names its own).
    #[arg(long, value_enum, default_value = "md5")]
    pub hash: Hash,
}

/// Every file under `root`, relative, sorted (as upstream's CSV lists them).
fn files(root: &Path) -> Result<Vec<PathBuf>> {
    roverlog_core::format::checksum::files(root)
        .with_context(|| format!("reading {}", root.display()))
}

fn hash_file(path: &Path, hash: Hash) -> Result<String> {
    let mut f = std::fs::File::open(path).with_context(|| format!("opening {}", path.display()))?;
    let mut buf = vec![0u8; 1 << 20];
    let mut md5 = md5::Md5::new();
    let mut b3 = blake3::Hasher::new();
    loop {
        let n = f
            .read(&mut buf)
            .with_context(|| format!("reading {}", path.display()))?;
        if n == 0 {
            break;
        }
        match hash {
            Hash::Md5 => md5.update(&buf[..n]),
            Hash::Blake3 => {
                b3.update(&buf[..n]);
            }
        }
    }
    Ok(match hash {
        Hash::Md5 => md5.finalize().iter().map(|b| format!("{b:02x}")).collect(),
        Hash::Blake3 => b3.finalize().to_hex().to_string(),
    })
}

/// Hashes every file under `root` on one thread per CPU: relative path -> hex digest.
pub fn hash_dir(root: &Path, hash: Hash) -> Result<BTreeMap<String, String>> {
    let list = files(root)?;
    let pb = super::progress::bar("checksum", "files");
    pb.set_length(list.len() as u64);
    let next = AtomicUsize::new(0);
    let out = Mutex::new(BTreeMap::new());
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(list.len().max(1));
    std::thread::scope(|s| -> Result<()> {
        let workers: Vec<_> = (0..threads)
            .map(|_| {
                s.spawn(|| -> Result<()> {
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        let Some(rel) = list.get(i) else {
                            return Ok(());
                        };
                        let digest = hash_file(&root.join(rel), hash)?;
                        let key = rel.to_string_lossy().into_owned();
                        out.lock()
                            .expect("no panics while locked")
                            .insert(key, digest);
                        pb.inc(1);
                    }
                })
            })
            .collect();
        for w in workers {
            w.join().expect("hashing thread panicked")?;
        }
        Ok(())
    })?;
    pb.finish_and_clear();
    Ok(out.into_inner().expect("no panics while locked"))
}

/// Reads a `file,<hash>` CSV.
pub fn read_csv(path: &Path) -> Result<(Hash, BTreeMap<String, String>)> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let mut lines = text.lines();
    let head = fields(lines.next().unwrap_or_default());
    let hash = match head.iter().map(String::as_str).collect::<Vec<_>>()[..] {
        ["file", "md5"] => Hash::Md5,
        ["file", "blake3"] => Hash::Blake3,
        _ => bail!(
            "{}: not a checksum CSV (header {:?}, expected file,md5 or file,blake3)",
            path.display(),
            head
        ),
    };
    let mut rows = BTreeMap::new();
    for (k, line) in lines.enumerate() {
        if line.is_empty() {
            continue;
        }
        let f = fields(line);
        if f.len() != 2 || f[1].is_empty() {
            bail!(
                "{}: line {}: expected file,{}: {line:?}",
                path.display(),
                k + 2,
                hash.name()
            );
        }
        rows.insert(f[0].clone(), f[1].clone());
    }
    Ok((hash, rows))
}

fn write_csv(path: &Path, hash: Hash, rows: &BTreeMap<String, String>) -> Result<()> {
    let text = roverlog_core::format::checksum::csv_text(
        hash.name(),
        rows.iter().map(|(f, h)| (f.as_str(), h.as_str())),
    );
    roverlog_core::format::meta::write_file_atomic(path, text.as_bytes())
        .with_context(|| format!("writing {}", path.display()))
}

pub fn checksum(args: ChecksumArgs) -> Result<Outcome> {
    if !args.compare {
        if !args.src.is_dir() {
            bail!(
                "{}: not a directory (to compare CSVs, use --compare)",
                args.src.display()
            );
        }
        if args.dst.exists() {
            bail!(
                "{} already exists (use --compare to compare against it)",
                args.dst.display()
            );
        }
        let rows = hash_dir(&args.src, args.hash)?;
        write_csv(&args.dst, args.hash, &rows)?;
        outln!("{}: {} files", args.dst.display(), rows.len())?;
        return Ok(Outcome::Ok);
    }
    // CSVs first: a directory is hashed with the hash a CSV on the other side names.
    let mut hash = args.hash;
    let mut sides = [None, None];
    for (k, p) in [&args.src, &args.dst].into_iter().enumerate() {
        if p.is_file() {
            let (h, rows) = read_csv(p)?;
            if k == 1 && sides[0].is_some() && h != hash {
                bail!(
                    "{} holds {} sums, {} holds {}",
                    args.src.display(),
                    hash.name(),
                    p.display(),
                    h.name()
                );
            }
            hash = h;
            sides[k] = Some(rows);
        } else if !p.is_dir() {
            bail!("{}: no such CSV or directory", p.display());
        }
    }
    let [a, b] = [0, 1].map(|k| -> Result<BTreeMap<String, String>> {
        match sides[k].take() {
            Some(rows) => Ok(rows),
            None => hash_dir([&args.src, &args.dst][k], hash),
        }
    });
    let (a, b) = (a?, b?);
    let mut bad = 0;
    for (f, want) in &a {
        match b.get(f) {
            None => {
                bad += 1;
                outln!("Missing: {f} (in {})", args.dst.display())?;
            }
            Some(got) if got != want => {
                bad += 1;
                outln!("Mismatch: {f}; expected {want}, actual {got}")?;
            }
            Some(_) => {}
        }
    }
    for f in b.keys().filter(|f| !a.contains_key(*f)) {
        bad += 1;
        outln!("Missing: {f} (in {})", args.src.display())?;
    }
    if bad > 0 {
        outln!(
            "{bad} difference(s) between {} and {}",
            args.src.display(),
            args.dst.display()
        )?;
        return Ok(Outcome::Problems);
    }
    outln!("ok: {} files match ({})", a.len(), hash.name())?;
    Ok(Outcome::Ok)
}
