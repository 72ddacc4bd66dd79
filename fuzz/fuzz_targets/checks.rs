//! The body of every fuzz target, as plain functions over bytes: `fuzz_targets/<name>.rs` calls
//! them under libFuzzer, and `tests/fuzz_corpus.rs` runs them over the committed seeds in
//! `fuzz/corpus-seeds/<name>/` with the normal test harness, so a regression of a fixed crash
//! is caught without cargo-fuzz. Each one panics exactly when an invariant breaks. The ROS
//! targets' bodies are `checks_ros.rs` (run by `crates/ros/tests/fuzz_corpus.rs`).
#![allow(dead_code)] // each fuzz binary uses one of these

use std::collections::HashSet;
use std::path::Path;

use roverlog_core::format::lzmaf::{
    intact_frames, parse_index, reader_frames, scan_frames, trusted_prefix,
};
use roverlog_core::format::{lzma, stored_xz, SensorMeta};
use roverlog_core::gulp::parse_gmeta;
use roverlog_core::jpeg::{Backend, JpegFrame};
use roverlog_core::ouster::{LidarIntrinsics, XyzLut, MAX_PIXELS};
use roverlog_core::zarr::{blosc, ArrayMeta, Compressor};
use roverlog_daemon::protocol::{accept_hello, Check, FrameLayout};

/// Limits small enough that the fuzzer reaches them, in the same roles as the daemon's.
const MAX_HELLO: usize = 4096;
const MAX_CHANNELS: usize = 16;
const MAX_FRAME: u32 = 4096;

/// `frame`: byte 0 picks the read size, then a hello line, then the frame stream. The hello
/// goes through [`accept_hello`] like on a connection; the stream goes through
/// [`FrameLayout::check`] and [`FrameLayout::split`] fed whole and in small reads: both must
/// give the same frames, sync requests and error, and nothing may be read past its limits.
pub fn frame(data: &[u8]) {
    let Some((&step, data)) = data.split_first() else {
        return;
    };
    let step = usize::from(step % 32) + 1;
    let Some(nl) = data.iter().position(|&b| b == b'\n') else {
        return;
    };
    if nl > MAX_HELLO {
        return;
    }
    let Ok((hello, layout)) = accept_hello(&data[..nl], MAX_CHANNELS, MAX_FRAME) else {
        return;
    };
    assert!(layout.min_len() <= MAX_FRAME as usize);
    assert_eq!(layout.channel_count(), hello.channels.channels.len());
    let stream = &data[nl + 1..];
    let whole = run_frames(&layout, stream, stream.len().max(1));
    let split = run_frames(&layout, stream, step);
    assert_eq!(whole, split, "outcomes depend on how the bytes were split");
}

#[derive(Debug, PartialEq)]
enum Outcome {
    Frame {
        total: usize,
        ts: u64,
        seq: u64,
        lens: Vec<usize>,
    },
    Sync,
    Error(String),
    /// End of input with this many bytes of an incomplete frame buffered.
    End(usize),
}

