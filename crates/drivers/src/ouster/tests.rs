//! The decoder and assembler on packets made by the encoder (the same layout ouster-sdk's
//! packet writer produces: tests/interop/driver_ouster.rs checks both against ouster-sdk).

use super::imu::Imu;
use super::packet::{encode_frame, EncodeFrame, Layout, Profile};
use super::scan::{Assembler, Finished};
use super::*;

fn layout(profile: Profile) -> Layout {
    Layout {
        profile,
        pixels_per_column: 8,
        columns_per_frame: 64,
        columns_per_packet: 16,
        column_window: (0, 63),
    }
}

/// A frame with every pixel distinct: range past 65535 in some, all bits of each field used.
fn frame(l: &Layout, frame_id: u16) -> (Vec<u32>, Vec<u8>, Vec<u16>) {
    let n = l.pixels();
    let range = (0..n as u32)
        .map(|i| i.wrapping_mul(2654435761).wrapping_add(frame_id as u32) % 300_000)
        .collect();
    let rfl = (0..n).map(|i| (i * 7 + frame_id as usize) as u8).collect();
    let nir = (0..n)
        .map(|i| (i * 40503 + frame_id as usize) as u16)
        .collect();
    (range, rfl, nir)
}

fn packets(l: &Layout, id: u16) -> (Vec<Vec<u8>>, Images) {
    let (range, rfl, nir) = frame(l, id);
    let p = encode_frame(
        l,
        &EncodeFrame {
            frame_id: id,
            range: &range,
            rfl: &rfl,
            nir: &nir,
            timestamp: 1_000_000,
            column_ns: 48_828,
        },
    );
    let mut want = Images::zeroed(l);
    for i in 0..l.pixels() {
        let c = i % l.columns_per_frame;
        if l.in_window(c) {
            want.rng[i] = range[i].min(65535) as u16;
            want.rfl[i] = rfl[i];
            want.nir[i] = nir[i];
        }
    }
    (p, want)
}

#[test]
fn both_profiles_round_trip_whole_frames_in_order_and_shuffled() {
    for profile in [Profile::Legacy, Profile::Rng19Rfl8Sig16Nir16] {
        let l = layout(profile);
        let mut asm = Assembler::new(l);
        let mut out = Vec::new();
        for id in [7u16, 8] {
            let (mut p, want) = packets(&l, id);
            assert_eq!(p.len(), 4);
            assert_eq!(p[0].len(), l.packet_bytes());
            if id == 8 {
                p.reverse();
            }
            for pk in &p {
                asm.push(pk, 1.5, &mut out).unwrap();
            }
            match out.pop() {
                Some(Finished::Complete {
                    frame_id, images, ..
                }) => {
                    assert_eq!(frame_id, id);
                    assert!(images == want, "{profile:?} frame {id}: images differ");
                }
                other => panic!("{profile:?}: {other:?}"),
            }
            assert!(out.is_empty());
        }
        assert_eq!((asm.counts.complete, asm.counts.incomplete), (2, 0));
    }
}

#[test]
fn a_lost_packet_makes_the_frame_incomplete_counted_with_its_missing_columns() {
    let l = layout(Profile::Rng19Rfl8Sig16Nir16);
    let mut asm = Assembler::new(l);
    let mut out = Vec::new();
    let (p, _) = packets(&l, 1);
    for (i, pk) in p.iter().enumerate() {
        if i != 2 {
            asm.push(pk, 0.0, &mut out).unwrap();
        }
    }
    assert!(
        out.is_empty(),
        "not finished before the next frame: {out:?}"
    );
    let (next, _) = packets(&l, 2);
    asm.push(&next[0], 0.0, &mut out).unwrap();
    match &out[..] {
        [Finished::Incomplete {
            frame_id: 1,
            columns: 48,
            expected: 64,
        }] => {}
        other => panic!("{other:?}"),
    }
    // A late packet of frame 1 is not a new frame.
    out.clear();
    for pk in &next[1..] {
        asm.push(pk, 0.0, &mut out).unwrap();
    }
    assert!(matches!(out[..], [Finished::Complete { frame_id: 2, .. }]));
    asm.push(&p[2], 0.0, &mut out).unwrap();
    assert_eq!(asm.counts.late_packets, 1);
    assert_eq!(asm.counts.missing_columns, 16);
    // The sensor going quiet finishes an open frame as it is.
    let (third, _) = packets(&l, 3);
    asm.push(&third[0], 0.0, &mut out).unwrap();
    assert!(matches!(
        asm.expire(),
        Some(Finished::Incomplete { columns: 16, .. })
    ));
    assert_eq!((asm.counts.complete, asm.counts.incomplete), (1, 2));
}

#[test]
fn a_column_window_frame_is_complete_with_only_its_columns() {
    let mut l = layout(Profile::Legacy);
    l.column_window = (40, 7); // wraps: columns 40..=63 and 0..=7
    let (p, want) = packets(&l, 3);
    assert_eq!(p.len(), 3, "the packet holding columns 16..31 is not sent");
    let mut asm = Assembler::new(l);
    let mut out = Vec::new();
    for pk in &p {
        asm.push(pk, 0.0, &mut out).unwrap();
    }
    match out.pop() {
        Some(Finished::Complete { images, .. }) => assert!(images == want),
        other => panic!("{other:?}"),
    }
}

