"""Loopback metrics for the test Prometheus (scripts/prometheus.sh) to scrape beside the
real local engines: a dcgm-exporter sample and an engine whose counters reset.

  /dcgm      the dcgm-exporter sample (two H100s of gpu-node-07), as dcgm-exporter serves it
  /resetting a vLLM-shaped engine that "restarts" every RESET_EVERY_S seconds: its counters
             fall back to zero and count up again, 10 generated tokens a second; 3 requests
             running, KV cache a quarter full, 5 first tokens a second at 50 ms

Usage: python3 scripts/prometheus_samples.py PORT DCGM_SAMPLE_FILE
"""

from __future__ import annotations

import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

RESET_EVERY_S = 20.0
TOKENS_PER_S = 10.0
FIRST_TOKENS_PER_S = 5.0


def resetting_engine(now: float) -> str:
    started = now - now % RESET_EVERY_S
    up_s = now - started
    tokens = TOKENS_PER_S * up_s
    firsts = int(FIRST_TOKENS_PER_S * up_s)
    labels = 'engine="0",model_name="resetting"'
    lines = [
        f"process_start_time_seconds {started:.3f}",
        f"vllm:num_requests_running{{{labels}}} 3.0",
        f"vllm:num_requests_waiting{{{labels}}} 0.0",
        f"vllm:kv_cache_usage_perc{{{labels}}} 0.25",
        "# TYPE vllm:generation_tokens_total counter",
        f"vllm:generation_tokens_total{{{labels}}} {tokens:.1f}",
        "# TYPE vllm:time_to_first_token_seconds histogram",
    ]
    for bound in ("0.01", "0.1", "1.0", "+Inf"):
        count = 0 if bound == "0.01" else firsts
        lines.append(f'vllm:time_to_first_token_seconds_bucket{{{labels},le="{bound}"}} {count}.0')
    lines += [
        f"vllm:time_to_first_token_seconds_count{{{labels}}} {firsts}.0",
        f"vllm:time_to_first_token_seconds_sum{{{labels}}} {firsts * 0.05:.3f}",
    ]
    return "\n".join(lines) + "\n"


def main() -> None:
    port, dcgm_file = int(sys.argv[1]), Path(sys.argv[2])
    dcgm = dcgm_file.read_bytes()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            if self.path == "/dcgm":
                body = dcgm
            elif self.path == "/resetting":
                body = resetting_engine(time.time()).encode()
            else:
                self.send_error(404)
                return
            self.send_response(200)
            self.send_header("Content-Type", "text/plain; version=0.0.4")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    ThreadingHTTPServer(("127.0.0.1", port), Handler).serve_forever()


if __name__ == "__main__":
    main()
