//! ROS 1 bags (format 2.0): every record in file order, chunks decompressed (bz2, lz4),
//! connections turned into [`Connection`]s and messages handed to a [`Sink`].
//!
//! Layout: `#ROSBAG V2.0\n`, then records `header_len u32, header, data_len u32, data`; a
//! header is fields `len u32, name=value`, its `op` field says what the record is: bag
//! header (3), chunk (5, data = compressed records), connection (7, data = a header holding
//! `type` and `message_definition`), message data (2, fields `conn` and `time`), index data
//! (4) and chunk info (6), which a linear read does not need. A bag that was never closed
//! (index position 0) reads the same way.

use std::collections::HashMap;

use super::{MAGIC, OP_CHUNK, OP_CONNECTION, OP_MSG_DATA};
use crate::container::Sink;
use crate::container::{BagFile, Chunk, Compression, Connection, Cursor, MsgRef, MAX_CHUNK};
use crate::error::{NoWire, RecordProblem, Result, RosProblem};
use crate::typesys::schema::normalize_type;
use crate::wire::decode::Wire;

/// The longest record header we accept (a connection's holds its message definition).
pub const MAX_HEADER: u32 = 1 << 20;

/// Whether `data` starts like a ROS 1 bag.
pub fn is_bag(data: &[u8]) -> bool {
    data.starts_with(MAGIC)
}

/// One record: its header fields, its data range in `buf`, the next position.
struct Record<'a> {
    fields: HashMap<&'a str, &'a [u8]>,
    data: std::ops::Range<usize>,
    next: usize,
}

/// Reads every record of `file` into `sink`, recording its chunks in `file.chunks`.
pub fn scan(file: &mut BagFile, file_no: u16, sink: &mut dyn Sink) -> Result<()> {
    let data: &[u8] = &file.map;
    if !is_bag(data) {
        return Err(file.err(RosProblem::BadMagic {
            expected: "a ROS 1 bag (#ROSBAG V2.0)",
        }));
    }
    let mut chunks = Vec::new();
    let mut pos = MAGIC.len();
    let mut outcome = Ok(());
    while pos < data.len() {
        let at = pos as u64;
        let r = record(data, pos, 0, "record").and_then(|rec| {
            pos = rec.next;
            let op = op(&rec, at)?;
            match op {
                OP_CHUNK => {
                    let compression =
                        Compression::parse(&text(&rec, "compression", at, "chunk")?, at)?;
                    let size = u32_field(&rec, "size", at, "chunk")?;
                    let ch = Chunk {
                        at,
                        data: rec.data.clone(),
                        compression,
                        uncompressed: size.into(),
                        crc: 0,
                    };
                    let records = crate::container::decompress(&data[ch.data.clone()], &ch)?;
                    let index = chunks.len() as u32;
                    chunks.push(ch);
                    let mut p = 0;
                    while p < records.len() {
                        let rec = record(&records, p, at, "record inside a chunk")?;
                        handle(&records, &rec, at, Some(index), file_no, sink)?;
                        p = rec.next;
                    }
                    Ok(())
                }
                _ => handle(data, &rec, at, None, file_no, sink),
            }
        });
        if let Err(p) = r {
            outcome = Err(p);
            break;
        }
        sink.progress(pos as u64, data.len() as u64);
    }
    file.chunks = chunks;
    outcome.map_err(|p| file.err(p))
}

fn handle(
    buf: &[u8],
    rec: &Record,
    at: u64,
    chunk: Option<u32>,
    file_no: u16,
    sink: &mut dyn Sink,
) -> Result<(), RosProblem> {
    match op(rec, at)? {
        OP_CONNECTION => {
            let id = u32_field(rec, "conn", at, "connection")?;
            let topic = text(rec, "topic", at, "connection")?;
            // The data is another header: type, md5sum, message_definition, ...
            let inner = fields(&buf[rec.data.clone()], at, "connection")?;
            let get = |k: &str| {
                inner
                    .get(k)
                    .map(|v| String::from_utf8_lossy(v).into_owned())
                    .unwrap_or_default()
            };
            let msgtype = get("type");
            let wire = if msgtype.is_empty() {
                Err(NoWire::NoType)
            } else {
                Ok(Wire::Ros1)
            };
            sink.connection(Connection {
                id,
                topic,
                msgtype: normalize_type(&msgtype),
                schema: get("message_definition"),
                wire,
            });
        }
        OP_MSG_DATA => {
            let conn = u32_field(rec, "conn", at, "message data")?;
            let time = rec.fields.get("time").copied().unwrap_or_default();
            let time: [u8; 8] = time.try_into().map_err(|_| RosProblem::BadRecord {
                what: "message data",
                at,
                problem: RecordProblem::NoTime,
            })?;
            let sec = u32::from_le_bytes(time[..4].try_into().expect("4"));
            let nsec = u32::from_le_bytes(time[4..].try_into().expect("4"));
            let log_time = u64::from(sec) * 1_000_000_000 + u64::from(nsec);
            let r = MsgRef {
                file: file_no,
                chunk: chunk.unwrap_or(MsgRef::NO_CHUNK),
                start: rec.data.start as u64,
                len: rec.data.len() as u32,
            };
            if !sink.message(conn, log_time, r, &buf[rec.data.clone()]) {
                return Err(RosProblem::UnknownChannel { at, id: conn });
            }
        }
        _ => {}
    }
    Ok(())
}

