//! Byte-exactness against zarr-python 2: `tests/py/zarr_interop_write.py` writes a group of
//! arrays (every compressor/shuffle, odd chunkings, missing chunks, big-endian, strings,
//! complex, datetime64/timedelta64, nested structured dtypes, `/` separators, F order,
//! unsupported codecs) plus the bytes zarr-python reads back; our reader must return exactly
//! those bytes.

use crate::support::common;

use std::path::{Path, PathBuf};

use roverlog_core::zarr::{describe, ZarrArray};
use serde_json::Value;

struct Written {
    _dir: tempfile::TempDir,
    group: PathBuf,
    manifest: Vec<Value>,
}

fn write_cases() -> Written {
    let dir = tempfile::tempdir().unwrap();
    let group = dir.path().join("g");
    let script = common::root().join("tests/py/zarr_interop_write.py");
    let out = std::process::Command::new(common::python())
        .arg(&script)
        .arg(&group)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let manifest: Value =
        serde_json::from_slice(&std::fs::read(group.join("manifest.json")).unwrap()).unwrap();
    Written {
        _dir: dir,
        group,
        manifest: manifest.as_array().unwrap().clone(),
    }
}

/// A small deterministic generator for row ranges.
struct Lcg(u64);
impl Lcg {
    fn below(&mut self, n: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 33) % n.max(1)
    }
}

fn check_readable(group: &Path, case: &Value, rng: &mut Lcg) {
    let name = case["name"].as_str().unwrap();
    let arr = ZarrArray::open(group.join(name)).unwrap_or_else(|e| panic!("{name}: {e}"));
    let want = std::fs::read(group.join(case["expected"].as_str().unwrap())).unwrap();
    let rows = case["rows"].as_u64().unwrap();
    assert_eq!(arr.len(), rows, "{name}: rows");
    let all = arr.read_all().unwrap_or_else(|e| panic!("{name}: {e}"));
    assert!(
        all == want,
        "{name}: whole read differs from zarr-python ({})",
        case["note"]
    );
    // Random row ranges, through a fresh array (cold cache) and the warm one.
    let row = arr.row_bytes();
    let cold = ZarrArray::open(group.join(name)).unwrap();
    for _ in 0..8 {
        let a = rng.below(rows + 1);
        let b = a + rng.below(rows - a + 1);
        let want_part = &want[a as usize * row..b as usize * row];
        assert!(
            arr.read_rows(a..b).unwrap() == want_part,
            "{name}: rows {a}..{b}"
        );
        assert!(
            cold.read_rows(a..b).unwrap() == want_part,
            "{name}: cold rows {a}..{b}"
        );
    }
    assert!(arr.read_rows(0..rows + 1).is_err(), "{name}: past the end");
    for (field, file) in case["fields"].as_object().unwrap() {
        let want = std::fs::read(group.join(file.as_str().unwrap())).unwrap();
        let got = arr.read_field_bytes(field, 0..rows).unwrap();
        assert!(got == want, "{name}: field {field}");
        if let Ok(col) = arr.read_field(field, 0..rows) {
            assert_eq!(col.rows as u64, rows);
        }
    }
}

#[test]
fn reads_everything_zarr_python_writes_byte_exactly() {
    let w = write_cases();
    let mut rng = Lcg(42);
    let mut readable = 0;
    let mut errors = 0;
    for case in &w.manifest {
        let name = case["name"].as_str().unwrap();
        if let Some(needle) = case.get("error").and_then(Value::as_str) {
            let e = match ZarrArray::open(w.group.join(name)) {
                Ok(a) => a.read_all().map(|_| ()).unwrap_err(),
                Err(e) => e,
            }
            .to_string();
            assert!(
                e.contains(needle),
                "{name}: error {e:?} should name {needle:?}"
            );
            errors += 1;
        } else {
            check_readable(&w.group, case, &mut rng);
            readable += 1;
        }
    }
    // 25 compressors x 5 arrays, plus the dtype/chunking/order/filter/missing-chunk cases
    // (215 today): the script must not silently shrink.
    assert!(readable >= 215, "only {readable} cases");
    assert_eq!(errors, 2);

    // The whole group describes without error, flagging the unreadable arrays.
    let info = describe(&w.group).unwrap();
    assert_eq!(info.arrays.len(), w.manifest.len());
    let bad = info.arrays.iter().find(|a| a.name == "bad_codec").unwrap();
    assert!(
        bad.unreadable.contains("imagecodecs_jpeg2k"),
        "{}",
        bad.unreadable
    );
    let slash = info
        .arrays
        .iter()
        .find(|a| a.name == "dimsep_slash")
        .unwrap();
    assert_eq!(slash.chunks_initialized, slash.chunks_total);
    let missing = info.arrays.iter().find(|a| a.name == "missing_i4").unwrap();
    assert_eq!(missing.chunks_initialized, 2);
    let inner = roverlog_core::zarr::meta::GroupMeta::read(&w.group.join("nested/inner")).unwrap();
    assert_eq!(inner.attrs["beschreibung"], "Größe 日本");
}

