//! The messages of the problems that were free text (`msg: String`) until issue 38, exactly
//! as they were: each expected text is the old `format!` string, filled with the same values.

use super::{DecodeProblem, RosProblem};

#[test]
fn decompression_messages_are_the_ones_users_read() {
    let (at, want, got) = (42u64, 10usize, 3usize);
    let chunk = |msg: String| format!("chunk at byte {at}: {msg}");
    let file = |msg: String, written: u64| {
        format!(
            "compressed file (compression_mode: file): {msg} after {written} bytes decompressed"
        )
    };
    let frame = |msg: String| {
        format!("its zstd frame (compression_mode: message) does not decompress: {msg}")
    };
    let e = "Unknown frame descriptor";
    for (problem, text) in [
        (
            RosProblem::Decompress {
                at,
                codec: "lz4",
                error: e.into(),
            },
            chunk(format!("lz4: {e}")),
        ),
        (
            RosProblem::DecompressesLonger { at, want },
            chunk(format!(
                "zstd: decompresses to more than the {want} bytes its header says"
            )),
        ),
        (
            RosProblem::DecompressedSize { at, got, want },
            chunk(format!(
                "decompressed to {} bytes, its header says {want}",
                got
            )),
        ),
        (
            RosProblem::ChunkCrc {
                at,
                got: 0xdead,
                want: 0xbeef,
            },
            chunk(format!(
                "CRC32 of the records is {:#010x}, its header says {:#010x}",
                0xdeadu32, 0xbeefu32
            )),
        ),
        (
            RosProblem::Sqlite {
                error: "database is locked".into(),
            },
            format!("sqlite: {}", "database is locked"),
        ),
        (RosProblem::SqliteRowGone { id: 7 }, {
            // The old code wrote the row's sentence, then the variant's `sqlite: {msg}`.
            let msg = format!("message row {} is gone", 7);
            format!("sqlite: {msg}")
        }),
        (
            RosProblem::CompressedFile {
                written: 99,
                error: e.into(),
            },
            file(format!("zstd: {e}"), 99),
        ),
        (
            RosProblem::CompressedFileCut {
                written: 99,
                error: e.into(),
            },
            file(
                format!("truncated: the file ends inside its zstd frame ({e})"),
                99,
            ),
        ),
        (
            RosProblem::CompressedFileEmpty,
            file("it holds no data".into(), 0),
        ),
    ] {
        assert_eq!(problem.to_string(), text);
    }
    for (problem, text) in [
        (
            DecodeProblem::Frame {
                error: e.into(),
                frame_len: 12,
            },
            frame(format!("zstd: {e} ({} bytes of frame)", 12)),
        ),
        (
            DecodeProblem::FrameTooLarge { limit: 64 },
            frame(format!(
                "it decompresses to more than the limit of {} bytes",
                64
            )),
        ),
    ] {
        assert_eq!(problem.to_string(), text);
    }
}
