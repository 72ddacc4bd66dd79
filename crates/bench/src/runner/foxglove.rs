//! The `foxglove` scenario's client: what a Foxglove app watching the live feed costs the
//! writers, measured as a WebSocket client (subprotocol `foxglove.sdk.v1`) that subscribes to
//! every channel the daemon advertises and reads every message, while the imu load runs,
//! against the same load with no client. The daemon runs the feed at its default decimation.

use std::collections::BTreeSet;
use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use serde_json::{json, Value};
use tungstenite::client::IntoClientRequest;
use tungstenite::http::HeaderValue;
use tungstenite::{Message, WebSocket};

use super::error::{Result, ViewerError};

/// A thread watching the live feed until stopped.
pub(super) struct Watcher {
    stop: Arc<AtomicBool>,
    thread: JoinHandle<Result<u64>>,
}

impl Watcher {
    /// Connects to the feed at `url` (`ws://host:port`) and starts reading it; subscribes to
    /// each channel as it is advertised.
    pub(super) fn start(url: &str) -> Result<Watcher> {
        let mut ws = connect(url)?;
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::spawn(move || {
            let mut subscribed = BTreeSet::new();
            let mut messages = 0u64;
            while !flag.load(Ordering::Relaxed) {
                match ws.read() {
                    Ok(Message::Text(t)) => subscribe_new(&mut ws, &t, &mut subscribed)?,
                    // A `messageData` frame (opcode 1): a sample of a subscribed channel.
                    Ok(Message::Binary(b)) if b.first() == Some(&1) => messages += 1,
                    Ok(_) => {}
                    // A quiet moment: the short read timeout, so the stop flag is seen.
                    Err(tungstenite::Error::Io(e))
                        if matches!(
                            e.kind(),
                            std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                        ) => {}
                    Err(e) => return Err(ViewerError::FeedRead(Box::new(e)).into()),
                }
            }
            let _ = ws.close(None);
            Ok(messages)
        });
        Ok(Watcher { stop, thread })
    }

    /// Stops watching; returns how many messages arrived.
    pub(super) fn stop(self) -> Result<u64> {
        self.stop.store(true, Ordering::Relaxed);
        match self.thread.join() {
            Ok(r) => r,
            Err(_) => Err(ViewerError::Panicked {
                client: "Foxglove client",
            }
            .into()),
        }
    }
}

fn connect(url: &str) -> Result<WebSocket<TcpStream>> {
    let mut req = url
        .into_client_request()
        .map_err(|e| ViewerError::FeedUrl {
            url: url.to_owned(),
            error: Box::new(e),
        })?;
    req.headers_mut().insert(
        "Sec-WebSocket-Protocol",
        HeaderValue::from_static("foxglove.sdk.v1"),
    );
    let addr = url.trim_start_matches("ws://").trim_end_matches('/');
    let connect_error = |error| ViewerError::FeedConnect {
        addr: addr.to_owned(),
        error,
    };
    let stream = TcpStream::connect(addr).map_err(connect_error)?;
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .map_err(connect_error)?;
    let (ws, _) = tungstenite::client(req, stream).map_err(|e| ViewerError::Handshake {
        url: url.to_owned(),
        error: Box::new(e),
    })?;
    ws.get_ref()
        .set_read_timeout(Some(Duration::from_millis(100)))
        .map_err(connect_error)?;
    Ok(ws)
}

/// On an `advertise`, subscribes to every channel not yet subscribed (the subscription id is
/// the channel id).
fn subscribe_new(
    ws: &mut WebSocket<TcpStream>,
    text: &str,
    subscribed: &mut BTreeSet<u64>,
) -> Result<()> {
    let v: Value = serde_json::from_str(text).map_err(ViewerError::FeedMessage)?;
    if v["op"] != "advertise" {
        return Ok(());
    }
    let mut subs = Vec::new();
    for c in v["channels"].as_array().into_iter().flatten() {
        let Some(id) = c["id"].as_u64() else {
            return Err(ViewerError::ChannelWithoutId { channel: c.clone() }.into());
        };
        if subscribed.insert(id) {
            subs.push(json!({"id": id, "channelId": id}));
        }
    }
    if !subs.is_empty() {
        let sub = json!({"op": "subscribe", "subscriptions": subs});
        ws.send(Message::text(sub.to_string()))
            .map_err(|e| ViewerError::Subscribe(Box::new(e)))?;
    }
    Ok(())
}
