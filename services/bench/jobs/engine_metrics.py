"""Engine metrics recorded during a run: a child process (so that scraping and parsing never
hold the worker's GIL while it timestamps tokens), and the figures read back from its samples."""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa

from db.models import Sample
from db.session import session_scope
from services.bench.spec import BenchSpec, EngineTarget
from services.core.config import PROJECT_ROOT, get_settings
from services.engines import get_adapter


def default_metrics_url(engine: EngineTarget) -> str | None:
    """The engine's metrics URL: the one given, else its kind's path on the server root."""
    if engine.metrics_url:
        return engine.metrics_url

    path = get_adapter(engine.kind).metrics_path
    if not path:
        return None
    return engine.base_url.rstrip("/").removesuffix("/v1") + path


class _Recording:
    def __init__(self, process: subprocess.Popen[bytes]) -> None:
        self.process = process

    def stop(self) -> None:
        try:
            if self.process.stdin is not None:
                self.process.stdin.close()
            self.process.wait(timeout=15)
        except (OSError, subprocess.TimeoutExpired):
            self.process.kill()
            self.process.wait(timeout=5)


def start_engine_metrics(run_id: int, spec: BenchSpec, wait_ready_s: float = 0.0) -> _Recording | None:
    """Start the recording child; with `wait_ready_s`, wait (that long at most) until its
    first samples are being taken, so the run's first second has engine metrics too."""
    if not spec.record_engine_metrics:
        return None

    targets = [
        {
            "name": e.name,
            "kind": e.kind,
            "base_url": e.base_url,
            "metrics_url": default_metrics_url(e),
            "api_key_env": e.api_key_env,
        }
        for e in spec.engines
    ]
    env = {**os.environ, "PYTHONPATH": str(PROJECT_ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    env["SHOOTOUT_DATABASE_URL"] = get_settings().database_url
    try:
        process = subprocess.Popen(
            [sys.executable, "-m", "services.bench.recording", str(run_id), json.dumps(targets)],
            cwd=PROJECT_ROOT,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
        )
    except OSError:
        return None
    if wait_ready_s > 0 and process.stdout is not None:
        ready, _, _ = select.select([process.stdout], [], [], wait_ready_s)
        if ready:
            process.stdout.readline()
    return _Recording(process)


def engine_metrics_for(run_id: int, engine: str, wall_start: float, wall_end: float) -> dict[str, Any]:
    """Prefix-cache hit rate (weighted by prompt tokens) and KV-cache usage of one engine
    over [wall_start, wall_end], from the samples recorded with the run."""
    with session_scope() as session:
        rows = session.execute(
            sa.select(Sample.ts, Sample.values).where(
                Sample.run_id == run_id,
                Sample.source == f"engine:{engine}",
                Sample.ts >= wall_start,
                Sample.ts <= wall_end + 1.5,
            )
        ).all()
    return summarize_engine_samples([values for _ts, values in rows])


def summarize_engine_samples(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    hits: list[tuple[float, float]] = []
    usage: list[float] = []
    waiting: list[float] = []
    for values in rows:
        if not isinstance(values, dict) or values.get("_error"):
            continue
        rate = values.get("prefix_cache_hit_rate")
        if isinstance(rate, (int, float)):
            weight = values.get("prompt_tokens_per_s")
            hits.append(
                (float(rate), float(weight) if isinstance(weight, (int, float)) and weight > 0 else 0.0)
            )
        kv = values.get("kv_cache_usage")
        if isinstance(kv, (int, float)):
            usage.append(float(kv))
        queued = values.get("requests_waiting")
        if isinstance(queued, (int, float)) and not isinstance(queued, bool):
            waiting.append(float(queued))
    hit_rate = None
    if hits:
        total_weight = sum(w for _, w in hits)
        hit_rate = (
            (sum(r * w for r, w in hits) / total_weight)
            if total_weight > 0
            else sum(r for r, _ in hits) / len(hits)
        )
    return {
        "prefix_cache_hit_rate": hit_rate,
        "kv_cache_usage_max": max(usage) if usage else None,
        "kv_cache_usage_mean": sum(usage) / len(usage) if usage else None,
        # The engine's own word that requests waited in its queue (llama.cpp: requests_deferred),
        # which tells its queue from the rest where it does not time it (time_split.engine_queue).
        "requests_waiting_max": max(waiting) if waiting else None,
        "samples": len(rows),
    }
