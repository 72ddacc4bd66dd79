//! Which of the camera's MJPG modes (frame size and frame rate, as `VIDIOC_ENUM_FRAMESIZES`
//! and `VIDIOC_ENUM_FRAMEINTERVALS` list them) the driver asks for: the one `--size` and
//! `--fps` name, else the camera's best. A pure function over the list, so it is tested
//! without a device.

use std::fmt;

/// A frame interval, seconds per frame as a fraction (V4L2's `timeperframe`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Interval {
    pub numerator: u32,
    pub denominator: u32,
}

impl Interval {
    /// `1/fps`.
    pub fn per_second(fps: u32) -> Interval {
        Interval {
            numerator: 1,
            denominator: fps,
        }
    }

    /// Frames per second (0 for a zero numerator, which no camera reports).
    pub fn fps(self) -> f64 {
        if self.numerator == 0 {
            return 0.0;
        }
        f64::from(self.denominator) / f64::from(self.numerator)
    }
}

/// One MJPG mode the camera offers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Mode {
    pub width: u32,
    pub height: u32,
    pub interval: Interval,
}

impl Mode {
    fn area(&self) -> u64 {
        u64::from(self.width) * u64::from(self.height)
    }
}

impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}x{} at {} fps",
            self.width,
            self.height,
            fps_text(self.interval.fps())
        )
    }
}

fn fps_text(fps: f64) -> String {
    if (fps - fps.round()).abs() < 0.005 {
        format!("{}", fps.round())
    } else {
        format!("{fps:.2}")
    }
}

/// What the command line asked for.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Want {
    /// `--size WxH`.
    pub size: Option<(u32, u32)>,
    /// `--fps N`.
    pub fps: Option<u32>,
}

/// Why no mode fits what was asked.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ModeError {
    #[error("the camera offers no MJPG frame size with a frame rate")]
    NoModes,
    #[error("the camera offers no MJPG mode of {}x{} (it offers {})", .want.0, .want.1, list(.offered))]
    NoSuchSize {
        want: (u32, u32),
        offered: Vec<Mode>,
    },
    #[error("the camera offers no MJPG mode at {want} fps{} (it offers {})",
        .size.map(|(w, h)| format!(" in {w}x{h}")).unwrap_or_default(), list(.offered))]
    NoSuchRate {
        want: u32,
        size: Option<(u32, u32)>,
        offered: Vec<Mode>,
    },
}

