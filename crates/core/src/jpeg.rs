//! JPEG frames to pixels, behind the `jpeg` feature: with libjpeg-turbo where the system has
//! it (loaded at run time, module `turbo`), else with zune-jpeg (pure Rust); [`backend`] picks,
//! and `ROVERLOG_JPEG=auto|zune|turbo` or [`set_backend`] overrides.
//!
//! Both decoders behave the same to a caller: colour frames decode to interleaved RGB,
//! grayscale frames to one channel, as gulpio2's default decoder (simplejpeg) returns them; a
//! frame cut short, one whose headers do not parse and one over the size limit are errors,
//! damage inside the entropy-coded data is not (libjpeg only warns of it, zune-jpeg decodes
//! on, OpenCV returns such a frame), so a frame reads alike on both. Pixel values may
//! differ by a little: zune-jpeg's IDCT and upsampling are not libjpeg's, and gulpio2 asks
//! libjpeg-turbo for its fast DCT and fast upsampling (we use its default, accurate ones, as
//! OpenCV and Pillow do).

mod backend;
mod turbo;

pub use backend::{backend, set_backend, turbo_unavailable, Backend, ENV};

use zune_core::bytestream::ZCursor;
use zune_core::colorspace::ColorSpace;
use zune_core::options::DecoderOptions;
use zune_jpeg::JpegDecoder;

use crate::error::JpegProblem;
use crate::{Error, Result};

/// A decoded frame: `height` rows of `width` pixels of `channels` bytes (1 = gray, 3 = RGB).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecodedFrame {
    pub width: usize,
    pub height: usize,
    pub channels: usize,
    pub pixels: Vec<u8>,
}

impl DecodedFrame {
    /// Mean of all samples (all channels), as `numpy.mean(img)` computes it.
    pub fn mean(&self) -> f64 {
        if self.pixels.is_empty() {
            return 0.0;
        }
        self.pixels.iter().map(|&p| p as u64).sum::<u64>() as f64 / self.pixels.len() as f64
    }
}

/// Largest image [`decode_jpeg`] decodes, in pixels (about 8192 x 8192): a frame's header is
/// untrusted and would otherwise make us allocate up to 16384 x 16384 x 3 bytes.
pub const DEFAULT_MAX_PIXELS: usize = 1 << 26;

/// Decodes one JPEG of at most [`DEFAULT_MAX_PIXELS`] pixels. Errors are [`Error::Jpeg`].
pub fn decode_jpeg(bytes: &[u8]) -> Result<DecodedFrame> {
    decode_jpeg_limited(bytes, DEFAULT_MAX_PIXELS)
}

/// Decodes one JPEG, refusing (before allocating) one of more than `max_pixels` pixels.
pub fn decode_jpeg_limited(bytes: &[u8], max_pixels: usize) -> Result<DecodedFrame> {
    decode_jpeg_with(bytes, max_pixels, backend()?)
}

/// Decodes one JPEG as a check, strictly, so a frame whose entropy-coded data is damaged is
/// an error where the readers' lenient decode fills what it cannot decode and goes on (as
/// OpenCV and browsers do). With libjpeg-turbo loaded (whatever [`backend`] says), its
/// warnings count ("Corrupt JPEG data: N extraneous bytes before marker", "premature end of
/// data segment": scan data garbled in place makes one or the other); without it, zune-jpeg
/// in strict mode, which finds fewer (a marker inside the scan, data that ends before the
/// last block, a code no table holds). What `validate --deep` runs on every frame.
pub fn check_jpeg_strict(bytes: &[u8], max_pixels: usize) -> Result<()> {
    if let Ok(t) = turbo::get() {
        let head = turbo::header(t, bytes).map_err(turbo_err)?;
        check_size(head.width, head.height, max_pixels)?;
        // CMYK/YCCK (no channel count from libjpeg-turbo): zune-jpeg's check below.
        if let Some(channels) = head.channels {
            let mut out = vec![0; head.width * head.height * channels];
            return turbo::decode_into(
                t,
                bytes,
                head.width,
                head.height,
                channels,
                &mut out,
                turbo::Warnings::Fail,
            )
            .map_err(turbo_err);
        }
    }
    let opts = DecoderOptions::default()
        .jpeg_set_out_colorspace(ColorSpace::RGB)
        .set_strict_mode(true);
    let mut dec = JpegDecoder::new_with_options(ZCursor::new(bytes), opts);
    dec.decode_headers().map_err(jpeg_err)?;
    let (w, h) = dec
        .dimensions()
        .ok_or(Error::Jpeg(JpegProblem::NoDimensions))?;
    check_size(w, h, max_pixels)?;
    dec.decode().map_err(jpeg_err)?;
    Ok(())
}

