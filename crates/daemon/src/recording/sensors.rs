//! Sensors come and go: a connection's hello attaches it to its sensor (a [`Slot`], created with
//! its writer thread on first use), and its end detaches it; a sensor with no connection and
//! no open trace is forgotten.

use std::fmt;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::{Arc, Mutex};

use tokio::sync::Semaphore;

use super::{Recorder, State};
use crate::poison::LockExt;
use crate::protocol::{FrameLayout, Hello};
use crate::sidecar::Sidecars;
use crate::slot::Slot;
use crate::stats::SensorStats;
use crate::writer::{Writer, WriterMsg};
use roverlog_core::format::SensorMeta;

/// Why a hello was not attached to its sensor; the text is the driver's error line.
#[derive(Debug)]
pub enum AttachError {
    /// Another connection of the sensor is still open (docs/protocol.md 7): a driver that
    /// reconnected before the daemon saw its old connection close retries.
    Busy { sensor: String },
    /// The sensor exists in this trace with other channels; `difference` names the first.
    ChannelsDiffer { sensor: String, difference: String },
    /// `max_sensors` sensors exist already.
    TooManySensors { max: usize, sensor: String },
    /// A sidecar file of the hello (docs/protocol.md 2.6) has the name of one of the
    /// sensor's channel files.
    FileIsChannel { sensor: String, file: String },
    /// The sensor's writer thread could not be started.
    Thread(std::io::Error),
}

impl fmt::Display for AttachError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AttachError::Busy { sensor } => {
                write!(f, "sensor {sensor:?} already has a live connection")
            }
            AttachError::ChannelsDiffer { sensor, difference } => write!(
                f,
                "sensor {sensor:?} exists in this trace with different channels ({difference}); use a new sensor name or rotate"
            ),
            AttachError::TooManySensors { max, sensor } => {
                write!(f, "max_sensors ({max}) reached; sensor {sensor:?} refused")
            }
            AttachError::FileIsChannel { sensor, file } => write!(
                f,
                "sensor {sensor:?}: file {file:?} is the name of one of its channel files"
            ),
            AttachError::Thread(e) => write!(f, "cannot start a writer thread: {e}"),
        }
    }
}

impl std::error::Error for AttachError {}

impl Recorder {
    /// The channels as stored: the declared ones with the config's format overrides.
    fn stored_meta(&self, hello: &Hello) -> SensorMeta {
        let mut meta = hello.channels.clone();
        for (name, ch) in &mut meta.channels {
            ch.format = self
                .cfg
                .storage
                .stored_format(&hello.sensor, name, &ch.format);
        }
        self.cfg
            .storage
            .add_receive_channel(&hello.sensor, &mut meta);
        meta
    }

    /// Attaches a connection to its sensor, creating the sensor (and opening its files in the
    /// open trace) on first use; `files` (the hello's sidecar files, docs/protocol.md 2.6)
    /// become the sensor's, put into each trace it is opened in from now on (the open one
    /// gets them through [`WriterMsg::Files`]). Refuses a second live connection, different
    /// channels, a sidecar named like a channel file, and more than `max_sensors` sensors.
    pub fn attach(&self, hello: &Hello, files: Sidecars) -> Result<Arc<Slot>, AttachError> {
        let meta = self.stored_meta(hello);
        if let Some(file) = files.iter().find(|f| is_channel_file(&meta, &f.name)) {
            return Err(AttachError::FileIsChannel {
                sensor: hello.sensor.clone(),
                file: file.name.clone(),
            });
        }
        let mut st = self.lock();
        if let Some(slot) = st.slots.get(&hello.sensor) {
            if slot.stats.connected.load(Relaxed) {
                return Err(AttachError::Busy {
                    sensor: hello.sensor.clone(),
                });
            }
            // `seq` is not part of a sensor's identity (protocol.md 4): each batch says
            // whether its frames carry one.
            if slot.hello.channels != hello.channels {
                return Err(AttachError::ChannelsDiffer {
                    sensor: hello.sensor.clone(),
                    difference: channel_difference(&slot.hello.channels, &hello.channels),
                });
            }
            slot.stats.connected.store(true, Relaxed);
            *slot.files.lock_or_recover() = files;
            if slot.stats.failure().is_some() {
                // Its files were given up on a failure: the new connection reopens them
                // (recovering to the last whole sample) instead of getting the old failure.
                if let Some(t) = &st.trace {
                    slot.open_in(&t.dir, &t.events);
                }
            }
            return Ok(slot.clone());
        }
        if st.slots.len() >= self.cfg.ingest.max_sensors {
            return Err(AttachError::TooManySensors {
                max: self.cfg.ingest.max_sensors,
                sensor: hello.sensor.clone(),
            });
        }
        let (tx, rx) = crossbeam_channel::unbounded();
        let budget = Arc::new(Semaphore::new(self.cfg.ingest.queue_bytes as usize));
        let stats = Arc::new(SensorStats::new(self.cfg.ingest.queue_bytes));
        stats.connected.store(true, Relaxed);
        stats.beat(self.epoch);
        let writer = Writer::new(
            hello.sensor.clone(),
            meta,
            FrameLayout::new(hello, self.cfg.ingest.max_frame_bytes),
            self.settings.clone(),
            rx,
            budget.clone(),
            stats.clone(),
            self.notices.clone(),
        );
        let thread = std::thread::Builder::new()
            .name(format!("writer-{}", hello.sensor))
            .spawn(move || writer.run())
            .map_err(AttachError::Thread)?;
        let slot = Arc::new(Slot {
            name: hello.sensor.clone(),
            hello: hello.clone(),
            tx,
            budget,
            stats,
            seen: Mutex::default(),
            thread: Mutex::new(Some(thread)),
            conn: Mutex::new(None),
            files: Mutex::new(files),
        });
        if let Some(t) = &st.trace {
            slot.open_in(&t.dir, &t.events);
        }
        st.slots.insert(hello.sensor.clone(), slot.clone());
        Ok(slot)
    }

