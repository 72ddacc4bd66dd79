//! A trace's timeline as an image (`roverlog plot`): one row per sensor along the trace's
//! time, readable at a glance for hours of data and tens of sensors.
//!
//! Each row shows the sensor's sample rate over time (a line on the row's own rate axis, with
//! the mean rate on the left; bins follow the trace's length and the sensor's rate, see
//! [`rate`]), its gaps (red: holes in `ts` longer than three median periods), and what
//! `events.jsonl` says about it: drops (orange spans), alarms (purple spans from `alarm` to
//! `alarm_clear`), errors (red ticks). Marks (blue, with their text), starts, stops and
//! rotations (grey) are lines across every row. A legend under the time axis names every
//! colour. PNG or SVG by the output's extension; PNG text is drawn with an embedded DejaVu
//! Sans Mono (no system fonts needed), SVG text names it with fallbacks ([`text`]).

mod rate;
mod text;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::Result;
use plotters::coord::Shift;
use plotters::prelude::*;
use roverlog_core::error::Error;
use roverlog_core::format::events::{read_events, Event, EventLine};
use roverlog_core::format::Trace;

use rate::{median_period, rate_series, RateSeries};
use text::Pen;

/// Width of an image, and the height of one sensor's row.
pub const WIDTH: u32 = 1600;
pub const ROW: u32 = 64;
const HEADER: u32 = 56;
/// The time axis and, under it, the legend.
const FOOTER: u32 = 70;
/// The column of sensor names and rate axes left of the plot.
const LABEL: u32 = 260;
const RIGHT: u32 = 20;

/// The image's height for `sensors` rows.
pub fn height(sensors: usize) -> u32 {
    HEADER + ROW * sensors.max(1) as u32 + FOOTER
}

struct Row {
    name: String,
    rate: RateSeries,
    mean_hz: f64,
    gaps: Vec<(f64, f64)>,
    samples: usize,
}

/// A drawing error of plotters (its own types differ per backend): its text, as `plot: ...`.
pub(crate) fn plot_err(e: impl std::fmt::Display) -> anyhow::Error {
    anyhow::anyhow!("plot: {e}")
}

/// A plot that cannot be made as asked (its message keeps the `config: ` of the library's
/// option errors it was once raised as).
#[derive(Debug)]
pub(crate) enum PlotError {
    /// An output file whose extension names no image type we write.
    ImageType { out: PathBuf, ext: String },
}

impl std::fmt::Display for PlotError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PlotError::ImageType { out, ext } => write!(
                f,
                "config: {}: unknown image type {ext:?} (.png or .svg)",
                out.display()
            ),
        }
    }
}

impl std::error::Error for PlotError {}

const RATE_BLUE: RGBColor = RGBColor(30, 100, 200);
const GAP_RED: RGBColor = RGBColor(255, 166, 166);
const DROP_ORANGE: RGBColor = RGBColor(255, 197, 127);
const ALARM_PURPLE: RGBColor = RGBColor(220, 190, 232);
const ERROR_RED: RGBColor = RGBColor(220, 30, 30);
const MARK_BLUE: RGBColor = RGBColor(20, 60, 220);
const GREY: RGBColor = RGBColor(170, 170, 170);
const TEXT_GREY: RGBColor = RGBColor(90, 90, 90);
/// Drops and alarms are see-through: a gap or the rate line under them stays visible.
const SPAN_ALPHA: f64 = 0.7;

