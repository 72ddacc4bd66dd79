//! A trace's timeline as an image (`roverlog plot`): one row per sensor along the trace's
//! time, readable at a glance for hours of data and tens of sensors.
//!
//! Each row shows the sensor's sample rate over time (a line, scaled to the row; the mean rate
//! on the left), its gaps (red: holes in `ts` longer than three median periods), and what
//! `events.jsonl` says about it: drops (orange spans), alarms (purple spans from `alarm` to
//! `alarm_clear`), errors (red ticks). Marks (blue, with their text), starts, stops and
//! rotations (grey) are lines across every row. PNG or SVG by the output's extension; text
//! is drawn with an embedded DejaVu Sans Mono (no system fonts needed).

use std::collections::BTreeMap;
use std::path::Path;

use plotters::coord::Shift;
use plotters::prelude::*;
use roverlog_core::error::{Error, Result};
use roverlog_core::format::events::{read_events, Event, EventLine};
use roverlog_core::format::Trace;

static FONT: &[u8] = include_bytes!("../assets/fonts/DejaVuSansMono.ttf");
const FONT_NAME: &str = "roverlog-mono";

/// Width of an image, and the height of one sensor's row.
pub const WIDTH: u32 = 1600;
pub const ROW: u32 = 64;
const HEADER: u32 = 56;
const AXIS: u32 = 40;
const LABEL: u32 = 220;
/// Rate bins across the trace.
const BINS: usize = 400;

/// The image's height for `sensors` rows.
pub fn height(sensors: usize) -> u32 {
    HEADER + ROW * sensors.max(1) as u32 + AXIS
}

struct Row {
    name: String,
    rate: Vec<f64>,
    mean_hz: f64,
    gaps: Vec<(f64, f64)>,
    samples: usize,
}

fn plot_err(e: impl std::fmt::Display) -> Error {
    Error::Codec {
        codec: "plot".into(),
        msg: e.to_string(),
    }
}

/// Draws the timeline of the trace in `trace` into `out` (`.png` or `.svg`). Returns the
/// image size.
pub fn plot_trace(trace: &Path, out: &Path) -> Result<(u32, u32)> {
    let _ = plotters::style::register_font(FONT_NAME, FontStyle::Normal, FONT);
    let t = Trace::open(trace)?;
    let mut all = Vec::new();
    let (mut t0, mut t1) = (f64::INFINITY, f64::NEG_INFINITY);
    for s in t.sensors()? {
        let ts = s.timestamps()?;
        if let (Some(a), Some(b)) = (ts.first(), ts.last()) {
            t0 = t0.min(*a);
            t1 = t1.max(*b);
        }
        all.push((s.name().to_string(), ts));
    }
    let events = read_events(trace)?;
    if !t0.is_finite() {
        let times: Vec<f64> = events.iter().map(|e| e.t).collect();
        t0 = times.iter().copied().fold(f64::INFINITY, f64::min);
        t1 = times.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    }
    if !t0.is_finite() {
        return Err(Error::NotA {
            path: trace.to_path_buf(),
            expected: "trace with a sample or an event to plot",
        });
    }
    let span = (t1 - t0).max(1e-3);
    let rows: Vec<Row> = all
        .into_iter()
        .map(|(name, ts)| {
            let mut bins = vec![0usize; BINS];
            for &t in &ts {
                let k = (((t - t0) / span) * BINS as f64) as usize;
                bins[k.min(BINS - 1)] += 1;
            }
            let width = span / BINS as f64;
            let mut d: Vec<f64> = ts.windows(2).map(|w| w[1] - w[0]).collect();
            d.sort_by(f64::total_cmp);
            let median = d.get(d.len() / 2).copied().unwrap_or(0.0);
            let gaps = if median > 0.0 {
                ts.windows(2)
                    .filter(|w| w[1] - w[0] > 3.0 * median)
                    .map(|w| (w[0] - t0, w[1] - t0))
                    .collect()
            } else {
                Vec::new()
            };
            let mean_hz = match (ts.first(), ts.last()) {
                (Some(a), Some(b)) if b > a => (ts.len() - 1) as f64 / (b - a),
                _ => 0.0,
            };
            Row {
                name,
                rate: bins.iter().map(|&n| n as f64 / width).collect(),
                mean_hz,
                gaps,
                samples: ts.len(),
            }
        })
        .collect();
    let size = (WIDTH, height(rows.len()));
    let title = format!(
        "{}  ({:.1} s, {} sensors, {} samples)",
        trace
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default(),
        span,
        rows.len(),
        rows.iter().map(|r| r.samples).sum::<usize>()
    );
    let ext = out.extension().and_then(|e| e.to_str()).unwrap_or("");
    match ext {
        "svg" => draw(
            SVGBackend::new(out, size).into_drawing_area(),
            &title,
            &rows,
            &events,
            t0,
            span,
        )?,
        "png" => draw(
            BitMapBackend::new(out, size).into_drawing_area(),
            &title,
            &rows,
            &events,
            t0,
            span,
        )?,
        other => {
            return Err(Error::Config(format!(
                "{}: unknown image type {other:?} (.png or .svg)",
                out.display()
            )))
        }
    }
    Ok(size)
}

