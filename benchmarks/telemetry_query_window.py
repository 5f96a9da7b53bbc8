"""How fast a one-hour window of stored telemetry loads from a week of samples.

Builds (once; reused afterwards) a SQLite database with a week of 1 Hz samples of 8 GPUs
and 4 engines, all in one recording run, shaped like the recorder's rows (the real
schema, realistic JSON values), then times what the Monitor page's "Recorded" view does
for a one-hour window: the query, the DataFrame, and the plotly figures.

    .venv/bin/python -m benchmarks.telemetry_query_window [--days 7] [--db PATH] [--repeat 5]
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import random
import sqlite3
import statistics
import time
from datetime import UTC, datetime
from pathlib import Path

from streamlit.testing.v1 import AppTest

from db.models import Run
from db.session import dispose_all, session_scope
from services.telemetry.monitor import recorded_view, recording_span
from services.telemetry.query import load_window

ROOT = Path(__file__).resolve().parent.parent

GPUS = 8
ENGINES = [
    ("vllm-a", "vllm", "vLLM"),
    ("vllm-b", "vllm", "vLLM"),
    ("sglang", "sglang", "SGLang"),
    ("llama", "llamacpp", "llama.cpp"),
]
START = 1_790_000_000.0


def engine_values(kind: str, label: str, t: int, rng: random.Random) -> dict:
    row: dict = {"_kind": kind, "_label": label}
    busy = (t // 600) % 2 == 0
    row["requests_running"] = rng.randint(4, 32) if busy else 0
    row["requests_waiting"] = rng.randint(0, 8) if busy else 0
    row["prompt_tokens_per_s"] = round(rng.uniform(2000, 9000), 1) if busy else 0
    row["generation_tokens_per_s"] = round(rng.uniform(500, 3000), 1) if busy else 0
    row["prefix_cache_hit_rate"] = round(rng.uniform(0.2, 0.8), 4) if busy else None
    if kind != "llamacpp":
        row["kv_cache_usage"] = round(rng.uniform(0.1, 0.9), 4)
        for base in ("ttft", "itl", "e2e"):
            scale = {"ttft": 0.2, "itl": 0.02, "e2e": 4.0}[base]
            for stat, factor in (("p50", 1.0), ("p90", 2.0), ("p99", 3.5), ("mean", 1.2)):
                row[f"{base}_{stat}_s"] = (
                    round(scale * factor * rng.uniform(0.8, 1.2), 6) if busy else None
                )
        row["preemptions_per_s"] = 0
    else:
        row["itl_mean_s"] = round(rng.uniform(0.02, 0.05), 6) if busy else None
        row["spec_decode_acceptance"] = None
    return row


def gpu_values(index: int, t: int, rng: random.Random) -> dict:
    busy = (t // 600) % 2 == 0
    return {
        "_kind": "gpu",
        "_label": "NVIDIA H100 80GB HBM3",
        "gpu_memory_used_bytes": 70_000_000_000 + rng.randint(0, 5_000_000_000),
        "gpu_memory_total_bytes": 85_520_809_984,
        "gpu_memory_reserved_bytes": 536_870_912,
        "gpu_utilization_pct": rng.randint(80, 100) if busy else 0,
        "gpu_memory_activity_pct": rng.randint(20, 60) if busy else 0,
        "gpu_power_w": round(rng.uniform(300, 690), 3),
        "gpu_temperature_c": rng.randint(40, 75),
        "gpu_sm_clock_mhz": 1980,
        "gpu_memory_clock_mhz": 2619,
        "gpu_pcie_tx_bytes_per_s": rng.randint(0, 10**9),
        "gpu_pcie_rx_bytes_per_s": rng.randint(0, 10**9),
        "_processes": [
            {"pid": 4000 + index, "used_bytes": 68_000_000_000, "name": "python", "engine": "vllm-a"}
        ],
    }


def build(path: Path, days: float) -> int:
    """Create the database with the app's own schema, then bulk-load the samples."""
    os.environ["SHOOTOUT_DATABASE_URL"] = f"sqlite:///{path}"

    with session_scope() as session:
        run = Run(
            kind="recording",
            name="a week",
            status="finished",
            started_at=datetime.fromtimestamp(START, UTC),
        )
        session.add(run)
        session.flush()
        run_id = run.id
    dispose_all()
    seconds = int(days * 86400)
    rng = random.Random(7)
    # Pre-rendered value variants per source (rendering 7 M JSON objects would dominate).
    variants = {}
    for name, kind, label in ENGINES:
        variants[f"engine:{name}"] = [
            json.dumps(engine_values(kind, label, t, rng)) for t in range(0, 1200, 5)
        ]
    for index in range(GPUS):
        variants[f"gpu:{index}"] = [json.dumps(gpu_values(index, t, rng)) for t in range(0, 1200, 5)]
    connection = sqlite3.connect(path)
    connection.execute("PRAGMA journal_mode=WAL")
    connection.execute("PRAGMA synchronous=OFF")
    started = time.perf_counter()
    batch: list[tuple] = []
    written = 0
    sources = list(variants)
    for t in range(seconds):
        ts = START + t + 0.25
        slot = (t % 1200) // 5
        for source in sources:
            batch.append((run_id, ts, source, variants[source][slot]))
        if len(batch) >= 120_000:
            connection.executemany(
                'INSERT INTO samples (run_id, ts, source, "values") VALUES (?, ?, ?, ?)', batch
            )
            connection.commit()
            written += len(batch)
            batch.clear()
            print(f"\r  {written:,} rows, {time.perf_counter() - started:.0f} s", end="", flush=True)
    if batch:
        connection.executemany(
            'INSERT INTO samples (run_id, ts, source, "values") VALUES (?, ?, ?, ?)', batch
        )
        written += len(batch)
    connection.commit()
    connection.execute("ANALYZE")
    connection.close()
    print(f"\r  {written:,} rows written in {time.perf_counter() - started:.0f} s")
    return run_id


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--days", type=float, default=7.0)
    parser.add_argument("--db", type=Path, default=ROOT / "data" / "bench" / "telemetry_week.db")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    args.db.parent.mkdir(parents=True, exist_ok=True)
    expected = int(args.days * 86400) * (GPUS + len(ENGINES))
    if args.db.exists():
        with sqlite3.connect(args.db) as connection:
            count = connection.execute("SELECT max(id) FROM samples").fetchone()[0] or 0
        if count != expected:
            args.db.unlink()
    if not args.db.exists():
        print(f"building {args.db} ({expected:,} rows)...")
        build(args.db, args.days)
    os.environ["SHOOTOUT_DATABASE_URL"] = f"sqlite:///{args.db}"

    size_gb = args.db.stat().st_size / 1e9
    run_id = 1
    first, last = recording_span(run_id)
    print(
        f"database: {size_gb:.2f} GB, {expected:,} samples, {(last - first) / 86400:.1f} days, 12 sources"
    )

    def timed(fn) -> list[float]:  # type: ignore[no-untyped-def]
        times = []
        for _ in range(args.repeat):
            t0 = time.perf_counter()
            fn()
            times.append(time.perf_counter() - t0)
        return times

    end = last - 2 * 86400  # an hour in the middle of the week (cold pages, not the tail)
    window = load_window(end - 3600, end, run_id=run_id)
    print(f"one-hour window: {len(window.frame):,} rows x {len(window.frame.columns)} columns")
    for label, fn in (
        ("load_window (by run)", lambda: load_window(end - 3600, end, run_id=run_id)),
        ("load_window (12 sources)", lambda: load_window(end - 3600, end, sources=window.sources)),
        (
            "recorded view: query + frames + 7 plotly figures",
            lambda: recorded_view(run_id, end - 3600, end),
        ),
    ):
        times = timed(fn)
        print(
            f"{label}: median {statistics.median(times) * 1000:.0f} ms, max {max(times) * 1000:.0f} ms"
        )

    # The whole page, headless: Monitor in "Recorded" mode showing the last hour.
    logging.getLogger("streamlit").setLevel(logging.ERROR)  # "missing ScriptRunContext" noise

    def page() -> None:
        at = AppTest.from_file(str(ROOT / "app_pages" / "monitor.py"), default_timeout=60)
        at.session_state["monitor_mode"] = "Recorded"
        at.run()
        assert not at.exception, at.exception
        assert len(at.get("plotly_chart")) == 7

    page()  # imports and first-run costs
    times = timed(page)
    print(
        f"Monitor page run (AppTest, Recorded, last hour): median {statistics.median(times) * 1000:.0f} ms, "
        f"max {max(times) * 1000:.0f} ms"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
