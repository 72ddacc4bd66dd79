//! What the exporter reads a trace through: [`TraceSource`], [`SensorSource`] and
//! [`ChannelSource`], implemented for a local trace (`local`: core's mapped readers, as
//! before) and for a trace read in place (`remote`: core's [`RemoteTrace`], by range
//! requests, whatever backend opened it: the binary wires `roverlog-store`'s S3 one in; this
//! crate knows no store). The same sample bytes come out of both, so a trace exports to the
//! same MCAP file wherever it lies.
//!
//! [`RemoteTrace`]: roverlog_core::remote::RemoteTrace

mod local;
mod remote;

use std::borrow::Cow;
use std::ops::Range;

use roverlog_core::format::events::EventLine;
use roverlog_core::format::SensorMeta;

use crate::error::ExportError;

pub use local::LocalChannel;
pub use remote::InPlace;

/// A trace the exporter reads.
pub trait TraceSource: Sync {
    /// One of its sensors, opened.
    type Sensor: SensorSource;

    /// Where the trace is, for messages (a directory, `s3://bucket/prefix/trace`).
    fn location(&self) -> String;

    /// Names of the real (non-virtual) sensors, sorted.
    fn sensor_names(&self) -> Vec<String>;

    /// Opens sensor `name`; a sensor the trace does not have is an error naming it.
    fn sensor(&self, name: &str) -> Result<Self::Sensor, ExportError>;

    /// The trace's events (`_roverlog/events.jsonl`); none without an event log.
    fn events(&self) -> Result<Vec<EventLine>, ExportError>;

    /// The trace's `config.yaml` whole, when it has one of at most `limit` bytes that reads
    /// (what [`crate::location::recorded`] looks in; anything else is no config).
    fn config(&self, limit: u64) -> Option<Vec<u8>>;
}

/// A sensor the exporter reads.
pub trait SensorSource: Sync {
    /// One of its channels, opened.
    type Channel<'a>: ChannelSource
    where
        Self: 'a;

    /// The parsed `meta.json`.
    fn meta(&self) -> &SensorMeta;

    /// Its timestamps (epoch seconds).
    fn timestamps(&self) -> Result<Vec<f64>, ExportError>;

    /// Opens channel `name`.
    fn channel(&self, name: &str) -> Result<Self::Channel<'_>, ExportError>;
}

/// A channel the exporter reads, from several threads: each takes a
/// [`ChannelSource::reader`] of its own (a local channel's mapped reader; nothing for one
/// read in place, whose index was read once when it opened).
pub trait ChannelSource: Sync {
    /// One thread's reading state.
    type Reader;

    /// A reader for the calling thread.
    fn reader(&self) -> Result<Self::Reader, ExportError>;

    /// Number of samples (a local channel's own count; one read in place: what its sensor's
    /// `ts` and its index agree on).
    fn len(&self, reader: &mut Self::Reader) -> Result<u64, ExportError>;

    /// Sample `index`: its bytes (decompressed; a video frame's JPEG).
    fn get<'r>(
        &self,
        reader: &'r mut Self::Reader,
        index: u64,
    ) -> Result<Cow<'r, [u8]>, ExportError>;

    /// How many samples one [`ChannelSource::visit`] should cover when every sample is read:
    /// 1 (the default) for a local channel; one read in place fetches small samples many to
    /// a request.
    fn batch_len(&self) -> u64 {
        1
    }

    /// `f(sample)` for each sample of `range`, in order; the first that does not read is the
    /// error, as [`ChannelSource::get`] names it.
    fn visit(
        &self,
        reader: &mut Self::Reader,
        range: Range<u64>,
        f: &mut dyn FnMut(&[u8]),
    ) -> Result<(), ExportError> {
        for i in range {
            f(&self.get(reader, i)?);
        }
        Ok(())
    }
}