fn draw<DB: DrawingBackend>(
    root: DrawingArea<DB, Shift>,
    title: &str,
    rows: &[Row],
    events: &[EventLine],
    t0: f64,
    span: f64,
) -> Result<()>
where
    DB::ErrorType: 'static,
{
    let font = |size: u32| (FONT_NAME, size).into_font();
    root.fill(&WHITE).map_err(plot_err)?;
    root.draw(&Text::new(
        title.to_string(),
        (12, 14),
        font(20).color(&BLACK),
    ))
    .map_err(plot_err)?;
    let plot_w = (WIDTH - LABEL - 20) as f64;
    let x = |t: f64| LABEL as i32 + ((t / span).clamp(0.0, 1.0) * plot_w) as i32;
    let top = HEADER as i32;
    let bottom = top + (ROW as usize * rows.len().max(1)) as i32;
    let grey = RGBColor(200, 200, 200);
    // Sensor rows.
    let row_of: BTreeMap<&str, usize> = rows
        .iter()
        .enumerate()
        .map(|(i, r)| (r.name.as_str(), i))
        .collect();
    for (i, r) in rows.iter().enumerate() {
        let y0 = top + (i as u32 * ROW) as i32;
        let band = if i % 2 == 0 {
            RGBColor(246, 246, 250)
        } else {
            WHITE
        };
        root.draw(&Rectangle::new(
            [(0, y0), (WIDTH as i32, y0 + ROW as i32)],
            band.filled(),
        ))
        .map_err(plot_err)?;
        root.draw(&Text::new(
            r.name.clone(),
            (10, y0 + 10),
            font(16).color(&BLACK),
        ))
        .map_err(plot_err)?;
        root.draw(&Text::new(
            format!("{:.1} Hz, {} samples", r.mean_hz, r.samples),
            (10, y0 + 32),
            font(12).color(&RGBColor(90, 90, 90)),
        ))
        .map_err(plot_err)?;
        for &(a, b) in &r.gaps {
            let (xa, xb) = (x(a), x(b).max(x(a) + 1));
            root.draw(&Rectangle::new(
                [(xa, y0 + 4), (xb, y0 + ROW as i32 - 4)],
                RED.mix(0.35).filled(),
            ))
            .map_err(plot_err)?;
        }
        let max = r.rate.iter().copied().fold(0.0, f64::max).max(1e-9);
        let pts: Vec<(i32, i32)> = r
            .rate
            .iter()
            .enumerate()
            .map(|(k, v)| {
                let t = (k as f64 + 0.5) / BINS as f64 * span;
                (
                    x(t),
                    y0 + ROW as i32 - 6 - ((v / max) * (ROW as f64 - 14.0)) as i32,
                )
            })
            .collect();
        root.draw(&PathElement::new(
            pts,
            RGBColor(30, 100, 200).stroke_width(2),
        ))
        .map_err(plot_err)?;
    }
    // Events.
    let sensor_band = |sensor: &str| -> Option<(i32, i32)> {
        let i = *row_of.get(sensor)?;
        let y0 = top + (i as u32 * ROW) as i32;
        Some((y0 + 2, y0 + ROW as i32 - 2))
    };
    let mut open_alarms: BTreeMap<(String, String), f64> = BTreeMap::new();
    for e in events {
        let t = e.t - t0;
        match &e.event {
            Event::Drop {
                sensor,
                from_ts,
                to_ts,
                ..
            } => {
                if let Some(band) = sensor_band(sensor) {
                    let (a, b) = (from_ts - t0, to_ts - t0);
                    root.draw(&Rectangle::new(
                        [(x(a), band.0), (x(b).max(x(a) + 2), band.1)],
                        RGBColor(255, 140, 0).mix(0.5).filled(),
                    ))
                    .map_err(plot_err)?;
                }
            }
            Event::Alarm {
                alarm,
                sensor,
                start,
                ..
            } => {
                open_alarms.insert((alarm.clone(), sensor.clone()), start - t0);
            }
            Event::AlarmClear {
                alarm,
                sensor,
                start,
                end,
            } => {
                let key = (alarm.clone(), sensor.clone());
                let start = open_alarms.remove(&key).unwrap_or(start - t0);
                draw_alarm(
                    &root,
                    sensor_band(sensor).unwrap_or((top, bottom)),
                    x(start),
                    x(end - t0),
                )?;
            }
            Event::Error { .. } | Event::Crash { .. } => {
                let band = match &e.event {
                    Event::Error { sensor, .. } => sensor_band(sensor),
                    _ => None,
                };
                let band = band.unwrap_or((top, bottom));
                root.draw(&PathElement::new(
                    vec![(x(t), band.0), (x(t), band.1)],
                    RED.stroke_width(2),
                ))
                .map_err(plot_err)?;
            }
            Event::Mark { .. }
            | Event::Start { .. }
            | Event::Stop { .. }
            | Event::Rotate { .. } => {
                let color = if matches!(e.event, Event::Mark { .. }) {
                    RGBColor(20, 60, 220)
                } else {
                    grey
                };
                root.draw(&PathElement::new(
                    vec![(x(t), top), (x(t), bottom)],
                    color.stroke_width(1),
                ))
                .map_err(plot_err)?;
                let text = match &e.event {
                    Event::Mark { text } => text.clone(),
                    other => other.kind().to_string(),
                };
                root.draw(&Text::new(
                    text,
                    (x(t) + 3, top - 14),
                    font(12).color(&color),
                ))
                .map_err(plot_err)?;
            }
            _ => {}
        }
    }
    for (key, start) in open_alarms {
        let band = row_of
            .get(key.1.as_str())
            .map(|&i| {
                let y0 = top + (i as u32 * ROW) as i32;
                (y0 + 2, y0 + ROW as i32 - 2)
            })
            .unwrap_or((top, bottom));
        draw_alarm(&root, band, x(start), x(span))?;
    }
    // Time axis.
    root.draw(&PathElement::new(
        vec![(LABEL as i32, bottom), (x(span), bottom)],
        BLACK.stroke_width(1),
    ))
    .map_err(plot_err)?;
    let step = nice_step(span / 10.0);
    let mut t = 0.0;
    while t <= span + 1e-9 {
        root.draw(&PathElement::new(
            vec![(x(t), bottom), (x(t), bottom + 6)],
            BLACK.stroke_width(1),
        ))
        .map_err(plot_err)?;
        root.draw(&Text::new(
            fmt_time(t),
            (x(t) - 16, bottom + 10),
            font(12).color(&BLACK),
        ))
        .map_err(plot_err)?;
        t += step;
    }
    root.present().map_err(plot_err)
}

fn draw_alarm<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    band: (i32, i32),
    a: i32,
    b: i32,
) -> Result<()>
where
    DB::ErrorType: 'static,
{
    root.draw(&Rectangle::new(
        [(a, band.0), (b.max(a + 2), band.1)],
        RGBColor(150, 40, 180).mix(0.3).filled(),
    ))
    .map_err(plot_err)
}

/// 1, 2 or 5 times a power of ten, at least `raw`.
fn nice_step(raw: f64) -> f64 {
    let p = 10f64.powf(raw.max(1e-3).log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * p)
        .find(|s| *s >= raw)
        .unwrap_or(10.0 * p)
}

fn fmt_time(t: f64) -> String {
    if t >= 3600.0 {
        format!(
            "{}:{:02}:{:02}",
            (t / 3600.0) as u64,
            ((t % 3600.0) / 60.0) as u64,
            (t % 60.0) as u64
        )
    } else if t >= 60.0 {
        format!("{}:{:02}", (t / 60.0) as u64, (t % 60.0) as u64)
    } else {
        format!("{t:.1}s")
    }
}
