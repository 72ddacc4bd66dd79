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