/// Draws the timeline of the trace in `trace` into `out` (`.png` or `.svg`). Returns the
/// image size.
pub fn plot_trace(trace: &Path, out: &Path) -> Result<(u32, u32)> {
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
        }
        .into());
    }
    let span = (t1 - t0).max(1e-3);
    let columns = (WIDTH - LABEL - RIGHT) as usize;
    let rows: Vec<Row> = all
        .into_iter()
        .map(|(name, ts)| {
            let median = median_period(&ts);
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
                rate: rate_series(&ts, t0, span, columns),
                name,
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
    let plot = Plot {
        title: &title,
        rows: &rows,
        events: &events,
        t0,
        span,
    };
    match ext {
        "svg" => {
            let mut svg = String::new();
            plot.draw(
                SVGBackend::with_string(&mut svg, size).into_drawing_area(),
                &Pen::new(false),
            )?;
            let svg = svg.replace(
                &format!("font-family=\"{}\"", text::FONT_NAME),
                &format!("font-family=\"{}\"", text::SVG_FONTS),
            );
            std::fs::write(out, svg).map_err(|e| Error::io(out, e))?;
        }
        "png" => plot.draw(
            BitMapBackend::new(out, size).into_drawing_area(),
            &Pen::new(true),
        )?,
        other => {
            return Err(PlotError::ImageType {
                out: out.to_path_buf(),
                ext: other.to_string(),
            }
            .into())
        }
    }
    Ok(size)
}

struct Plot<'a> {
    title: &'a str,
    rows: &'a [Row],
    events: &'a [EventLine],
    t0: f64,
    span: f64,
}

