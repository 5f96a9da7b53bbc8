"""How fast the Monitor page's History view draws a one-hour window from a real Prometheus:
4 vLLM engines (gauges, counters, TTFT/ITL/E2E histograms of 20 buckets) and 8 dcgm-exporter
GPUs, scraped every 15 s.

The data is made with Prometheus's own backfill (`promtool tsdb create-blocks-from
openmetrics`) into a temporary data directory; a Prometheus (Debian's) is started on it on
127.0.0.1 at a free port and stopped at the end. Timed: what the page calls
(`monitor.history_view`: target discovery, one query per engine, one for the GPUs, the
plotly charts), the figures' JSON that Streamlit sends, and the whole page in AppTest.

    .venv/bin/python -m benchmarks.prometheus_history_render [--repeat 5]
"""

from __future__ import annotations

import argparse
import os
import random
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import plotly.io as pio
from streamlit.testing.v1 import AppTest

from services.telemetry import monitor
from services.telemetry.prom_api import PromServer

ROOT = Path(__file__).resolve().parent.parent

ENGINES = 4
GPUS = 8
STEP_S = 15
HOUR_S = 3600
BUCKETS = [0.001 * 2**i for i in range(19)] + [float("inf")]  # 20 buckets, like vLLM's


def openmetrics(end: int) -> str:
    """An hour of 15 s scrapes ending at `end`, as OpenMetrics (families contiguous)."""
    rng = random.Random(7)
    times = list(range(end - HOUR_S, end + 1, STEP_S))
    families: list[str] = []

    def family(name: str, kind: str, series: list[tuple[str, list[float]]]) -> None:
        families.append(f"# TYPE {name} {kind}")
        for labels, values in series:
            families.extend(f"{name}{{{labels}}} {v:g} {t}" for t, v in zip(times, values, strict=True))

    engines = [f'job="vllm",instance="10.0.0.{i + 1}:8000",model_name="llama"' for i in range(ENGINES)]
    family(
        "vllm:num_requests_running", "gauge", [(e, [rng.randint(0, 32) for _ in times]) for e in engines]
    )
    family(
        "vllm:num_requests_waiting", "gauge", [(e, [rng.randint(0, 8) for _ in times]) for e in engines]
    )
    family(
        "vllm:kv_cache_usage_perc",
        "gauge",
        [(e, [rng.uniform(0.1, 0.9) for _ in times]) for e in engines],
    )

    def counter(per_step: tuple[float, float]) -> list[float]:
        total, values = 0.0, []
        for _ in times:
            total += rng.uniform(*per_step)
            values.append(round(total))
        return values

    for name, per_step in (
        ("vllm:prompt_tokens", (20_000, 90_000)),
        ("vllm:generation_tokens", (5_000, 30_000)),
        ("vllm:prefix_cache_queries", (20_000, 90_000)),
        ("vllm:prefix_cache_hits", (0, 20_000)),
        ("vllm:num_preemptions", (0, 2)),
    ):
        families.append(f"# TYPE {name} counter")
        for e in engines:
            families.extend(
                f"{name}_total{{{e}}} {v:g} {t}" for t, v in zip(times, counter(per_step), strict=True)
            )
    for name in (
        "vllm:time_to_first_token_seconds",
        "vllm:inter_token_latency_seconds",
        "vllm:e2e_request_latency_seconds",
    ):
        families.append(f"# TYPE {name} histogram")
        for e in engines:
            counts = [0.0] * len(BUCKETS)
            total = 0.0
            rows: list[tuple[int, list[float], float]] = []
            for t in times:
                for _ in range(20):
                    value = rng.lognormvariate(-3, 1)
                    total += value
                    for index, bound in enumerate(BUCKETS):
                        if value <= bound:
                            counts[index] += 1
                rows.append((t, [sum(counts[: i + 1]) for i in range(len(BUCKETS))], total))
            for index, bound in enumerate(BUCKETS):
                le = "+Inf" if bound == float("inf") else f"{bound:g}"
                families.extend(f'{name}_bucket{{{e},le="{le}"}} {r[1][index]:g} {r[0]}' for r in rows)
            families.extend(f"{name}_count{{{e}}} {r[1][-1]:g} {r[0]}" for r in rows)
            families.extend(f"{name}_sum{{{e}}} {r[2]:.3f} {r[0]}" for r in rows)
    gpus = [
        f'job="dcgm",instance="gpu-node:9400",gpu="{g}",Hostname="gpu-node",modelName="NVIDIA H200"'
        for g in range(GPUS)
    ]
    for name, low, high in (
        ("DCGM_FI_DEV_FB_USED", 40_000, 130_000),
        ("DCGM_FI_DEV_FB_FREE", 1_000, 90_000),
        ("DCGM_FI_DEV_FB_RESERVED", 500, 500),
        ("DCGM_FI_DEV_GPU_UTIL", 0, 100),
        ("DCGM_FI_DEV_MEM_COPY_UTIL", 0, 100),
        ("DCGM_FI_DEV_POWER_USAGE", 100, 700),
        ("DCGM_FI_DEV_GPU_TEMP", 30, 80),
        ("DCGM_FI_DEV_SM_CLOCK", 1000, 1980),
        ("DCGM_FI_DEV_MEM_CLOCK", 2619, 2619),
    ):
        family(name, "gauge", [(g, [rng.randint(low, high) for _ in times]) for g in gpus])
    return "\n".join(families) + "\n# EOF\n"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    end = int(time.time()) - 60
    with tempfile.TemporaryDirectory(prefix="shootout-prom-bench-") as folder:
        data = Path(folder) / "data"
        source = Path(folder) / "history.om"
        started = time.perf_counter()
        source.write_text(openmetrics(end))
        subprocess.run(
            ["promtool", "tsdb", "create-blocks-from", "openmetrics", "-q", str(source), str(data)],
            check=True,
        )
        print(
            f"backfilled {source.stat().st_size / 2**20:.1f} MB of OpenMetrics in {time.perf_counter() - started:.1f} s"
        )
        port = free_port()
        (Path(folder) / "prometheus.yml").write_text("global: {scrape_interval: 15s}\n")
        server = subprocess.Popen(
            [
                "prometheus",
                f"--config.file={folder}/prometheus.yml",
                f"--storage.tsdb.path={data}",
                f"--web.listen-address=127.0.0.1:{port}",
                "--storage.tsdb.retention.time=30d",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            url = f"http://127.0.0.1:{port}"
            for _ in range(100):
                try:
                    urllib.request.urlopen(url + "/-/ready", timeout=1)
                    break
                except OSError:
                    time.sleep(0.2)
            return measure(url, end, args.repeat)
        finally:
            server.terminate()
            server.wait(timeout=30)


def measure(url: str, end: int, repeat: int) -> int:
    server = PromServer.from_input(url)
    start_ts, end_ts = float(end - HOUR_S), float(end)
    view_s, json_s = [], []
    for _ in range(repeat):
        started = time.perf_counter()
        view = monitor.history_view(server, start_ts, end_ts, job="vllm")
        view_s.append(time.perf_counter() - started)
        started = time.perf_counter()
        for chart in view.charts:
            pio.to_json(chart.figure, validate=False)
        json_s.append(time.perf_counter() - started)
    traces = sum(len(c.figure.data) for c in view.charts)
    points = sum(len(trace.x) for c in view.charts for trace in c.figure.data)
    print(
        f"{len(view.statuses)} sources, {len(view.charts)} charts, {traces} traces, {points:,} points; errors: {view.errors}"
    )
    print(
        f"history_view (queries + charts): median {statistics.median(view_s) * 1000:.0f} ms, max {max(view_s) * 1000:.0f} ms"
    )
    print(f"figures to JSON: median {statistics.median(json_s) * 1000:.0f} ms")
    page_s = page_run(url, repeat)
    print(
        f"Monitor page, History view, whole script in AppTest: median {statistics.median(page_s) * 1000:.0f} ms, "
        f"max {max(page_s) * 1000:.0f} ms"
    )
    total = statistics.median(page_s)
    print("PASS" if total < 1.0 else "FAIL", f"(budget 1 s: {total:.2f} s)")
    return 0 if total < 1.0 else 1


def page_run(url: str, repeat: int) -> list[float]:
    os.environ["SHOOTOUT_PROMETHEUS_URL"] = url
    os.environ.setdefault("SHOOTOUT_DATA_DIR", tempfile.mkdtemp(prefix="shootout-bench-"))
    at = AppTest.from_file(str(ROOT / "app_pages" / "monitor.py"), default_timeout=60)
    at.session_state["monitor_mode"] = "History"
    at.run()
    at.text_input(key="monitor_history_job").set_value("vllm").run()  # first run: imports, the database
    assert not at.exception, at.exception
    timings = []
    for _ in range(repeat):
        started = time.perf_counter()
        at.run()
        timings.append(time.perf_counter() - started)
        assert not at.exception, at.exception
        assert len(at.get("plotly_chart")) == 10, len(at.get("plotly_chart"))
    return timings


if __name__ == "__main__":
    sys.exit(main())