fn run_frames(layout: &FrameLayout, stream: &[u8], step: usize) -> Vec<Outcome> {
    let mut buf: Vec<u8> = Vec::new();
    let mut fed = 0;
    let mut out = Vec::new();
    let mut frame_no = 0;
    loop {
        match layout.check(&buf, frame_no) {
            Err(e) => {
                out.push(Outcome::Error(e.to_string()));
                return out;
            }
            Ok(Check::Incomplete(n)) => {
                assert!(
                    n > buf.len(),
                    "incomplete, yet {n} <= {} buffered",
                    buf.len()
                );
                assert!(
                    n <= 4 + MAX_FRAME as usize,
                    "asks for {n} bytes, over the limit"
                );
                if fed == stream.len() {
                    out.push(Outcome::End(buf.len()));
                    return out;
                }
                let take = step.min(stream.len() - fed);
                buf.extend_from_slice(&stream[fed..fed + take]);
                fed += take;
            }
            Ok(Check::SyncRequest) => {
                buf.drain(..4);
                out.push(Outcome::Sync);
            }
            Ok(Check::Frame { total, ts, seq }) => {
                assert!(total <= buf.len() && total >= 4 + layout.min_len());
                assert!(ts.is_finite());
                // What the writer does with an accepted frame.
                let mut slices = Vec::new();
                let ts2 = layout.split(&buf[4..total], &mut slices);
                assert_eq!(ts2.to_bits(), ts.to_bits());
                assert_eq!(slices.len(), layout.channel_count());
                let lens: Vec<usize> = slices.iter().map(|s| s.len()).collect();
                assert!(lens.iter().sum::<usize>() < total);
                out.push(Outcome::Frame {
                    total,
                    ts: ts.to_bits(),
                    seq,
                    lens,
                });
                buf.drain(..total);
                frame_no += 1;
            }
        }
    }
}

/// `meta_json`: whatever [`SensorMeta::parse`] accepts is valid and survives its own
/// serialisation unchanged.
pub fn meta_json(data: &[u8]) {
    let Ok(meta) = SensorMeta::parse(data, Path::new("meta.json")) else {
        return;
    };
    meta.validate().expect("parse accepted an invalid meta");
    for (_, ch) in &meta.channels {
        if ch.format.is_fixed_size() {
            let n = ch.sample_bytes();
            assert!(n > 0 && n <= roverlog_core::format::meta::MAX_SAMPLE_BYTES);
        }
    }
    let again = SensorMeta::parse(&meta.to_json_bytes(), Path::new("meta.json"))
        .expect("a parsed meta re-parses");
    assert_eq!(again, meta);
}

/// `lidar_json`: whatever [`LidarIntrinsics::parse`] accepts has one shift, altitude and
/// azimuth per beam, finite angles and transforms, shifts within a frame, at most
/// [`MAX_PIXELS`]; for small frames the table projects a frame of every range to that many
/// points or fewer, all finite.
pub fn lidar_json(data: &[u8]) {
    let Ok(i) = LidarIntrinsics::parse(Path::new("lidar.json"), data) else {
        return;
    };
    let beams = i.pixels_per_column;
    assert!(beams >= 1 && i.columns_per_frame >= 1 && i.pixels() <= MAX_PIXELS);
    assert_eq!(i.pixel_shift_by_row.len(), beams);
    assert_eq!(i.beam_altitude_angles.len(), beams);
    assert_eq!(i.beam_azimuth_angles.len(), beams);
    let w = i.columns_per_frame as i64;
    assert!(i.pixel_shift_by_row.iter().all(|s| (-w..=w).contains(s)));
    assert!(i
        .beam_altitude_angles
        .iter()
        .chain(&i.beam_azimuth_angles)
        .chain(&i.beam_to_lidar_transform)
        .chain(&i.lidar_to_sensor_transform)
        .all(|v| v.is_finite()));
    if i.pixels() <= 4096 {
        let lut = XyzLut::new(&i);
        let rng: Vec<u16> = (0..i.pixels()).map(|p| (p * 7919) as u16).collect();
        let mut out = Vec::new();
        lut.project(&rng, None, &mut out).unwrap();
        assert!(out.len() <= rng.len());
        let destaggered = roverlog_core::ouster::destagger(&i, &rng).unwrap();
        assert_eq!(destaggered.len(), rng.len());
    }
}