impl Plot<'_> {
    fn x(&self, t: f64) -> i32 {
        let plot_w = (WIDTH - LABEL - RIGHT) as f64;
        LABEL as i32 + ((t / self.span).clamp(0.0, 1.0) * plot_w) as i32
    }

    fn top(&self) -> i32 {
        HEADER as i32
    }

    fn bottom(&self) -> i32 {
        self.top() + (ROW as usize * self.rows.len().max(1)) as i32
    }

    fn draw<DB: DrawingBackend>(&self, root: DrawingArea<DB, Shift>, pen: &Pen) -> Result<()>
    where
        DB::ErrorType: 'static,
    {
        root.fill(&WHITE).map_err(plot_err)?;
        pen.text(&root, self.title, (12, 14), 20.0, &BLACK)?;
        for (i, r) in self.rows.iter().enumerate() {
            self.draw_row(&root, pen, i, r)?;
        }
        self.draw_events(&root, pen)?;
        self.draw_axis(&root, pen)?;
        self.draw_legend(&root, pen)?;
        root.present().map_err(plot_err)
    }

    fn draw_row<DB: DrawingBackend>(
        &self,
        root: &DrawingArea<DB, Shift>,
        pen: &Pen,
        i: usize,
        r: &Row,
    ) -> Result<()>
    where
        DB::ErrorType: 'static,
    {
        let y0 = self.top() + (i as u32 * ROW) as i32;
        let band = if i.is_multiple_of(2) {
            RGBColor(246, 246, 250)
        } else {
            WHITE
        };
        root.draw(&Rectangle::new(
            [(0, y0), (WIDTH as i32, y0 + ROW as i32)],
            band.filled(),
        ))
        .map_err(plot_err)?;
        pen.text(root, &r.name, (10, y0 + 10), 16.0, &BLACK)?;
        pen.text(
            root,
            &format!("{:.1} Hz, {} samples", r.mean_hz, r.samples),
            (10, y0 + 34),
            12.0,
            &TEXT_GREY,
        )?;
        for &(a, b) in &r.gaps {
            let (xa, xb) = (self.x(a), self.x(b).max(self.x(a) + 1));
            root.draw(&Rectangle::new(
                [(xa, y0 + 4), (xb, y0 + ROW as i32 - 4)],
                GAP_RED.filled(),
            ))
            .map_err(plot_err)?;
        }
        // The row's rate axis: 0 at the foot, a round number above the highest bin at the head.
        let (lo, hi) = (y0 + ROW as i32 - 6, y0 + 8);
        let scale = nice_ceiling(r.rate.max() * 1.1);
        let axis_x = LABEL as i32 - 8;
        root.draw(&PathElement::new(
            vec![(axis_x, hi), (axis_x, lo)],
            TEXT_GREY.stroke_width(1),
        ))
        .map_err(plot_err)?;
        for (y, label) in [(hi, format!("{} Hz", fmt_hz(scale))), (lo, "0".into())] {
            root.draw(&PathElement::new(
                vec![(axis_x - 3, y), (axis_x, y)],
                TEXT_GREY.stroke_width(1),
            ))
            .map_err(plot_err)?;
            let w = pen.width(&label, 10.0);
            pen.text(root, &label, (axis_x - 5 - w, y - 6), 10.0, &TEXT_GREY)?;
        }
        // The rate line, broken where a bin has no rate.
        let y = |v: f64| lo - ((v / scale) * (lo - hi) as f64).round() as i32;
        let mut run: Vec<(i32, i32)> = Vec::new();
        let flush = |run: &mut Vec<(i32, i32)>| -> Result<()> {
            if run.len() == 1 {
                let p = run[0];
                run.push((p.0 + 1, p.1));
            }
            if !run.is_empty() {
                root.draw(&PathElement::new(
                    std::mem::take(run),
                    RATE_BLUE.stroke_width(2),
                ))
                .map_err(plot_err)?;
            }
            Ok(())
        };
        for (k, v) in r.rate.values.iter().enumerate() {
            match v {
                Some(v) => {
                    let t = (k as f64 + 0.5) * r.rate.width;
                    run.push((self.x(t), y(*v)));
                }
                None => flush(&mut run)?,
            }
        }
        flush(&mut run)
    }

    fn draw_events<DB: DrawingBackend>(
        &self,
        root: &DrawingArea<DB, Shift>,
        pen: &Pen,
    ) -> Result<()>
    where
        DB::ErrorType: 'static,
    {
        let (top, bottom) = (self.top(), self.bottom());
        let row_of: BTreeMap<&str, usize> = self
            .rows
            .iter()
            .enumerate()
            .map(|(i, r)| (r.name.as_str(), i))
            .collect();
        let sensor_band = |sensor: &str| -> (i32, i32) {
            match row_of.get(sensor) {
                Some(&i) => {
                    let y0 = top + (i as u32 * ROW) as i32;
                    (y0 + 2, y0 + ROW as i32 - 2)
                }
                None => (top, bottom),
            }
        };
        let span_box = |band: (i32, i32), a: i32, b: i32, color: RGBColor| {
            root.draw(&Rectangle::new(
                [(a, band.0), (b.max(a + 2), band.1)],
                color.mix(SPAN_ALPHA).filled(),
            ))
            .map_err(plot_err)
        };
        let mut open_alarms: BTreeMap<(String, String), f64> = BTreeMap::new();
        for e in self.events {
            let t = e.t - self.t0;
            match &e.event {
                Event::Drop {
                    sensor,
                    from_ts,
                    to_ts,
                    ..
                } if row_of.contains_key(sensor.as_str()) => {
                    let (a, b) = (self.x(from_ts - self.t0), self.x(to_ts - self.t0));
                    span_box(sensor_band(sensor), a, b, DROP_ORANGE)?;
                }
                Event::Alarm {
                    alarm,
                    sensor,
                    start,
                    ..
                } => {
                    open_alarms.insert((alarm.clone(), sensor.clone()), start - self.t0);
                }
                Event::AlarmClear {
                    alarm,
                    sensor,
                    start,
                    end,
                } => {
                    let key = (alarm.clone(), sensor.clone());
                    let start = open_alarms.remove(&key).unwrap_or(start - self.t0);
                    let (a, b) = (self.x(start), self.x(end - self.t0));
                    span_box(sensor_band(sensor), a, b, ALARM_PURPLE)?;
                }
                Event::Error { .. } | Event::Crash { .. } => {
                    let band = match &e.event {
                        Event::Error { sensor, .. } => sensor_band(sensor),
                        _ => (top, bottom),
                    };
                    root.draw(&PathElement::new(
                        vec![(self.x(t), band.0), (self.x(t), band.1)],
                        ERROR_RED.stroke_width(2),
                    ))
                    .map_err(plot_err)?;
                }
                Event::Mark { .. }
                | Event::Start { .. }
                | Event::Stop { .. }
                | Event::Rotate { .. } => {
                    let color = if matches!(e.event, Event::Mark { .. }) {
                        MARK_BLUE
                    } else {
                        GREY
                    };
                    let x = self.x(t);
                    root.draw(&PathElement::new(
                        vec![(x, top), (x, bottom)],
                        color.stroke_width(1),
                    ))
                    .map_err(plot_err)?;
                    let label = match &e.event {
                        Event::Mark { text } => text.clone(),
                        other => other.kind().to_string(),
                    };
                    // Right of the line, or left of it where the image ends.
                    let w = pen.width(&label, 12.0);
                    let lx = if x + 3 + w <= (WIDTH - 4) as i32 {
                        x + 3
                    } else {
                        x - 3 - w
                    };
                    pen.text(root, &label, (lx, top - 16), 12.0, &color)?;
                }
                _ => {}
            }
        }
        for ((_, sensor), start) in open_alarms {
            let (a, b) = (self.x(start), self.x(self.span));
            span_box(sensor_band(&sensor), a, b, ALARM_PURPLE)?;
        }
        Ok(())
    }

    fn draw_axis<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>, pen: &Pen) -> Result<()>
    where
        DB::ErrorType: 'static,
    {
        let bottom = self.bottom();
        root.draw(&PathElement::new(
            vec![(LABEL as i32, bottom), (self.x(self.span), bottom)],
            BLACK.stroke_width(1),
        ))
        .map_err(plot_err)?;
        let step = nice_step(self.span / 10.0);
        let mut t = 0.0;
        while t <= self.span + 1e-9 {
            let x = self.x(t);
            root.draw(&PathElement::new(
                vec![(x, bottom), (x, bottom + 6)],
                BLACK.stroke_width(1),
            ))
            .map_err(plot_err)?;
            let label = fmt_time(t);
            let w = pen.width(&label, 12.0);
            let lx = (x - w / 2).min((WIDTH - 4) as i32 - w);
            pen.text(root, &label, (lx, bottom + 10), 12.0, &BLACK)?;
            t += step;
        }
        Ok(())
    }

    /// One swatch and name per colour, under the time axis.
    fn draw_legend<DB: DrawingBackend>(
        &self,
        root: &DrawingArea<DB, Shift>,
        pen: &Pen,
    ) -> Result<()>
    where
        DB::ErrorType: 'static,
    {
        enum Swatch {
            /// A horizontal line: the rate.
            Line(RGBColor),
            /// A vertical line of this width: events.
            Tick(RGBColor, u32),
            /// A filled span, as translucent as the plot draws it.
            Band(RGBColor, f64),
        }
        let items = [
            (Swatch::Line(RATE_BLUE), "sample rate (row's own axis)"),
            (Swatch::Band(GAP_RED, 1.0), "gap in ts"),
            (Swatch::Band(DROP_ORANGE, SPAN_ALPHA), "dropped"),
            (Swatch::Band(ALARM_PURPLE, SPAN_ALPHA), "alarm"),
            (Swatch::Tick(ERROR_RED, 2), "error"),
            (Swatch::Tick(MARK_BLUE, 1), "mark"),
            (Swatch::Tick(GREY, 1), "start / stop / rotate"),
        ];
        let y = self.bottom() + 42;
        let mut x = LABEL as i32;
        for (swatch, name) in items {
            match swatch {
                Swatch::Line(c) => root.draw(&PathElement::new(
                    vec![(x, y + 6), (x + 18, y + 6)],
                    c.stroke_width(2),
                )),
                Swatch::Tick(c, w) => root.draw(&PathElement::new(
                    vec![(x + 9, y), (x + 9, y + 12)],
                    c.stroke_width(w),
                )),
                Swatch::Band(c, alpha) => root.draw(&Rectangle::new(
                    [(x, y), (x + 18, y + 12)],
                    c.mix(alpha).filled(),
                )),
            }
            .map_err(plot_err)?;
            pen.text(root, name, (x + 24, y), 12.0, &BLACK)?;
            x += 24 + pen.width(name, 12.0) + 28;
        }
        Ok(())
    }
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

/// The axis top for a rate: 1, 2, 2.5 or 5 times a power of ten, at least `raw` (1 Hz for a
/// row without a rate).
fn nice_ceiling(raw: f64) -> f64 {
    if raw <= 0.0 || !raw.is_finite() {
        return 1.0;
    }
    let p = 10f64.powf(raw.log10().floor());
    [1.0, 2.0, 2.5, 5.0, 10.0]
        .iter()
        .map(|m| m * p)
        .find(|s| *s >= raw * (1.0 - 1e-9))
        .unwrap_or(10.0 * p)
}

fn fmt_hz(hz: f64) -> String {
    if hz >= 10.0 || hz.fract() == 0.0 {
        format!("{hz:.0}")
    } else {
        format!("{hz}")
    }
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
