//! JPEG frames to pixels with zune-jpeg (pure Rust), behind the `jpeg` feature.
//!
//! Colour frames decode to interleaved RGB, grayscale frames to one channel, as gulpio2's
//! default decoder (simplejpeg) returns them. Pixel values may differ from simplejpeg's by a
//! little: gulpio2 asks libjpeg-turbo for its fast DCT and fast upsampling.

use zune_core::bytestream::ZCursor;
use zune_core::colorspace::ColorSpace;
use zune_core::options::DecoderOptions;
use zune_jpeg::JpegDecoder;

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

/// Decodes one JPEG of at most [`DEFAULT_MAX_PIXELS`] pixels. Errors are [`Error::Codec`]
/// with codec `"jpeg"`.
pub fn decode_jpeg(bytes: &[u8]) -> Result<DecodedFrame> {
    decode_jpeg_limited(bytes, DEFAULT_MAX_PIXELS)
}

/// Decodes one JPEG, refusing (before allocating) one of more than `max_pixels` pixels.
pub fn decode_jpeg_limited(bytes: &[u8], max_pixels: usize) -> Result<DecodedFrame> {
    let err = |e: zune_jpeg::errors::DecodeErrors| Error::Codec {
        codec: "jpeg".into(),
        msg: e.to_string(),
    };
    let opts = DecoderOptions::default().jpeg_set_out_colorspace(ColorSpace::RGB);
    let mut dec = JpegDecoder::new_with_options(ZCursor::new(bytes), opts);
    dec.decode_headers().map_err(err)?;
    if let Some((w, h)) = dec.dimensions() {
        let pixels = w.saturating_mul(h);
        if pixels > max_pixels {
            return Err(Error::Codec {
                codec: "jpeg".into(),
                msg: format!("{w}x{h} image is over the limit of {max_pixels} pixels"),
            });
        }
    }
    if dec.input_colorspace() == Some(ColorSpace::Luma) {
        let gray = dec.options().jpeg_set_out_colorspace(ColorSpace::Luma);
        dec.set_options(gray);
    }
    let pixels = dec.decode().map_err(err)?;
    let info = dec.info().ok_or_else(|| Error::Codec {
        codec: "jpeg".into(),
        msg: "no image information after decoding".into(),
    })?;
    let (width, height) = (info.width as usize, info.height as usize);
    let channels = pixels.len().checked_div(width * height).unwrap_or(0);
    Ok(DecodedFrame {
        width,
        height,
        channels,
        pixels,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn garbage_and_oversized_images_are_errors() {
        assert!(matches!(
            decode_jpeg(b"not a jpeg"),
            Err(Error::Codec { .. })
        ));
        assert!(decode_jpeg(&[]).is_err());
    }
}
