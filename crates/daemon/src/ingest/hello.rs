//! A connection's first step: the hello line, then the bytes of the sidecar files it
//! declares (docs/protocol.md 2.6), all within `hello_timeout_ms`; and, once attached, those
//! files put into the open trace's sensor directory.

use std::sync::Arc;

use super::{ConnError, Connection};
use crate::protocol::{accept_hello, FrameLayout, Hello};
use crate::recording::Slot;
use crate::sidecar::{Sidecar, Sidecars};
use crate::writer::WriterMsg;

impl Connection {
    /// Reads and checks the hello and its files.
    pub(super) async fn hello(&mut self) -> Result<(Hello, FrameLayout, Sidecars), ConnError> {
        let cfg = self.rec.cfg.clone();
        super::peer_allowed(
            &self.stream,
            &cfg.sockets.allow_uids,
            &cfg.sockets.allow_gids,
        )?;
        let bound = cfg.ingest.hello_timeout;
        tokio::time::timeout(bound, self.read_hello())
            .await
            .map_err(|_| ConnError::HelloTimeout(bound))?
    }

    async fn read_hello(&mut self) -> Result<(Hello, FrameLayout, Sidecars), ConnError> {
        let cfg = self.rec.cfg.clone();
        let limit = cfg.ingest.max_hello_bytes;
        let line = loop {
            if let Some(i) = self.buf.iter().position(|&b| b == b'\n') {
                // The line is `i + 1` bytes with its newline: that is what the limit bounds.
                if i >= limit {
                    return Err(ConnError::HelloTooLong { limit });
                }
                break self.buf.split_to(i + 1);
            }
            if self.buf.len() > limit {
                return Err(ConnError::HelloTooLong { limit });
            }
            if !self.fill(0).await? {
                return Err(ConnError::HelloCut);
            }
        };
        let (hello, layout) = accept_hello(
            &line[..line.len() - 1],
            cfg.ingest.max_channels,
            cfg.ingest.max_frame_bytes,
        )?;
        let files = self.read_files(&hello).await?;
        Ok((hello, layout, files))
    }

    /// The bytes of the hello's files, which follow its line back to back (their total is
    /// bounded by the hello's check, `MAX_FILES_BYTES`).
    async fn read_files(&mut self, hello: &Hello) -> Result<Sidecars, ConnError> {
        let total = hello.files_bytes();
        while self.buf.len() < total {
            if !self.fill(total).await? {
                return Err(ConnError::FilesCut {
                    got: self.buf.len(),
                    expected: total,
                });
            }
        }
        let mut data = self.buf.split_to(total);
        let files: Vec<Sidecar> = hello
            .files
            .iter()
            .map(|d| Sidecar {
                name: d.name.clone(),
                bytes: data.split_to(d.bytes).to_vec(),
            })
            .collect();
        Ok(Arc::from(files))
    }

    /// Puts the connection's files into the sensor's directory of the open trace, when the
    /// sensor's files are open there already (a sensor opened by this hello got them before
    /// its `meta.json`; checking again finds them equal).
    pub(super) async fn put_files(
        &self,
        slot: &Arc<Slot>,
        files: Sidecars,
    ) -> Result<(), ConnError> {
        if files.is_empty() {
            return Ok(());
        }
        slot.ask(|reply| WriterMsg::Files { files, reply })
            .await
            .map(drop)
            .map_err(|error| ConnError::Files {
                sensor: slot.name.clone(),
                error,
            })
    }
}
