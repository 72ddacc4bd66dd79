//! [`TraceSource`] over a trace read in place ([`RemoteTrace`]): each sensor's `meta.json`
//! and `ts` fetched once however often the export asks for it, each channel opened once (its
//! index read once) and shared by the threads; `raw` samples and `lzmaf` frames read about
//! 256 KiB to a range request (an IMU's hour is not millions of requests), the rest one
//! request a sample.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::ops::Range;
use std::sync::{Arc, Mutex, PoisonError};

use roverlog_core::format::events::{EventLine, EventReader, EVENTS_DIR, EVENTS_FILE};
use roverlog_core::format::trace::CONFIG_FILE;
use roverlog_core::format::SensorMeta;
use roverlog_core::remote::{RemoteChannel, RemoteError, RemoteSensor, RemoteTrace};

use super::{ChannelSource, SensorSource, TraceSource};
use crate::error::ExportError;

/// The most bytes of an event log read in place (the daemon's lines are a few hundred bytes:
/// about a million events).
pub const MAX_EVENTS_BYTES: u64 = 256 << 20;

/// A trace read in place, its sensors kept once opened.
pub struct InPlace {
    trace: RemoteTrace,
    sensors: Mutex<BTreeMap<String, Arc<RemoteSensor>>>,
}

impl InPlace {
    pub fn new(trace: RemoteTrace) -> InPlace {
        InPlace {
            trace,
            sensors: Mutex::new(BTreeMap::new()),
        }
    }

    /// The trace.
    pub fn trace(&self) -> &RemoteTrace {
        &self.trace
    }
}

impl TraceSource for InPlace {
    type Sensor = Arc<RemoteSensor>;

    fn location(&self) -> String {
        self.trace.location()
    }

    fn sensor_names(&self) -> Vec<String> {
        self.trace
            .sensor_names()
            .into_iter()
            .map(String::from)
            .collect()
    }

    fn sensor(&self, name: &str) -> Result<Arc<RemoteSensor>, ExportError> {
        let mut kept = self.sensors.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(s) = kept.get(name) {
            return Ok(s.clone());
        }
        let s = Arc::new(self.trace.sensor(name)?);
        kept.insert(name.to_string(), s.clone());
        Ok(s)
    }

    fn events(&self) -> Result<Vec<EventLine>, ExportError> {
        let path = format!("{EVENTS_DIR}/{EVENTS_FILE}");
        let Some(bytes) = self.trace.read_file(&path, MAX_EVENTS_BYTES)? else {
            return Ok(Vec::new());
        };
        let shown = format!("{}/{path}", self.trace.location());
        Ok(EventReader::new(shown, &bytes[..]).collect::<Result<_, _>>()?)
    }

    fn config(&self, limit: u64) -> Option<Vec<u8>> {
        self.trace.read_file(CONFIG_FILE, limit).ok().flatten()
    }
}

impl SensorSource for Arc<RemoteSensor> {
    type Channel<'a> = RemoteChannel;

    fn meta(&self) -> &SensorMeta {
        RemoteSensor::meta(self)
    }

    fn timestamps(&self) -> Result<Vec<f64>, ExportError> {
        Ok(RemoteSensor::timestamps(self).to_vec())
    }

    fn channel(&self, name: &str) -> Result<RemoteChannel, ExportError> {
        Ok(RemoteSensor::channel(self, name)?)
    }
}

impl ChannelSource for RemoteChannel {
    type Reader = ();

    fn reader(&self) -> Result<(), ExportError> {
        Ok(())
    }

    fn len(&self, _: &mut ()) -> Result<u64, ExportError> {
        Ok(RemoteChannel::len(self))
    }

    fn get<'r>(&self, _: &'r mut (), index: u64) -> Result<Cow<'r, [u8]>, ExportError> {
        Ok(Cow::Owned(RemoteChannel::get(self, index)?))
    }

    fn batch_len(&self) -> u64 {
        RemoteChannel::batch_len(self)
    }

    /// One range request for a batch of `raw` samples or `lzmaf` frames.
    fn visit(
        &self,
        _: &mut (),
        range: Range<u64>,
        f: &mut dyn FnMut(&[u8]),
    ) -> Result<(), ExportError> {
        for sample in self.get_range(range)? {
            f(&sample);
        }
        Ok(())
    }
}

impl From<RemoteError> for ExportError {
    fn from(e: RemoteError) -> ExportError {
        ExportError::Remote(Box::new(e))
    }
}
