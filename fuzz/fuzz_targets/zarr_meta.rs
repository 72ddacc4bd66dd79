//! `.zarray` parsing: arbitrary bytes must give metadata or an error, never a panic or a
//! huge allocation; whatever parses must be safe to describe and address.
#![no_main]

use std::path::Path;

use libfuzzer_sys::fuzz_target;
use roverlog::zarr::ArrayMeta;

fuzz_target!(|data: &[u8]| {
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
});
