#!/usr/bin/env bash
# One command on a fresh machine: install the app, serve it at http://localhost:8501 at once,
# and install and start the local engines behind it (a detached `shootout local up`; its lines
# appear here, each engine's whole output in its own log). Ctrl-C stops the app; installs and
# engines go on until `.venv/bin/shootout local down`. Running it again picks up where things
# stand. SHOOTOUT_LOCAL_ENGINES chooses fewer engines (`none`: the app alone).
set -euo pipefail
cd "$(dirname "$0")"
PYTHON=${PYTHON:-python3}
"$PYTHON" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "Shootout needs Python 3.11 or newer")'
[ -x .venv/bin/python ] || "$PYTHON" -m venv .venv
# pip's own output (its environment warnings too) goes to a log; a failure shows its last lines.
PIP_LOG=.venv/shootout-pip.log
quiet() {
  "$@" >>"$PIP_LOG" 2>&1 && return 0
  echo "Shootout: installing the app's packages failed; the last lines of $PIP_LOG:" >&2
  grep -v '^WARNING' "$PIP_LOG" | tail -n 12 >&2
  exit 1
}
echo "Shootout: installing the app's packages into .venv (pip's lines: $PIP_LOG)"
quiet .venv/bin/python -m pip install --disable-pip-version-check -q -r requirements.txt "setuptools>=70.1"
# The checkout itself, editable (pyproject.toml): the `shootout` command. The packages are in
# place already (setuptools, the build backend, with them), so no download and no isolated build.
quiet .venv/bin/python -m pip install --disable-pip-version-check -q --no-deps --no-build-isolation -e .
# Every SHOOTOUT_* setting is checked before anything starts: a bad one stops here, named.
SERVE=$(.venv/bin/python -m services.core.config)
ADDRESS=${SERVE% *} PORT=${SERVE#* }
# The engines never keep the app waiting: `local plan` says what will be installed (GB, minutes,
# the disk check), `local up --background` does it detached and prints where its lines go, and
# `tail` shows them here until the app stops (--pid: this script's PID, the app's after exec).
if .venv/bin/shootout local plan; then
  UP_LOG=$(.venv/bin/shootout local up --background) || UP_LOG=
  [ -z "$UP_LOG" ] || tail -n +1 -F --pid=$$ "$UP_LOG" 2>/dev/null &
fi
echo "Shootout: http://localhost:$PORT"
exec .venv/bin/python -m streamlit run serve.py \
  --server.address "$ADDRESS" --server.port "$PORT" \
  --server.headless true --browser.gatherUsageStats false
