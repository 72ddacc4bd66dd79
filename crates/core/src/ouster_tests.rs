use super::*;
use serde_json::json;

/// A `lidar.json` shaped like an OS1's, with `beams x columns`.
fn doc(beams: usize, columns: usize) -> Value {
    let alt: Vec<f64> = (0..beams)
        .map(|b| 21.0 - 42.0 * b as f64 / (beams - 1) as f64)
        .collect();
    let az: Vec<f64> = (0..beams).map(|b| [4.2, 1.4, -1.4, -4.2][b % 4]).collect();
    let half = columns as i64 / 2;
    let shift: Vec<i64> = (0..beams)
        .map(|b| [24i64, 8, -8, -24][b % 4].clamp(-half, half))
        .collect();
    json!({
        "lidar_data_format": {
            "pixels_per_column": beams,
            "columns_per_frame": columns,
            "pixel_shift_by_row": shift,
            "column_window": [0, columns - 1],
        },
        "beam_intrinsics": {
            "beam_altitude_angles": alt,
            "beam_azimuth_angles": az,
            "beam_to_lidar_transform": [1, 0, 0, 15.806, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1],
            "lidar_origin_to_beam_origin_mm": 15.806,
        },
        "lidar_intrinsics": {
            "lidar_to_sensor_transform": [-1, 0, 0, 0, 0, -1, 0, 0, 0, 0, 1, 36.18, 0, 0, 0, 1],
        },
    })
}

fn parse(v: &Value) -> Result<LidarIntrinsics> {
    LidarIntrinsics::parse(Path::new("lidar.json"), v.to_string().as_bytes())
}

fn problem(v: &Value) -> LidarProblem {
    match parse(v).unwrap_err() {
        Error::Lidar { problem, .. } => problem,
        e => panic!("not a lidar problem: {e}"),
    }
}

#[test]
fn a_real_shaped_file_parses() {
    let i = parse(&doc(128, 2048)).unwrap();
    assert_eq!((i.pixels_per_column, i.columns_per_frame), (128, 2048));
    assert_eq!(i.pixel_shift_by_row[..4], [24, 8, -8, -24]);
    assert_eq!(i.beam_to_lidar_transform[3], 15.806);
    assert_eq!(i.lidar_to_sensor_transform[11], 36.18);
}

#[test]
fn a_bad_file_names_the_key() {
    let mut v = doc(4, 16);
    v["beam_intrinsics"]
        .as_object_mut()
        .unwrap()
        .remove("beam_altitude_angles");
    assert_eq!(
        problem(&v),
        LidarProblem::Missing {
            key: "beam_intrinsics.beam_altitude_angles".into()
        }
    );
    let e = parse(&v).unwrap_err().to_string();
    assert!(
        e.contains("lidar.json") && e.contains("beam_intrinsics.beam_altitude_angles"),
        "{e}"
    );

    let mut v = doc(4, 16);
    v.as_object_mut().unwrap().remove("lidar_intrinsics");
    assert_eq!(
        problem(&v),
        LidarProblem::Missing {
            key: "lidar_intrinsics".into()
        }
    );

    let mut v = doc(4, 16);
    v["beam_intrinsics"]["beam_azimuth_angles"] = json!([1.0, 2.0]);
    assert_eq!(
        problem(&v),
        LidarProblem::Length {
            key: "beam_intrinsics.beam_azimuth_angles".into(),
            got: 2,
            expected: 4
        }
    );

    let mut v = doc(4, 16);
    v["lidar_data_format"]["columns_per_frame"] = json!(0);
    assert!(matches!(
        problem(&v),
        LidarProblem::OutOfRange { value: 0, .. }
    ));

    let mut v = doc(4, 16);
    v["lidar_data_format"]["pixels_per_column"] = json!(1_000_000);
    assert!(matches!(
        problem(&v),
        LidarProblem::OutOfRange {
            value: 1_000_000,
            ..
        }
    ));

    let mut v = doc(1024, 16);
    v["lidar_data_format"]["columns_per_frame"] = json!(4096);
    assert!(matches!(
        problem(&v),
        LidarProblem::OutOfRange {
            value: 4096,
            max: 2048,
            ..
        }
    ));

    let mut v = doc(4, 16);
    v["lidar_data_format"]["pixel_shift_by_row"] = json!([0, 1, 2, 99]);
    assert!(matches!(
        problem(&v),
        LidarProblem::OutOfRange { value: 99, .. }
    ));

    let mut v = doc(4, 16);
    v["lidar_intrinsics"]["lidar_to_sensor_transform"][5] = json!("one");
    assert!(matches!(problem(&v), LidarProblem::NotA { .. }));

    let e = LidarIntrinsics::parse(Path::new("x/lidar.json"), b"{not json")
        .unwrap_err()
        .to_string();
    assert!(e.contains("x/lidar.json") && e.contains("JSON"), "{e}");
}

