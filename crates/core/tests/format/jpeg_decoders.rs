//! The two JPEG decoders behind `roverlog_core::jpeg`: libjpeg-turbo (loaded at run time)
//! and zune-jpeg. Each is asked for by name (`JpegFrame::open_with`), so these tests do not
//! depend on `ROVERLOG_JPEG` or on each other; the frames are the gulp fixture's
//! (`tests/data/gulp_small/`, written by gulpio2).

use crate::support::common;

use roverlog_core::gulp::{decode_jpeg_with, FrameSelection, GulpDirectory};
use roverlog_core::jpeg::{turbo_unavailable, Backend, JpegFrame, DEFAULT_MAX_PIXELS};

fn frames() -> Vec<Vec<u8>> {
    let dir = GulpDirectory::open(common::root().join("tests/data/gulp_small")).unwrap();
    let ids: Vec<String> = dir.ids().map(str::to_string).collect();
    ids.iter()
        .flat_map(|id| dir.frames(id, &FrameSelection::All).unwrap())
        .map(|f| f.to_vec())
        .collect()
}

/// scripts/test installs Debian's libturbojpeg0: here it must load, and `auto` must use it.
/// (Where it is absent, `auto` is zune-jpeg: `pip install ./python` needs nothing more.)
#[test]
fn libjpeg_turbo_loads_and_auto_picks_it() {
    if let Some(why) = turbo_unavailable() {
        panic!("libturbojpeg.so.0 does not load ({why}): apt-get install libturbojpeg0 (scripts/test does)");
    }
    assert_eq!(Backend::Auto.resolve().unwrap(), Backend::Turbo);
    let frame = &frames()[0];
    let f = JpegFrame::open_with(frame, DEFAULT_MAX_PIXELS, Backend::Auto).unwrap();
    assert_eq!(f.decoder(), Backend::Turbo);
    let f = JpegFrame::open_with(frame, DEFAULT_MAX_PIXELS, Backend::Zune).unwrap();
    assert_eq!(f.decoder(), Backend::Zune);
}

/// Same shape on both; pixel values differ only by the IDCT's and upsampling's rounding.
#[test]
fn both_decoders_give_the_same_pixels_within_two_levels_on_average() {
    let (mut worst_mean, mut worst_max) = (0.0f64, 0u8);
    for (i, frame) in frames().iter().enumerate() {
        let z = decode_jpeg_with(frame, DEFAULT_MAX_PIXELS, Backend::Zune).unwrap();
        let t = decode_jpeg_with(frame, DEFAULT_MAX_PIXELS, Backend::Turbo).unwrap();
        assert_eq!(
            (z.width, z.height, z.channels),
            (t.width, t.height, t.channels),
            "frame {i}"
        );
        let diffs = z.pixels.iter().zip(&t.pixels).map(|(a, b)| a.abs_diff(*b));
        let max = diffs.clone().max().unwrap();
        let mean = diffs.map(f64::from).sum::<f64>() / z.pixels.len() as f64;
        assert!(mean <= 2.0, "frame {i}: mean |zune - turbo| = {mean}");
        worst_mean = worst_mean.max(mean);
        worst_max = worst_max.max(max);
    }
    println!("mean |zune - turbo| at most {worst_mean:.3}, largest {worst_max}");
}

/// Each refusal of the zune path is a refusal of the libjpeg-turbo path; zero padding after
/// the end marker (AVI chunks, gulp records) is no refusal on either, nor is damage inside
/// the entropy-coded data that libjpeg only warns about (OpenCV returns such a frame too).
#[test]
fn broken_frames_are_errors_on_both_decoders() {
    let whole = frames()[0].clone();
    let mut padded = whole.clone();
    padded.extend([0, 0, 0]);
    let cut = whole[..whole.len() / 2].to_vec();
    // Entropy-coded data overwritten with a restart marker that does not belong there.
    let mut corrupt = whole.clone();
    let mid = whole.len() * 2 / 3;
    corrupt[mid..mid + 16].copy_from_slice(&[0xFF, 0xD3].repeat(8));
    for with in [Backend::Zune, Backend::Turbo] {
        let open = |b: &[u8]| JpegFrame::open_with(b, DEFAULT_MAX_PIXELS, with).err();
        assert!(decode_jpeg_with(&padded, DEFAULT_MAX_PIXELS, with).is_ok());
        for (what, bytes) in [
            ("garbage", &b"not a jpeg"[..]),
            ("empty", &[][..]),
            ("no image", &[0xFF, 0xD8, 0xFF, 0xD9][..]),
        ] {
            let err = decode_jpeg_with(bytes, DEFAULT_MAX_PIXELS, with).unwrap_err();
            assert!(
                err.to_string().starts_with("jpeg: "),
                "{with:?} {what}: {err}"
            );
        }
        let err = open(&cut).expect("cut refused");
        assert!(err.to_string().contains("truncated"), "{with:?}: {err}");
        let err = open(&whole[..whole.len() - 2]).expect("no end marker refused");
        assert!(err.to_string().contains("truncated"), "{with:?}: {err}");
        let img = decode_jpeg_with(&corrupt, DEFAULT_MAX_PIXELS, with).unwrap();
        assert_eq!((img.width, img.height, img.channels), (48, 32, 3));
    }
}

#[test]
fn a_decoder_is_asked_for_by_name() {
    for b in [Backend::Auto, Backend::Zune, Backend::Turbo] {
        assert_eq!(Backend::parse(b.name()).unwrap(), b);
    }
    assert_eq!(Backend::parse(" Turbo ").unwrap(), Backend::Turbo);
    let err = Backend::parse("fast").unwrap_err().to_string();
    assert!(
        err.contains("\"fast\"") && err.contains("auto, zune") && err.contains("turbo"),
        "{err}"
    );
}