#[test]
fn datagrams_that_are_not_packets_of_the_layout_are_refused_naming_why() {
    let l = layout(Profile::Rng19Rfl8Sig16Nir16);
    let mut asm = Assembler::new(l);
    let mut out = Vec::new();
    let e = asm.push(&[0u8; 100], 0.0, &mut out).unwrap_err();
    assert!(matches!(e, PacketError::Size { got: 100, .. }), "{e}");
    assert!(e.to_string().contains("RNG19_RFL8_SIG16_NIR16"), "{e}");
    let (mut p, _) = packets(&l, 1);
    p[0][0] = 2;
    let e = asm.push(&p[0], 0.0, &mut out).unwrap_err();
    assert_eq!(e, PacketError::PacketType { got: 2 });
    let hdr = 32 + 8;
    p[1][hdr..hdr + 2].copy_from_slice(&900u16.to_le_bytes());
    let e = asm.push(&p[1], 0.0, &mut out).unwrap_err();
    assert!(
        matches!(e, PacketError::MeasurementId { id: 900, .. }),
        "{e}"
    );
    assert_eq!(asm.counts.bad_packets, 3);
}

#[test]
fn imu_packets_round_trip() {
    let m = Imu {
        sys_ts: 1,
        accel_ts: 2,
        gyro_ts: 3,
        acc: [0.5, -1.0, 9.75],
        avel: [10.0, -20.5, 0.125],
    };
    assert_eq!(Imu::parse(&m.encode()).unwrap(), m);
    assert_eq!(Imu::parse(&[0; 47]).unwrap_err().got, 47);
}

#[test]
fn metadata_names_what_is_wrong() {
    let p = std::path::Path::new("lidar.json");
    let e = Metadata::parse(p, br#"{"lidar_mode": "1024x10"}"#.to_vec()).unwrap_err();
    assert!(matches!(e, MetadataError::NotSensorInfo { .. }), "{e}");
    let e = Metadata::parse(
        p,
        br#"{"lidar_data_format": {"pixels_per_column": 8, "columns_per_frame": 64,
            "columns_per_packet": 16, "udp_profile_lidar": "RNG15_RFL8_NIR8"}}"#
            .to_vec(),
    )
    .unwrap_err();
    assert!(
        e.to_string().contains("\"RNG15_RFL8_NIR8\" is not decoded"),
        "{e}"
    );
    let e = Metadata::parse(
        p,
        br#"{"lidar_data_format": {"pixels_per_column": 8, "columns_per_frame": 64,
            "columns_per_packet": 16, "column_window": [0, 64]}}"#
            .to_vec(),
    )
    .unwrap_err();
    assert!(matches!(e, MetadataError::Window { .. }), "{e}");
}

#[test]
fn the_socket_buffer_is_what_was_asked_or_the_cap_is_named() {
    let addr = SocketAddr::from(([127, 0, 0, 1], 0));
    let s = udp::open(addr, 32 << 20, Duration::from_millis(10)).unwrap();
    match s.capped_at {
        None => assert!(s.rcvbuf / 2 >= 32 << 20, "{}", s.rcvbuf),
        Some(max) => assert_eq!(Some(max), udp::rmem_max()),
    }
}

#[test]
fn a_sensor_that_restarts_its_frame_ids_is_followed_after_one_frame_of_late_packets() {
    let l = layout(Profile::Legacy);
    let mut asm = Assembler::new(l);
    let mut out = Vec::new();
    for id in [500u16, 501] {
        for pk in &packets(&l, id).0 {
            asm.push(pk, 0.0, &mut out).unwrap();
        }
    }
    // Frame ids start again at 498 (within LATE_FRAMES behind): the first frame's packets
    // look late, then the sensor's new numbering is taken.
    for id in [498u16, 499, 500] {
        for pk in &packets(&l, id).0 {
            asm.push(pk, 0.0, &mut out).unwrap();
        }
    }
    let ids: Vec<u16> = out
        .iter()
        .map(|f| match f {
            Finished::Complete { frame_id, .. } => *frame_id,
            Finished::Incomplete { frame_id, .. } => panic!("frame {frame_id} incomplete"),
        })
        .collect();
    assert_eq!(ids, [500, 501, 499, 500]);
    assert_eq!(asm.counts.late_packets, 4);
    assert_eq!(asm.counts.missing_frames, 0, "a restart is not frames lost");
    // Frames 501 to 503 never arrive: three frames missing.
    for pk in &packets(&l, 504).0 {
        asm.push(pk, 0.0, &mut out).unwrap();
    }
    assert_eq!(asm.counts.missing_frames, 3);
}

#[test]
fn an_imu_profile_not_decoded_leaves_the_lidar_running() {
    let mut doc: serde_json::Value =
        serde_json::from_str(include_str!("../../testdata/ouster_64x1024_legacy.json")).unwrap();
    doc["lidar_data_format"]["udp_profile_imu"] = "ACCEL32_GYRO32_NMEA".into();
    let m = Metadata::parse(std::path::Path::new("x.json"), doc.to_string().into_bytes()).unwrap();
    assert_eq!(
        m.imu,
        metadata::ImuProfile::NotDecoded("ACCEL32_GYRO32_NMEA".into())
    );
    assert_eq!(m.layout.profile, Profile::Legacy);
    assert_eq!(
        (m.layout.pixels_per_column, m.layout.columns_per_frame),
        (64, 1024)
    );
}
