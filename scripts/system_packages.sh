#!/usr/bin/env bash
# Debian packages the tests need: Chromium (browser tests), PostgreSQL (database tests),
# Prometheus (history read back from a real server, scripts/prometheus.sh) and CMake (the
# llama.cpp build's include tried on a small project; the real build brings its own CMake).
set -euo pipefail
missing=()
command -v chromium >/dev/null 2>&1 || missing+=(chromium)
ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || missing+=(postgresql)
command -v prometheus >/dev/null 2>&1 || missing+=(prometheus)
command -v cmake >/dev/null 2>&1 || missing+=(cmake)
[ ${#missing[@]} -eq 0 ] && exit 0
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
echo "installing ${missing[*]} from Debian" >&2
$SUDO apt-get update -qq >&2
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >&2
