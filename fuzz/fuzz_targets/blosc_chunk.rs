//! Chunk decoding with every codec: the first byte picks the codec, the next two the decoded
//! size the metadata would promise, the rest is the chunk. Errors are fine; panics, crashes
//! in c-blosc/zstd/zlib/lz4, over-reads and over-writes are not.
#![no_main]

use libfuzzer_sys::fuzz_target;
use roverlog::zarr::{blosc, Compressor};

fuzz_target!(|data: &[u8]| {
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
});
