//! Test-only knobs: keys that slow the daemon down on purpose so the integration tests can
//! fill queues, stall a writer or stretch start-up deterministically. Only a build with the
//! `test-knobs` cargo feature (the root package's dev-dependency turns it on for `cargo
//! test`) knows their keys; any other build refuses them as unknown keys, like a typo, so a
//! production config cannot set them.

use std::time::Duration;

use super::raw::RawConfig;

/// The keys of the knobs (documented in config/README.md, absent from the example file).
pub const TEST_KNOB_KEYS: [&str; 3] = [
    "debug_write_delay_ms",
    "debug_recovery_delay_ms",
    "debug_compress_delay_ms",
];

/// Keys `debug_write_delay_ms`, `debug_recovery_delay_ms`, `debug_compress_delay_ms`; all
/// zero without the feature.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TestKnobs {
    /// The writer sleeps this long before each sample (makes queues fill up).
    pub write_delay: Duration,
    /// Start-up recovery takes this much longer (shows `EXTEND_TIMEOUT_USEC`).
    pub recovery_delay: Duration,
    /// Compressing each `lzmaf` frame takes this much longer: a compressor that cannot keep
    /// up, so the stored-uncompressed fallback can be tested.
    pub compress_delay: Duration,
}

impl TestKnobs {
    #[cfg(feature = "test-knobs")]
    pub(super) fn from_raw(raw: &RawConfig) -> TestKnobs {
        TestKnobs {
            write_delay: Duration::from_millis(raw.debug_write_delay_ms),
            recovery_delay: Duration::from_millis(raw.debug_recovery_delay_ms),
            compress_delay: Duration::from_millis(raw.debug_compress_delay_ms),
        }
    }

    #[cfg(not(feature = "test-knobs"))]
    pub(super) fn from_raw(_: &RawConfig) -> TestKnobs {
        TestKnobs::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(feature = "test-knobs")]
    #[test]
    fn with_the_feature_the_knobs_are_read() {
        let raw: RawConfig = serde_json::from_str(
            r#"{"debug_write_delay_ms": 5, "debug_recovery_delay_ms": 1500,
                    "debug_compress_delay_ms": 7}"#,
        )
        .unwrap();
        let k = TestKnobs::from_raw(&raw);
        assert_eq!(k.write_delay, Duration::from_millis(5));
        assert_eq!(k.recovery_delay, Duration::from_millis(1500));
        assert_eq!(k.compress_delay, Duration::from_millis(7));
        let printed = serde_json::to_value(&raw).unwrap();
        for key in TEST_KNOB_KEYS {
            assert!(printed.get(key).is_some(), "{key}");
        }
    }

    #[cfg(not(feature = "test-knobs"))]
    #[test]
    fn without_the_feature_the_knobs_are_unknown_keys() {
        for key in TEST_KNOB_KEYS {
            let e = serde_json::from_str::<RawConfig>(&format!(r#"{{"{key}": 5}}"#))
                .unwrap_err()
                .to_string();
            assert!(e.starts_with(&format!("unknown field `{key}`")), "{e}");
        }
        let printed = serde_json::to_value(RawConfig::default()).unwrap();
        for key in TEST_KNOB_KEYS {
            assert!(printed.get(key).is_none(), "{key} printed");
        }
        assert_eq!(
            TestKnobs::from_raw(&RawConfig::default()),
            TestKnobs::default()
        );
    }
}
