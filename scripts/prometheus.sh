#!/usr/bin/env bash
# A throw-away Prometheus for the tests, on 127.0.0.1, scraping every second: the real local
# engines (llama.cpp on 8081 and 8083 with --metrics, vLLM on 8082, SGLang on 8084, Triton's metrics on 8086, SGLang's
# router's metrics on 8088, moved with SHOOTOUT_LOCAL_PORT_BASE as services/local_engines.py moves them)
# and a loopback sample server (scripts/prometheus_samples.py: a dcgm-exporter sample and an
# engine whose counters reset). Every target carries namespace="shootout-test".
#   eval "$(scripts/prometheus.sh start)"   # prints: export SHOOTOUT_TEST_PROMETHEUS_URL=...
#   scripts/prometheus.sh stop
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
PORT=${SHOOTOUT_TEST_PROM_PORT:-59090}
SAMPLES_PORT=${SHOOTOUT_TEST_PROM_SAMPLES_PORT:-$((PORT + 1))}
DIR=${SHOOTOUT_TEST_PROM_DIR:-/tmp/shootout-test-prom-$PORT}
DCGM_SAMPLE=${SHOOTOUT_TEST_DCGM_SAMPLE:-$ROOT/../shared/fixtures/metrics/dcgm_exporter.txt}
PYTHON=${PYTHON:-python3}
URL="http://127.0.0.1:$PORT"
ENGINE_BASE=${SHOOTOUT_LOCAL_PORT_BASE:-8081}

running() { [ -f "$DIR/$1.pid" ] && kill -0 "$(cat "$DIR/$1.pid")" 2>/dev/null; }
stop_one() { if running "$1"; then kill "$(cat "$DIR/$1.pid")" 2>/dev/null || true; fi; rm -f "$DIR/$1.pid"; }

case "${1:-}" in
  start)
    command -v prometheus >/dev/null || { echo "prometheus is not installed (scripts/system_packages.sh)" >&2; exit 1; }
    [ -f "$DCGM_SAMPLE" ] || { echo "missing dcgm-exporter sample $DCGM_SAMPLE" >&2; exit 1; }
    if ! running prometheus || ! running samples; then
      stop_one prometheus; stop_one samples
      rm -rf "$DIR"; mkdir -p "$DIR/data"
      cat >"$DIR/prometheus.yml" <<YAML
global: {scrape_interval: 1s, scrape_timeout: 1s, evaluation_interval: 1s}
scrape_configs:
  - job_name: llamacpp
    static_configs: [{targets: ["127.0.0.1:$ENGINE_BASE", "127.0.0.1:$((ENGINE_BASE + 2))"], labels: {namespace: shootout-test}}]
  - job_name: vllm
    static_configs: [{targets: ["127.0.0.1:$((ENGINE_BASE + 1))"], labels: {namespace: shootout-test}}]
  - job_name: sglang
    static_configs: [{targets: ["127.0.0.1:$((ENGINE_BASE + 3))"], labels: {namespace: shootout-test}}]
  - job_name: triton
    static_configs: [{targets: ["127.0.0.1:$((ENGINE_BASE + 5))"], labels: {namespace: shootout-test}}]
  - job_name: router
    static_configs: [{targets: ["127.0.0.1:$((ENGINE_BASE + 7))"], labels: {namespace: shootout-test}}]
  - job_name: dcgm
    metrics_path: /dcgm
    static_configs: [{targets: ["127.0.0.1:$SAMPLES_PORT"], labels: {namespace: shootout-test}}]
  - job_name: resetting
    metrics_path: /resetting
    static_configs: [{targets: ["127.0.0.1:$SAMPLES_PORT"], labels: {namespace: shootout-test}}]
YAML
      nohup "$PYTHON" "$ROOT/scripts/prometheus_samples.py" "$SAMPLES_PORT" "$DCGM_SAMPLE" \
        >"$DIR/samples.log" 2>&1 &
      echo $! >"$DIR/samples.pid"
      nohup prometheus --config.file="$DIR/prometheus.yml" --storage.tsdb.path="$DIR/data" \
        --storage.tsdb.retention.time=6h --web.listen-address="127.0.0.1:$PORT" \
        >"$DIR/prometheus.log" 2>&1 &
      echo $! >"$DIR/prometheus.pid"
      for _ in $(seq 1 100); do
        curl -sf "$URL/-/ready" >/dev/null 2>&1 && break
        running prometheus || { tail -n 20 "$DIR/prometheus.log" >&2; exit 1; }
        sleep 0.2
      done
      curl -sf "$URL/-/ready" >/dev/null || { echo "Prometheus at $URL did not get ready" >&2; exit 1; }
    fi
    echo "export SHOOTOUT_TEST_PROMETHEUS_URL=$URL SHOOTOUT_TEST_PROM_SAMPLES_ORIGIN=http://127.0.0.1:$SAMPLES_PORT"
    ;;
  stop)
    stop_one prometheus; stop_one samples
    ;;
  *) echo "usage: $0 start|stop" >&2; exit 2 ;;
esac
