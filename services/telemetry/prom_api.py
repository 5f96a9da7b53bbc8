"""GPU history from a team's Prometheus server (`/api/v1/query_range`) that scrapes
dcgm-exporter: the same GPU signals and source names as `gpu.DcgmSampler`, for any past
window, as a `query.SampleWindow`-shaped DataFrame.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

from services import http
from services.errors import EngineError, ValidationError
from services.telemetry.gpu import dcgm_source

#: GPU signal -> PromQL over dcgm-exporter series (FB fields are MiB).
GPU_QUERIES: dict[str, str] = {
    "gpu_memory_used_bytes": "DCGM_FI_DEV_FB_USED * 1048576",
    "gpu_memory_total_bytes": "(DCGM_FI_DEV_FB_USED + DCGM_FI_DEV_FB_FREE + DCGM_FI_DEV_FB_RESERVED) * 1048576",
    "gpu_utilization_pct": "DCGM_FI_DEV_GPU_UTIL",
    "gpu_memory_activity_pct": "DCGM_FI_DEV_MEM_COPY_UTIL",
    "gpu_power_w": "DCGM_FI_DEV_POWER_USAGE",
    "gpu_temperature_c": "DCGM_FI_DEV_GPU_TEMP",
    "gpu_sm_clock_mhz": "DCGM_FI_DEV_SM_CLOCK",
    "gpu_memory_clock_mhz": "DCGM_FI_DEV_MEM_CLOCK",
}
MAX_POINTS = 11_000  # Prometheus refuses more than 11 000 points per series
#: 11,000 points of 30 series at ~40 bytes each, with room to spare.
MAX_ANSWER_BYTES = 64 * 1024 * 1024


@dataclass(frozen=True)
class RangeSeries:
    labels: dict[str, str]
    points: list[tuple[float, float]]


def query_range(
    base_url: str, query: str, start_ts: float, end_ts: float, step_s: float, timeout_s: float = 10.0
) -> list[RangeSeries]:
    """One `query_range` call; label names come back lower-cased (dcgm's Hostname/hostname)."""
    if end_ts <= start_ts:
        raise ValidationError("The end of the window must be after its start.")
    step_s = max(step_s, (end_ts - start_ts) / MAX_POINTS)
    url = base_url.rstrip("/") + "/api/v1/query_range"
    params = {"query": query, "start": f"{start_ts:.3f}", "end": f"{end_ts:.3f}", "step": f"{step_s:g}"}
    try:
        response = http.fetch("GET", url, params=params, deadline_s=timeout_s, max_bytes=MAX_ANSWER_BYTES)
    except http.HttpError as error:
        raise type(error)(f"Prometheus at {base_url}: {error.detail}", url) from error
    try:
        body: Any = response.json()
    except http.HttpError:
        raise EngineError(f"Prometheus at {base_url} answered HTTP {response.status} without JSON.") from None
    if not isinstance(body, dict):
        raise EngineError(f"Prometheus at {base_url} answered HTTP {response.status} with JSON that is not an API answer.")
    if response.status != 200 or body.get("status") != "success":
        raise EngineError(f"Prometheus at {base_url}: {body.get('error') or f'HTTP {response.status}'}")
    data = body.get("data") or {}
    if data.get("resultType") != "matrix":
        raise EngineError(f"Prometheus at {base_url} answered a {data.get('resultType')!r}, not a range matrix.")
    result = []
    for item in data.get("result") or []:
        labels = {str(k).lower(): str(v) for k, v in (item.get("metric") or {}).items()}
        points = []
        for ts, value in item.get("values") or []:
            try:
                points.append((float(ts), float(value)))
            except (TypeError, ValueError):
                continue
        result.append(RangeSeries(labels, points))
    return result


def gpu_history(
    base_url: str,
    start_ts: float,
    end_ts: float,
    step_s: float = 15.0,
    signals: Sequence[str] | None = None,
) -> pd.DataFrame:
    """GPU signals over a past window: columns ts, source, _kind, _label, _error and one
    per signal (the shape of `query.SampleWindow.frame`)."""
    wanted = list(signals or GPU_QUERIES)
    unknown = [s for s in wanted if s not in GPU_QUERIES]
    if unknown:
        raise ValidationError(f"No Prometheus query for {', '.join(unknown)}.")
    cells: dict[tuple[float, str], dict[str, Any]] = {}
    for signal in wanted:
        for series in query_range(base_url, GPU_QUERIES[signal], start_ts, end_ts, step_s):
            host = series.labels.get("hostname") or series.labels.get("instance", "remote").split(":")[0]
            source = dcgm_source(host, series.labels.get("gpu", "0"))
            for ts, value in series.points:
                row = cells.setdefault(
                    (ts, source),
                    {"ts": ts, "source": source, "_kind": "gpu", "_label": series.labels.get("modelname", "GPU"), "_error": None},
                )
                row[signal] = value
    if not cells:
        return pd.DataFrame(columns=["ts", "source", "_kind", "_label", "_error", *wanted])
    frame = pd.DataFrame.from_records(list(cells.values()))
    return frame.sort_values(["ts", "source"], ignore_index=True)
