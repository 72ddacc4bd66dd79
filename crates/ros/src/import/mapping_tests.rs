//! Tests of [`super`]: quaternions to Euler angles, and the bounds on what a point cloud
//! decodes to.

use super::*;

/// A `PointCloud2` value: `fields` as (name, offset, datatype, count).
fn cloud_value<'a>(
    fields: &[(&'a str, u32, u8, u32)],
    nums: &'a [u8],
    data: &'a [u8],
) -> Value<'a> {
    // `nums` holds the little-endian u32s the value points into, 4 bytes each, in the
    // order: height, width, point_step, row_step, then per field offset, count.
    let u = |k: usize| Value::Prims {
        prim: Prim::U32,
        big_endian: false,
        array: false,
        bytes: &nums[4 * k..4 * k + 4],
    };
    let fs = fields
        .iter()
        .enumerate()
        .map(|(i, &(name, _, dt, _))| {
            let dt = &DATATYPES[dt as usize..dt as usize + 1];
            Value::Msg(vec![
                ("name", Value::Str(name.as_bytes())),
                ("offset", u(4 + 2 * i)),
                (
                    "datatype",
                    Value::Prims {
                        prim: Prim::U8,
                        big_endian: false,
                        array: false,
                        bytes: dt,
                    },
                ),
                ("count", u(5 + 2 * i)),
            ])
        })
        .collect();
    Value::Msg(vec![
        ("height", u(0)),
        ("width", u(1)),
        ("fields", Value::List(fs)),
        (
            "is_bigendian",
            Value::Prims {
                prim: Prim::U8,
                big_endian: false,
                array: false,
                bytes: &[0],
            },
        ),
        ("point_step", u(2)),
        ("row_step", u(3)),
        (
            "data",
            Value::Prims {
                prim: Prim::U8,
                big_endian: false,
                array: true,
                bytes: data,
            },
        ),
    ])
}

const DATATYPES: [u8; 9] = [0, 1, 2, 3, 4, 5, 6, 7, 8];

fn nums(hw: (u32, u32), steps: (u32, u32), fields: &[(&str, u32, u8, u32)]) -> Vec<u8> {
    let mut v = vec![hw.0, hw.1, steps.0, steps.1];
    for f in fields {
        v.extend([f.1, f.3]);
    }
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

#[test]
fn a_point_cloud_decodes_to_at_most_its_bytes() {
    let xyz = [("x", 0, 7, 1), ("y", 4, 7, 1), ("z", 8, 7, 1)];
    let data = vec![0u8; 12 * 4];
    let map = |hw, steps, fields: &[(&str, u32, u8, u32)]| {
        let n = nums(hw, steps, fields);
        pointcloud2(&cloud_value(fields, &n, &data)).map(|m| m.data.len())
    };
    // Four points of x, y, z: three channels.
    assert_eq!(map((1, 4), (12, 48), &xyz), Ok(3));
    assert_eq!(map((2, 2), (12, 24), &xyz), Ok(3));
    // Rows that overlap (row_step 0): a million rows out of one row's bytes.
    let e = map((1_000_000, 4), (12, 0), &xyz).unwrap_err().to_string();
    assert!(e.contains("rows overlap"), "{e}");
    // Fields that overlap: four 12-byte fields at offset 0 of a 12-byte point.
    let many: Vec<_> = ["a", "b", "c", "d"].iter().map(|&n| (n, 0, 7, 3)).collect();
    let e = map((1, 4), (12, 48), &many).unwrap_err().to_string();
    assert!(e.contains("point fields overlap"), "{e}");
    // No points per row and billions of rows (row_step 0): nothing to copy, at once.
    assert_eq!(map((u32::MAX, 0), (12, 0), &xyz), Ok(3));
    // A count far past the point.
    let e = map((1, 4), (12, 48), &[("x", 0, 8, u32::MAX)])
        .unwrap_err()
        .to_string();
    assert!(e.contains("past point_step"), "{e}");
}

#[test]
fn euler_of_known_quaternions() {
    let a = 0.3f64;
    // Rotation about x by a: (sin(a/2), 0, 0, cos(a/2)).
    let e = euler_xyz((a / 2.0).sin(), 0.0, 0.0, (a / 2.0).cos());
    assert!(
        (e[0] - a).abs() < 1e-12 && e[1].abs() < 1e-12 && e[2].abs() < 1e-12,
        "{e:?}"
    );
    let e = euler_xyz(0.0, 0.0, (a / 2.0).sin(), (a / 2.0).cos());
    assert!((e[2] - a).abs() < 1e-12, "{e:?}");
    assert!(euler_xyz(0.0, 0.0, 0.0, 0.0)[0].is_nan());
}
