//! The bench's report: the table printed after the JSON.

use serde_json::Value;

use crate::Throughput;

use super::{mib, Memory, Row, Unit};

pub(super) fn print_table(report: &Value, rows: &[Row], memory: &[Memory]) {
    let fs = &report["filesystem"];
    println!(
        "roverlog bench{}: {} on {} {} ({}), {} CPUs, load average {} -> {}",
        if report["quick"] == true {
            " --quick"
        } else {
            ""
        },
        report["dir"].as_str().unwrap_or("?"),
        fs["type"].as_str().unwrap_or("?"),
        fs["source"].as_str().unwrap_or("?"),
        fs["mount_point"].as_str().unwrap_or("?"),
        report["cpus"],
        report["load_average"]["before"].as_str().unwrap_or("?"),
        report["load_average"]["after"].as_str().unwrap_or("?"),
    );
    println!("daemon config: {}", report["daemon_config"]);
    println!();
    println!("| scenario | ours | | baseline | | ours / baseline (per round) | target | met |");
    println!("| --- | --- | ---: | --- | ---: | ---: | --- | --- |");
    let fig = |u: Unit, t: &Throughput| format!("{:.1} {}", u.of(t), u.label());
    for r in rows {
        let (bname, bfig) = match &r.baseline {
            None => ("-".to_string(), String::new()),
            Some(Ok(b)) => (b.name.clone(), fig(r.unit, b)),
            Some(Err(e)) => (format!("unavailable: {e}"), String::new()),
        };
        println!(
            "| {} | {} | {} | {} | {} | {} | {} | {} |",
            r.scenario,
            r.ours.name,
            fig(r.unit, &r.ours),
            bname,
            bfig,
            r.ratio().map_or("-".into(), |x| {
                let each: Vec<String> = r.rounds.iter().map(|x| format!("{x:.2}")).collect();
                if each.is_empty() {
                    format!("{x:.2}x")
                } else {
                    format!("{x:.2}x ({})", each.join(", "))
                }
            }),
            r.target_text(),
            if r.target.is_none() {
                "-"
            } else {
                yes_no(r.met())
            },
        );
    }
    println!();
    println!("Daemon memory, a fresh daemon per scenario (limit = budget + idle RSS):");
    println!();
    println!("| scenario | idle RSS | max RSS sampled | VmHWM | RSS after | budget (queues + read + write buffers + pool) | limit | met |");
    println!("| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |");
    for m in memory {
        println!(
            "| {} | {} | {} | {} | {} | {} | {} | {} |",
            m.scenario,
            mib(m.idle),
            mib(m.during),
            mib(m.hwm),
            mib(m.after),
            mib(m.budget),
            mib(m.limit()),
            yes_no(Some(m.met())),
        );
    }
    println!();
    let checks = report["data_check"]["sensors"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let total: u64 = checks.iter().filter_map(|c| c["sent"].as_u64()).sum();
    println!(
        "data check: {} ({} sensors, {} samples sent; daemon exits {})",
        if report["data_check"]["ok"] == true {
            "every sample on disk, traces sound"
        } else {
            "FAILED"
        },
        checks.len(),
        total,
        report["daemon_exits"]
    );
    for c in checks.iter().filter(|c| c["ok"] != true) {
        println!("  {c}");
    }
    for f in report["failures"].as_array().into_iter().flatten() {
        println!("FAILURE: {}", f.as_str().unwrap_or_default());
    }
}

pub(super) fn yes_no(met: Option<bool>) -> &'static str {
    match met {
        Some(true) => "yes",
        Some(false) => "**no**",
        None => "?",
    }
}
