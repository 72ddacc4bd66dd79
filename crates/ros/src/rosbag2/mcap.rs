//! MCAP files with ROS messages (rosbag2's MCAP storage, `mcap-ros2-support`, Foxglove's
//! ROS 1 and ROS 2 encodings): every record of the data section in file order, chunks
//! decompressed (zstd, lz4), schemas and channels turned into [`Connection`]s and messages
//! handed to a [`Sink`] with the place they can be read from again.
//!
//! Our own reader rather than the `mcap` crate's: we need each message's location inside its
//! chunk to read it again on demand, a bound on every length before it is used (the crate
//! allocates a chunk's declared size), and errors that say which record at which byte.
//!
//! Layout: magic `\x89MCAP0\r\n`, then records `opcode u8, length u64, body`, little-endian;
//! strings are `u32 length + UTF-8`. The data section ends with a `DataEnd` record (the
//! summary section after it repeats what we have already read) and the file with a `Footer`
//! and the magic again.

use std::collections::HashMap;

use crate::container::{BagFile, Chunk, Compression, Connection, Cursor, MsgRef, Sink, MAX_CHUNK};
use crate::error::{NoWire, RecordProblem, Result, RosProblem};
use crate::typesys::schema::normalize_type;
use crate::wire::decode::Wire;

pub const MAGIC: &[u8; 8] = b"\x89MCAP0\r\n";

const OP_FOOTER: u8 = 0x02;
const OP_SCHEMA: u8 = 0x03;
const OP_CHANNEL: u8 = 0x04;
const OP_MESSAGE: u8 = 0x05;
const OP_CHUNK: u8 = 0x06;
const OP_DATA_END: u8 = 0x0F;

#[derive(Default)]
struct State {
    /// id -> (name, encoding, text)
    schemas: HashMap<u16, (String, String, String)>,
}

/// Whether `data` starts like an MCAP file.
pub fn is_mcap(data: &[u8]) -> bool {
    data.starts_with(MAGIC)
}

/// Reads every record of `file` (number `file_no` of the recording) into `sink`, and records
/// its chunks in `file.chunks`.
pub fn scan(file: &mut BagFile, file_no: u16, sink: &mut dyn Sink) -> Result<()> {
    let data: &[u8] = &file.map;
    if !is_mcap(data) {
        return Err(file.err(RosProblem::BadMagic {
            expected: "an MCAP file",
        }));
    }
    let mut chunks = Vec::new();
    let mut st = State::default();
    let mut pos = MAGIC.len();
    let outcome = loop {
        match record(data, pos, "record") {
            Err(p) => break Err(p),
            Ok(None) => {
                break Err(RosProblem::Truncated {
                    what: "the data section (no DataEnd or Footer record)",
                    at: pos as u64,
                    need: 9,
                    left: 0,
                })
            }
            Ok(Some((op, body, next))) => {
                let at = pos as u64;
                pos = next;
                let r = match op {
                    OP_DATA_END | OP_FOOTER => break Ok(()),
                    OP_CHUNK => chunk(data, &body, at, file_no, &mut chunks, &mut st, sink),
                    _ => inner(op, data, body, at, None, file_no, &mut st, sink),
                };
                if let Err(p) = r {
                    break Err(p);
                }
                sink.progress(pos as u64, data.len() as u64);
            }
        }
    };
    // The summary after the data is not needed, but a file that does not end with the
    // magic was cut short (or is still being written): refuse it rather than guess.
    let outcome = outcome.and_then(|()| {
        if data.len() < 2 * MAGIC.len() || !data.ends_with(MAGIC) {
            return Err(RosProblem::Truncated {
                what:
                    "the file (it does not end with the MCAP magic; `mcap recover` can rewrite it)",
                at: data.len() as u64,
                need: MAGIC.len() as u64,
                left: 0,
            });
        }
        Ok(())
    });
    file.chunks = chunks;
    outcome.map_err(|p| file.err(p))
}

/// The record at `pos` of `buf`: (opcode, body range, next position); `None` at the end.
fn record(
    buf: &[u8],
    pos: usize,
    what: &'static str,
) -> Result<Option<(u8, std::ops::Range<usize>, usize)>, RosProblem> {
    if pos == buf.len() {
        return Ok(None);
    }
    let left = (buf.len() - pos) as u64;
    if left < 9 {
        return Err(RosProblem::Truncated {
            what,
            at: pos as u64,
            need: 9,
            left,
        });
    }
    let op = buf[pos];
    let len = u64::from_le_bytes(buf[pos + 1..pos + 9].try_into().expect("8"));
    if len > MAX_CHUNK + 1024 {
        return Err(RosProblem::TooLarge {
            what,
            at: pos as u64,
            got: len,
            limit: MAX_CHUNK + 1024,
        });
    }
    if len > left - 9 {
        return Err(RosProblem::Truncated {
            what,
            at: pos as u64,
            need: len + 9,
            left,
        });
    }
    let start = pos + 9;
    Ok(Some((
        op,
        start..start + len as usize,
        start + len as usize,
    )))
}

