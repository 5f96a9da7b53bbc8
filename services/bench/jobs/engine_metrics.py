"""Engine metrics recorded during a run: a child process (so that scraping and parsing never
hold the worker's GIL while it timestamps tokens), and the figures read back from its samples."""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
from collections.abc import Mapping, Sequence

import sqlalchemy as sa

from db.models import Sample
from db.session import session_scope
from services.bench.results import EngineMetrics
from services.bench.spec import BenchSpec, EngineTarget
from services.core import units
from services.core.config import PROJECT_ROOT, get_settings
from services.core.json_types import JsonOut
from services.core.measure import percentile
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


def engine_metrics_for(run_id: int, engine: str, wall_start: float, wall_end: float) -> EngineMetrics:
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


#: KV-cache usage at or above this share of the cache counts as "near full".
KV_NEAR_FULL = 0.95


#: One recorded sample's signals (services/engines/normalise.py): signal name -> its value, read
#: with `_gauge` (a sample the scrape failed holds `_error`).
SampleValues = Mapping[str, object]


def _gauge(values: SampleValues, key: str) -> float | None:
    return units.number(values.get(key))


#: The signals whose values over the window an explanation reads (services/bench/explain).
KEPT_SIGNALS = (
    "kv_cache_usage",
    "requests_waiting",
    "requests_running",
    "preemptions_per_s",
    "prompt_tokens_per_s",
    "generation_tokens_per_s",
    "spec_decode_acceptance",
)


def _usable(rows: Sequence[object]) -> list[SampleValues]:
    return [values for values in rows if isinstance(values, dict) and not values.get("_error")]


def _series(rows: Sequence[object]) -> dict[str, list[float]]:
    """Each kept signal's values, sample by sample (a sample without it adds nothing)."""
    series: dict[str, list[float]] = {}
    for values in _usable(rows):
        for key in KEPT_SIGNALS:
            found = _gauge(values, key)
            if found is not None:
                series.setdefault(key, []).append(found)
    return series


def _hit_rate(rows: Sequence[object]) -> float | None:
    """The prefix-cache hit rate over the window, each sample weighted by its prompt tokens/s."""
    hits: list[tuple[float, float]] = []
    for values in _usable(rows):
        rate = _gauge(values, "prefix_cache_hit_rate")
        if rate is not None:
            weight = _gauge(values, "prompt_tokens_per_s")
            hits.append((rate, weight if weight is not None and weight > 0 else 0.0))
    if not hits:
        return None
    total_weight = sum(w for _, w in hits)
    if total_weight > 0:
        return sum(r * w for r, w in hits) / total_weight
    return sum(r for r, _ in hits) / len(hits)


def summarize_engine_samples(rows: Sequence[object]) -> EngineMetrics:
    """One engine's metrics over a run's window, from the normalised samples recorded with it
    (services/engines/normalise.py): what an explanation of the run reads (services/bench/explain)
    beside the prefix-cache hit rate and KV usage the tables show. Gauges are taken at each
    sample (about every 0.5 s); each figure is None when the engine reported no such signal."""
    series = _series(rows)
    hit_rate = _hit_rate(rows)

    def mean(key: str) -> float | None:
        found = series.get(key)
        return sum(found) / len(found) if found else None

    def most(key: str) -> float | None:
        found = series.get(key)
        return max(found) if found else None

    def share(key: str, above: float) -> float | None:
        found = series.get(key)
        return sum(1 for v in found if v >= above) / len(found) if found else None

    usage = series.get("kv_cache_usage", [])
    figures: JsonOut = {
        "prefix_cache_hit_rate": hit_rate,
        "kv_cache_usage_max": most("kv_cache_usage"),
        "kv_cache_usage_mean": mean("kv_cache_usage"),
        "kv_cache_usage_p90": percentile(usage, 90) if usage else None,
        "kv_cache_near_full_share": share("kv_cache_usage", KV_NEAR_FULL),
        # The engine's own word that requests waited in its queue (llama.cpp: requests_deferred),
        # which tells its queue from the rest where it does not time it (time_split.engine_queue).
        "requests_waiting_max": most("requests_waiting"),
        "requests_waiting_mean": mean("requests_waiting"),
        # The share of samples with any request waiting (a sample is one instant, not a request).
        "requests_waiting_share": share("requests_waiting", 0.5),
        "requests_running_max": most("requests_running"),
        "requests_running_mean": mean("requests_running"),
        "preemptions_per_s_max": most("preemptions_per_s"),
        "preempting_share": share("preemptions_per_s", 1e-9),
        "prompt_tokens_per_s_mean": mean("prompt_tokens_per_s"),
        "generation_tokens_per_s_mean": mean("generation_tokens_per_s"),
        "spec_decode_acceptance_mean": mean("spec_decode_acceptance"),
        "samples": len(rows),
    }
    return EngineMetrics(figures)
