//! The last line of a connection that opted in with `final_ack` (docs/protocol.md 6.1): at a
//! clean shutdown, once the drain has read what the driver had sent, the sensor is synced and
//! the connection told its final durable count before it closes, so that a reconnecting
//! driver resends nothing the stopped trace already holds.

use serde_json::json;

use super::{durable_reply, ConnError, Connection};
use crate::protocol::Hello;
use crate::recording::Slot;
use crate::writer::WriterMsg;

impl Connection {
    /// Whether this connection owes its driver a final reply: it opted in and its stream
    /// ended in the shutdown drain (not by the driver closing before the shutdown).
    pub(super) fn owes_final(&self, hello: &Hello) -> bool {
        hello.final_ack && self.drain_left.is_some()
    }

    /// Syncs the sensor and sends `{"ok": true, "durable": N, "recording": ..., "trace":
    /// ..., "final": true}`. A driver that already went away does not get it, which is no error.
    pub(super) async fn final_ack(&mut self, hello: &Hello, slot: &Slot) -> Result<(), ConnError> {
        let synced = slot
            .ask(WriterMsg::Sync)
            .await
            .map_err(|error| ConnError::SensorFailed {
                sensor: hello.sensor.clone(),
                error,
            })?;
        let mut reply = durable_reply(&self.rec, synced);
        reply["final"] = json!(true);
        tracing::debug!(sensor = %hello.sensor, %reply, "final durability reply");
        let _ = self.write(reply).await;
        Ok(())
    }
}