/// `lzmaf_index`: `u16` index length, a sample-size byte, the index bytes, the data bytes.
/// The trusted prefix recovery keeps must start at 0, ascend, stay within the data and never
/// list more frames than the index; the frames a reader takes as intact (`intact_frames`) must
/// be exactly those (an open reader, `reader_frames`, counts them or every listed frame);
/// frames re-found past it must be whole and decompress to exactly one
/// sample.
pub fn lzmaf_index(data: &[u8]) {
    if data.len() < 3 {
        return;
    }
    let ilen = usize::from(u16::from_le_bytes([data[0], data[1]]));
    let sample_bytes = usize::from(data[2]) + 1;
    let rest = &data[3..];
    let (index, bytes) = rest.split_at(ilen.min(rest.len()));
    for exists in [true, false] {
        let mut problems = Vec::new();
        let good = trusted_prefix(index, bytes.len() as u64, exists, &mut problems);
        assert_eq!(good[0], 0);
        assert!(good.windows(2).all(|w| w[0] <= w[1]), "{good:?}");
        assert!(*good.last().unwrap() <= bytes.len() as u64);
        assert!(good.len() - 1 <= (index.len() / 8).saturating_sub(1));
        if problems.is_empty() && !index.is_empty() {
            assert_eq!(good, parse_index(index), "a clean index is trusted whole");
        }
        if !index.is_empty() {
            // A reader reads exactly the frames recovery keeps of the index.
            let (intact, ordered) = intact_frames(&parse_index(index), bytes.len() as u64);
            assert_eq!(
                intact,
                good.len() as u64 - 1,
                "reader and recovery disagree"
            );
            assert!(intact <= ordered);
            // An open reader counts at least those, and more only when it took the index's
            // last entry within the data for the whole (each read then checks its entries).
            let (counted, _) = reader_frames(index, bytes.len() as u64);
            let listed = (index.len() / 8).saturating_sub(1) as u64;
            assert!(counted >= intact && counted <= listed, "{counted} {intact}");
            if counted > intact {
                assert_eq!(counted, listed);
            }
        }
        if !exists {
            continue;
        }
        let end = *good.last().unwrap() as usize;
        let mut prev = 0;
        for e in scan_frames(&bytes[end..], sample_bytes) {
            assert!(e > prev && e <= bytes.len() - end);
            let got = lzma::decompress(&bytes[end + prev..end + e], sample_bytes, Path::new(""))
                .expect("a re-found frame decompresses");
            assert_eq!(got.len(), sample_bytes);
            prev = e;
        }
    }
}

/// `stored_xz`: any bytes as a frame: [`stored_xz::is_stored`] never panics or reads past
/// them, and a frame it calls stored is at least a whole `.xz` header and chunk. The bytes as
/// data: [`stored_xz::store`] gives a frame that is stored (unless empty) and decodes back.
pub fn stored_xz(data: &[u8]) {
    if stored_xz::is_stored(data) {
        assert!(
            data.len() >= 12 + 8 + 3,
            "{} bytes called stored",
            data.len()
        );
    }
    let frame = stored_xz::store(data);
    assert_eq!(stored_xz::is_stored(&frame), !data.is_empty());
    let back = lzma::decompress(&frame, data.len(), Path::new("stored")).expect("decodes");
    assert_eq!(back, data);
}

/// `gulp_meta`: `.gmeta` parsing never panics or over-allocates, and what it accepts
/// satisfies the invariants the reader relies on to slice the data file.
pub fn gulp_meta(data: &[u8]) {
    const MAX_FRAMES: usize = 64;
    let Ok(entries) = parse_gmeta(Path::new("meta_0.gmeta"), data, MAX_FRAMES) else {
        return;
    };
    let mut ids = HashSet::new();
    for e in &entries {
        assert!(ids.insert(e.id.as_str()), "duplicate id accepted");
        assert!(e.frames.len() <= MAX_FRAMES, "frame limit not enforced");
        for f in &e.frames {
            assert!(f.pad <= f.length);
            assert!(f.offset.checked_add(f.length).is_some());
            assert_eq!(f.end() - f.jpeg_len() - f.pad, f.offset);
        }
    }
}

