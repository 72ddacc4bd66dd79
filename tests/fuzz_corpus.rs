//! Runs every fuzz target's check (`fuzz/fuzz_targets/checks.rs`) over its committed seeds in
//! `fuzz/corpus-seeds/<target>/` (inputs that once crashed included), with the normal test
//! harness: a regression is caught by `cargo test`, without cargo-fuzz or a nightly compiler.
//! The ROS targets' seeds are run by `crates/ros/tests/fuzz_corpus.rs`.
//! Its own binary in the root package: the targets check core and the daemon's protocol and
//! config, so it builds with them (not with core's tests).

#[path = "../fuzz/fuzz_targets/checks.rs"]
mod checks;

use std::path::Path;

fn run_seeds(target: &str, check: fn(&[u8])) {
    roverlog_testkit::fuzz::run_seeds(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus-seeds"),
        target,
        check,
    );
}

#[test]
fn frame_seeds() {
    run_seeds("frame", checks::frame);
}

#[cfg(feature = "jpeg")]
#[test]
fn jpeg_seeds() {
    run_seeds("jpeg", checks::jpeg);
}

#[test]
fn lidar_json_seeds() {
    run_seeds("lidar_json", checks::lidar_json);
}

#[test]
fn meta_json_seeds() {
    run_seeds("meta_json", checks::meta_json);
}

#[test]
fn lzmaf_index_seeds() {
    run_seeds("lzmaf_index", checks::lzmaf_index);
}

#[test]
fn stored_xz_seeds() {
    run_seeds("stored_xz", checks::stored_xz);
}

#[test]
fn gulp_meta_seeds() {
    run_seeds("gulp_meta", checks::gulp_meta);
}

#[test]
fn zarr_meta_seeds() {
    run_seeds("zarr_meta", checks::zarr_meta);
}

#[test]
fn blosc_chunk_seeds() {
    run_seeds("blosc_chunk", checks::blosc_chunk);
}

#[test]
fn avi_seeds() {
    run_seeds("avi", checks::avi);
}

#[test]
fn zarr_codec_seeds() {
    run_seeds("zarr_codec", checks::zarr_codec);
}

#[test]
fn zarr_order_seeds() {
    run_seeds("zarr_order", checks::zarr_order);
}

#[test]
fn http_host_seeds() {
    run_seeds("http_host", checks::http_host);
}
