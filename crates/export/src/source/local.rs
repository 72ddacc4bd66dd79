//! [`TraceSource`] over a local trace: core's mapped readers ([`Trace`], [`Sensor`],
//! [`ChannelReader`]), one reader per thread.

use std::borrow::Cow;

use roverlog_core::format::events::read_events;
use roverlog_core::format::{ChannelReader, Sensor, SensorMeta, Trace};

use super::{ChannelSource, SensorSource, TraceSource};
use crate::error::ExportError;

impl TraceSource for Trace {
    type Sensor = Sensor;

    fn location(&self) -> String {
        self.dir().display().to_string()
    }

    fn sensor_names(&self) -> Vec<String> {
        Trace::sensor_names(self)
            .into_iter()
            .map(String::from)
            .collect()
    }

    fn sensor(&self, name: &str) -> Result<Sensor, ExportError> {
        Ok(Trace::sensor(self, name)?)
    }

    fn events(&self) -> Result<Vec<roverlog_core::format::events::EventLine>, ExportError> {
        Ok(read_events(self.dir())?)
    }

    fn config(&self, limit: u64) -> Option<Vec<u8>> {
        use std::io::Read;
        let path = self.dir().join(roverlog_core::format::trace::CONFIG_FILE);
        let mut text = Vec::new();
        std::fs::File::open(path)
            .and_then(|f| f.take(limit + 1).read_to_end(&mut text))
            .ok()?;
        (text.len() as u64 <= limit).then_some(text)
    }
}

impl SensorSource for Sensor {
    type Channel<'a> = LocalChannel<'a>;

    fn meta(&self) -> &SensorMeta {
        Sensor::meta(self)
    }

    fn timestamps(&self) -> Result<Vec<f64>, ExportError> {
        Ok(Sensor::timestamps(self)?)
    }

    fn channel(&self, name: &str) -> Result<LocalChannel<'_>, ExportError> {
        Ok(LocalChannel {
            sensor: self,
            name: name.to_string(),
        })
    }
}

/// A local channel: each thread maps it with a reader of its own.
pub struct LocalChannel<'a> {
    sensor: &'a Sensor,
    name: String,
}

impl ChannelSource for LocalChannel<'_> {
    type Reader = ChannelReader;

    fn reader(&self) -> Result<ChannelReader, ExportError> {
        Ok(self.sensor.channel(&self.name)?)
    }

    fn len(&self, reader: &mut ChannelReader) -> Result<u64, ExportError> {
        Ok(reader.len()?)
    }

    fn get<'r>(
        &self,
        reader: &'r mut ChannelReader,
        index: u64,
    ) -> Result<Cow<'r, [u8]>, ExportError> {
        Ok(reader.get(index)?)
    }
}