/// `roverlog info` names complex and datetime dtypes as numpy's `dtype.str` does (unit and
/// multiplier included), and `roverlog cat` writes what zarr-python read, NaT and NaN fills too.
#[test]
fn info_and_cat_show_complex_and_datetime_arrays_as_zarr_python() {
    let w = write_cases();
    let named: Vec<&Value> = w
        .manifest
        .iter()
        .filter(|c| c.get("dtype_str").is_some())
        .collect();
    assert!(named.len() >= 26, "only {} cases", named.len());
    let info = describe(&w.group).unwrap();
    let run = common::roverlog(&[std::ffi::OsStr::new("info"), w.group.as_os_str()]);
    assert!(run.ok(), "{}", run.text());
    let text = run.out();
    for case in &named {
        let name = case["name"].as_str().unwrap();
        let want = case["dtype_str"].as_str().unwrap();
        let a = info.arrays.iter().find(|a| a.name == name).unwrap();
        assert_eq!(a.dtype, want, "{name}");
        assert!(
            text.contains(&format!("[{name}]\n  shape"))
                && text.contains(&format!("  dtype            : {want}\n")),
            "{name}: {want} not in info"
        );
    }
    for name in ["missing_nat", "missing_c16", "dt_gt_m8_10ms_F_3d"] {
        let run = common::roverlog(&[
            std::ffi::OsStr::new("cat"),
            w.group.as_os_str(),
            std::ffi::OsStr::new(name),
        ]);
        assert!(run.ok(), "{name}: {}", run.text());
        let want = std::fs::read(w.group.join(format!("{name}.expected"))).unwrap();
        assert!(run.stdout == want, "{name}: cat differs from zarr-python");
    }
    // The NaT fill really is in there (i64::MIN), next to the one written value.
    let nat = ZarrArray::open(w.group.join("missing_nat")).unwrap();
    let col = nat.read_records(7..8).unwrap().values().unwrap();
    assert_eq!(
        col.values,
        roverlog_core::zarr::Values::I64(vec![i64::MIN, 1_795_588_200, i64::MIN])
    );
}

#[test]
fn typed_values_decode_strings_and_halves() {
    let w = write_cases();
    let s = ZarrArray::open(w.group.join("missing_u7")).unwrap();
    let col = s.read_records(0..2).unwrap().values().unwrap();
    assert_eq!(
        col.values,
        roverlog_core::zarr::Values::Str(vec!["xyz".into(), "ab".into()])
    );
    let h = ZarrArray::open(w.group.join("missing_f2")).unwrap();
    let col = h.read_records(29..31).unwrap().values().unwrap();
    assert_eq!(col.values, roverlog_core::zarr::Values::F16(vec![1.5, 7.0]));
    // Complex values are [real, imaginary] pairs of what zarr-python read (its bytes, as pairs).
    let want = std::fs::read(w.group.join("dt_gt_c16_F_2d.expected")).unwrap();
    let want: Vec<[f64; 2]> = want
        .chunks_exact(16)
        .map(|c| [0, 8].map(|h| f64::from_le_bytes(c[h..h + 8].try_into().unwrap())))
        .collect();
    let c = ZarrArray::open(w.group.join("dt_gt_c16_F_2d")).unwrap();
    let col = c.read_records(0..7).unwrap().values().unwrap();
    assert_eq!((col.rows, &col.shape[..]), (7, &[9][..]));
    assert_eq!(col.values, roverlog_core::zarr::Values::C128(want));
}
