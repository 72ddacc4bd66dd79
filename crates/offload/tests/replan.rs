//! A trace changed under the offload, through the library's `run` to a directory store
//! (the same job the binary runs; the S3 case is tests/cli/offload_changes.rs, against
//! Garage): the files are changed from the progress callback, right after the store
//! acknowledged a part, so the change lands at a known point of the upload.
//!
//! - the run that sees the change fails naming the file, deletes nothing, and journals it;
//! - the next run plans the trace again: the file changed mid-upload is sent again, a file
//!   already verified whose bytes changed is re-sent (reported and counted as re-sent), one
//!   whose mtime alone moved stays verified; then the trace is verified and deleted, and
//!   every object equals the file it was sent from;
//! - a trace verified, then changed before `--delete` removed it: that run refuses the
//!   deletion; the next one sends again only the file whose bytes changed, then deletes.

use std::cell::Cell;
use std::io::{Seek, SeekFrom, Write};
use std::path::Path;
use std::time::{Duration, SystemTime};

use roverlog_offload::journal::{FileState, Journal};
use roverlog_offload::{OffloadError, Options, Progress};

const MIB: usize = 1 << 20;

/// Changes files once the bytes acknowledged pass `at`.
struct ChangeAt<'a> {
    at: u64,
    sent: Cell<u64>,
    done: Cell<bool>,
    change: &'a dyn Fn(),
    notes: std::cell::RefCell<Vec<String>>,
}

impl Progress for ChangeAt<'_> {
    fn trace(&self, _: &str, _: u64, _: u64) {}
    fn sent(&self, n: u64) {
        self.sent.set(self.sent.get() + n);
        if self.sent.get() >= self.at && !self.done.replace(true) {
            (self.change)();
        }
    }
    fn note(&self, line: &str) {
        self.notes.borrow_mut().push(line.to_string());
    }
}

fn bytes(n: usize, seed: u8) -> Vec<u8> {
    (0..n)
        .map(|i| ((i as u64 * 2654435761) >> 7) as u8 ^ seed)
        .collect()
}

/// Overwrites the first byte of `path` (its size kept, its mtime moved).
fn flip_first_byte(path: &Path) {
    let mut data = std::fs::read(path).unwrap();
    data[0] ^= 0xff;
    let mut f = std::fs::OpenOptions::new().write(true).open(path).unwrap();
    f.seek(SeekFrom::Start(0)).unwrap();
    f.write_all(&data[..1]).unwrap();
    f.set_modified(SystemTime::now() + Duration::from_secs(5))
        .unwrap();
}

fn md5_file(path: &Path) -> String {
    roverlog_store::md5_hex(&std::fs::read(path).unwrap())
}

#[test]
fn a_trace_changed_mid_upload_fails_then_is_planned_again_and_verified() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let t = data.join("t");
    std::fs::create_dir_all(&t).unwrap();
    // Sent in this order (as `roverlog checksum` lists them), one request at a time:
    // a.bin in 3 parts, b.bin whole, c.bin in 3 parts, config.yaml whole.
    std::fs::write(t.join("a.bin"), bytes(12 * MIB, 1)).unwrap();
    std::fs::write(t.join("b.bin"), bytes(1000, 2)).unwrap();
    std::fs::write(t.join("c.bin"), bytes(12 * MIB, 3)).unwrap();
    std::fs::write(t.join("config.yaml"), "{}\n").unwrap();
    let dest = tmp.path().join("nas");
    std::fs::create_dir(&dest).unwrap();
    let jp = tmp.path().join("journal.json");
    let mut opts = Options::new(&data, dest.to_str().unwrap());
    opts.journal = Some(jp.clone());
    opts.delete = true;
    opts.part_size = 5 * MIB as u64;
    opts.jobs = 1;

    // Once c.bin's first part is acknowledged: c.bin changes (mid-upload), a.bin (verified)
    // changes, b.bin (verified) is only touched.
    let change = || {
        flip_first_byte(&t.join("c.bin"));
        flip_first_byte(&t.join("a.bin"));
        std::fs::File::options()
            .write(true)
            .open(t.join("b.bin"))
            .unwrap()
            .set_modified(SystemTime::now() + Duration::from_secs(5))
            .unwrap();
    };
    let p = ChangeAt {
        at: (12 * MIB + 1000 + 5 * MIB) as u64,
        sent: Cell::new(0),
        done: Cell::new(false),
        change: &change,
        notes: Default::default(),
    };
    let err = roverlog_offload::run(&opts, &p).unwrap_err();
    assert!(p.done.get(), "the change was made");
    let OffloadError::Changed { path, .. } = &err else {
        panic!("{err}");
    };
    assert_eq!(path, &t.join("c.bin"));
    assert!(
        err.to_string()
            .contains("the next run plans its trace again"),
        "{err}"
    );
    // Nothing deleted; the journal says what was done, and which file changed.
    assert!(t.join("config.yaml").exists());
    let j = Journal::load(&jp, dest.to_str().unwrap()).unwrap();
    let entry = &j.traces["t"];
    assert!(!entry.verified);
    assert_eq!(entry.changed, vec!["c.bin".to_string()]);
    let state = |name: &str| {
        entry
            .files
            .iter()
            .find(|f| f.path == name)
            .unwrap()
            .state
            .clone()
    };
    assert!(matches!(state("a.bin"), FileState::Done { .. }));
    assert!(matches!(state("b.bin"), FileState::Done { .. }));
    assert!(!matches!(state("c.bin"), FileState::Done { .. }));

    // The way forward: the same job again.
    let want: Vec<(&str, String)> = ["a.bin", "b.bin", "c.bin", "config.yaml"]
        .into_iter()
        .map(|f| (f, md5_file(&t.join(f))))
        .collect();
    let quiet = ChangeAt {
        at: u64::MAX,
        sent: Cell::new(0),
        done: Cell::new(false),
        change: &|| {},
        notes: Default::default(),
    };
    let s = roverlog_offload::run(&opts, &quiet).unwrap();
    let notes = quiet.notes.borrow().join("\n");
    assert_eq!(s.traces, vec!["t".to_string()], "{notes}");
    assert_eq!(s.replaced, vec!["t/a.bin".to_string()], "{notes}");
    assert!(
        notes.contains(&format!(
            "{}: CHANGED AFTER IT WAS VERIFIED",
            t.join("a.bin").display()
        )),
        "{notes}"
    );
    assert!(
        notes.contains(&format!(
            "{}: its mtime changed, not its bytes: kept as verified",
            t.join("b.bin").display()
        )),
        "{notes}"
    );
    // a.bin and c.bin went again whole (the store held all of both); b.bin did not.
    assert_eq!(s.bytes_resent, 24 * MIB as u64, "{notes}");
    assert_eq!(s.files, 3, "a.bin, c.bin and config.yaml: {notes}");
    // Verified, then deleted; every object is the file as it was at the end.
    assert!(!t.exists());
    for (f, md5) in &want {
        assert_eq!(&md5_file(&dest.join("t").join(f)), md5, "{f}");
    }
    let j = Journal::load(&jp, dest.to_str().unwrap()).unwrap();
    assert!(j.traces["t"].verified && j.traces["t"].deleted);
    assert!(j.traces["t"].changed.is_empty());
}

