//! `.gmeta` parsing on arbitrary bytes: must never panic or over-allocate, and whatever it
//! accepts must satisfy the invariants the reader relies on to slice the data file.
#![no_main]

use std::collections::HashSet;
use std::path::Path;

use libfuzzer_sys::fuzz_target;
use roverlog::gulp::parse_gmeta;

const MAX_FRAMES: usize = 64;

fuzz_target!(|data: &[u8]| {
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
});
