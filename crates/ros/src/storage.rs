//! One file of a recording opened as the storage it holds (an MCAP file or ROS 1 bag, mapped;
//! a rosbag2 sqlite3 database), after decompressing it when rosbag2 compressed it whole, and
//! read once into a [`Sink`].

use std::path::Path;

use crate::container::BagFile;
use crate::container::Sink;
use crate::error::{Error, IoContext, Result};
use crate::rosbag2::zstd::Scratch;

/// One file of a recording.
pub(crate) enum Storage {
    /// An MCAP file or a ROS 1 bag, mapped.
    Mapped(BagFile),
    /// A rosbag2 sqlite3 database.
    #[cfg(feature = "sqlite")]
    Db3(crate::rosbag2::sqlite::Db3),
}

impl Storage {
    pub(crate) fn path(&self) -> &Path {
        match self {
            Storage::Mapped(f) => &f.path,
            #[cfg(feature = "sqlite")]
            Storage::Db3(d) => &d.path,
        }
    }
}

/// What a path holds.
enum Kind {
    Mcap,
    Bag,
    Sqlite,
}

fn kind_of(path: &Path) -> Result<Kind> {
    use std::io::Read;
    let mut head = [0u8; 16];
    let mut f = std::fs::File::open(path).at(path)?;
    let n = f.read(&mut head).at(path)?;
    let head = &head[..n];
    if crate::rosbag2::mcap::is_mcap(head) {
        Ok(Kind::Mcap)
    } else if crate::rosbag1::reader::is_bag(head) {
        Ok(Kind::Bag)
    } else if head.starts_with(b"SQLite format 3\0") {
        Ok(Kind::Sqlite)
    } else {
        Err(Error::Ros {
            path: path.to_path_buf(),
            problem: crate::error::RosProblem::BadMagic {
                expected: "an MCAP file, a ROS 1 bag or a rosbag2 directory",
            },
        })
    }
}

/// Whether `path` looks like a ROS recording: a rosbag2 directory (`metadata.yaml`), or a
/// file starting with the MCAP or ROS 1 bag magic.
pub fn is_ros_recording(path: &Path) -> bool {
    if path.is_dir() {
        return path.join("metadata.yaml").is_file();
    }
    path.is_file() && matches!(kind_of(path), Ok(Kind::Mcap | Kind::Bag))
}

/// Opens recording file `f` (number `no`) and reads every record into `sink`; with `scratch`,
/// `f` is compressed whole and is decompressed into it first.
pub(crate) fn open_and_scan(
    f: &Path,
    no: u16,
    scratch: Option<&Scratch>,
    sink: &mut dyn Sink,
) -> Result<Storage> {
    // A file compressed whole is read from its decompressed copy; errors still name the file
    // the recording lists (offsets in them are in the decompressed bytes).
    let plain = match scratch {
        Some(s) => s.decompress(no.into(), f, &mut |d, t| sink.progress(d, t))?,
        None => f.to_path_buf(),
    };
    let kind = match kind_of(&plain) {
        Err(_) if scratch.is_some() => {
            return Err(Error::Ros {
                path: f.to_path_buf(),
                problem: crate::error::RosProblem::BadMagic {
                    expected: "an MCAP or sqlite3 file once decompressed",
                },
            })
        }
        k => k?,
    };
    Ok(match kind {
        Kind::Mcap | Kind::Bag => {
            let mut bag = BagFile::open(&plain)?;
            bag.path = f.to_path_buf();
            if plain != f {
                // Mapped: the name can go now, so nothing is left behind even if the
                // process is killed (the space is freed when the map is).
                let _ = std::fs::remove_file(&plain);
            }
            match kind {
                Kind::Mcap => crate::rosbag2::mcap::scan(&mut bag, no, sink)?,
                _ => crate::rosbag1::reader::scan(&mut bag, no, sink)?,
            }
            Storage::Mapped(bag)
        }
        #[cfg(feature = "sqlite")]
        Kind::Sqlite => {
            let mut db = crate::rosbag2::sqlite::Db3::open(&plain)?;
            db.path = f.to_path_buf();
            db.scan(no, sink)?;
            Storage::Db3(db)
        }
        #[cfg(not(feature = "sqlite"))]
        Kind::Sqlite => {
            return Err(Error::Ros {
                path: f.to_path_buf(),
                problem: crate::error::RosProblem::Storage {
                    name: "sqlite3".into(),
                },
            })
        }
    })
}