fn record<'a>(
    buf: &'a [u8],
    pos: usize,
    chunk_at: u64,
    what: &'static str,
) -> Result<Record<'a>, RosProblem> {
    let at = if chunk_at > 0 { chunk_at } else { pos as u64 };
    let mut c = Cursor::new(&buf[pos..], pos as u64, what);
    let truncated = |need: u64, left: usize| {
        if chunk_at > 0 {
            RosProblem::BadRecord {
                what: "chunk",
                at,
                problem: RecordProblem::InnerTruncated {
                    pos,
                    need,
                    left: left as u64,
                },
            }
        } else {
            RosProblem::Truncated {
                what,
                at,
                need,
                left: left as u64,
            }
        }
    };
    if c.left() < 4 {
        return Err(truncated(4, c.left()));
    }
    let hlen = c.u32()?;
    if hlen > MAX_HEADER {
        return Err(RosProblem::TooLarge {
            what: "record header",
            at,
            got: hlen.into(),
            limit: MAX_HEADER.into(),
        });
    }
    if c.left() < hlen as usize + 4 {
        return Err(truncated(u64::from(hlen) + 8, c.left() + 4));
    }
    let header = c.bytes(hlen.into())?;
    let dlen = c.u32()?;
    if u64::from(dlen) > MAX_CHUNK {
        return Err(RosProblem::TooLarge {
            what: "record data",
            at,
            got: dlen.into(),
            limit: MAX_CHUNK,
        });
    }
    if c.left() < dlen as usize {
        return Err(truncated(
            u64::from(hlen) + 8 + u64::from(dlen),
            c.left() + 8 + hlen as usize,
        ));
    }
    let start = pos + c.pos;
    Ok(Record {
        fields: fields(header, at, what)?,
        data: start..start + dlen as usize,
        next: start + dlen as usize,
    })
}

/// `len u32, name=value` fields.
fn fields<'a>(
    mut b: &'a [u8],
    at: u64,
    what: &'static str,
) -> Result<HashMap<&'a str, &'a [u8]>, RosProblem> {
    let bad = |problem| RosProblem::BadRecord { what, at, problem };
    let mut out = HashMap::new();
    while !b.is_empty() {
        if b.len() < 4 {
            return Err(bad(RecordProblem::FieldLengthCut));
        }
        let n = u32::from_le_bytes(b[..4].try_into().expect("4")) as usize;
        let f = b
            .get(4..4 + n)
            .ok_or_else(|| bad(RecordProblem::FieldPastHeader))?;
        let eq = f
            .iter()
            .position(|&c| c == b'=')
            .ok_or_else(|| bad(RecordProblem::NoEquals))?;
        let name =
            std::str::from_utf8(&f[..eq]).map_err(|_| bad(RecordProblem::FieldNameNotUtf8))?;
        out.insert(name, &f[eq + 1..]);
        b = &b[4 + n..];
    }
    Ok(out)
}

fn op(rec: &Record, at: u64) -> Result<u8, RosProblem> {
    match rec.fields.get("op") {
        Some(&[op]) => Ok(*op),
        _ => Err(RosProblem::BadRecord {
            what: "record",
            at,
            problem: RecordProblem::NoOp,
        }),
    }
}

fn u32_field(rec: &Record, name: &str, at: u64, what: &'static str) -> Result<u32, RosProblem> {
    match rec.fields.get(name) {
        Some(v) if v.len() == 4 => Ok(u32::from_le_bytes((*v).try_into().expect("4"))),
        _ => Err(RosProblem::BadRecord {
            what,
            at,
            problem: RecordProblem::NoU32 {
                name: name.to_string(),
            },
        }),
    }
}

fn text(rec: &Record, name: &str, at: u64, what: &'static str) -> Result<String, RosProblem> {
    rec.fields
        .get(name)
        .map(|v| String::from_utf8_lossy(v).into_owned())
        .ok_or_else(|| RosProblem::BadRecord {
            what,
            at,
            problem: RecordProblem::NoField {
                name: name.to_string(),
            },
        })
}
