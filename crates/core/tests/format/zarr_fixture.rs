//! The upstream L5Kit artefact (`tests/data/l5kit_single_scene.zarr`) against what
//! zarr-python 2.18.7 read from it (`l5kit_single_scene.expected.json`). The expected values
//! come only from the JSON; nothing is hard-coded twice.

use crate::support::common;

use std::path::PathBuf;

use roverlog_core::zarr::dtype::numpy_str_shaped;
use roverlog_core::zarr::l5kit::ChunkedDataset;
use roverlog_core::zarr::{describe, Values, ZarrArray};
use serde_json::Value;
use sha2::{Digest, Sha256};

fn store() -> PathBuf {
    common::root().join("tests/data/l5kit_single_scene.zarr")
}

fn expected() -> Value {
    let p = common::root().join("tests/data/l5kit_single_scene.expected.json");
    serde_json::from_slice(&std::fs::read(p).unwrap()).unwrap()
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

#[test]
fn every_array_matches_zarr_python() {
    let exp = expected();
    let arrays = exp["arrays"].as_object().unwrap();
    assert_eq!(arrays.len(), 4);
    for (name, want) in arrays {
        let arr = ZarrArray::open(store().join(name)).unwrap();
        let shape: Vec<u64> = serde_json::from_value(want["shape"].clone()).unwrap();
        let chunks: Vec<u64> = serde_json::from_value(want["chunks"].clone()).unwrap();
        assert_eq!(arr.meta().shape, shape, "{name} shape");
        assert_eq!(arr.meta().chunks, chunks, "{name} chunks");
        assert_eq!(
            arr.dtype().itemsize() as u64,
            want["itemsize"].as_u64().unwrap(),
            "{name} itemsize"
        );
        let fields = arr.dtype().fields();
        let want_fields = want["dtype_fields"].as_array().unwrap();
        assert_eq!(fields.len(), want_fields.len(), "{name} field count");
        for (f, w) in fields.iter().zip(want_fields) {
            assert_eq!(f.name, w[0].as_str().unwrap(), "{name} field name");
            assert_eq!(
                numpy_str_shaped(&f.dtype, &f.shape),
                w[1].as_str().unwrap(),
                "{name}.{} type",
                f.name
            );
            assert_eq!(
                f.offset as u64,
                w[2].as_u64().unwrap(),
                "{name}.{} offset",
                f.name
            );
        }
        let all = arr.read_all().unwrap();
        assert_eq!(
            hex(&Sha256::digest(&all)),
            want["sha256_of_all_rows_raw_bytes"].as_str().unwrap(),
            "{name} sha256"
        );
        // The same bytes through row ranges that cut chunks in odd places (cache path).
        let n = arr.len();
        let mut pieced = Vec::new();
        let mut a = 0;
        for step in [1, 7, 19_993, 3, 1000].iter().cycle() {
            if a >= n {
                break;
            }
            let b = (a + step).min(n);
            pieced.extend(arr.read_rows(a..b).unwrap());
            a = b;
        }
        assert!(
            pieced == all,
            "{name}: pieced reads differ from the whole read"
        );
    }
}

/// `"agents[20001].centroid"` -> ("agents", 20001, "centroid").
fn parse_key(key: &str) -> (&str, u64, &str) {
    let (arr, rest) = key.split_once('[').unwrap();
    let (idx, field) = rest.split_once("].").unwrap();
    (arr, idx.parse().unwrap(), field)
}

fn as_json(v: &Values) -> Vec<Value> {
    match v {
        Values::I64(x) => x.iter().map(|&n| n.into()).collect(),
        Values::U64(x) => x.iter().map(|&n| n.into()).collect(),
        Values::F64(x) => x.iter().map(|&n| n.into()).collect(),
        Values::F32(x) => x.iter().map(|&n| (n as f64).into()).collect(),
        Values::Str(x) => x.iter().map(|s| s.as_str().into()).collect(),
        other => panic!("unexpected value type {other:?}"),
    }
}

#[test]
fn spot_values_match_zarr_python() {
    let exp = expected();
    let spots = exp["spot_values"].as_object().unwrap();
    assert!(spots.len() >= 10);
    for (key, want) in spots {
        let (name, idx, field) = parse_key(key);
        let arr = ZarrArray::open(store().join(name)).unwrap();
        let (field, argmax) = match field.strip_suffix("_argmax") {
            Some(f) => (f, true),
            None => (field, false),
        };
        let col = arr.read_field(field, idx..idx + 1).unwrap();
        let got = as_json(&col.values);
        if argmax {
            let vals: Vec<f64> = got.iter().map(|v| v.as_f64().unwrap()).collect();
            let best = (0..vals.len())
                .max_by(|&a, &b| vals[a].partial_cmp(&vals[b]).unwrap().then(b.cmp(&a)))
                .unwrap();
            assert_eq!(Value::from(best), *want, "{key}");
        } else if want.is_array() {
            assert_eq!(Value::Array(got), *want, "{key}");
        } else {
            assert_eq!(got.len(), 1, "{key}");
            assert_eq!(got[0], *want, "{key}");
        }
    }
}

#[test]
fn l5kit_typed_layer() {
    let exp = expected();
    let spots = &exp["spot_values"];
    let ds = ChunkedDataset::open(store()).unwrap();
    let scenes = ds.scenes(0..ds.scenes.len()).unwrap();
    assert_eq!(
        scenes.len() as u64,
        exp["arrays"]["scenes"]["shape"][0].as_u64().unwrap()
    );
    let s = &scenes[0];
    assert_eq!(s.host, spots["scenes[0].host"].as_str().unwrap());
    assert_eq!(
        s.start_time,
        spots["scenes[0].start_time"].as_i64().unwrap()
    );
    assert_eq!(s.end_time, spots["scenes[0].end_time"].as_i64().unwrap());
    let fi: [i64; 2] =
        serde_json::from_value(spots["scenes[0].frame_index_interval"].clone()).unwrap();
    assert_eq!(s.frame_index_interval, fi);

    let frames = ds.frames_of_scene(s).unwrap();
    assert_eq!(frames.len() as u64, ds.frames.len());
    assert_eq!(
        frames[0].timestamp,
        spots["frames[0].timestamp"].as_i64().unwrap()
    );
    assert_eq!(
        frames[247].timestamp,
        spots["frames[247].timestamp"].as_i64().unwrap()
    );
    let ai: [i64; 2] =
        serde_json::from_value(spots["frames[10].agent_index_interval"].clone()).unwrap();
    assert_eq!(frames[10].agent_index_interval, ai);
    let tr: [f64; 3] = serde_json::from_value(spots["frames[10].ego_translation"].clone()).unwrap();
    assert_eq!(frames[10].ego_translation, tr);

    // Frames partition the agents and light faces: intervals are contiguous and complete.
    let mut next_agent = 0;
    let mut next_face = 0;
    let mut total_agents = 0;
    let mut total_faces = 0;
    for f in &frames {
        assert_eq!(f.agent_index_interval[0], next_agent);
        assert_eq!(f.traffic_light_faces_index_interval[0], next_face);
        next_agent = f.agent_index_interval[1];
        next_face = f.traffic_light_faces_index_interval[1];
        total_agents += ds.agents_of_frame(f).unwrap().len();
        total_faces += ds.traffic_light_faces_of_frame(f).unwrap().len();
    }
    assert_eq!(total_agents as u64, ds.agents.len());
    assert_eq!(
        total_faces as u64,
        ds.traffic_light_faces.as_ref().unwrap().len()
    );

    let a = &ds.agents(20001..20002).unwrap()[0];
    let c: [f64; 2] = serde_json::from_value(spots["agents[20001].centroid"].clone()).unwrap();
    assert_eq!(a.centroid, c);
    assert_eq!(
        a.track_id,
        spots["agents[20001].track_id"].as_u64().unwrap()
    );
    assert_eq!(a.label_probabilities.len(), 17);

    let face = &ds.traffic_light_faces(5..6).unwrap()[0];
    assert_eq!(
        face.face_id,
        spots["traffic_light_faces[5].face_id"].as_str().unwrap()
    );
    let st: Vec<f32> =
        serde_json::from_value(spots["traffic_light_faces[5].traffic_light_face_status"].clone())
            .unwrap();
    assert_eq!(face.traffic_light_face_status, st);

    // Out-of-range intervals are errors, not panics.
    let mut bad = frames[0].clone();
    bad.agent_index_interval = [0, i64::MAX];
    assert!(ds.agents_of_frame(&bad).is_err());
}

#[test]
fn describe_summarises_the_group() {
    let info = describe(&store()).unwrap();
    assert!(info.is_group);
    let names: Vec<&str> = info.arrays.iter().map(|a| a.name.as_str()).collect();
    assert_eq!(names, ["agents", "frames", "scenes", "traffic_light_faces"]);
    let agents = &info.arrays[0];
    assert_eq!(agents.chunks_initialized, 2);
    assert_eq!(agents.chunks_total, 2);
    assert_eq!(agents.nbytes, 20802 * 116);
    assert!(agents.ratio() > 1.0);
    let text = info.to_string();
    assert!(
        text.contains("Blosc(cname='lz4', clevel=5, shuffle=SHUFFLE, blocksize=0)"),
        "{text}"
    );
    assert!(
        text.contains("('label_probabilities', '<f4', (17,))"),
        "{text}"
    );
}

#[test]
fn cat_writes_rows_and_fields() {
    let arr = ZarrArray::open(store().join("agents")).unwrap();
    let mut out = Vec::new();
    let n =
        roverlog_core::zarr::cat(&store().join("agents"), 19_990..20_010, None, &mut out).unwrap();
    assert_eq!(n as usize, out.len());
    assert_eq!(out, arr.read_rows(19_990..20_010).unwrap());
    let mut ids = Vec::new();
    roverlog_core::zarr::cat(
        &store().join("agents"),
        20_001..99_999_999,
        Some("track_id"),
        &mut ids,
    )
    .unwrap();
    assert_eq!(ids.len(), 801 * 8);
    assert_eq!(u64::from_le_bytes(ids[..8].try_into().unwrap()), 548);
    let e = roverlog_core::zarr::cat(&store().join("agents"), 0..1, Some("nope"), &mut Vec::new());
    assert!(e.unwrap_err().to_string().contains("track_id"));
}

#[test]
fn older_datasets_without_traffic_light_faces_open() {
    let dir = tempfile::tempdir().unwrap();
    for sub in ["", "scenes", "frames", "agents"] {
        let (from, to) = (store().join(sub), dir.path().join(sub));
        std::fs::create_dir_all(&to).unwrap();
        for e in std::fs::read_dir(&from).unwrap() {
            let e = e.unwrap();
            if e.file_type().unwrap().is_file() {
                std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
            }
        }
    }
    let ds = ChunkedDataset::open(dir.path()).unwrap();
    assert!(ds.traffic_light_faces.is_none());
    assert!(ds.traffic_light_faces(0..0).unwrap().is_empty());
    let frames = ds.frames(0..2).unwrap();
    assert_eq!(
        ds.agents_of_frame(&frames[1]).unwrap().len() as i64,
        frames[1].agent_index_interval[1] - frames[1].agent_index_interval[0]
    );
    // The fixture's frames still point at light faces: asking for them names the gap.
    let e = ds
        .traffic_light_faces_of_frame(&frames[1])
        .unwrap_err()
        .to_string();
    assert!(e.contains("traffic_light_faces"), "{e}");
}
