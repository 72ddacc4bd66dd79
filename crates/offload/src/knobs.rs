//! Fault injection for the tests, compiled in only with the `test-knobs` feature (the
//! workspace's tests enable it; a release build has none of it).
//!
//! `ROVERLOG_OFFLOAD_CORRUPT=<key>`: the first part sent of the object `<key>` (`trace/file`)
//! has its first byte flipped after it was hashed, as a fault between reading and the wire
//! would: the store's ETag for it then differs from the MD5 of what was read.

#[cfg(feature = "test-knobs")]
pub fn corrupt(key: &str, part: usize, mut data: Vec<u8>) -> Vec<u8> {
    if part == 0
        && !data.is_empty()
        && std::env::var("ROVERLOG_OFFLOAD_CORRUPT").is_ok_and(|k| k == key)
    {
        data[0] ^= 0xff;
    }
    data
}

#[cfg(not(feature = "test-knobs"))]
#[inline(always)]
pub fn corrupt(_key: &str, _part: usize, data: Vec<u8>) -> Vec<u8> {
    data
}
