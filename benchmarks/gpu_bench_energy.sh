#!/usr/bin/env bash
# A benchmark stored with its energy, on a machine with an NVIDIA GPU (issue 33): `shootout bench`
# against the scripted server, whose HTTP side stands for an engine's, while a torch load named
# with the same --port stands for its GPU side, so that NVML's process list ties the GPU to the
# engine as it does for a served engine. Prints bench's table, whose energy line is the check.
#
#   benchmarks/gpu_bench_energy.sh            (PY=python3 by default; OUT=folder for bench.json)
#
# Figures on an H200: docs/figures.md ("A real GPU").
set -u
cd "$(dirname "$0")/.."
PY=${PY:-python3}
PORT=${PORT:-18181}
DATA=$(mktemp -d)
export SHOOTOUT_DATA_DIR=$DATA SHOOTOUT_DATABASE_URL=sqlite:///$DATA/shootout.db
"$PY" -m tests.support.scripted_server --port "$PORT" >"$DATA/server.log" 2>&1 &
SERVER=$!
"$PY" -m benchmarks.gpu_meter_check --load-only 40 --port "$PORT" >"$DATA/load.log" 2>&1 &
LOAD=$!
trap 'kill $SERVER $LOAD 2>/dev/null; wait 2>/dev/null' EXIT
sleep 8 # the server listens and the load has its tensors on the GPU
"$PY" cli.py bench --url "http://127.0.0.1:$PORT/v1" --model "scripted:ttft=30,itl=10,tokens=128" \
    --usd-per-hour 3.5 --concurrency 16 --requests 400 --output-len 128 --name gpu-energy \
    --json "${OUT:-$DATA}/bench.json"
