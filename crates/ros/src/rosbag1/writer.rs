//! A ROS 1 bag (format 2.0) writer, uncompressed chunks, in bounded memory.
//!
//! Layout (<http://wiki.ros.org/Bags/Format/2.0>): the magic line `#ROSBAG V2.0\n`, a bag
//! header record padded to 4096 bytes (rewritten at the end with the index position and the
//! counts), then per chunk a chunk record (its data: connection records for connections first
//! used in it, and message data records) followed by one index data record per connection in
//! it (time and offset of each message inside the chunk); at the end the index: every
//! connection record again, then one chunk info record per chunk (position, time span,
//! messages per connection).
//!
//! A record is `header_len: u32`, header fields (`field_len: u32`, `name=value`), `data_len:
//! u32`, data; the `op` field says what it is. Times are `secs: u32, nsecs: u32`. A chunk is
//! kept in memory until the next message would take it past [`CHUNK_BYTES`]; that message
//! closes it and is written from the caller's buffer, not copied in (a point cloud is
//! megabytes), so memory holds one chunk plus a few bytes per chunk for the index.

use std::collections::BTreeMap;
use std::io::{self, Seek, SeekFrom, Write};

use super::{
    MAGIC, OP_BAG_HEADER, OP_CHUNK, OP_CHUNK_INFO, OP_CONNECTION, OP_INDEX_DATA, OP_MSG_DATA,
};
use crate::wire::encode::MsgType;

/// A chunk is written once its data passes this many bytes (`rosbags`' threshold).
pub const CHUNK_BYTES: usize = 1 << 20;

const BAG_HEADER_LEN: usize = 4096;

/// Record header fields, in order.
struct Fields(Vec<u8>);

impl Fields {
    fn new(op: Option<u8>) -> Fields {
        let mut f = Fields(Vec::new());
        if let Some(op) = op {
            f.field("op", &[op]);
        }
        f
    }

    fn field(&mut self, name: &str, value: &[u8]) -> &mut Fields {
        let len = (name.len() + 1 + value.len()) as u32;
        self.0.extend_from_slice(&len.to_le_bytes());
        self.0.extend_from_slice(name.as_bytes());
        self.0.push(b'=');
        self.0.extend_from_slice(value);
        self
    }

    fn u32(&mut self, name: &str, v: u32) -> &mut Fields {
        self.field(name, &v.to_le_bytes())
    }

    fn u64(&mut self, name: &str, v: u64) -> &mut Fields {
        self.field(name, &v.to_le_bytes())
    }

    fn time(&mut self, name: &str, ns: u64) -> &mut Fields {
        self.field(name, &time(ns))
    }

    /// `header_len` and the fields.
    fn write_to(&self, out: &mut impl Write) -> io::Result<()> {
        out.write_all(&(self.0.len() as u32).to_le_bytes())?;
        out.write_all(&self.0)
    }
}

fn time(ns: u64) -> [u8; 8] {
    let mut t = [0; 8];
    t[..4].copy_from_slice(&((ns / 1_000_000_000) as u32).to_le_bytes());
    t[4..].copy_from_slice(&((ns % 1_000_000_000) as u32).to_le_bytes());
    t
}

fn data_len(out: &mut impl Write, len: usize) -> io::Result<()> {
    let len = u32::try_from(len).map_err(|_| io::Error::other("record over 4 GiB"))?;
    out.write_all(&len.to_le_bytes())
}

struct Connection {
    topic: String,
    ty: MsgType,
    latching: bool,
}

impl Connection {
    /// The connection record: `conn` and `topic` in the header, the connection header (topic,
    /// type, md5sum, definition, latching) as data.
    fn write_to(&self, id: u32, out: &mut impl Write) -> io::Result<()> {
        Fields::new(Some(OP_CONNECTION))
            .u32("conn", id)
            .field("topic", self.topic.as_bytes())
            .write_to(out)?;
        let mut data = Fields::new(None);
        data.field("topic", self.topic.as_bytes())
            .field("type", self.ty.ros1_name.as_bytes())
            .field("md5sum", self.ty.ros1_md5.as_bytes())
            .field("message_definition", self.ty.ros1_definition.as_bytes());
        if self.latching {
            data.field("latching", b"1");
        }
        data_len(out, data.0.len())?;
        out.write_all(&data.0)
    }
}

