//! A sample read in two steps ([`crate::replay::Source::fetch`]): what must be read in order
//! (a block, a chunk, a message's bytes) on the reading thread, the rest (decoding it,
//! compressing `lzmaf` channels) in [`Fetched::finish`], on whichever thread has time.

use crate::error::{Error, Result};
use crate::format::{ChannelFormat, SensorMeta};

/// The rest of the work of one sample: its channels' bytes, in declared order.
pub type Finish = Box<dyn FnOnce() -> Result<Vec<Vec<u8>>> + Send>;

/// A sample whose reading is done and whose decoding may not be.
pub struct Fetched {
    data: Data,
    /// Channels to compress as `lzmaf` frames once made.
    compress: Option<Compress>,
}

/// The `lzmaf` channels of a sample, compressed at `preset` once it is made.
struct Compress {
    preset: u32,
    /// By position: the `lzmaf` channels' name and sample size (`None`: another format).
    channels: Vec<Option<(String, usize)>>,
}

enum Data {
    Ready(Vec<Vec<u8>>),
    Later(Finish),
}

impl Fetched {
    /// A sample read whole.
    pub fn ready(data: Vec<Vec<u8>>) -> Fetched {
        Fetched {
            data: Data::Ready(data),
            compress: None,
        }
    }

    /// A sample `finish` makes.
    pub fn later(finish: impl FnOnce() -> Result<Vec<Vec<u8>>> + Send + 'static) -> Fetched {
        Fetched {
            data: Data::Later(Box::new(finish)),
            compress: None,
        }
    }

    /// Compresses every `lzmaf` channel of `meta` (its data channels, in declared order) at
    /// `preset` once the sample is made: what [`crate::replay::Source::read_encoded`] gives.
    /// A sample of the wrong size for its channel is refused then, as
    /// [`crate::format::SensorWriter::append`] refuses it.
    pub fn compressing_lzmaf(mut self, meta: &SensorMeta, preset: u32) -> Fetched {
        let which: Vec<_> = meta
            .data_channels()
            .map(|(name, c)| {
                (c.format == ChannelFormat::Lzmaf).then(|| (name.to_string(), c.sample_bytes()))
            })
            .collect();
        if which.iter().any(Option::is_some) {
            self.compress = Some(Compress {
                preset,
                channels: which,
            });
        }
        self
    }

    /// Does the rest of the work: the channels' bytes.
    pub fn finish(self) -> Result<Vec<Vec<u8>>> {
        let mut data = match self.data {
            Data::Ready(d) => d,
            Data::Later(f) => f()?,
        };
        if let Some(Compress { preset, channels }) = self.compress {
            for (buf, c) in data.iter_mut().zip(channels) {
                let Some((channel, expected)) = c else {
                    continue;
                };
                if buf.len() != expected {
                    return Err(Error::SampleSize {
                        channel,
                        expected,
                        got: buf.len(),
                    });
                }
                *buf = crate::format::lzma::compress(buf, preset);
            }
        }
        Ok(data)
    }
}
