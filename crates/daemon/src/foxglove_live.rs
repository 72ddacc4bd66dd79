//! The live Foxglove feed (config `foxglove_listen`, off by default): the Foxglove SDK's
//! WebSocket server on loopback, so an engineer watches the sensors in Foxglove or Lichtblick
//! during a drive. Every data channel is a topic `/<sensor>/<channel>` shown as
//! `roverlog export` shows it (`export::message`).
//!
//! The writers never wait for it. A writer offers a sample after appending it, and the offer
//! copies it only when the channel has a subscriber and is due under its rate limit
//! (`foxglove_max_hz`, per sensor `foxglove_sensor_hz`); it then goes into a hand-off whose
//! bytes are bounded ([`QUEUE_BYTES`]): a sample that does not fit is dropped from the preview
//! and counted. One thread encodes the messages and hands them to the SDK, which keeps a
//! bounded backlog per client. Nothing here touches what is written or acknowledged.
//!
//! Besides the channels: every line the open trace's event log writes (alarms raised and
//! cleared, marks, starts, drops...) is a `foxglove.Log` on `/roverlog/events` at its level
//! (`export::log`), logged as it is written (the health task and the control commands write
//! them, never a writer); and a sensor with a position mapping (config `foxglove_location`)
//! has `foxglove.LocationFix` messages on `/<sensor>/location` (`export::location`), under the
//! sensor's rate like its channels. A mapping that does not fit the sensor's channels is
//! logged and shown in `status` (`foxglove.problems`); the sensor records as ever.

use std::collections::BTreeMap;
use std::sync::atomic::AtomicU64;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::{Duration, Instant};

use foxglove::{Context, PartialMetadata, RawChannel};

use crate::config::FoxgloveFeed;
use crate::events::EventLine;
use crate::poison::LockExt;
use roverlog_core::format::SensorMeta;
use roverlog_export::location::{self, Location};
use roverlog_export::log;
use roverlog_export::message::{channel_metadata, nanos, topic, MessageKind};

/// Sample bytes waiting to be encoded for Foxglove, all sensors together; more are dropped.
pub const QUEUE_BYTES: u64 = 16 << 20;

/// One sample on its way to Foxglove.
struct Preview {
    channel: Arc<RawChannel>,
    sensor: Arc<str>,
    ts: f64,
    body: Body,
}

/// What a preview's message is made of.
enum Body {
    /// A channel's sample bytes, shown as `kind` shows them.
    Sample(Arc<MessageKind>, Vec<u8>),
    /// A position read out of a sample: latitude, longitude, altitude.
    Fix([f64; 3]),
}

impl Body {
    /// Its bytes in the hand-off.
    fn len(&self) -> u64 {
        match self {
            Body::Sample(_, b) => b.len() as u64,
            Body::Fix(p) => std::mem::size_of_val(p) as u64,
        }
    }
}

/// The feed shared by every writer: the SDK context, the hand-off and its counters.
pub struct LiveHub {
    ctx: Arc<Context>,
    tx: crossbeam_channel::Sender<Preview>,
    queued: Arc<AtomicU64>,
    sent: Arc<AtomicU64>,
    dropped: AtomicU64,
    /// Where to listen (always set: without an address there is no hub) and the rates.
    cfg: FoxgloveFeed,
    server: std::sync::Mutex<Option<foxglove::WebSocketServerHandle>>,
    /// `/roverlog/events`, advertised from the start.
    events: Arc<RawChannel>,
    /// Per sensor: why its position mapping is not shown (as of its last connection).
    problems: std::sync::Mutex<BTreeMap<String, String>>,
}