/// `zarr_meta`: `.zarray` parsing. Arbitrary bytes give metadata or an error, never a panic or
/// a huge allocation; whatever parses must be safe to describe and address.
pub fn zarr_meta(data: &[u8]) {
    let Ok(meta) = ArrayMeta::parse(data, Path::new("fuzz/.zarray")) else {
        return;
    };
    let _ = meta.check_readable(Path::new("fuzz"));
    let _ = meta.dtype.to_string();
    let _ = meta.compressor.to_string();
    let plan = meta.dtype.swap_plan();
    let mut row = vec![0u8; meta.dtype.itemsize()];
    plan.apply(&mut row);
    let grid = meta.chunk_grid();
    let last: Vec<u64> = grid.iter().map(|g| g.saturating_sub(1)).collect();
    let _ = meta.chunk_key(&last);
    let _ = meta.chunk_bytes();
    for f in meta.dtype.fields() {
        let _ = meta.dtype.find_field(&f.name);
    }
}

/// `blosc_chunk`: chunk decoding with every codec. The first byte picks the codec, the next
/// two the decoded size the metadata would promise, the rest is the chunk. Errors are fine;
/// panics, crashes in c-blosc/zstd/zlib/lz4, over-reads and over-writes are not.
pub fn blosc_chunk(data: &[u8]) {
    if data.len() < 3 {
        return;
    }
    let expected = u16::from_le_bytes([data[1], data[2]]) as usize;
    let chunk = &data[3..];
    let codec = match data[0] % 6 {
        0 => Compressor::Blosc {
            cname: "lz4".into(),
            clevel: 5,
            shuffle: 1,
            blocksize: 0,
        },
        1 => Compressor::Zstd { level: 1 },
        2 => Compressor::Zlib { level: 1 },
        3 => Compressor::GZip { level: 1 },
        4 => Compressor::Lz4 { acceleration: 1 },
        _ => Compressor::None,
    };
    let mut dst = vec![0u8; expected];
    let _ = codec.decode_into(chunk, &mut dst, "fuzz");
    // The header check on its own, with the size the chunk claims (bounded).
    if chunk.len() >= blosc::HEADER_LEN {
        let claimed = u32::from_le_bytes(chunk[4..8].try_into().unwrap()) as usize;
        if claimed <= 1 << 16 {
            let mut dst = vec![0u8; claimed];
            let _ = blosc::decompress_into(chunk, &mut dst);
        }
    }
}

/// `avi`: the bytes of an AVI file. Parsing never panics; every frame it lists lies within
/// the file, after its own chunk header naming the video stream and its length; frames
/// ascend without overlapping; an index never lists more than the file can hold. Recovery
/// of the file to its whole frames yields a finished file listing exactly those frames.
pub fn avi(data: &[u8]) {
    use roverlog_core::format::avi::parse::parse;
    let Ok(l) = parse(data) else {
        return;
    };
    let n = data.len() as u64;
    let id = l.header.frame_id();
    let mut prev_end = 0;
    for f in &l.frames {
        assert!(
            f.offset >= 8 && f.offset + u64::from(f.len) <= n,
            "{f:?} in {n} bytes"
        );
        let head = &data[f.chunk_start() as usize..f.offset as usize];
        assert_eq!(head[..2], id[..2]);
        assert_eq!(u32::from_le_bytes(head[4..8].try_into().unwrap()), f.len);
        assert!(f.chunk_start() >= prev_end, "overlapping frames");
        prev_end = f.offset + u64::from(f.len);
    }
    assert!(l.indexed <= l.frames.len());
    if !l.header_ok || l.segments.is_empty() {
        return;
    }
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let k = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let path =
        std::env::temp_dir().join(format!("roverlog-fuzz-avi-{}-{k}.avi", std::process::id()));
    std::fs::write(&path, data).unwrap();
    let _cleanup = RemoveOnDrop(path.clone());
    let f = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
    let keep = l.frames.len();
    let written = roverlog_core::format::avi::write::write_trailer(
        &f,
        &path,
        &l.header,
        &l.segments,
        &l.frames,
    );
    if written.is_err() {
        return; // e.g. several segments and no super index slot: refused, named
    }
    let again = parse(&std::fs::read(&path).unwrap()).expect("a finished file parses");
    assert_eq!(again.frames.len(), keep, "{:?}", again.problems);
    assert_eq!(again.indexed, keep, "{:?}", again.problems);
}

