//! rosbag2's sqlite3 storage (`.db3`, feature `sqlite`): table `topics` (id, name, type,
//! serialization_format), `messages` (id, topic_id, timestamp, data) and, from rosbag2 Iron
//! on, `message_definitions` (topic_type, encoding, encoded_message_definition). A recording
//! from before Iron stores no definitions: a topic of a standard type the default mapping
//! understands is decoded with the definition roverlog ships ([`crate::typesys::msgs`]); any
//! other is reported as one we cannot decode.
//!
//! The database is opened read-only; a message is read again by its row id.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use rusqlite::{Connection, OpenFlags, OptionalExtension};

use crate::container::Sink;
use crate::container::{Connection as Topic, MsgRef};
use crate::error::{Error, NoWire, Result, RosProblem};
use crate::typesys::schema::normalize_type;
use crate::wire::decode::Wire;

/// `MsgRef::chunk` of a message in a database (`start` is its row id).
pub const ROW: u32 = u32::MAX - 1;

/// An open `.db3` file.
pub struct Db3 {
    pub path: PathBuf,
    conn: Connection,
}

impl Db3 {
    pub fn open(path: &Path) -> Result<Db3> {
        let conn = Connection::open_with_flags(
            path,
            OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .map_err(|e| sql(path, e))?;
        Ok(Db3 {
            path: path.to_path_buf(),
            conn,
        })
    }

    /// Every topic, then every message in row order, into `sink`.
    pub fn scan(&self, file_no: u16, sink: &mut dyn Sink) -> Result<()> {
        let err = |e| sql(&self.path, e);
        let has_defs: bool = self
            .conn
            .query_row(
                "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'message_definitions'",
                [],
                |r| r.get::<_, i64>(0),
            )
            .map_err(err)?
            > 0;
        let mut defs: HashMap<String, (String, String)> = HashMap::new();
        if has_defs {
            let mut q = self
                .conn
                .prepare("SELECT topic_type, encoding, encoded_message_definition FROM message_definitions")
                .map_err(err)?;
            let rows = q
                .query_map([], |r| {
                    Ok((
                        r.get::<_, String>(0)?,
                        r.get::<_, String>(1)?,
                        r.get::<_, String>(2)?,
                    ))
                })
                .map_err(err)?;
            for row in rows {
                let (t, enc, text) = row.map_err(err)?;
                defs.insert(normalize_type(&t), (enc, text));
            }
        }
        let mut q = self
            .conn
            .prepare("SELECT id, name, type, serialization_format FROM topics")
            .map_err(err)?;
        let rows = q
            .query_map([], |r| {
                Ok((
                    r.get::<_, i64>(0)?,
                    r.get::<_, String>(1)?,
                    r.get::<_, String>(2)?,
                    r.get::<_, String>(3)?,
                ))
            })
            .map_err(err)?;
        for row in rows {
            let (id, topic, msgtype, format) = row.map_err(err)?;
            let msgtype = normalize_type(&msgtype);
            let (schema, wire) = match (format.as_str(), defs.get(&msgtype)) {
                ("cdr", Some((enc, text))) if enc == "ros2msg" => (text.clone(), Ok(Wire::Cdr)),
                ("cdr", Some((enc, _))) => (
                    String::new(),
                    Err(NoWire::DefinitionEncoding {
                        encoding: enc.clone(),
                    }),
                ),
                ("cdr", None) => match crate::typesys::msgs::definition(&msgtype) {
                    Some(text) => (text, Ok(Wire::Cdr)),
                    None => (
                        String::new(),
                        Err(NoWire::NoDefinition {
                            known: crate::typesys::msgs::known().collect(),
                        }),
                    ),
                },
                (f, _) => (
                    String::new(),
                    Err(NoWire::Serialization {
                        format: f.to_string(),
                    }),
                ),
            };
            sink.connection(Topic {
                id: id as u32,
                topic,
                msgtype,
                schema,
                wire,
            });
        }
        let total: i64 = self
            .conn
            .query_row("SELECT count(*) FROM messages", [], |r| r.get(0))
            .map_err(err)?;
        let mut done = 0;
        let mut q = self
            .conn
            .prepare("SELECT id, topic_id, timestamp, data FROM messages ORDER BY id")
            .map_err(err)?;
        let mut rows = q.query([]).map_err(err)?;
        while let Some(r) = rows.next().map_err(err)? {
            let id: i64 = r.get(0).map_err(err)?;
            let topic: i64 = r.get(1).map_err(err)?;
            let time: i64 = r.get(2).map_err(err)?;
            let data = r
                .get_ref(3)
                .and_then(|v| v.as_blob().map_err(Into::into))
                .map_err(err)?;
            let at = MsgRef {
                file: file_no,
                chunk: ROW,
                start: id as u64,
                len: u32::try_from(data.len()).map_err(|_| {
                    self.problem(RosProblem::TooLarge {
                        what: "message",
                        at: id as u64,
                        got: data.len() as u64,
                        limit: u32::MAX.into(),
                    })
                })?,
            };
            if !sink.message(topic as u32, time.max(0) as u64, at, data) {
                return Err(self.problem(RosProblem::UnknownChannel {
                    at: id as u64,
                    id: topic as u32,
                }));
            }
            done += 1;
            if done % 1024 == 0 {
                sink.progress(done, total as u64);
            }
        }
        Ok(())
    }

    /// The data of message row `id`.
    pub fn read_into(&self, id: i64, out: &mut Vec<u8>) -> Result<()> {
        let blob: Option<Vec<u8>> = self
            .conn
            .prepare("SELECT data FROM messages WHERE id = ?1")
            .and_then(|mut q| q.query_row([id], |r| r.get(0)).optional())
            .map_err(|e| sql(&self.path, e))?;
        let blob = blob.ok_or_else(|| self.problem(RosProblem::SqliteRowGone { id }))?;
        *out = blob;
        Ok(())
    }

    fn problem(&self, problem: RosProblem) -> Error {
        Error::Ros {
            path: self.path.clone(),
            problem,
        }
    }
}

fn sql(path: &Path, e: rusqlite::Error) -> Error {
    Error::Ros {
        path: path.to_path_buf(),
        problem: RosProblem::Sqlite {
            error: e.to_string(),
        },
    }
}