struct ChunkInfo {
    pos: u64,
    start: u64,
    end: u64,
    counts: Vec<(u32, u32)>,
}

/// Writes a bag to `W`; [`Bag1Writer::finish`] writes the index and the final bag header.
pub struct Bag1Writer<W: Write + Seek> {
    out: W,
    pos: u64,
    connections: Vec<Connection>,
    chunk: Vec<u8>,
    /// Per connection in the open chunk: (time, offset in the chunk) of each message.
    index: BTreeMap<u32, Vec<(u64, u32)>>,
    span: Option<(u64, u64)>,
    chunks: Vec<ChunkInfo>,
}

impl<W: Write + Seek> Bag1Writer<W> {
    /// Starts a bag: the magic line and a placeholder bag header.
    pub fn new(mut out: W) -> io::Result<Bag1Writer<W>> {
        out.write_all(MAGIC)?;
        let pos = (MAGIC.len() + write_bag_header(&mut out, 0, 0, 0)?) as u64;
        Ok(Bag1Writer {
            out,
            pos,
            connections: Vec::new(),
            chunk: Vec::new(),
            index: BTreeMap::new(),
            span: None,
            chunks: Vec::new(),
        })
    }

    /// Adds a connection on `topic` (its record goes into the open chunk); returns its id.
    pub fn add_connection(&mut self, topic: &str, ty: &MsgType, latching: bool) -> io::Result<u32> {
        let id = self.connections.len() as u32;
        let c = Connection {
            topic: topic.to_string(),
            ty: *ty,
            latching,
        };
        c.write_to(id, &mut self.chunk)?;
        self.connections.push(c);
        Ok(id)
    }

    /// Appends one serialised message of connection `conn` at bag time `ns`.
    pub fn write(&mut self, conn: u32, ns: u64, data: &[u8]) -> io::Result<()> {
        assert!(
            (conn as usize) < self.connections.len(),
            "unknown connection"
        );
        let mut head = Vec::with_capacity(64);
        Fields::new(Some(OP_MSG_DATA))
            .u32("conn", conn)
            .time("time", ns)
            .write_to(&mut head)?;
        data_len(&mut head, data.len())?;
        let offset = self.chunk.len() as u32;
        self.index.entry(conn).or_default().push((ns, offset));
        self.span = Some(match self.span {
            Some((a, b)) => (a.min(ns), b.max(ns)),
            None => (ns, ns),
        });
        if self.chunk.len() + head.len() + data.len() > CHUNK_BYTES {
            // The message closes the chunk: written straight from `data` after the chunk's
            // bytes (a point cloud's megabytes are not copied into the chunk buffer).
            return self.close_chunk_with(&head, data);
        }
        self.chunk.extend_from_slice(&head);
        self.chunk.extend_from_slice(data);
        Ok(())
    }

    /// Writes the open chunk (if it holds anything) and its index data records.
    fn close_chunk(&mut self) -> io::Result<()> {
        if self.chunk.is_empty() {
            return Ok(());
        }
        self.close_chunk_with(&[], &[])
    }

    /// Writes the open chunk followed by `head` and `tail` (the last message's record
    /// header and data, already indexed), and its index data records.
    fn close_chunk_with(&mut self, head: &[u8], tail: &[u8]) -> io::Result<()> {
        let pos = self.pos;
        let size = self.chunk.len() + head.len() + tail.len();
        let mut rec = Vec::with_capacity(64);
        Fields::new(Some(OP_CHUNK))
            .field("compression", b"none")
            .u32(
                "size",
                u32::try_from(size).map_err(|_| io::Error::other("chunk over 4 GiB"))?,
            )
            .write_to(&mut rec)?;
        data_len(&mut rec, size)?;
        self.out.write_all(&rec)?;
        self.out.write_all(&self.chunk)?;
        self.out.write_all(head)?;
        self.out.write_all(tail)?;
        self.pos += (rec.len() + size) as u64;
        self.chunk.clear();
        let mut idx = Vec::new();
        let mut counts = Vec::new();
        for (&conn, entries) in &self.index {
            Fields::new(Some(OP_INDEX_DATA))
                .u32("ver", 1)
                .u32("conn", conn)
                .u32("count", entries.len() as u32)
                .write_to(&mut idx)?;
            data_len(&mut idx, entries.len() * 12)?;
            for &(ns, offset) in entries {
                idx.extend_from_slice(&time(ns));
                idx.extend_from_slice(&offset.to_le_bytes());
            }
            counts.push((conn, entries.len() as u32));
        }
        self.out.write_all(&idx)?;
        self.pos += idx.len() as u64;
        let (start, end) = self.span.unwrap_or((0, 0));
        self.chunks.push(ChunkInfo {
            pos,
            start,
            end,
            counts,
        });
        self.index.clear();
        self.span = None;
        Ok(())
    }

