#!/usr/bin/env bash
# The whole test suite on a fresh machine: installs what the tests need (Chromium, PostgreSQL
# and Prometheus from Debian, the app's packages, the real local engines), starts PostgreSQL,
# a Prometheus that scrapes the engines (scripts/prometheus.sh) and the engines, runs pytest.
# Extra arguments go to pytest. Nothing is skipped: a missing engine, browser, database or
# Prometheus fails the run.
set -euo pipefail
cd "$(dirname "$0")"
PYTHON=${PYTHON:-python3}
scripts/system_packages.sh
[ -x .venv/bin/python ] || "$PYTHON" -m venv .venv
.venv/bin/python -m pip install --disable-pip-version-check -q -r requirements.txt -r requirements-ray.txt -r requirements-dev.txt "setuptools>=70.1"
.venv/bin/python -m pip install --disable-pip-version-check -q --no-deps --no-build-isolation -e .
# An engine that cannot be installed fails only the tests that need it, with the reason.
.venv/bin/shootout local install || echo "test.sh: some local engines are not installed; the tests that need them will fail" >&2
eval "$(scripts/postgres.sh start)"
eval "$(PYTHON=.venv/bin/python scripts/prometheus.sh start)"
trap 'scripts/postgres.sh stop >/dev/null 2>&1 || true; scripts/prometheus.sh stop >/dev/null 2>&1 || true' EXIT
.venv/bin/python -m pytest -p no:cacheprovider "$@"
