#!/usr/bin/env bash
# Long fuzzing run: every cargo-fuzz target in turn, for SECS seconds each (default 1200),
# niced so it only takes CPU nobody else wants. Prints one summary line per target
# (wall time, executions, corpus size, peak RSS, findings) and exits 1 if any target found
# a crash. Logs and crashing inputs stay in fuzz/logs/ and fuzz/artifacts/ (git-ignored).
#
#   scripts/fuzz-long.sh [SECS] [TARGET...]
#
# Needs cargo-fuzz (`cargo install cargo-fuzz`); RUSTC_BOOTSTRAP=1 lets the stable toolchain
# build the targets. Results of long runs go into BENCHMARKS.md ("Hostile input").
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-1200}
shift || true
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
    # Every [[bin]] of fuzz/Cargo.toml except the crate's own name.
    mapfile -t targets < <(sed -n 's/^name = "\(.*\)"$/\1/p' fuzz/Cargo.toml | grep -vx roverlog-fuzz)
fi
mkdir -p fuzz/logs
export RUSTC_BOOTSTRAP=1
(cd fuzz && cargo fuzz build -O)
status=0
printf '%-12s %8s %14s %10s %8s %s\n' target seconds executions corpus peak_rss result
for t in "${targets[@]}"; do
    mkdir -p "fuzz/corpus/$t"
    log="fuzz/logs/$t.log"
    start=$(date +%s)
    rc=0
    (cd fuzz && nice -n 19 cargo fuzz run -O "$t" "corpus/$t" "corpus-seeds/$t" -- \
        -max_total_time="$secs" -timeout=10 -print_final_stats=1) >"$log" 2>&1 || rc=$?
    wall=$(( $(date +%s) - start ))
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
    rss=$(sed -n 's/^stat::peak_rss_mb: *//p' "$log" | tail -1)
    corpus=$(find "fuzz/corpus/$t" -type f | wc -l)
    if [ "$rc" -eq 0 ]; then result="no findings"; else result="FAILED (exit $rc, see $log)"; status=1; fi
    printf '%-12s %8s %14s %10s %7sM %s\n' "$t" "$wall" "${execs:-?}" "$corpus" "${rss:-?}" "$result"
done
exit $status
