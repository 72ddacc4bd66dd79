//! The library crates' errors are typed: no `Result<_, String>` in `crates/*/src` or
//! `python/src` (issue 38; the house issue had taken them to 0 once, and they came back),
//! and no error variant carrying a free-text `msg: String` where its values belong.
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

/// The error enums of `text` (a `thiserror::Error` derive, or an `impl std::error::Error`
/// in the same file) whose variants hold a field `msg: String`, as `(line, enum)`: a sentence
/// where the values belong. (A foreign library's message kept as a value is named for what
/// it is: `panic`, `error`, ...)
fn msg_fields(text: &str) -> Vec<(usize, String)> {
    let lines: Vec<&str> = text.lines().collect();
    let mut found = Vec::new();
    let mut derive_error = false;
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i].trim();
        if line.starts_with("#[derive(") {
            derive_error = line.contains("thiserror::Error")
                || line.contains(" Error)")
                || line.contains(" Error,")
                || line.contains("(Error");
        }
        let name = line
            .strip_prefix("pub enum ")
            .or_else(|| line.strip_prefix("pub(crate) enum "))
            .or_else(|| line.strip_prefix("enum "))
            .map(|rest| {
                rest.split(|c: char| !c.is_alphanumeric() && c != '_')
                    .next()
                    .unwrap_or("")
            });
        if let Some(name) = name {
            let is_error = derive_error
                || text.contains(&format!("impl std::error::Error for {name} "))
                || text.contains(&format!("impl Error for {name} "));
            // The enum's body: up to the line that closes it at the indentation it opened.
            let indent = lines[i].len() - lines[i].trim_start().len();
            let mut j = i + 1;
            while j < lines.len() {
                let l = lines[j];
                if l.trim() == "}" && l.len() - l.trim_start().len() == indent {
                    break;
                }
                if is_error && l.split("//").next().unwrap_or("").contains("msg: String") {
                    found.push((j + 1, name.to_string()));
                }
                j += 1;
            }
            i = j;
        }
        if !line.starts_with("#[") && !line.starts_with("///") && !line.is_empty() {
            derive_error = derive_error && line.starts_with("#");
        }
        i += 1;
    }
    found
}

#[test]
fn the_msg_detector_finds_free_text_error_fields_and_only_them() {
    let thiserror_enum = "#[derive(Debug, thiserror::Error)]\npub enum E {\n    #[error(\"{msg}\")]\n    Bad { path: PathBuf, msg: String },\n}\n";
    assert_eq!(msg_fields(thiserror_enum), vec![(4, "E".to_string())]);
    let plain_error = "#[derive(Debug)]\npub enum Failure {\n    Panic { msg: String },\n}\nimpl std::error::Error for Failure {}\n";
    assert_eq!(msg_fields(plain_error), vec![(3, "Failure".to_string())]);
    let imported = "use thiserror::Error;\n#[derive(Debug, Clone, Error)]\n#[non_exhaustive]\npub(crate) enum P {\n    A {\n        at: u64,\n        msg: String,\n    },\n}\n";
    assert_eq!(msg_fields(imported), vec![(7, "P".to_string())]);
    // Not an error type; a value named for what it is; a struct.
    assert!(
        msg_fields("#[derive(Debug)]\npub enum Event {\n    Log { msg: String },\n}\n").is_empty()
    );
    assert!(msg_fields(
        "#[derive(Debug, thiserror::Error)]\npub enum E {\n    Panic { panic: String },\n}\n"
    )
    .is_empty());
    assert!(msg_fields(
        "#[derive(Debug, thiserror::Error)]\npub struct E {\n    msg: String,\n}\n"
    )
    .is_empty());
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
    let mut msgs = Vec::new();
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
        for (n, name) in msg_fields(&text) {
            msgs.push(format!("{rel}:{n}: a variant of {name}"));
        }
    }
    assert!(
        found.is_empty(),
        "Result<_, String> in library code (a typed error names the values):\n{}",
        found.join("\n")
    );
    assert!(
        msgs.is_empty(),
        "error variants with a free-text `msg: String` in library code (a variant per problem \
         carries the values; a foreign library's words are named for what they are):\n{}",
        msgs.join("\n")
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
