//! The roverd trace format: plain Rust over files and bytes.
