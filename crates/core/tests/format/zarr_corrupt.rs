//! Corrupt and hostile stores: every one must be an error (or, for flipped payload bytes, at
//! worst wrong data), never a panic, a crash in c-blosc, or a huge allocation.

use crate::support::common;

use std::fs;
use std::path::{Path, PathBuf};

use roverlog_core::zarr::l5kit::ChunkedDataset;
use roverlog_core::zarr::ZarrArray;
use roverlog_core::Error;

/// A copy of the fixture's `agents` array (2 Blosc/lz4 chunks) in a temp dir.
fn agents_copy() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let src = common::root().join("tests/data/l5kit_single_scene.zarr/agents");
    let dst = dir.path().join("agents");
    fs::create_dir(&dst).unwrap();
    for f in [".zarray", "0", "1"] {
        fs::copy(src.join(f), dst.join(f)).unwrap();
    }
    (dir, dst)
}

fn read_err(arr: &Path) -> String {
    match ZarrArray::open(arr) {
        Err(e) => e.to_string(),
        Ok(a) => a
            .read_all()
            .expect_err("corrupt store read fine")
            .to_string(),
    }
}

fn patch(path: &Path, at: usize, bytes: &[u8]) {
    let mut b = fs::read(path).unwrap();
    b[at..at + bytes.len()].copy_from_slice(bytes);
    fs::write(path, b).unwrap();
}

#[test]
fn truncated_and_lying_blosc_chunks_are_errors() {
    let (_d, arr) = agents_copy();
    let chunk = arr.join("0");
    let orig = fs::read(&chunk).unwrap();

    fs::write(&chunk, &orig[..10]).unwrap();
    assert!(read_err(&arr).contains("shorter than the 16-byte Blosc header"));

    fs::write(&chunk, &orig[..orig.len() - 1]).unwrap();
    assert!(read_err(&arr).contains("compressed bytes"));

    fs::write(&chunk, &orig).unwrap();
    patch(&chunk, 4, &u32::MAX.to_le_bytes()); // nbytes: 4 GiB
    assert!(read_err(&arr).contains("decoded bytes"));

    fs::write(&chunk, &orig).unwrap();
    patch(&chunk, 12, &(orig.len() as u32 + 1000).to_le_bytes()); // cbytes past the end
    assert!(read_err(&arr).contains("compressed bytes"));

    fs::write(&chunk, &orig).unwrap();
    patch(&chunk, 0, &[5]); // a Blosc2 chunk
    assert!(read_err(&arr).contains("Blosc2"));

    fs::write(&chunk, &orig).unwrap();
    patch(&chunk, 16, &u32::MAX.to_le_bytes()); // first block start far outside
    assert!(read_err(&arr).contains("block 0 starts"));
}

#[test]
fn flipped_payload_bytes_never_crash() {
    let (_d, arr) = agents_copy();
    let chunk = arr.join("1");
    let orig = fs::read(&chunk).unwrap();
    let mut state = 7u64;
    for _ in 0..300 {
        state = state.wrapping_mul(6364136223846793005).wrapping_add(1);
        let at = (state >> 33) as usize % orig.len();
        let mut b = orig.clone();
        b[at] ^= 1 << ((state >> 20) % 8);
        fs::write(&chunk, &b).unwrap();
        // Either an error or (if the flip hit literal data) some bytes: just no crash.
        let a = ZarrArray::open(&arr).unwrap();
        let _ = a.read_rows(20_000..20_802);
    }
}

#[test]
fn oversized_files_are_refused_before_reading() {
    let (_d, arr) = agents_copy();
    // A sparse 3 GiB chunk file: refused from its size, never read into memory.
    let f = fs::File::create(arr.join("0")).unwrap();
    f.set_len(3 << 30).unwrap();
    assert!(matches!(
        ZarrArray::open(&arr).unwrap().read_rows(0..1),
        Err(Error::TooLarge { .. })
    ));
    let f = fs::File::create(arr.join(".zarray")).unwrap();
    f.set_len(2 << 20).unwrap();
    assert!(matches!(ZarrArray::open(&arr), Err(Error::TooLarge { .. })));
}

#[test]
fn bad_metadata_is_an_error() {
    let (_d, arr) = agents_copy();
    let meta = arr.join(".zarray");
    let orig = fs::read_to_string(&meta).unwrap();
    for (bad, needle) in [
        ("{", "invalid JSON"),
        ("null", "not a JSON object"),
        (
            &orig.replace("\"zarr_format\": 2", "\"zarr_format\": 3") as &str,
            "zarr_format",
        ),
        (&orig.replace("20000\n", "0\n"), "chunk dimension 0"),
        (&orig.replace("20000\n", "2000000000\n"), "limit"),
        (&orig.replace("\"<u8\"", "\"<u3\""), "unsupported dtype"),
        (&orig.replace("\"blosc\"", "\"lzma\""), "lzma"),
    ] {
        fs::write(&meta, bad).unwrap();
        let e = read_err(&arr);
        assert!(e.contains(needle), "{e:?} should contain {needle:?}");
    }
    // A chunk whose contents decode to the wrong size for the metadata.
    fs::write(&meta, orig.replace("20000\n", "20001\n")).unwrap();
    assert!(read_err(&arr).contains("decoded bytes"));
}

#[test]
fn dataset_without_l5kit_arrays_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    assert!(ChunkedDataset::open(dir.path()).is_err());
    fs::write(dir.path().join(".zgroup"), r#"{"zarr_format": 2}"#).unwrap();
    let e = ChunkedDataset::open(dir.path()).unwrap_err().to_string();
    assert!(e.contains("scenes"), "{e}");
}

#[test]
fn hostile_shapes_fail_instead_of_aborting() {
    let dir = tempfile::tempdir().unwrap();
    for (shape, dtype) in [(1u64 << 50, "|u1"), (1 << 60, "<f8")] {
        let arr = dir.path().join(format!("a{shape}"));
        fs::create_dir(&arr).unwrap();
        fs::write(
            arr.join(".zarray"),
            format!(
                r#"{{"zarr_format":2,"shape":[{shape}],"chunks":[1000],"dtype":"{dtype}",
                "compressor":null,"fill_value":0,"filters":null,"order":"C"}}"#
            ),
        )
        .unwrap();
        let a = ZarrArray::open(&arr).unwrap();
        assert!(matches!(a.read_all(), Err(Error::TooLarge { .. })));
        // Small reads of a huge (all-missing) array are fine.
        assert_eq!(a.read_rows(5..10).unwrap().len(), 5 * a.row_bytes());
        let info = roverlog_core::zarr::describe(&arr).unwrap();
        assert_eq!(info.arrays[0].chunks_initialized, 0);
    }
}