fn list(modes: &[Mode]) -> String {
    modes
        .iter()
        .map(Mode::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

/// Why `--size` is not `WxH`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("--size {0:?}: want WIDTHxHEIGHT, e.g. 1920x1080")]
pub struct BadSize(pub String);

/// `WxH` (`1920x1080`), both positive.
pub fn parse_size(s: &str) -> Result<(u32, u32), BadSize> {
    let bad = || BadSize(s.to_string());
    let (w, h) = s.split_once(['x', 'X']).ok_or_else(bad)?;
    let w: u32 = w.trim().parse().map_err(|_| bad())?;
    let h: u32 = h.trim().parse().map_err(|_| bad())?;
    if w == 0 || h == 0 {
        return Err(bad());
    }
    Ok((w, h))
}

/// Whether a mode's rate is the `fps` asked (cameras report 30 fps as 1/30 or as
/// 333333/10000000; 29.97 counts as 30).
fn rate_matches(m: &Mode, fps: u32) -> bool {
    (m.interval.fps() - f64::from(fps)).abs() < 0.5
}

/// The mode to ask for: of the modes of `--size` (all when not given) at `--fps` (any when
/// not given), the largest frame, then the highest rate.
pub fn select(modes: &[Mode], want: Want) -> Result<Mode, ModeError> {
    if modes.is_empty() {
        return Err(ModeError::NoModes);
    }
    let sized: Vec<Mode> = match want.size {
        Some((w, h)) => modes
            .iter()
            .filter(|m| (m.width, m.height) == (w, h))
            .copied()
            .collect(),
        None => modes.to_vec(),
    };
    if sized.is_empty() {
        return Err(ModeError::NoSuchSize {
            want: want.size.unwrap_or_default(),
            offered: modes.to_vec(),
        });
    }
    let rated: Vec<Mode> = match want.fps {
        Some(fps) => sized
            .iter()
            .filter(|m| rate_matches(m, fps))
            .copied()
            .collect(),
        None => sized.clone(),
    };
    rated
        .iter()
        .copied()
        .max_by(|a, b| {
            a.area()
                .cmp(&b.area())
                .then(a.width.cmp(&b.width))
                .then(a.interval.fps().total_cmp(&b.interval.fps()))
        })
        .ok_or_else(|| ModeError::NoSuchRate {
            want: want.fps.unwrap_or_default(),
            size: want.size,
            offered: sized,
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(width: u32, height: u32, numerator: u32, denominator: u32) -> Mode {
        Mode {
            width,
            height,
            interval: Interval {
                numerator,
                denominator,
            },
        }
    }

    /// A UVC webcam's MJPG list, in the order such cameras enumerate it (not sorted).
    fn webcam() -> Vec<Mode> {
        vec![
            m(640, 480, 1, 30),
            m(640, 480, 1, 60),
            m(1920, 1080, 1, 30),
            m(1920, 1080, 333_333, 10_000_000),
            m(1920, 1080, 1, 15),
            m(1280, 720, 1, 60),
            m(1280, 720, 1, 30),
            m(1080, 1920, 1, 5),
        ]
    }

    #[test]
    fn the_best_mode_is_the_largest_frame_at_its_highest_rate() {
        let best = select(&webcam(), Want::default()).unwrap();
        // 333333/10000000 s is 30.0003 fps, a hair above 1/30.
        assert_eq!(best, m(1920, 1080, 333_333, 10_000_000));
        let mut with_60 = webcam();
        with_60.push(m(1920, 1080, 1, 60));
        assert_eq!(
            select(&with_60, Want::default()).unwrap(),
            m(1920, 1080, 1, 60)
        );
        assert_eq!(best.to_string(), "1920x1080 at 30 fps");
    }

    #[test]
    fn size_and_rate_pick_among_the_offered() {
        let modes = webcam();
        let want = |size, fps| Want { size, fps };
        assert_eq!(
            select(&modes, want(Some((640, 480)), None)).unwrap(),
            m(640, 480, 1, 60)
        );
        assert_eq!(
            select(&modes, want(None, Some(60))).unwrap(),
            m(1280, 720, 1, 60),
            "the largest frame that has 60 fps"
        );
        assert_eq!(
            select(&modes, want(Some((1920, 1080)), Some(15))).unwrap(),
            m(1920, 1080, 1, 15)
        );
        // 333333/10000000 is 30.0003 fps: --fps 30 takes either 30 fps entry.
        assert!(rate_matches(&m(1920, 1080, 333_333, 10_000_000), 30));
        assert!(!rate_matches(&m(1920, 1080, 1, 25), 30));
    }

    #[test]
    fn what_is_not_offered_is_an_error_listing_what_is() {
        let modes = webcam();
        let e = select(
            &modes,
            Want {
                size: Some((3840, 2160)),
                fps: None,
            },
        )
        .unwrap_err();
        assert!(matches!(
            e,
            ModeError::NoSuchSize {
                want: (3840, 2160),
                ..
            }
        ));
        assert!(
            e.to_string()
                .starts_with("the camera offers no MJPG mode of 3840x2160 (it offers 640x480 at 30 fps, 640x480 at 60 fps, 1920x1080"),
            "{e}"
        );
        let e = select(
            &modes,
            Want {
                size: Some((1920, 1080)),
                fps: Some(60),
            },
        )
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            "the camera offers no MJPG mode at 60 fps in 1920x1080 (it offers 1920x1080 at 30 fps, \
             1920x1080 at 30 fps, 1920x1080 at 15 fps)"
        );
        assert_eq!(select(&[], Want::default()), Err(ModeError::NoModes));
    }

    #[test]
    fn sizes_parse() {
        assert_eq!(parse_size("1920x1080"), Ok((1920, 1080)));
        assert_eq!(parse_size("640X480"), Ok((640, 480)));
        for bad in ["1920", "x1080", "0x480", "1920x-1", "axb", ""] {
            assert_eq!(parse_size(bad), Err(BadSize(bad.to_string())), "{bad}");
        }
    }
}