/// A verified trace keeps no file list: a change found before its deletion fails that run
/// (nothing deleted); the next one rebuilds what was sent from the destination's MD5 CSV,
/// hashes the local files again, re-sends the one whose bytes changed, and deletes the trace
/// once it is verified again.
#[test]
fn a_verified_trace_changed_before_its_deletion_is_sent_again_where_it_changed() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let t = data.join("t");
    std::fs::create_dir_all(&t).unwrap();
    std::fs::write(t.join("a.bin"), bytes(6 * MIB, 4)).unwrap();
    std::fs::write(t.join("b.bin"), bytes(1000, 5)).unwrap();
    std::fs::write(t.join("config.yaml"), "{}\n").unwrap();
    let dest = tmp.path().join("nas");
    std::fs::create_dir(&dest).unwrap();
    let jp = tmp.path().join("journal.json");
    let mut opts = Options::new(&data, dest.to_str().unwrap());
    opts.journal = Some(jp.clone());
    opts.part_size = 5 * MIB as u64;
    let quiet = || ChangeAt {
        at: u64::MAX,
        sent: Cell::new(0),
        done: Cell::new(false),
        change: &|| {},
        notes: Default::default(),
    };
    let s = roverlog_offload::run(&opts, &quiet()).unwrap();
    assert_eq!(s.traces, vec!["t".to_string()]);

    // a.bin's bytes change; b.bin is only touched. The deletion finds it and refuses.
    flip_first_byte(&t.join("a.bin"));
    std::fs::File::options()
        .write(true)
        .open(t.join("b.bin"))
        .unwrap()
        .set_modified(SystemTime::now() + Duration::from_secs(5))
        .unwrap();
    opts.delete = true;
    let err = roverlog_offload::run(&opts, &quiet()).unwrap_err();
    assert!(
        matches!(&err, OffloadError::ChangedSinceVerified { path, .. } if *path == t),
        "{err}"
    );
    assert!(t.join("a.bin").exists());
    let j = Journal::load(&jp, dest.to_str().unwrap()).unwrap();
    assert!(!j.traces["t"].verified && j.traces["t"].changed_since_verified);

    let want: Vec<(&str, String)> = ["a.bin", "b.bin", "config.yaml"]
        .into_iter()
        .map(|f| (f, md5_file(&t.join(f))))
        .collect();
    let p = quiet();
    let s = roverlog_offload::run(&opts, &p).unwrap();
    let notes = p.notes.borrow().join("\n");
    assert_eq!(s.traces, vec!["t".to_string()], "{notes}");
    assert_eq!(s.replaced, vec!["t/a.bin".to_string()], "{notes}");
    assert_eq!(s.bytes_resent, 6 * MIB as u64, "{notes}");
    assert_eq!(s.files, 1, "only a.bin went again: {notes}");
    assert!(
        notes.contains(&format!(
            "{}: CHANGED AFTER IT WAS VERIFIED",
            t.join("a.bin").display()
        )),
        "{notes}"
    );
    assert!(!t.exists(), "{notes}");
    for (f, md5) in &want {
        assert_eq!(&md5_file(&dest.join("t").join(f)), md5, "{f}");
    }
    let csv = std::fs::read_to_string(dest.join("t.md5.csv")).unwrap();
    for (f, md5) in &want {
        assert!(csv.contains(&format!("{f},{md5}\n")), "{csv}");
    }
}
