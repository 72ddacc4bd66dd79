//! `roverlog import` / `replay` of rosbag2 directories rosbag2 compressed with zstd
//! (`compression_mode: file`, every file `.mcap.zstd` / `.db3.zstd`; `message`, every
//! message one zstd frame), written by rosbags from the messages of
//! `tests/py/ros_bags_write.py`: value by value as expected.json says and as the uncompressed
//! directory imports; damage is a clear error with no trace written; a compression we do not
//! read is refused by name; the temporary copies of whole-file-compressed storage are gone
//! after every run (each run gets its own TMPDIR to look in).

use crate::ros_import::{
    assert_same_samples, check_import, replay_gives_what_import_gives, write_bags,
};
use crate::support::common::{self, Run};

use std::path::Path;

/// The four compressed directories: both storages, both modes.
const COMPRESSED: [&str; 4] = [
    "rosbag2_mcap_zstd_file",
    "rosbag2_mcap_zstd_message",
    "rosbag2_sqlite_zstd_file",
    "rosbag2_sqlite_zstd_message",
];

/// Runs `roverlog args` with TMPDIR `tmp` (made empty first).
fn run_in(tmp: &Path, args: &[&std::ffi::OsStr]) -> Run {
    let _ = std::fs::remove_dir_all(tmp);
    std::fs::create_dir_all(tmp).unwrap();
    common::roverlog_env(args, &[("TMPDIR", tmp.as_os_str())])
}

fn import_in(tmp: &Path, src: &Path, out: &Path) -> Run {
    run_in(tmp, &["import".as_ref(), src.as_os_str(), out.as_os_str()])
}

/// Nothing left in `tmp` by the run.
fn assert_clean(tmp: &Path, what: &str) {
    let left: Vec<_> = std::fs::read_dir(tmp)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert!(left.is_empty(), "{what}: left in TMPDIR: {left:?}");
}

#[test]
fn imports_zstd_compressed_rosbag2_as_the_uncompressed_one() {
    let bags = write_bags();
    let tmp = bags.dir.join("tmpdir");
    let plain = |name: &str| {
        if name.contains("mcap") {
            "rosbag2"
        } else {
            "rosbag2_sqlite"
        }
    };
    for name in COMPRESSED {
        // Every topic, channel and value as expected.json says (and the skipped topics said).
        check_import(&bags, name, false);
        // The same samples as the uncompressed directory of the same messages gives.
        let (a, b) = (
            bags.dir.join(format!("z-{name}")),
            bags.dir.join(format!("p-{name}")),
        );
        let r = import_in(&tmp, &bags.dir.join(name), &a);
        assert!(r.ok(), "{name}: {}", r.text());
        assert_clean(&tmp, name);
        let r = import_in(&tmp, &bags.dir.join(plain(name)), &b);
        assert!(r.ok(), "{}: {}", plain(name), r.text());
        assert_same_samples(&a, &b);
    }
}

/// `replay` reads them too: the samples a daemon records are the ones `import` writes, and
/// the decompressed copy is gone once it is done.
#[test]
fn replays_zstd_compressed_rosbag2_as_import_writes_it() {
    let bags = write_bags();
    let tmp = bags.dir.join("tmpdir");
    for name in ["rosbag2_sqlite_zstd_file", "rosbag2_mcap_zstd_message"] {
        let src = bags.dir.join(name);
        let imported = bags.dir.join(format!("imported-{name}"));
        let r = import_in(&tmp, &src, &imported);
        assert!(r.ok(), "{name}: {}", r.text());
        assert_clean(&tmp, name);
        let r = replay_gives_what_import_gives(&src, &imported, &[("TMPDIR", tmp.as_os_str())]);
        assert_clean(&tmp, name);
        let sent = 5 * bags.expected["topics"].as_object().unwrap().len();
        assert!(
            r.out().contains(&format!("sent {sent} samples")),
            "{name}: {}",
            r.text()
        );
    }
}

/// A `.zstd` file cut short or not zstd at all, a message whose frame is cut, a bag that says
/// its messages are compressed when they are not, and a compressor we do not read: exit 2, a
/// message naming the file (and topic and message) and what is wrong, no trace, no leftovers.
#[test]
fn damaged_or_unknown_compression_is_a_clear_error() {
    let bags = write_bags();
    let tmp = bags.dir.join("tmpdir");
    let out = bags.dir.join("out-bad");
    let fails = |src: &Path, words: &[&str], what: &str| {
        let r = import_in(&tmp, src, &out);
        assert_eq!(r.code, 2, "{what}: {}", r.text());
        for w in words {
            assert!(r.stderr.contains(w), "{what}: no {w:?} in: {}", r.stderr);
        }
        assert!(!out.exists(), "{what}: a trace was written");
        assert_clean(&tmp, what);
    };
    let copy = |from: &str, to: &str| {
        let dst = bags.dir.join(to);
        std::fs::create_dir_all(&dst).unwrap();
        for e in std::fs::read_dir(bags.dir.join(from)).unwrap() {
            let e = e.unwrap();
            std::fs::copy(e.path(), dst.join(e.file_name())).unwrap();
        }
        dst
    };
    // Whole files cut short (both storages), and one that is not zstd.
    for name in ["rosbag2_mcap_zstd_file", "rosbag2_sqlite_zstd_file"] {
        let ext = if name.contains("mcap") { "mcap" } else { "db3" };
        let file = format!("{name}.{ext}.zstd");
        let whole = std::fs::read(bags.dir.join(name).join(&file)).unwrap();
        let bad = copy(name, &format!("cut-{name}"));
        for cut in [whole.len() / 2, whole.len() - 3] {
            std::fs::write(bad.join(&file), &whole[..cut]).unwrap();
            fails(
                &bad,
                &[&file, "compression_mode: file", "truncated"],
                &format!("{file} cut at {cut}"),
            );
        }
        std::fs::write(bad.join(&file), b"SQLite format 3\0 not compressed").unwrap();
        fails(&bad, &[&file, "zstd"], &format!("{file} not zstd"));
    }
    // One message's frame cut in half (written by ros_bags_write.py).
    fails(
        &bags.dir.join("rosbag2_sqlite_zstd_message_cut"),
        &[
            "rosbag2_sqlite_zstd_message.db3",
            "topic /imu, message 0",
            "zstd frame",
        ],
        "frame cut",
    );
    // metadata.yaml says the messages are compressed; they are plain CDR.
    let lying = copy("rosbag2", "lying");
    let meta = lying.join("metadata.yaml");
    let text = std::fs::read_to_string(&meta).unwrap();
    let said = text
        .replace("compression_format: ''", "compression_format: zstd")
        .replace("compression_mode: ''", "compression_mode: MESSAGE");
    assert_ne!(said, text, "rosbags' layout changed:\n{text}");
    std::fs::write(&meta, &said).unwrap();
    fails(
        &lying,
        &["rosbag2.mcap", "message 0", "zstd frame"],
        "plain messages",
    );
    // A compressor rosbag2 does not ship, and a mode it does not write: named.
    std::fs::write(
        &meta,
        said.replace("compression_format: zstd", "compression_format: lz4"),
    )
    .unwrap();
    fails(&lying, &["metadata.yaml", "\"lz4\""], "lz4");
    std::fs::write(
        &meta,
        said.replace("compression_mode: MESSAGE", "compression_mode: chunk"),
    )
    .unwrap();
    fails(&lying, &["metadata.yaml", "\"chunk\""], "mode chunk");
}
