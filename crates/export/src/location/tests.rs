use super::*;
use roverlog_core::format::meta::{ChannelFormat, ChannelMeta};

fn gps_meta() -> SensorMeta {
    SensorMeta {
        channels: vec![
            ("ts".into(), ChannelMeta::timestamps()),
            (
                "pos".into(),
                ChannelMeta::new(ChannelFormat::Raw, DType::F8, vec![3], "lat lon alt"),
            ),
            (
                "alt".into(),
                ChannelMeta::new(ChannelFormat::Lzmaf, DType::F4, vec![], "altitude"),
            ),
            (
                "iq".into(),
                ChannelMeta::new(ChannelFormat::Raw, DType::C8, vec![2], "complex"),
            ),
            (
                "img".into(),
                ChannelMeta::new(
                    ChannelFormat::Blob("jpg".into()),
                    DType::U1,
                    vec![2, 2, 3],
                    "",
                ),
            ),
        ],
    }
}

fn mapping(pairs: &[(&str, &str)]) -> Result<LocationMapping, LocationError> {
    LocationMapping::from_pairs("gps", pairs.iter().copied())
}

fn err(r: Result<impl std::fmt::Debug, LocationError>) -> String {
    r.unwrap_err().to_string()
}

#[test]
fn element_references_parse_and_print_back() {
    for s in ["pos", "pos[0]", "pos[12]", "a.b_c-1[3]"] {
        assert_eq!(ElementRef::parse(s).unwrap().to_string(), s);
    }
    for s in [
        "",
        "pos[",
        "pos[]",
        "pos[x]",
        "pos[-1]",
        "[0]",
        "pos[0",
        "a b",
        "pos[0][1]",
    ] {
        assert_eq!(ElementRef::parse(s), None, "{s:?}");
    }
}

#[test]
fn a_mapping_reads_its_elements_out_of_a_sample() {
    let m = mapping(&[
        ("latitude", "pos[0]"),
        ("longitude", "pos[1]"),
        ("altitude", "alt"),
    ])
    .unwrap();
    let loc = m.resolve("gps", &gps_meta()).unwrap();
    assert_eq!(loc.channels(), vec![0, 1]);
    let pos: Vec<u8> = [48.137_154_f64, 11.576_124, 519.5]
        .iter()
        .flat_map(|v| v.to_le_bytes())
        .collect();
    let alt = 520.25f32.to_le_bytes();
    assert_eq!(
        loc.read(&[&pos, &alt, &[], &[]]),
        [48.137_154, 11.576_124, 520.25]
    );
    let fix = Location::message("gps", 1.5, loc.read(&[&pos, &alt, &[], &[]]));
    assert_eq!(fix.frame_id, "gps");
    assert_eq!(fix.position_covariance, vec![0.0; 9]);
    assert_eq!(fix.timestamp, Some(stamp(1.5)));
    // Without an altitude: 0.
    let m = mapping(&[("latitude", "pos[2]"), ("longitude", "pos[1]")]).unwrap();
    let loc = m.resolve("gps", &gps_meta()).unwrap();
    assert_eq!(loc.read(&[&pos, &[], &[], &[]]), [519.5, 11.576_124, 0.0]);
}

#[test]
fn a_bad_mapping_names_its_sensor_field_and_fault() {
    assert_eq!(
        err(mapping(&[("lat", "pos[0]")])),
        "gps.lat: unknown field (the fields: latitude, longitude, altitude)"
    );
    assert_eq!(
        err(mapping(&[("latitude", "pos[x]"), ("longitude", "pos[1]")])),
        "gps.latitude: \"pos[x]\" is not a channel element (`name`, or `name[index]` for element index of the channel)"
    );
    assert_eq!(
        err(mapping(&[("longitude", "pos[1]")])),
        "gps.latitude: missing (latitude and longitude are required, altitude is optional)"
    );
    assert_eq!(
        err(mapping(&[("latitude", "pos[0]"), ("latitude", "pos[1]")])),
        "gps.latitude: given twice"
    );
    let resolve = |lat: &str| {
        mapping(&[("latitude", lat), ("longitude", "pos[1]")])
            .unwrap()
            .resolve("gps", &gps_meta())
    };
    assert_eq!(
        err(resolve("pos[3]")),
        "gps.latitude: \"pos[3]\": index 3 is out of range: channel pos has 3 elements (shape [3])"
    );
    assert_eq!(
        err(resolve("fix[0]")),
        "gps.latitude: \"fix[0]\": sensor gps has no channel fix (its channels: pos, alt, iq, img)"
    );
    assert_eq!(
        err(resolve("pos")),
        "gps.latitude: \"pos\": channel pos has 3 elements (shape [3]): name one, as \"pos[0]\""
    );
    assert_eq!(
        err(resolve("iq[0]")),
        "gps.latitude: \"iq[0]\": channel iq holds c8 values; a position needs real numbers"
    );
    assert_eq!(
        err(resolve("img[0]")),
        "gps.latitude: \"img[0]\": channel img is jpg; a position is read from a fixed-size channel (raw, lzma, lzmaf)"
    );
    assert_eq!(
        err(resolve("ts")),
        "gps.latitude: \"ts\": sensor gps has no channel ts (its channels: pos, alt, iq, img)"
    );
}

#[test]
fn channels_named_latitude_and_longitude_are_a_mapping_without_configuration() {
    let scalar = |t| ChannelMeta::new(ChannelFormat::Raw, t, vec![], "");
    let meta = |names: &[(&str, DType)]| SensorMeta {
        channels: names
            .iter()
            .map(|(n, t)| (n.to_string(), scalar(*t)))
            .collect(),
    };
    let full = meta(&[
        ("latitude", DType::F8),
        ("longitude", DType::F8),
        ("altitude", DType::F8),
    ]);
    assert_eq!(
        by_channel_names("gps", &full),
        Some(
            mapping(&[
                ("latitude", "latitude"),
                ("longitude", "longitude"),
                ("altitude", "altitude")
            ])
            .unwrap()
        )
    );
    let no_alt = meta(&[("latitude", DType::F8), ("longitude", DType::F8)]);
    assert_eq!(by_channel_names("gps", &no_alt).unwrap().altitude, None);
    assert_eq!(
        by_channel_names("gps", &meta(&[("latitude", DType::F8)])),
        None
    );
    // Named so but not numbers: no mapping rather than a broken one.
    let text = SensorMeta {
        channels: vec![
            (
                "latitude".into(),
                ChannelMeta::new(ChannelFormat::Blob("jpg".into()), DType::U1, vec![1], ""),
            ),
            ("longitude".into(), scalar(DType::F8)),
        ],
    };
    assert_eq!(by_channel_names("gps", &text), None);
    assert_eq!(by_channel_names("gps", &gps_meta()), None);
}