impl LiveHub {
    /// The feed, when `foxglove_listen` is set; its server starts with [`LiveHub::serve`].
    pub fn new(cfg: &FoxgloveFeed) -> crate::error::Result<Option<Arc<LiveHub>>> {
        use crate::error::Error;
        if cfg.listen.is_none() {
            return Ok(None);
        }
        let (tx, rx) = crossbeam_channel::unbounded::<Preview>();
        let queued = Arc::new(AtomicU64::new(0));
        let sent = Arc::new(AtomicU64::new(0));
        let (q, s) = (queued.clone(), sent.clone());
        std::thread::Builder::new()
            .name("foxglove-live".into())
            .spawn(move || {
                // Ends when the hub and every writer's tap are gone.
                for p in rx {
                    let msg = match &p.body {
                        Body::Sample(kind, bytes) => kind.encode(&p.sensor, p.ts, bytes),
                        Body::Fix(position) => Location::encode(&p.sensor, p.ts, *position),
                    };
                    p.channel.log_with_meta(
                        &msg,
                        PartialMetadata {
                            log_time: Some(nanos(p.ts)),
                        },
                    );
                    q.fetch_sub(p.body.len(), Relaxed);
                    s.fetch_add(1, Relaxed);
                }
            })
            .map_err(|e| Error::Task {
                what: "cannot start the foxglove thread",
                error: Box::new(e),
            })?;
        let ctx = Context::new();
        let events = ctx
            .channel_builder(log::EVENTS_TOPIC)
            .schema(log::schema())
            .message_encoding("protobuf")
            .build_raw()
            .map_err(|e| Error::Task {
                what: "cannot create the foxglove events channel",
                error: Box::new(e),
            })?;
        Ok(Some(Arc::new(LiveHub {
            ctx,
            tx,
            queued,
            sent,
            dropped: AtomicU64::new(0),
            cfg: cfg.clone(),
            server: std::sync::Mutex::new(None),
            events,
            problems: std::sync::Mutex::default(),
        })))
    }

    /// Shows an event line just written (an [`crate::events::EventObserver`]): a few
    /// hundred bytes encoded on the caller's thread, handed to the SDK, which never waits.
    pub fn publish_event(&self, line: &EventLine) {
        if !self.events.has_sinks() {
            return;
        }
        self.events.log_with_meta(
            &log::encode_event(line),
            PartialMetadata {
                log_time: Some(nanos(line.t)),
            },
        );
        self.sent.fetch_add(1, Relaxed);
    }

    /// Starts the WebSocket server on `foxglove_listen`; returns its address.
    pub async fn serve(&self) -> crate::error::Result<std::net::SocketAddr> {
        use crate::error::{Error, ListenProblem};
        let addr = self.cfg.listen.expect("checked in new");
        let handle = foxglove::WebSocketServer::new()
            .name("roverlog")
            .context(&self.ctx)
            .bind(addr.ip().to_string(), addr.port())
            .start()
            .await
            .map_err(|e| Error::Listen {
                key: "foxglove_listen",
                addr,
                problem: ListenProblem::Bind(Box::new(e)),
            })?;
        let bound = std::net::SocketAddr::new(addr.ip(), handle.port());
        *self.server.lock_or_recover() = Some(handle);
        Ok(bound)
    }

    /// The feed in `status`: its address, clients, messages sent and previews dropped.
    pub fn status(&self) -> LiveStatus {
        let server = self.server.lock_or_recover();
        LiveStatus {
            url: server.as_ref().map(|h| {
                format!(
                    "ws://{}:{}",
                    self.cfg
                        .listen
                        .map_or("127.0.0.1".into(), |a| a.ip().to_string()),
                    h.port()
                )
            }),
            clients: server.as_ref().map_or(0, |h| h.client_count()),
            sent: self.sent.load(Relaxed),
            dropped: self.dropped.load(Relaxed),
            queued_bytes: self.queued.load(Relaxed),
            problems: self.problems.lock_or_recover().values().cloned().collect(),
        }
    }

    /// The `/<sensor>/location` channel of `sensor`, when it has a mapping that fits `meta`.
    fn location_channel(&self, sensor: &str, meta: &SensorMeta) -> Option<LocationChannel> {
        // Configured, or else by channel names (`latitude`, `longitude`: the gps driver's).
        let mapping = match self.cfg.locations.get(sensor) {
            Some(m) => m.clone(),
            None => location::by_channel_names(sensor, meta)?,
        };
        let mut problems = self.problems.lock_or_recover();
        problems.remove(sensor);
        let loc = match mapping.resolve(sensor, meta) {
            Ok(l) => l,
            Err(e) => {
                let why = format!("foxglove_location.{e}");
                tracing::warn!(sensor, "not shown as a LocationFix: {why}");
                problems.insert(sensor.to_owned(), why);
                return None;
            }
        };
        let raw = self
            .ctx
            .channel_builder(location::topic(sensor))
            .schema(location::schema())
            .message_encoding("protobuf")
            .build_raw()
            .map_err(|e| tracing::warn!(sensor, "foxglove location channel: {e}"))
            .ok()?;
        Some(LocationChannel {
            raw,
            loc,
            next: Instant::now(),
        })
    }

