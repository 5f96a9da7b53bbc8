"""Engine metrics for a benchmark run, recorded by a child process:
`python -m services.bench.recording RUN_ID TARGETS_JSON`; it records until its standard
input closes (the parent closes it at the end of the run, or dies).

A process of its own because scraping and parsing Prometheus text holds the GIL for
milliseconds at a time: in the benchmark process that would delay the timestamps of the
tokens arriving meanwhile.
"""

from __future__ import annotations

import json
import sys

from services.telemetry.hub import TelemetryHub
from services.telemetry.recorder import start_recording
from services.telemetry.scraper import ScrapeTarget

RECORD_INTERVAL_S = 0.5
RATE_WINDOW_S = 2.0


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 2:
        print("usage: python -m services.bench.recording RUN_ID TARGETS_JSON", file=sys.stderr)
        return 2

    targets = [
        ScrapeTarget(
            name=t["name"],
            kind=t.get("kind") or "openai",
            metrics_url=t.get("metrics_url"),
            base_url=t.get("base_url"),
            api_key_env=t.get("api_key_env"),
        )
        for t in json.loads(args[1])
    ]
    # Short rate windows: a benchmark step lasts seconds, not minutes.
    hub = TelemetryHub(rate_window_s=RATE_WINDOW_S)
    # The benchmark worker owns the run's heartbeat; this child must not keep it fresh.
    recorder = start_recording(
        int(args[0]), targets, gpus=True, interval_s=RECORD_INTERVAL_S, hub=hub, beats_heartbeat=False
    )
    print("READY", flush=True)
    try:
        sys.stdin.read()
    except KeyboardInterrupt:
        pass
    finally:
        # A sample at once at the run's end, so even a sub-second run has one at each edge.
        # The engines' counters are final by then: each counts a request before its last
        # chunk leaves (tests/services/bench/test_engine_metrics_edges.py reads them back).
        recorder.stop(last_sample=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
