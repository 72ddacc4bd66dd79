//! Text on the timeline, with the embedded DejaVu Sans Mono.
//!
//! Plotters' own bitmap text places each glyph at the pen position without its left side
//! bearing, which in a monospaced font spreads text apart after narrow glyphs ("s amples",
//! "50. 0s"). PNG text is therefore rasterised here with `ab_glyph` (the rasteriser plotters
//! already uses), each glyph at its own pixel bounds. SVG text stays text: the viewer lays it
//! out, with a real font family and fallbacks named in the file ([`SVG_FONTS`]).

use ab_glyph::{Font, FontRef, PxScale, ScaleFont};
use anyhow::Result;
use plotters::coord::Shift;
use plotters::prelude::*;

use super::plot_err;

pub static FONT: &[u8] = include_bytes!("../../assets/fonts/DejaVuSansMono.ttf");
/// The name text is drawn with in an SVG before [`SVG_FONTS`] replaces it.
pub const FONT_NAME: &str = "roverlog-mono";
/// What an SVG asks its viewer for: the font PNGs are drawn with, then the usual monospaced
/// fonts of each system.
pub const SVG_FONTS: &str = "'DejaVu Sans Mono', Menlo, Consolas, 'Liberation Mono', monospace";

/// Draws text in one way per image kind: rasterised for PNG, `<text>` for SVG.
pub struct Pen {
    font: FontRef<'static>,
    raster: bool,
}

impl Pen {
    pub fn new(raster: bool) -> Pen {
        let _ = plotters::style::register_font(FONT_NAME, FontStyle::Normal, FONT);
        Pen {
            font: FontRef::try_from_slice(FONT).expect("the embedded font parses"),
            raster,
        }
    }

    /// The width of `text` at `size` pixels.
    pub fn width(&self, text: &str, size: f64) -> i32 {
        let f = self.font.as_scaled(PxScale::from(size as f32));
        let mut w = 0.0;
        let mut prev = None;
        for c in text.chars() {
            let g = f.glyph_id(c);
            if let Some(p) = prev {
                w += f.kern(p, g);
            }
            w += f.h_advance(g);
            prev = Some(g);
        }
        w.ceil() as i32
    }

    /// Draws `text` with its top-left corner at `pos`.
    pub fn text<DB: DrawingBackend>(
        &self,
        root: &DrawingArea<DB, Shift>,
        text: &str,
        pos: (i32, i32),
        size: f64,
        color: &RGBColor,
    ) -> Result<()>
    where
        DB::ErrorType: 'static,
    {
        if !self.raster {
            return root
                .draw(&Text::new(
                    text.to_string(),
                    pos,
                    (FONT_NAME, size).into_font().color(color),
                ))
                .map_err(plot_err);
        }
        let f = self.font.as_scaled(PxScale::from(size as f32));
        let baseline = pos.1 as f32 + f.ascent();
        let mut caret = pos.0 as f32;
        let mut prev = None;
        for c in text.chars() {
            let id = f.glyph_id(c);
            if let Some(p) = prev {
                caret += f.kern(p, id);
            }
            prev = Some(id);
            let glyph = id.with_scale_and_position(f.scale(), ab_glyph::point(caret, baseline));
            caret += f.h_advance(id);
            let Some(outline) = self.font.outline_glyph(glyph) else {
                continue;
            };
            let b = outline.px_bounds();
            let mut pixels = Vec::new();
            outline.draw(|x, y, coverage| pixels.push((x, y, coverage)));
            for (x, y, coverage) in pixels {
                if coverage > 0.0 {
                    let at = (b.min.x as i32 + x as i32, b.min.y as i32 + y as i32);
                    root.draw_pixel(at, &color.mix(coverage.min(1.0) as f64))
                        .map_err(plot_err)?;
                }
            }
        }
        Ok(())
    }
}
