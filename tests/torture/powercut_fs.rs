//! The power-loss filesystem's own promises (tests/support/powercut.rs): synced data survives a
//! cut, unsynced data does not, a rename or a create whose directory was not synced can be
//! undone, and a partial cut keeps only bytes that were written (some pages, maybe torn).

use crate::support::powercut;

use std::fs::{self, File, OpenOptions};
use std::io::Write;

use powercut::{Cut, PowerFs};

fn fs() -> (tempfile::TempDir, PowerFs) {
    let dir = tempfile::tempdir().unwrap();
    let p = PowerFs::mount(&dir.path().join("backing"), &dir.path().join("mnt"));
    (dir, p)
}

fn sync_dir(p: &std::path::Path) {
    File::open(p).unwrap().sync_all().unwrap();
}

#[test]
fn synced_data_survives_and_unsynced_data_does_not() {
    let (_d, mut p) = fs();
    let m = p.mountpoint.clone();
    let mut f = File::create(m.join("a")).unwrap();
    f.write_all(b"durable").unwrap();
    f.sync_all().unwrap();
    sync_dir(&m);
    f.write_all(b" and volatile").unwrap();
    let mut g = OpenOptions::new().append(true).open(m.join("a")).unwrap();
    g.write_all(b"!").unwrap();
    drop((f, g));
    assert_eq!(fs::read(m.join("a")).unwrap(), b"durable and volatile!");
    p.cut(Cut::Clean);
    assert_eq!(fs::read(m.join("a")).unwrap(), b"durable");
    assert_eq!(
        fs::read(p.backing.join("a")).unwrap(),
        b"durable",
        "the backing tree is the image"
    );
    // fdatasync counts too; a truncation is undone like a write.
    let f = OpenOptions::new().write(true).open(m.join("a")).unwrap();
    f.set_len(3).unwrap();
    drop(f);
    p.cut(Cut::Clean);
    assert_eq!(fs::read(m.join("a")).unwrap(), b"durable");
    let f = OpenOptions::new().write(true).open(m.join("a")).unwrap();
    f.set_len(3).unwrap();
    f.sync_data().unwrap();
    drop(f);
    p.cut(Cut::Clean);
    assert_eq!(fs::read(m.join("a")).unwrap(), b"dur");
}

#[test]
fn directory_changes_need_a_directory_fsync() {
    let (_d, mut p) = fs();
    let m = p.mountpoint.clone();
    fs::create_dir(m.join("d")).unwrap();
    sync_dir(&m);
    let mut old = File::create(m.join("d/meta.json")).unwrap();
    old.write_all(b"old").unwrap();
    old.sync_all().unwrap();
    sync_dir(&m.join("d"));
    // Created and its data synced, its directory not: it may vanish.
    let mut f = File::create(m.join("d/new")).unwrap();
    f.write_all(b"x").unwrap();
    f.sync_all().unwrap();
    // The atomic-replace idiom without the final directory fsync: undone.
    let mut tmp = File::create(m.join("d/meta.json.tmp")).unwrap();
    tmp.write_all(b"new").unwrap();
    tmp.sync_all().unwrap();
    fs::rename(m.join("d/meta.json.tmp"), m.join("d/meta.json")).unwrap();
    assert_eq!(fs::read(m.join("d/meta.json")).unwrap(), b"new");
    drop((f, old, tmp));
    p.cut(Cut::Clean);
    assert!(
        !m.join("d/new").exists(),
        "a create without a directory fsync is lost"
    );
    assert_eq!(
        fs::read(m.join("d/meta.json")).unwrap(),
        b"old",
        "the rename is undone"
    );
    assert!(!m.join("d/meta.json.tmp").exists());
    // With the directory fsync, both stay.
    let mut tmp = File::create(m.join("d/meta.json.tmp")).unwrap();
    tmp.write_all(b"new").unwrap();
    tmp.sync_all().unwrap();
    fs::rename(m.join("d/meta.json.tmp"), m.join("d/meta.json")).unwrap();
    sync_dir(&m.join("d"));
    drop(tmp);
    p.cut(Cut::Clean);
    assert_eq!(fs::read(m.join("d/meta.json")).unwrap(), b"new");
    // A directory created but its parent not synced vanishes with everything in it.
    fs::create_dir(m.join("e")).unwrap();
    let mut f = File::create(m.join("e/f")).unwrap();
    f.write_all(b"y").unwrap();
    f.sync_all().unwrap();
    sync_dir(&m.join("e"));
    drop(f);
    p.cut(Cut::Clean);
    assert!(!m.join("e").exists());
}

#[test]
fn a_partial_cut_keeps_only_bytes_that_were_written() {
    for seed in 1..40u64 {
        let (_d, mut p) = fs();
        let m = p.mountpoint.clone();
        let base = vec![b'a'; 20_000];
        let mut f = File::create(m.join("f")).unwrap();
        f.write_all(&base).unwrap();
        f.sync_all().unwrap();
        sync_dir(&m);
        f.write_all(&vec![b'b'; 9_000]).unwrap();
        drop(f);
        let mut g = OpenOptions::new().write(true).open(m.join("f")).unwrap();
        g.write_all(&[b'c'; 5_000]).unwrap(); // overwrites the start, unsynced
        drop(g);
        p.cut(Cut::Partial(seed));
        let got = fs::read(m.join("f")).unwrap();
        assert!(
            got.len() == 20_000 || got.len() == 29_000,
            "seed {seed}: {} bytes",
            got.len()
        );
        for (i, &b) in got.iter().enumerate() {
            let allowed: &[u8] = match i {
                0..5_000 => b"ac",
                5_000..20_000 => b"a",
                _ => b"b\0",
            };
            assert!(allowed.contains(&b), "seed {seed}: byte {i} is {b}");
        }
    }
}

#[test]
fn directories_the_daemon_creates_for_its_data_survive_a_cut() {
    // The daemon creates `data_root` (and its missing parents) at start: before this was made
    // durable, a power cut after the first acknowledged sample took the whole data root away
    // (found by torture_powercut).
    let (_d, mut p) = fs();
    let root = p.mountpoint.join("var/lib/roverlog");
    roverlog_core::format::meta::create_dir_all_durable(&root).unwrap();
    roverlog_core::format::meta::create_dir_all_durable(&root).unwrap();
    p.cut(Cut::Clean);
    assert!(root.is_dir());
}