/// [`decode_jpeg_limited`] with the decoder `with`, whatever [`backend`] says.
pub fn decode_jpeg_with(bytes: &[u8], max_pixels: usize, with: Backend) -> Result<DecodedFrame> {
    let frame = JpegFrame::open_with(bytes, max_pixels, with)?;
    let (width, height, channels) = (frame.width(), frame.height(), frame.channels());
    let mut pixels = vec![0; frame.len()];
    frame.decode_into(&mut pixels)?;
    Ok(DecodedFrame {
        width,
        height,
        channels,
        pixels,
    })
}

/// Refuses a JPEG cut short (a frame torn by a crash, a partial copy): zune-jpeg decodes one
/// without complaint, filling the rows it lacks with grey, where libjpeg-based readers
/// (Pillow, simplejpeg) raise. A whole JPEG ends with its end-of-image marker `FF D9`,
/// before the zero bytes that pad AVI chunks and gulp records (as `validate --deep` checks).
fn check_complete(bytes: &[u8]) -> Result<()> {
    let body = match bytes.iter().rposition(|&b| b != 0) {
        Some(end) => &bytes[..=end],
        None => bytes,
    };
    if bytes.starts_with(&[0xFF, 0xD8]) && !body.ends_with(&[0xFF, 0xD9]) {
        return Err(Error::Jpeg(JpegProblem::Truncated { len: bytes.len() }));
    }
    Ok(())
}

fn jpeg_err(e: zune_jpeg::errors::DecodeErrors) -> Error {
    Error::Jpeg(JpegProblem::Decode(e))
}

fn turbo_err(e: crate::error::TurboError) -> Error {
    Error::Jpeg(JpegProblem::Turbo(e))
}

fn check_size(width: usize, height: usize, max_pixels: usize) -> Result<()> {
    if width.saturating_mul(height) > max_pixels {
        return Err(Error::Jpeg(JpegProblem::TooLarge {
            width,
            height,
            max_pixels,
        }));
    }
    Ok(())
}

/// A JPEG whose headers have been read: its decoded size is known before any pixel is
/// decoded, so a caller can lay out one buffer for many frames (a numpy array's memory) and
/// decode each straight into its place, with no per-frame allocation or copy.
pub struct JpegFrame<'a> {
    decoder: FrameDecoder<'a>,
    width: usize,
    height: usize,
    channels: usize,
}

enum FrameDecoder<'a> {
    Zune(Box<JpegDecoder<ZCursor<&'a [u8]>>>),
    Turbo(&'static turbo::Turbo, &'a [u8]),
}

