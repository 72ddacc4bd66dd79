//! JPEG frames to pixels with zune-jpeg (pure Rust), behind the `jpeg` feature.
//!
//! Colour frames decode to interleaved RGB, grayscale frames to one channel, as gulpio2's
//! default decoder (simplejpeg) returns them. Pixel values may differ from simplejpeg's by a
//! little: gulpio2 asks libjpeg-turbo for its fast DCT and fast upsampling.

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
    let frame = JpegFrame::open(bytes, max_pixels)?;
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
        return Err(Error::Codec {
            codec: "jpeg".into(),
            msg: format!(
                "truncated: no end-of-image marker (FF D9) at the end of its {} bytes",
                bytes.len()
            ),
        });
    }
    Ok(())
}

fn jpeg_err(e: zune_jpeg::errors::DecodeErrors) -> Error {
    Error::Jpeg(JpegProblem::Decode(e))
}

/// A JPEG whose headers have been read: its decoded size is known before any pixel is
/// decoded, so a caller can lay out one buffer for many frames (a numpy array's memory) and
/// decode each straight into its place, with no per-frame allocation or copy.
pub struct JpegFrame<'a> {
    dec: JpegDecoder<ZCursor<&'a [u8]>>,
    width: usize,
    height: usize,
    channels: usize,
}

impl<'a> JpegFrame<'a> {
    /// Reads the headers of `bytes`, refusing an image of more than `max_pixels` pixels.
    /// Colour images decode to RGB, grayscale ones to one channel.
    pub fn open(bytes: &'a [u8], max_pixels: usize) -> Result<JpegFrame<'a>> {
        check_complete(bytes)?;
        let opts = DecoderOptions::default().jpeg_set_out_colorspace(ColorSpace::RGB);
        let mut dec = JpegDecoder::new_with_options(ZCursor::new(bytes), opts);
        dec.decode_headers().map_err(jpeg_err)?;
        let (w, h) = dec
            .dimensions()
            .ok_or(Error::Jpeg(JpegProblem::NoDimensions))?;
        if w.saturating_mul(h) > max_pixels {
            return Err(Error::Jpeg(JpegProblem::TooLarge {
                width: w,
                height: h,
                max_pixels,
            }));
        }
        if dec.input_colorspace() == Some(ColorSpace::Luma) {
            let gray = dec.options().jpeg_set_out_colorspace(ColorSpace::Luma);
            dec.set_options(gray);
        }
        let channels = dec.options().jpeg_get_out_colorspace().num_components();
        Ok(JpegFrame {
            dec,
            width: w,
            height: h,
            channels,
        })
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
    pub fn decode_into(mut self, out: &mut [u8]) -> Result<()> {
        if out.len() != self.len() {
            return Err(Error::Jpeg(JpegProblem::OutputSize {
                len: out.len(),
                height: self.height,
                width: self.width,
                channels: self.channels,
            }));
        }
        self.dec.decode_into(out).map_err(jpeg_err)
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