    /// Closes the last chunk, writes the index (connections, chunk infos) and the final bag
    /// header; returns the output.
    pub fn finish(mut self) -> io::Result<W> {
        self.close_chunk()?;
        let index_pos = self.pos;
        let mut tail = Vec::new();
        for (id, c) in self.connections.iter().enumerate() {
            c.write_to(id as u32, &mut tail)?;
        }
        for ch in &self.chunks {
            Fields::new(Some(OP_CHUNK_INFO))
                .u32("ver", 1)
                .u64("chunk_pos", ch.pos)
                .time("start_time", ch.start)
                .time("end_time", ch.end)
                .u32("count", ch.counts.len() as u32)
                .write_to(&mut tail)?;
            data_len(&mut tail, ch.counts.len() * 8)?;
            for &(conn, n) in &ch.counts {
                tail.extend_from_slice(&conn.to_le_bytes());
                tail.extend_from_slice(&n.to_le_bytes());
            }
        }
        self.out.write_all(&tail)?;
        self.out.seek(SeekFrom::Start(MAGIC.len() as u64))?;
        write_bag_header(
            &mut self.out,
            index_pos,
            self.connections.len() as u32,
            self.chunks.len() as u32,
        )?;
        self.out.seek(SeekFrom::End(0))?;
        self.out.flush()?;
        Ok(self.out)
    }
}

/// The bag header record, padded with spaces to 4096 bytes; returns its length.
fn write_bag_header(
    out: &mut impl Write,
    index_pos: u64,
    conn_count: u32,
    chunk_count: u32,
) -> io::Result<usize> {
    let mut rec = Vec::with_capacity(BAG_HEADER_LEN);
    Fields::new(Some(OP_BAG_HEADER))
        .u64("index_pos", index_pos)
        .u32("conn_count", conn_count)
        .u32("chunk_count", chunk_count)
        .write_to(&mut rec)?;
    let pad = BAG_HEADER_LEN - rec.len() - 4;
    data_len(&mut rec, pad)?;
    rec.resize(BAG_HEADER_LEN, b' ');
    out.write_all(&rec)?;
    Ok(rec.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    const T: MsgType = MsgType {
        ros1_name: "std_msgs/Empty",
        ros2_name: "std_msgs/msg/Empty",
        ros1_md5: "d41d8cd98f00b204e9800998ecf8427e",
        ros1_definition: "",
        ros2_rihs01: "",
        ros2_definition: "",
    };

    #[test]
    fn the_header_is_4096_bytes_and_points_at_the_index() {
        let mut w = Bag1Writer::new(io::Cursor::new(Vec::new())).unwrap();
        let c = w.add_connection("/a", &T, false).unwrap();
        for i in 0..3 {
            w.write(c, 1_000_000_000 + i, b"").unwrap();
        }
        let bytes = w.finish().unwrap().into_inner();
        assert_eq!(&bytes[..13], MAGIC);
        // header_len, then "op=\x03" as the first field.
        let hl = u32::from_le_bytes(bytes[13..17].try_into().unwrap()) as usize;
        assert_eq!(&bytes[21..25], b"op=\x03");
        let data = u32::from_le_bytes(bytes[17 + hl..21 + hl].try_into().unwrap()) as usize;
        assert_eq!(4 + hl + 4 + data, 4096);
        let at = bytes.windows(10).position(|w| w == b"index_pos=").unwrap();
        let index_pos = u64::from_le_bytes(bytes[at + 10..at + 18].try_into().unwrap()) as usize;
        // The index starts with the connection record: header with op=7.
        assert!(bytes[index_pos..index_pos + 40]
            .windows(4)
            .any(|w| w == b"op=\x07"));
    }
}