    /// Gives `slot`, just attached, a duplicate of its connection's socket (see
    /// [`Slot::driver_closed`]).
    pub fn set_connection(&self, slot: &Slot, socket: std::os::fd::BorrowedFd<'_>) {
        // Without a duplicate (no descriptor left) the connection counts as live, as before.
        *slot.conn.lock_or_recover() = socket.try_clone_to_owned().ok();
    }

    /// Whether `sensor` has a connection whose driver has closed it (see
    /// [`Slot::driver_closed`]): a hello for it waits for that connection's release instead
    /// of being refused.
    pub fn holder_closed(&self, sensor: &str) -> bool {
        let slot = self.lock().slots.get(sensor).cloned();
        slot.is_some_and(|s| s.stats.connected.load(Relaxed) && s.driver_closed())
    }

    /// The connection of `slot` ended. A sensor without connection and trace is removed.
    pub fn detach(&self, slot: &Arc<Slot>) {
        *slot.conn.lock_or_recover() = None;
        slot.stats.connected.store(false, Relaxed);
        let mut st = self.lock();
        if st.trace.is_none() {
            forget(&mut st, slot);
        }
    }

    /// Forgets a sensor whose files could not be opened, so a corrected hello can retry.
    pub fn discard_failed(&self, slot: &Arc<Slot>) {
        *slot.conn.lock_or_recover() = None;
        slot.stats.connected.store(false, Relaxed);
        forget(&mut self.lock(), slot);
    }
}

/// Whether `name` is a file of one of `meta`'s stored channels (`ts`, a channel, an `lzmaf`
/// channel's `_i` index).
fn is_channel_file(meta: &SensorMeta, name: &str) -> bool {
    name == roverlog_core::format::TS_CHANNEL
        || meta.channels.iter().any(|(c, ch)| {
            c == name
                || (ch.format == roverlog_core::format::ChannelFormat::Lzmaf
                    && name.strip_suffix("_i") == Some(c.as_str()))
        })
}

/// The first difference between a sensor's channels (`had`) and a hello's (`got`), in words.
fn channel_difference(had: &SensorMeta, got: &SensorMeta) -> String {
    let describe = |c: &roverlog_core::format::ChannelMeta| {
        format!(
            "{} {} {:?} desc {:?}",
            c.format.as_str(),
            c.dtype,
            c.shape,
            c.desc
        )
    };
    for (i, ((hn, hc), (gn, gc))) in had.channels.iter().zip(&got.channels).enumerate() {
        if hn != gn {
            return format!("channel {i} is {gn:?}, the sensor has {hn:?}");
        }
        if hc != gc {
            return format!(
                "channel {gn:?} is {}, the sensor has {}",
                describe(gc),
                describe(hc)
            );
        }
    }
    format!(
        "{} channels, the sensor has {}",
        got.channels.len(),
        had.channels.len()
    )
}

/// Removes `slot` from the sensors and ends its writer, if it is still the sensor of that
/// name: a newer connection's sensor (after this one was discarded) is left alone.
pub(super) fn forget(st: &mut State, slot: &Arc<Slot>) {
    if st
        .slots
        .get(&slot.name)
        .is_some_and(|s| Arc::ptr_eq(s, slot))
    {
        st.slots.remove(&slot.name);
        let _ = slot.tx.send(WriterMsg::Exit);
    }
}
