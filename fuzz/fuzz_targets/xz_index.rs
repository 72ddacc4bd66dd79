//! Fuzz target `xz_index`: an `.xz` file's decoded size from its stream indexes
//! (`roverlog_core::format::xz_index`) on arbitrary bytes: never panics, and any size it
//! answers for a file that decodes is the decoded size.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let n = roverlog_core::format::xz_index::uncompressed_len_of(data);
    if let (Some(n), Ok(out)) = (
        n,
        roverlog_core::format::lzma::decompress(data, 1 << 24, std::path::Path::new("fuzz")),
    ) {
        assert_eq!(n, out.len() as u64, "index size vs decoded size");
    }
});
