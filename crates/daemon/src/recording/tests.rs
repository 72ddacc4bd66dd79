//! Unit tests of `recording` (kept apart so the module stays readable).

use super::*;
use crate::protocol::accept_hello;

/// While not recording, a connection whose hello failed is discarded and a new one may
/// attach under the same name; the old connection ending late must not take the new
/// one's sensor (and writer) with it.
#[test]
fn a_late_detach_leaves_a_newer_sensor_of_the_same_name_alone() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = Config::try_from(crate::config::RawConfig {
        data_root: dir.path().join("data"),
        autostart: false,
        ..Default::default()
    })
    .unwrap();
    let (notices, _rx) = mpsc::unbounded_channel();
    let rec = Recorder::new(Arc::new(cfg), notices, None).unwrap();
    let line = br#"{"roverlog": 1, "sensor": "s", "channels": [{"name": "x", "format": "raw", "type": "u1", "shape": [2]}]}"#;
    let (hello, _) = accept_hello(line, 8, 1 << 20).unwrap();
    let old = rec
        .attach(&hello, std::sync::Arc::from(Vec::new()))
        .unwrap();
    rec.discard_failed(&old);
    let new = rec
        .attach(&hello, std::sync::Arc::from(Vec::new()))
        .unwrap();
    assert!(!Arc::ptr_eq(&old, &new));
    rec.detach(&old);
    let st = rec.lock();
    let kept = st.slots.get("s").expect("the newer sensor is still there");
    assert!(Arc::ptr_eq(kept, &new));
}