fn chunk(
    data: &[u8],
    body: &std::ops::Range<usize>,
    at: u64,
    file_no: u16,
    chunks: &mut Vec<Chunk>,
    st: &mut State,
    sink: &mut dyn Sink,
) -> Result<(), RosProblem> {
    let mut c = Cursor::new(&data[body.clone()], body.start as u64, "chunk");
    let _start_time = c.u64()?;
    let _end_time = c.u64()?;
    let uncompressed = c.u64()?;
    let crc = c.u32()?;
    let compression = Compression::parse(&c.string()?, at)?;
    let len = c.u64()?;
    let rec_start = body.start + c.pos;
    c.bytes(len)?;
    let ch = Chunk {
        at,
        data: rec_start..rec_start + len as usize,
        compression,
        uncompressed,
        crc,
    };
    let records = crate::container::decompress(&data[ch.data.clone()], &ch)?;
    let index = chunks.len() as u32;
    chunks.push(ch);
    let mut pos = 0;
    while let Some((op, body, next)) = record(&records, pos, "record inside a chunk").map_err(
        // Offsets inside a chunk are reported from the chunk's records.
        |p| match p {
            RosProblem::Truncated { need, left, .. } => RosProblem::BadRecord {
                what: "chunk",
                at,
                problem: RecordProblem::InnerTruncated { pos, need, left },
            },
            other => other,
        },
    )? {
        inner(
            op,
            &records,
            body,
            at,
            Some((index, pos)),
            file_no,
            st,
            sink,
        )?;
        pos = next;
    }
    Ok(())
}

/// A schema, channel or message record (elsewhere nothing to do). `in_chunk` is the chunk's
/// index and the record's position in its records; `at` the file offset for errors.
#[allow(clippy::too_many_arguments)]
fn inner(
    op: u8,
    buf: &[u8],
    body: std::ops::Range<usize>,
    at: u64,
    in_chunk: Option<(u32, usize)>,
    file_no: u16,
    st: &mut State,
    sink: &mut dyn Sink,
) -> Result<(), RosProblem> {
    let mut c = Cursor::new(&buf[body.clone()], at, "record");
    match op {
        OP_SCHEMA => {
            c.what = "schema record";
            let id = c.u16()?;
            let name = c.string()?;
            let encoding = c.string()?;
            let n = c.u32()?;
            let text = String::from_utf8_lossy(c.bytes(n as u64)?).into_owned();
            st.schemas.insert(id, (name, encoding, text));
        }
        OP_CHANNEL => {
            c.what = "channel record";
            let id = c.u16()?;
            let schema_id = c.u16()?;
            let topic = c.string()?;
            let encoding = c.string()?;
            let (msgtype, schema, wire) = match st.schemas.get(&schema_id) {
                None if schema_id == 0 => (String::new(), String::new(), Err(NoWire::NoSchema)),
                None => {
                    return Err(RosProblem::BadRecord {
                        what: "channel record",
                        at,
                        problem: RecordProblem::UndefinedSchema {
                            topic,
                            schema: schema_id,
                        },
                    })
                }
                Some((name, senc, text)) => {
                    let wire = match (encoding.as_str(), senc.as_str()) {
                        ("cdr", "ros2msg") => Ok(Wire::Cdr),
                        ("ros1", "ros1msg") => Ok(Wire::Ros1),
                        (e, s) => Err(NoWire::Encodings {
                            message: e.to_string(),
                            schema: s.to_string(),
                        }),
                    };
                    (normalize_type(name), text.clone(), wire)
                }
            };
            sink.connection(Connection {
                id: id.into(),
                topic,
                msgtype,
                schema,
                wire,
            });
        }
        OP_MESSAGE => {
            c.what = "message record";
            let channel = c.u16()?;
            let _sequence = c.u32()?;
            let log_time = c.u64()?;
            let _publish_time = c.u64()?;
            let start = body.start + c.pos;
            let len = body.end - start;
            let (chunk, offset) = match in_chunk {
                Some((i, _)) => (i, start as u64),
                None => (MsgRef::NO_CHUNK, start as u64),
            };
            let r = MsgRef {
                file: file_no,
                chunk,
                start: offset,
                len: u32::try_from(len).map_err(|_| RosProblem::TooLarge {
                    what: "message",
                    at,
                    got: len as u64,
                    limit: u32::MAX as u64,
                })?,
            };
            if !sink.message(channel.into(), log_time, r, &buf[start..body.end]) {
                return Err(RosProblem::UnknownChannel {
                    at,
                    id: channel.into(),
                });
            }
        }
        _ => {}
    }
    Ok(())
}
