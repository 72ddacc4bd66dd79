#!/usr/bin/env bash
# Creates (or reuses) the project's Python venv at .venv with the peers the interop tests
# need, and prints the interpreter's path. Tests call this; they never skip when it fails.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
venv="$root/.venv"
req="$root/scripts/requirements.txt"
# Packages whose declared dependencies cannot be met beside ours (l5kit pins numpy 1.19 and
# torch < 2): installed without them; the tests use only the parts that need none of them.
nodeps="$root/scripts/requirements-nodeps.txt"
stamp="$venv/.requirements.sha256"
# Tests run in parallel: one installer at a time.
exec 9>"$root/.venv.lock"
flock 9
want=$(cat "$req" "$nodeps" | sha256sum | cut -d' ' -f1)
if [ ! -x "$venv/bin/python" ] || [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
    python3 -m venv "$venv" >&2
    "$venv/bin/pip" install --disable-pip-version-check -q -r "$req" >&2
    "$venv/bin/pip" install --disable-pip-version-check -q --no-deps -r "$nodeps" >&2
    echo "$want" > "$stamp"
fi
echo "$venv/bin/python"
