//! A fuzz target's committed seeds (`fuzz/corpus-seeds/<target>/`, inputs that once crashed
//! included) run through its check with the normal test harness: a regression is caught by
//! `cargo test`, without cargo-fuzz or a nightly compiler.

use std::path::Path;

/// Runs `check` on every seed in `seeds/<target>` and on two of its prefixes (a truncated
/// input is an input); a panic names the seed. No seeds at all is a failure too.
pub fn run_seeds(seeds: &Path, target: &str, check: fn(&[u8])) {
    let dir = seeds.join(target);
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no seeds in {}", dir.display());
    for f in files {
        let bytes = std::fs::read(&f).unwrap();
        let r = std::panic::catch_unwind(|| {
            for cut in [bytes.len(), bytes.len() / 2, bytes.len().saturating_sub(1)] {
                check(&bytes[..cut]);
            }
        });
        assert!(r.is_ok(), "{target}: seed {} fails", f.display());
    }
}
