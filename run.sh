#!/usr/bin/env bash
# One command on a fresh machine: install the app and the local engines, start the
# engines, open the app at http://localhost:8501. Ctrl-C stops the app; the engines keep
# running until `.venv/bin/shootout local down`.
set -euo pipefail
cd "$(dirname "$0")"
PYTHON=${PYTHON:-python3}
"$PYTHON" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "Shootout needs Python 3.11 or newer")'
[ -x .venv/bin/python ] || "$PYTHON" -m venv .venv
.venv/bin/python -m pip install --disable-pip-version-check -q -r requirements.txt "setuptools>=70.1"
# The checkout itself, editable (pyproject.toml): the `shootout` command. The packages are in
# place already (setuptools, the build backend, with them), so no download and no isolated build.
.venv/bin/python -m pip install --disable-pip-version-check -q --no-deps --no-build-isolation -e .
# Every SHOOTOUT_* setting is checked before anything starts: a bad one stops here, named.
SERVE=$(.venv/bin/python -m services.core.config)
ADDRESS=${SERVE% *} PORT=${SERVE#* }
# An engine that does not start never keeps the app down: `local up` says which and why
# (exit 4), and the app serves the engines that did start.
.venv/bin/shootout local up || echo "Shootout: starting the app with the engines that did start (see above)." >&2
echo "Shootout: http://localhost:$PORT"
exec .venv/bin/python -m streamlit run serve.py \
  --server.address "$ADDRESS" --server.port "$PORT" \
  --server.headless true --browser.gatherUsageStats false