impl<'a> JpegFrame<'a> {
    /// Reads the headers of `bytes` with the decoder [`backend`] picks, refusing an image of
    /// more than `max_pixels` pixels. Colour images decode to RGB, grayscale ones to one
    /// channel.
    pub fn open(bytes: &'a [u8], max_pixels: usize) -> Result<JpegFrame<'a>> {
        JpegFrame::open_with(bytes, max_pixels, backend()?)
    }

    /// [`JpegFrame::open`] with the decoder `with` (resolved as [`Backend::resolve`] does).
    pub fn open_with(bytes: &'a [u8], max_pixels: usize, with: Backend) -> Result<JpegFrame<'a>> {
        check_complete(bytes)?;
        if with.resolve()? == Backend::Turbo {
            let t = turbo::get().expect("resolved to Turbo: loaded");
            let head = turbo::header(t, bytes).map_err(turbo_err)?;
            check_size(head.width, head.height, max_pixels)?;
            if head.width == 0 || head.height == 0 {
                return Err(Error::Jpeg(JpegProblem::NoDimensions));
            }
            if let Some(channels) = head.channels {
                return Ok(JpegFrame {
                    decoder: FrameDecoder::Turbo(t, bytes),
                    width: head.width,
                    height: head.height,
                    channels,
                });
            }
            // CMYK or YCCK: libjpeg-turbo does not convert them to RGB; zune-jpeg does.
        }
        JpegFrame::open_zune(bytes, max_pixels)
    }

    fn open_zune(bytes: &'a [u8], max_pixels: usize) -> Result<JpegFrame<'a>> {
        let opts = DecoderOptions::default().jpeg_set_out_colorspace(ColorSpace::RGB);
        let mut dec = JpegDecoder::new_with_options(ZCursor::new(bytes), opts);
        dec.decode_headers().map_err(jpeg_err)?;
        let (w, h) = dec
            .dimensions()
            .ok_or(Error::Jpeg(JpegProblem::NoDimensions))?;
        check_size(w, h, max_pixels)?;
        if dec.input_colorspace() == Some(ColorSpace::Luma) {
            let gray = dec.options().jpeg_set_out_colorspace(ColorSpace::Luma);
            dec.set_options(gray);
        }
        let channels = dec.options().jpeg_get_out_colorspace().num_components();
        Ok(JpegFrame {
            decoder: FrameDecoder::Zune(Box::new(dec)),
            width: w,
            height: h,
            channels,
        })
    }

    /// The decoder that will decode this frame: `Zune` or `Turbo`, never `Auto`.
    pub fn decoder(&self) -> Backend {
        match self.decoder {
            FrameDecoder::Zune(_) => Backend::Zune,
            FrameDecoder::Turbo(..) => Backend::Turbo,
        }
    }

    /// Pixels per row.
    pub fn width(&self) -> usize {
        self.width
    }

    /// Rows.
    pub fn height(&self) -> usize {
        self.height
    }

    /// Bytes per pixel: 1 (gray) or 3 (RGB).
    pub fn channels(&self) -> usize {
        self.channels
    }

    /// Bytes of the decoded image (`height * width * channels`).
    pub fn len(&self) -> usize {
        self.width * self.height * self.channels
    }

    /// True for an image without pixels.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Decodes the image into `out`, which must be exactly [`JpegFrame::len`] bytes.
    pub fn decode_into(self, out: &mut [u8]) -> Result<()> {
        if out.len() != self.len() {
            return Err(Error::Jpeg(JpegProblem::OutputSize {
                len: out.len(),
                height: self.height,
                width: self.width,
                channels: self.channels,
            }));
        }
        match self.decoder {
            FrameDecoder::Zune(mut dec) => dec.decode_into(out).map_err(jpeg_err),
            FrameDecoder::Turbo(t, bytes) => turbo::decode_into(
                t,
                bytes,
                self.width,
                self.height,
                self.channels,
                out,
                turbo::Warnings::Pass,
            )
            .map_err(turbo_err),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn garbage_and_oversized_images_are_errors() {
        assert!(matches!(decode_jpeg(b"not a jpeg"), Err(Error::Jpeg(_))));
        assert!(decode_jpeg(&[]).is_err());
    }

    #[test]
    fn a_jpeg_without_its_end_marker_is_truncated() {
        // Headers alone (start of image, then a comment): cut before any scan.
        let cut = [0xFF, 0xD8, 0xFF, 0xFE, 0x00, 0x04, b'h', b'i'];
        let err = JpegFrame::open(&cut, DEFAULT_MAX_PIXELS)
            .err()
            .expect("refused");
        assert!(err.to_string().contains("truncated"), "{err}");
        // Zero padding after the end marker is not truncation (the header error is another).
        let padded = [0xFF, 0xD8, 0xFF, 0xD9, 0, 0];
        let err = JpegFrame::open(&padded, DEFAULT_MAX_PIXELS)
            .err()
            .expect("no image");
        assert!(!err.to_string().contains("truncated"), "{err}");
    }
}
