//! Progress bars for the long verbs: on stderr, and only when it is a terminal (quiet in
//! pipes, logs and tests).

use std::io::IsTerminal;

use indicatif::{ProgressBar, ProgressStyle};

/// A bar counting `unit` (samples, files, bytes) for `what`; hidden unless stderr is a
/// terminal. Its length is set by the caller once known.
pub fn bar(what: &str, unit: &str) -> ProgressBar {
    if !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let b = ProgressBar::new(0);
    let template =
        format!("{{prefix}} [{{bar:40}}] {{pos}}/{{len}} {unit} {{per_sec}} eta {{eta}}");
    b.set_style(
        ProgressStyle::with_template(&template)
            .expect("template")
            .progress_chars("=> "),
    );
    b.set_prefix(what.to_string());
    b
}

/// The summary line of a verb that decodes: `count` `unit` in `seconds` and their rate
/// (printed whether or not stderr is a terminal: the rate is part of what the verb reports).
pub fn rate(what: &str, count: u64, unit: &str, seconds: f64, bytes: Option<u64>) -> String {
    let s = seconds.max(1e-9);
    let mb = bytes.map_or(String::new(), |b| {
        format!(
            ", {:.1} MB at {:.1} MB/s",
            b as f64 / 1e6,
            b as f64 / s / 1e6
        )
    });
    format!(
        "{what}: {count} {unit} in {seconds:.2} s ({:.0} {unit}/s{mb})",
        count as f64 / s
    )
}
