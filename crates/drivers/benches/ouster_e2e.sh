#!/usr/bin/env bash
# The Ouster driver end to end at the rig's packet rate (BENCHMARKS.md): a release daemon,
# `roverlog driver ouster`, and the `ouster` bench's sender (`--to`) pushing 1,280 packets/s
# of 12,608 bytes for SECONDS; prints the driver's summary, its CPU ticks (1/100 s) and peak
# RSS, the daemon's CPU ticks, and `roverlog info` of the trace.
# Usage (from the repository root): cargo build --release --bin roverlog &&
#   cargo bench -p roverlog-drivers --bench ouster --no-run && crates/drivers/benches/ouster_e2e.sh 60
set -u
W=$(cd "$(dirname "$0")/../../.." && pwd); B=$W/target/release/roverlog; S=${1:-10}
D=$(mktemp -d); mkdir -p "$D/run"
trap 'rm -rf "$D"' EXIT
cat > "$D/roverlog.json" <<J
{"data_root": "$D/data", "ingest_socket": "$D/run/ingest.sock", "control_socket": "$D/run/control.sock", "min_free_bytes": 0, "stats_interval_ms": 1000}
J
"$B" daemon --config "$D/roverlog.json" 2> "$D/daemon.log" & DPID=$!
for _ in $(seq 100); do [ -S "$D/run/control.sock" ] && break; sleep 0.1; done
BENCH=$(ls -t "$W"/target/release/deps/ouster-* | grep -v '\.d$' | head -1)
"$BENCH" 0 --to 127.0.0.1:9 --metadata-out "$D/lidar.json" > /dev/null
"$B" driver ouster --metadata "$D/lidar.json" --socket "$D/run/ingest.sock" --bind 127.0.0.1 \
    --lidar-port 17502 --imu-port 17503 2> "$D/driver.log" & DRV=$!
sleep 2
"$BENCH" "$S" --to 127.0.0.1:17502
sleep 3
echo "driver CPU ticks (utime stime): $(awk '{print $14, $15}' /proc/$DRV/stat); $(grep VmHWM /proc/$DRV/status)"
echo "daemon CPU ticks (utime stime): $(awk '{print $14, $15}' /proc/$DPID/stat)"
kill -TERM $DRV; wait $DRV; echo "driver exit $?"
kill -TERM $DPID; wait $DPID; echo "daemon exit $?"
cat "$D/driver.log"
"$B" info "$D"/data/*/ 2>&1 | head -8