    /// A writer's tap for `sensor` with the stored channels `meta`.
    pub fn tap(self: &Arc<Self>, sensor: &str, meta: &SensorMeta) -> LiveTap {
        let hz = self.cfg.max_hz_of(sensor);
        let channels = meta
            .data_channels()
            .map(|(name, ch)| {
                if name == super::config::RECEIVE_TS_CHANNEL {
                    return None;
                }
                let kind = MessageKind::of(ch)?;
                let raw = self
                    .ctx
                    .channel_builder(topic(sensor, name))
                    .schema(kind.schema())
                    .message_encoding(kind.message_encoding())
                    .metadata(channel_metadata(ch))
                    .build_raw()
                    .map_err(|e| tracing::warn!(sensor, channel = name, "foxglove channel: {e}"))
                    .ok()?;
                Some(TapChannel {
                    raw,
                    kind: Arc::new(kind),
                    next: Instant::now(),
                })
            })
            .collect();
        LiveTap {
            hub: self.clone(),
            sensor: sensor.into(),
            period: Duration::from_secs_f64(1.0 / hz),
            channels,
            location: self.location_channel(sensor, meta),
        }
    }

    fn offer(&self, p: Preview) {
        let n = p.body.len();
        if self.queued.fetch_add(n, Relaxed) + n > QUEUE_BYTES {
            self.queued.fetch_sub(n, Relaxed);
            self.dropped.fetch_add(1, Relaxed);
            return;
        }
        if self.tx.send(p).is_err() {
            self.queued.fetch_sub(n, Relaxed);
        }
    }
}

struct TapChannel {
    raw: Arc<RawChannel>,
    kind: Arc<MessageKind>,
    /// This channel's next slot: a sample goes out from half a period before it.
    next: Instant,
}

/// A sensor's `/<sensor>/location`: its position read out of each sample shown.
struct LocationChannel {
    raw: Arc<RawChannel>,
    loc: Location,
    next: Instant,
}

/// Whether a sample at `t` is due under `period` for a channel whose next slot is `next`,
/// advancing the slot when it is. A frame is due from half a period before its slot: a
/// sensor at exactly the cap, with the usual jitter, arrives a little early about half the
/// time, and `next = t + period` dropped those (a 10 Hz camera under a 10 Hz cap arrived at
/// 6.5 Hz). Slots advance on a grid, so over the cap the frames that go out are evenly
/// spaced at the cap; after a pause the grid restarts at the frame.
fn due(next: &mut Instant, t: Instant, period: Duration) -> bool {
    let half = period / 2;
    if t + half < *next {
        return false;
    }
    *next = (*next + period).max(t + half);
    true
}

/// One writer's view of the feed.
pub struct LiveTap {
    hub: Arc<LiveHub>,
    sensor: Arc<str>,
    period: Duration,
    /// Per data channel in stored order (`None`: not shown). Channels stay advertised when
    /// the writer ends: the SDK hands a reconnecting sensor's writer the same channel, which
    /// closing here could then take from it.
    channels: Vec<Option<TapChannel>>,
    location: Option<LocationChannel>,
}

impl LiveTap {
    /// Offers a sample just appended (`slices` in the stored channel order). Costs an atomic
    /// load per channel unless a client subscribed and the channel is due.
    pub fn offer(&mut self, ts: f64, slices: &[&[u8]]) {
        let mut now = None;
        for (ch, bytes) in self.channels.iter_mut().zip(slices) {
            let Some(ch) = ch else { continue };
            if !ch.raw.has_sinks() {
                continue;
            }
            let t = *now.get_or_insert_with(Instant::now);
            if !due(&mut ch.next, t, self.period) {
                continue;
            }
            self.hub.offer(Preview {
                channel: ch.raw.clone(),
                sensor: self.sensor.clone(),
                ts,
                body: Body::Sample(ch.kind.clone(), bytes.to_vec()),
            });
        }
        if let Some(l) = &mut self.location {
            if l.raw.has_sinks() && due(&mut l.next, now.unwrap_or_else(Instant::now), self.period)
            {
                self.hub.offer(Preview {
                    channel: l.raw.clone(),
                    sensor: self.sensor.clone(),
                    ts,
                    body: Body::Fix(l.loc.read(slices)),
                });
            }
        }
    }
}

/// `status` `foxglove`: the live feed's address and what it has sent and dropped.
#[derive(Debug, Clone, serde::Serialize)]
pub struct LiveStatus {
    pub url: Option<String>,
    pub clients: usize,
    pub sent: u64,
    pub dropped: u64,
    pub queued_bytes: u64,
    /// Position mappings (`foxglove_location`) that do not fit their sensor's channels.
    pub problems: Vec<String>,
}
