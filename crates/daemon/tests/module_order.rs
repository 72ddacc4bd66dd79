//! The daemon's modules depend one way: no module imports one that imports it back, directly
//! or through others (ARCHITECTURE.md states the order). This reads the crate's sources and
//! fails with the loop it finds, so a new `use crate::` that closes a loop is caught by
//! `cargo test -p roverlog-daemon --test module_order`.
//!
//! A module is a top-level module of the crate with its submodules (`http/history.rs` is
//! `http`). An edge is any `crate::name`, `super::name` or `super::super::name` path naming
//! another top-level module, in code or doc links alike.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Top-level module name -> the top-level modules its files name.
fn graph() -> BTreeMap<String, BTreeSet<String>> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    let mut dirs = vec![src.clone()];
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                dirs.push(p);
            } else if p.extension().is_some_and(|x| x == "rs") {
                files.push(p);
            }
        }
    }
    let module_of = |p: &Path| -> Option<String> {
        let rel = p.strip_prefix(&src).unwrap();
        let first = rel.components().next()?.as_os_str().to_str()?.to_string();
        let name = first.trim_end_matches(".rs").to_string();
        (name != "lib").then_some(name)
    };
    let modules: BTreeSet<String> = files.iter().filter_map(|p| module_of(p)).collect();
    let mut g: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for f in &files {
        let Some(me) = module_of(f) else { continue };
        let text = std::fs::read_to_string(f).unwrap();
        let deps = g.entry(me.clone()).or_default();
        for name in named_modules(&text) {
            if name != me && modules.contains(&name) {
                deps.insert(name);
            }
        }
    }
    g
}

/// Every first path segment after `crate::` / `super::` (any number of `super::`), including
/// each item of a `{a::b, c}` group.
fn named_modules(text: &str) -> Vec<String> {
    let word = |s: &str| -> String {
        s.trim_start()
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect()
    };
    let mut out = Vec::new();
    for start in ["crate::", "super::"] {
        for (i, _) in text.match_indices(start) {
            let mut rest = &text[i + start.len()..];
            while let Some(r) = rest.strip_prefix("super::") {
                rest = r;
            }
            if let Some(group) = rest.strip_prefix('{') {
                let end = group.find('}').unwrap_or(group.len());
                out.extend(group[..end].split(',').map(word));
            } else {
                out.push(word(rest));
            }
        }
    }
    out
}

/// A loop in `g`, as the modules along it, if there is one.
fn find_loop(g: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        g: &BTreeMap<String, BTreeSet<String>>,
        m: &str,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(i) = path.iter().position(|p| p == m) {
            let mut l = path[i..].to_vec();
            l.push(m.to_string());
            return Some(l);
        }
        if done.contains(m) {
            return None;
        }
        path.push(m.to_string());
        for d in g.get(m).into_iter().flatten() {
            if let Some(l) = visit(g, d, path, done) {
                return Some(l);
            }
        }
        path.pop();
        done.insert(m.to_string());
        None
    }
    let mut done = BTreeSet::new();
    g.keys()
        .find_map(|m| visit(g, m, &mut Vec::new(), &mut done))
}

/// The modules in an order where each comes after everything it imports.
fn order(g: &BTreeMap<String, BTreeSet<String>>) -> Vec<String> {
    let mut placed: Vec<String> = Vec::new();
    while placed.len() < g.len() {
        let next: Vec<String> = g
            .iter()
            .filter(|(m, d)| !placed.contains(m) && d.iter().all(|d| placed.contains(d)))
            .map(|(m, _)| m.clone())
            .collect();
        assert!(!next.is_empty(), "no order: a loop");
        placed.extend(next);
    }
    placed
}

#[test]
fn no_module_imports_one_that_imports_it_back() {
    let g = graph();
    assert!(
        g.contains_key("recording") && g.contains_key("writer"),
        "{g:?}"
    );
    if let Some(l) = find_loop(&g) {
        panic!("module loop: {}", l.join(" -> "));
    }
    // `--nocapture` prints the order ARCHITECTURE.md states.
    println!(
        "module order (each after what it imports): {}",
        order(&g).join(", ")
    );
}

#[test]
fn the_checker_sees_a_loop() {
    let mut g = BTreeMap::new();
    g.insert("a".to_string(), BTreeSet::from(["b".to_string()]));
    g.insert("b".to_string(), BTreeSet::from(["c".to_string()]));
    g.insert("c".to_string(), BTreeSet::from(["a".to_string()]));
    assert_eq!(find_loop(&g).unwrap(), ["a", "b", "c", "a"]);
    let names: BTreeSet<String> =
        named_modules("use super::super::recording::Recorder;\nuse crate::{stats::X, events};")
            .into_iter()
            .collect();
    assert_eq!(
        names,
        BTreeSet::from(["stats", "events", "recording"].map(String::from))
    );
}