struct RemoveOnDrop(std::path::PathBuf);

impl Drop for RemoveOnDrop {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// `zarr_codec`: a selector byte, a decoded size (`u16`), then a chunk. Every compressor the
/// zarr reader decodes (bz2 and lzma in every format included), and every filter chain
/// (selector >= 128), either fills exactly the decoded size or errors: never a panic, never
/// more than the size the metadata gives.
pub fn zarr_codec(data: &[u8]) {
    use serde_json::json;
    if data.len() < 3 {
        return;
    }
    let configs = [
        json!({"id": "bz2", "level": 1}),
        json!({"id": "lzma", "format": 1}),
        json!({"id": "lzma", "format": 2}),
        json!({"id": "lzma", "format": 0}),
        json!({"id": "lzma", "format": 3, "filters": [{"id": 3, "dist": 4}, {"id": 33, "preset": 1}]}),
        json!({"id": "lzma", "format": 3, "filters": [{"id": 4611686018427387905u64, "preset": 1}]}),
        json!({"id": "zlib"}),
        json!({"id": "gzip"}),
        json!({"id": "zstd"}),
        json!({"id": "lz4"}),
    ];
    let size = usize::from(u16::from_le_bytes([data[1], data[2]]));
    let mut dst = vec![0u8; size];
    if data[0] >= 128 {
        // A filter chain over raw bytes: decodes or errors, whatever the bytes and sizes.
        let filters = [
            json!([{"id": "delta", "dtype": "<i4", "astype": "<i2"}]),
            json!([{"id": "fixedscaleoffset", "offset": 3.5, "scale": 7, "dtype": "<f8", "astype": "<u2"}]),
            json!([{"id": "astype", "encode_dtype": "<f4", "decode_dtype": "<f8"}]),
            json!([{"id": "packbits"}]),
            json!([{"id": "categorize", "labels": ["a", "bb"], "dtype": "<U3", "astype": "|u1"}]),
            json!([{"id": "shuffle", "elementsize": 8}, {"id": "delta", "dtype": ">i8"}]),
        ];
        let chain: Vec<roverlog_core::zarr::filters::Filter> = filters
            [usize::from(data[0]) % filters.len()]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| roverlog_core::zarr::filters::Filter::from_json(f).unwrap())
        .collect();
        let src = &data[3..];
        let _ = roverlog_core::zarr::filters::decode_chain(&chain, &mut dst, |buf| {
            if buf.len() != src.len() {
                return Err(roverlog_core::Error::DecodedSize {
                    got: src.len(),
                    expected: buf.len(),
                });
            }
            buf.copy_from_slice(src);
            Ok(())
        });
        return;
    }
    let c = Compressor::from_json(&configs[usize::from(data[0]) % configs.len()]).unwrap();
    let _ = c.decode_into(&data[3..], &mut dst, "fuzz");
}

