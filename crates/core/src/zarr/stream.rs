//! Filling a chunk's buffer from a decoding stream: shared by the numcodecs compressors
//! (`codec`) and the LZMA codec (`lzma`), which `codec` also dispatches to, so it lives
//! below both.

use std::io::Read;

use crate::error::{Error, Result};

/// A decoder's output length against the chunk's.
pub(crate) fn expect_len(got: usize, expected: usize) -> Result<()> {
    if got == expected {
        Ok(())
    } else {
        Err(Error::DecodedSize { got, expected })
    }
}

/// Fills `dst` from a decoding reader and checks the stream ends right there.
pub(crate) fn read_exact_stream(mut r: impl Read, dst: &mut [u8]) -> Result<()> {
    let mut filled = 0;
    while filled < dst.len() {
        match r.read(&mut dst[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(Error::CorruptStream(e)),
        }
    }
    expect_len(filled, dst.len())?;
    let mut extra = [0u8; 1];
    match r.read(&mut extra) {
        Ok(0) => Ok(()),
        Ok(_) => Err(Error::DecodesLonger {
            expected: dst.len(),
        }),
        Err(e) => Err(Error::CorruptStream(e)),
    }
}
