#!/usr/bin/env bash
# Checks systemd/roverlog.service with `systemd-analyze verify`, failing on any warning.
#
# verify insists that ExecStart's binary exists, so the unit is checked through a copy whose
# ExecStart points at the binary built here (target/debug/roverlog; built when missing).
# Everything else in the unit is checked as shipped.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
unit="$root/systemd/roverlog.service"
bin="$root/target/debug/roverlog"
[ -x "$bin" ] || cargo build --manifest-path "$root/Cargo.toml" --bin roverlog >&2

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
grep -q '^ExecStart=/usr/bin/roverlog ' "$unit" || {
    echo "verify-systemd: $unit: no 'ExecStart=/usr/bin/roverlog ...' line to redirect" >&2
    exit 1
}
sed "s|^ExecStart=/usr/bin/roverlog |ExecStart=$bin |" "$unit" > "$tmp/roverlog.service"

# --man=no: do not look up man pages named in Documentation= (none installed here).
set +e
out=$(cd "$tmp" && systemd-analyze verify --man=no "$tmp/roverlog.service" 2>&1)
rc=$?
set -e
if [ $rc -ne 0 ] || [ -n "$out" ]; then
    echo "verify-systemd: FAILED (exit $rc) for $unit:" >&2
    # Line numbers are the same in the copy: name the real file.
    printf '%s\n' "$out" | sed "s|$tmp/roverlog.service|$unit|g" >&2
    exit 1
fi
echo "verify-systemd: $unit OK (systemd $(systemd-analyze --version | head -1 | cut -d' ' -f2))"
