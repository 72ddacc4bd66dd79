//! Upstream's checksum CSV (`roverd checksum`): `file,<hash>` then one line per file of a
//! trace, its path relative to the trace, sorted. Written by `roverlog checksum` and by
//! `roverlog offload` beside every trace it sends.

use std::io;
use std::path::{Path, PathBuf};

/// Every file under `root` (regular files and links to them), relative, sorted as the CSV
/// lists them.
pub fn files(root: &Path) -> io::Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir)? {
            let e = e?;
            let ft = e.file_type()?;
            let path = e.path();
            if ft.is_dir() {
                stack.push(path);
            } else if ft.is_file() || (ft.is_symlink() && path.is_file()) {
                out.push(path.strip_prefix(root).unwrap_or(&path).to_path_buf());
            }
        }
    }
    out.sort_by(|a, b| a.to_string_lossy().cmp(&b.to_string_lossy()));
    Ok(out)
}

/// A CSV field, quoted as Python's `csv` quotes it.
pub fn quote(field: &str) -> String {
    if field.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", field.replace('"', "\"\""))
    } else {
        field.to_string()
    }
}

/// Splits one CSV line into fields (quotes as Python's `csv` writes them).
pub fn fields(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut quoted = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match (c, quoted) {
            ('"', true) if chars.peek() == Some(&'"') => {
                cur.push('"');
                chars.next();
            }
            ('"', _) => quoted = !quoted,
            (',', false) => out.push(std::mem::take(&mut cur)),
            (c, _) => cur.push(c),
        }
    }
    out.push(cur);
    out
}

/// The CSV's text: the header `file,<hash>` then `path,digest` per row, in the order given.
pub fn csv_text<'a>(hash: &str, rows: impl IntoIterator<Item = (&'a str, &'a str)>) -> String {
    let mut text = format!("file,{hash}\n");
    for (f, h) in rows {
        text.push_str(&format!("{},{h}\n", quote(f)));
    }
    text
}