/// `zarr_order`: the Fortran-to-C reorder of one decoded chunk ([`roverlog_core::zarr::order::f_to_c`])
/// against an element-by-element model. Byte 0 picks the item size (every fixed-width path
/// and the generic one: 3 and 16 bytes, as for `c16`), byte 1 the number of dimensions (the
/// 2-D tiled transpose and the N-d gather), the next bytes the chunk shape (1-40 per
/// dimension, as the metadata check allows no zero). The rest seeds the chunk's contents.
pub fn zarr_order(data: &[u8]) {
    if data.len() < 2 {
        return;
    }
    let item = [1usize, 2, 3, 4, 8, 16][usize::from(data[0]) % 6];
    let nd = usize::from(data[1]) % 4 + 1;
    let Some(dims) = data.get(2..2 + nd) else {
        return;
    };
    let shape: Vec<u64> = dims.iter().map(|&d| u64::from(d % 40) + 1).collect();
    let n = shape.iter().product::<u64>() as usize;
    if n * item > 1 << 20 {
        return;
    }
    let seed = &data[2 + nd..];
    // Distinct-looking elements, so a wrong index shows; the input varies them further.
    let fortran: Vec<u8> = (0..n * item)
        .map(|i| (i * 7 + i / 251) as u8 ^ seed.get(i % seed.len().max(1)).copied().unwrap_or(0))
        .collect();
    let mut got = fortran.clone();
    roverlog_core::zarr::order::f_to_c(&mut got, &shape, item);
    // Model: the element at C-order position `c` (multi-index `idx`) is the one at Fortran
    // offset sum(idx[k] * prod(shape[..k])).
    let mut want = Vec::with_capacity(got.len());
    let mut idx = vec![0u64; nd];
    for _ in 0..n {
        let mut f = 0u64;
        let mut stride = 1u64;
        for k in 0..nd {
            f += idx[k] * stride;
            stride *= shape[k];
        }
        let f = f as usize * item;
        want.extend_from_slice(&fortran[f..f + item]);
        for k in (0..nd).rev() {
            idx[k] += 1;
            if idx[k] < shape[k] {
                break;
            }
            idx[k] = 0;
        }
    }
    assert!(
        got == want,
        "f_to_c of {shape:?} x {item} bytes differs from the model"
    );
}

/// `http_host`: the input, as text, is both a `Host` header and an `http_allowed_hosts`
/// entry. Splitting never panics and gives a name inside the input and a port of digits; an
/// entry the config accepts matches its own text and no longer name ending in it (a Host
/// `rover.local.evil.example` is not `rover.local`).
pub fn http_host(data: &[u8]) {
    use roverlog_daemon::config::{split_host, AllowedHost};
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Some((name, port)) = split_host(text) {
        assert!(text.contains(name), "{text:?}: name {name:?} is not in it");
        if let Some(p) = port {
            assert!(
                !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()),
                "{text:?}: port {p:?}"
            );
        }
    }
    if let Some(entry) = AllowedHost::parse(text) {
        assert!(entry.matches(text), "{text:?} does not match itself");
        assert_eq!(entry.name, entry.name.to_ascii_lowercase(), "{text:?}");
        let longer = format!("{}.evil.example", entry.name);
        assert!(!entry.matches(&longer), "{text:?} matches {longer:?}");
    }
}

/// `jpeg`: one frame through zune-jpeg and through libjpeg-turbo (where it loads; zune-jpeg
/// again elsewhere), with a pixel limit the fuzzer reaches. Neither may panic or decode past
/// the limit; the output is exactly the frame's size; where both decode it, both give the
/// same shape (a frame reads the same whichever decoder a machine has).
pub fn jpeg(data: &[u8]) {
    const MAX_PIXELS: usize = 1 << 16;
    let mut shapes = Vec::new();
    for with in [Backend::Zune, Backend::Auto] {
        let Ok(f) = JpegFrame::open_with(data, MAX_PIXELS, with) else {
            continue;
        };
        let shape = (f.height(), f.width(), f.channels());
        assert!(shape.0 * shape.1 <= MAX_PIXELS, "{shape:?}");
        assert!(matches!(shape.2, 1 | 3), "{shape:?}");
        assert_eq!(f.len(), shape.0 * shape.1 * shape.2);
        let mut out = vec![0u8; f.len()];
        if f.decode_into(&mut out).is_ok() {
            shapes.push(shape);
        }
    }
    if let [a, b] = shapes[..] {
        assert_eq!(
            a, b,
            "zune-jpeg and libjpeg-turbo disagree on the frame's shape"
        );
    }
}