#[test]
fn a_flat_sensor_at_the_origin_points_where_the_encoder_does() {
    // One beam at altitude 0, no offsets, identity transforms: column c looks along
    // theta = 2 pi (1 - c / w), so column 0 is +x and column w/4 is -y.
    let v = json!({
        "lidar_data_format": {"pixels_per_column": 1, "columns_per_frame": 8,
                              "pixel_shift_by_row": [0]},
        "beam_intrinsics": {"beam_altitude_angles": [0.0], "beam_azimuth_angles": [0.0],
                            "beam_to_lidar_transform":
                                [1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1]},
        "lidar_intrinsics": {"lidar_to_sensor_transform":
                                [1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1]},
    });
    let i = parse(&v).unwrap();
    let lut = XyzLut::new(&i);
    let mut out = Vec::new();
    lut.project(&[2000u16, 0, 1000, 0, 0, 0, 0, 0], None, &mut out)
        .unwrap();
    assert_eq!(out.len(), 2, "pixels of range 0 are no points");
    let close = |a: [f32; 3], b: [f32; 3]| a.iter().zip(b).all(|(x, y)| (x - y).abs() < 1e-6);
    assert!(close(out[0], [2.0, 0.0, 0.0]), "{:?}", out[0]);
    assert!(close(out[1], [0.0, -1.0, 0.0]), "{:?}", out[1]);
}

/// Within a few float32 steps (the table adds in another order than upstream).
fn assert_close(a: &[[f32; 3]], b: &[[f32; 3]]) {
    assert_eq!(a.len(), b.len());
    for (p, q) in a.iter().zip(b) {
        for k in 0..3 {
            let tol = 4.0 * f32::EPSILON * p[k].abs().max(1.0);
            assert!((p[k] - q[k]).abs() <= tol, "{p:?} vs {q:?}");
        }
    }
}

#[test]
fn the_table_gives_the_per_pixel_formula() {
    let i = parse(&doc(128, 2048)).unwrap();
    let lut = XyzLut::new(&i);
    let rng: Vec<u16> = crate::noise(2 * i.pixels(), 7)
        .chunks_exact(2)
        .map(|b| {
            let v = u16::from_le_bytes([b[0], b[1]]);
            if v % 5 == 0 {
                0
            } else {
                v
            }
        })
        .collect();
    for min_range in [None, Some(0.0), Some(3.5)] {
        let (mut a, mut b) = (Vec::new(), Vec::new());
        lut.project(&rng, min_range, &mut a).unwrap();
        project_direct(&i, &rng, min_range, &mut b).unwrap();
        assert_close(&a, &b);
        match min_range {
            None => assert!(a.len() < rng.len() && a.iter().all(|p| *p != [0.0; 3])),
            Some(0.0) => assert_eq!(a.len(), rng.len(), "a minimum of 0 keeps everything"),
            Some(m) => assert!(a
                .iter()
                .all(|p| (p[0] * p[0] + p[1] * p[1] + p[2] * p[2]).sqrt() >= m)),
        }
    }
    let err = lut.project(&rng[1..], None, &mut Vec::new()).unwrap_err();
    assert!(
        err.to_string().contains("128 beams x 2048 columns"),
        "{err}"
    );
}

#[test]
fn destagger_rotates_each_row_by_its_shift() {
    let mut v = doc(4, 8);
    v["lidar_data_format"]["pixel_shift_by_row"] = json!([8, 0, -8, 0]);
    let i = parse(&v).unwrap();
    v["lidar_data_format"]["pixel_shift_by_row"] = json!([1, 0, -1, 3]);
    let j = parse(&v).unwrap();
    let frame: Vec<u16> = (0..32).collect();
    assert_eq!(destagger(&i, &frame).unwrap(), frame);
    let d = destagger(&j, &frame).unwrap();
    for h in 0..4 {
        let s = v["lidar_data_format"]["pixel_shift_by_row"][h]
            .as_i64()
            .unwrap();
        for w in 0..8 {
            let src = (w as i64 - s).rem_euclid(8) as usize;
            assert_eq!(d[h * 8 + w], frame[h * 8 + src], "row {h} col {w}");
        }
    }
    assert!(destagger(&j, &frame[..31]).is_err());
}

#[test]
fn float_ranges_that_are_nan_or_infinite_give_no_points() {
    // Upstream drops every point with a NaN coordinate; its rotation's matrix product makes
    // one of every infinite range (inf * 0).
    let i = parse(&doc(128, 2048)).unwrap();
    let lut = XyzLut::new(&i);
    let mut rng = vec![5000.0f32; i.pixels()];
    rng[3] = f32::NAN;
    rng[7] = f32::INFINITY;
    rng[8] = f32::NEG_INFINITY;
    rng[10] = 0.0;
    for min_range in [None, Some(0.5)] {
        let (mut a, mut b) = (Vec::new(), Vec::new());
        lut.project(&rng, min_range, &mut a).unwrap();
        project_direct(&i, &rng, min_range, &mut b).unwrap();
        assert_eq!(
            a.len(),
            rng.len() - 4,
            "NaN, the infinities and 0 are dropped"
        );
        assert!(a.iter().flatten().all(|x| x.is_finite()));
        assert_close(&a, &b);
    }
}
