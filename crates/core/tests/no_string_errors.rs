//! The library crates' errors are typed: no `Result<_, String>` in `crates/*/src` or
//! `python/src` (issue 38; the house issue had taken them to 0 once, and they came back).
//! An error is a `thiserror` enum carrying the values involved, never a sentence.
//! Nor does a library crate depend on `anyhow`: that is the binary's.

use std::path::{Path, PathBuf};

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let entries = std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    for entry in entries {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// Whether `line` spells a `Result` whose error type is `String` (`Result<T, String>`,
/// `std::result::Result<(A, B), String>`): the last top-level argument of a `Result<...>`.
fn string_error(line: &str) -> bool {
    let mut rest = line;
    while let Some(at) = rest.find("Result<") {
        let args = &rest[at + "Result<".len()..];
        let mut depth = 0usize;
        let mut last_arg_start = 0;
        for (i, c) in args.char_indices() {
            match c {
                '<' | '(' | '[' => depth += 1,
                ')' | ']' => depth = depth.saturating_sub(1),
                ',' if depth == 0 => last_arg_start = i + 1,
                '>' if depth == 0 => {
                    if last_arg_start > 0 && args[last_arg_start..i].trim() == "String" {
                        return true;
                    }
                    break;
                }
                '>' => depth -= 1,
                _ => {}
            }
        }
        rest = args;
    }
    false
}

#[test]
fn the_detector_finds_string_errors_and_only_them() {
    assert!(string_error("fn f() -> Result<u8, String> {"));
    assert!(string_error(
        "hello: std::result::Result<(&'static str, u64), String>,"
    ));
    assert!(string_error("x: OnceLock<Result<Vec<u8>, String>>,"));
    assert!(!string_error(
        "fn f() -> Result<BTreeMap<String, String>> {"
    ));
    assert!(!string_error("fn f() -> Result<String, Error> {"));
    assert!(!string_error("fn f() -> Result<()> {"));
}

#[test]
fn no_library_crate_returns_string_errors() {
    let root = workspace();
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(root.join("crates"))
        .unwrap()
        .map(|e| e.unwrap().path().join("src"))
        .filter(|p| p.is_dir())
        .collect();
    dirs.push(root.join("python/src"));
    let mut files = Vec::new();
    for d in &dirs {
        rust_files(d, &mut files);
    }
    assert!(
        files.len() > 100,
        "found only {} files under {dirs:?}",
        files.len()
    );
    let mut found = Vec::new();
    for f in &files {
        let rel = f
            .strip_prefix(&root)
            .unwrap()
            .to_string_lossy()
            .into_owned();
        let text = std::fs::read_to_string(f).unwrap();
        for (n, line) in text.lines().enumerate() {
            if string_error(line) {
                found.push(format!("{rel}:{}: {}", n + 1, line.trim()));
            }
        }
    }
    assert!(
        found.is_empty(),
        "Result<_, String> in library code (a typed error names the values):\n{}",
        found.join("\n")
    );
}

/// The crates `[dependencies]` of a `Cargo.toml` names `anyhow` in (its own
/// `[dependencies]`, a `[target.'cfg(..)'.dependencies]`, or a `[dependencies.anyhow]` table);
/// `[dev-dependencies]` and `[build-dependencies]` may (tests are not the library).
fn anyhow_dependencies(manifest: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut section = String::new();
    for line in manifest.lines() {
        let line = line.trim();
        if line.starts_with('[') {
            section = line
                .trim_matches(|c| c == '[' || c == ']')
                .trim()
                .to_string();
            if section == "dependencies.anyhow" || section.ends_with(".dependencies.anyhow") {
                found.push(format!("[{section}]"));
            }
            continue;
        }
        let normal = section == "dependencies" || section.ends_with(".dependencies");
        let key = line.split(['=', '.']).next().unwrap_or("").trim();
        if normal && key == "anyhow" {
            found.push(format!("[{section}] {line}"));
        }
    }
    found
}

#[test]
fn the_anyhow_detector_reads_sections() {
    let manifest = "[package]\nname = \"x\"\n[dependencies]\nanyhow.workspace = true\n\
                    anyhowish = \"1\"\n[dev-dependencies]\nanyhow = \"1\"\n\
                    [target.'cfg(unix)'.dependencies]\nanyhow = { version = \"1\" }\n";
    assert_eq!(
        anyhow_dependencies(manifest),
        vec![
            "[dependencies] anyhow.workspace = true".to_string(),
            "[target.'cfg(unix)'.dependencies] anyhow = { version = \"1\" }".to_string(),
        ]
    );
    assert_eq!(
        anyhow_dependencies("[dependencies.anyhow]\nversion = \"1\"\n"),
        vec!["[dependencies.anyhow]".to_string()]
    );
    assert!(anyhow_dependencies("[dev-dependencies]\nanyhow = \"1\"\n").is_empty());
}

/// `anyhow` is the binary's (errors end there as exit codes); a library crate's errors are
/// typed, so none of them depends on it (issue 38: the bench crate's runner used it).
#[test]
fn no_library_crate_depends_on_anyhow() {
    let root = workspace();
    let mut manifests: Vec<PathBuf> = std::fs::read_dir(root.join("crates"))
        .unwrap()
        .map(|e| e.unwrap().path().join("Cargo.toml"))
        .filter(|p| p.is_file())
        .collect();
    manifests.push(root.join("python/Cargo.toml"));
    assert!(
        manifests.len() > 5,
        "found only {} manifests: {manifests:?}",
        manifests.len()
    );
    let mut found = Vec::new();
    for m in &manifests {
        let text = std::fs::read_to_string(m).unwrap_or_else(|e| panic!("{}: {e}", m.display()));
        let rel = m.strip_prefix(&root).unwrap().display().to_string();
        found.extend(
            anyhow_dependencies(&text)
                .into_iter()
                .map(|d| format!("{rel}: {d}")),
        );
    }
    assert!(
        found.is_empty(),
        "anyhow in a library crate's [dependencies] (only the binary uses it):\n{}",
        found.join("\n")
    );
}
