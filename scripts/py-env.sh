#!/usr/bin/env bash
# Creates (or reuses) the project's Python venv at .venv with the peers the interop tests
# need, and prints the interpreter's path. Tests call this; they never skip when it fails.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
venv="$root/.venv"
req="$root/scripts/requirements.txt"
stamp="$venv/.requirements.sha256"
# Tests run in parallel: one installer at a time.
exec 9>"$root/.venv.lock"
flock 9
want=$(sha256sum "$req" | cut -d' ' -f1)
if [ ! -x "$venv/bin/python" ] || [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
    python3 -m venv "$venv" >&2
    "$venv/bin/pip" install --disable-pip-version-check -q -r "$req" >&2
    echo "$want" > "$stamp"
fi
echo "$venv/bin/python"
