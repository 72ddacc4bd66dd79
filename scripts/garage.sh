#!/usr/bin/env bash
# Garage 2.5.0, the S3 server the offload tests run against (tests/support/garage.rs), built
# from the crate index once into a cache directory and reused:
#   ${ROVERLOG_CACHE:-$HOME/.cache/roverlog}/garage-2.5.0/bin/garage
# About 20-30 minutes on a fresh 2-core machine, then nothing. scripts/test runs it before
# the full `cargo test`.
set -euo pipefail
root="${ROVERLOG_CACHE:-$HOME/.cache/roverlog}/garage-2.5.0"
if [ -x "$root/bin/garage" ]; then
    exit 0
fi
echo "== building Garage 2.5.0 into $root (once; about 20-30 minutes on 2 cores)"
cargo install garage --locked --version 2.5.0 --no-default-features \
    --features bundled-libs,sqlite --root "$root"
