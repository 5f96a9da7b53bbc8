"""A team's Prometheus server as a telemetry source: its HTTP API (`query_range`, metric
and label names, scrape targets), the connection settings (URL, a bearer token read from
an environment variable, a label selector every query carries), and GPU history from the
dcgm-exporter series it scrapes (the same signals and source names as `gpu.DcgmSampler`).

Engine history (the engines' own series, normalised) is `prom_history`.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from services.core import http
from services.core.config import get_settings
from services.core.errors import EngineError, ValidationError
from services.core.json_types import ForeignJson
from services.core.urls import http_url

MAX_POINTS = 11_000  # Prometheus refuses more than 11,000 points per series
#: 11,000 points of 30 series at ~40 bytes each, with room to spare.
MAX_ANSWER_BYTES = 64 * 1024 * 1024
DEFAULT_TIMEOUT_S = 10.0
#: The label that tells apart the signals of one combined query (`signals_query`).
SIGNAL_LABEL = "shootout_signal"

_MATCHER = re.compile(r'\s*([A-Za-z_][A-Za-z0-9_]*)\s*(=~|!~|!=|=)\s*"((?:[^"\\]|\\.)*)"\s*')


def parse_selector(text: str) -> str:
    """A label selector (`namespace="prod", cluster=~"eu-.*"`, braces optional) in the
    canonical form queries splice in (`namespace="prod",cluster=~"eu-.*"`); "" for none.
    Raises ValidationError for anything that is not a list of label matchers (it is
    pasted into PromQL, so nothing else may get through)."""
    body = text.strip()
    if body.startswith("{") and body.endswith("}"):
        body = body[1:-1]
    matchers, position = [], 0
    while position < len(body):
        match = _MATCHER.match(body, position)
        if match is None:
            raise ValidationError(
                f'The label selector {text.strip()!r} is not a list of label matchers like namespace="prod", job=~"vllm.*".'
            )
        matchers.append(f'{match.group(1)}{match.group(2)}"{match.group(3)}"')
        position = match.end()
        if position < len(body):
            if body[position] != ",":
                raise ValidationError(
                    f"The label selector {text.strip()!r}: matchers are separated by commas."
                )
            position += 1
    return ",".join(matchers)


def quote(value: str) -> str:
    """A PromQL string literal."""
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def join_selectors(*parts: str) -> str:
    return ",".join(p for p in parts if p)


@dataclass(frozen=True)
class PromServer:
    """Where and how to ask: `selector` (canonical, see `parse_selector`) narrows every
    query (a shared Prometheus scrapes other teams too); `token_env` names the environment
    variable that holds a bearer token (the token itself never reaches a form or a log)."""

    url: str
    selector: str = ""
    token_env: str | None = None
    timeout_s: float = DEFAULT_TIMEOUT_S

    @classmethod
    def from_input(
        cls,
        url: str,
        selector: str = "",
        token_env: str | None = None,
        timeout_s: float = DEFAULT_TIMEOUT_S,
    ) -> PromServer:
        text = (url or "").strip()
        if not text:
            raise ValidationError("Give the Prometheus server's URL (http://host:9090).")
        return cls(
            http_url(text, "Prometheus URL").rstrip("/"),
            parse_selector(selector or ""),
            (token_env or "").strip() or None,
            timeout_s,
        )

    def headers(self) -> dict[str, str]:
        if not self.token_env:
            return {}
        token = os.environ.get(self.token_env, "").strip()
        if not token:
            raise ValidationError(
                f"The Prometheus token variable {self.token_env} is not set (or empty)."
            )
        return {"Authorization": f"Bearer {token}"}


def configured_server() -> PromServer | None:
    """The operator's Prometheus: SHOOTOUT_PROMETHEUS_URL, SHOOTOUT_PROMETHEUS_SELECTOR and
    SHOOTOUT_PROMETHEUS_TOKEN_ENV (the name of the variable holding a bearer token)."""
    settings = get_settings()
    if not settings.prometheus_url:
        return None
    return PromServer.from_input(
        settings.prometheus_url, settings.prometheus_selector, settings.prometheus_token_env
    )


def as_server(server: PromServer | str) -> PromServer:
    return server if isinstance(server, PromServer) else PromServer.from_input(server)


def check_points(start_ts: float, end_ts: float, step_s: float) -> None:
    """Refuse a window Prometheus would refuse, saying which step would do."""
    if end_ts <= start_ts:
        raise ValidationError("The end of the window must be after its start.")
    if step_s <= 0:
        raise ValidationError("The step must be a positive number of seconds.")
    points = int((end_ts - start_ts) / step_s) + 1
    if points > MAX_POINTS:
        least = (end_ts - start_ts) / (MAX_POINTS - 1)
        raise ValidationError(
            f"A window of {(end_ts - start_ts) / 3600:g} h at a {step_s:g} s step is {points:,} points a series; "
            f"Prometheus answers at most {MAX_POINTS:,}: use a step of at least {least:.0f} s or a shorter window."
        )


def step_for(start_ts: float, end_ts: float, points: int = 1000, least_s: float = 15.0) -> float:
    """A step that draws the window in about `points` points (never finer than `least_s`)."""
    return max(least_s, (end_ts - start_ts) / points)


def api_get(server: PromServer, path: str, params: http.QueryParams) -> Any:
    """GET an API path and return its `data`, or raise an EngineError that says what went wrong."""
    url = server.url + path
    try:
        response = http.fetch(
            "GET",
            url,
            params=params,
            headers=server.headers(),
            deadline_s=server.timeout_s,
            max_bytes=MAX_ANSWER_BYTES,
        )
    except http.HttpDeadlineExceeded as error:
        raise type(error)(
            f"Prometheus at {server.url} did not answer within {server.timeout_s:g} s (slow or overloaded).",
            url,
        ) from error
    except http.HttpError as error:
        raise type(error)(f"Prometheus at {server.url}: {error.detail}", url) from error
    if response.status in (401, 403):
        hint = (
            f"check the token in {server.token_env}"
            if server.token_env
            else "it wants a bearer token (SHOOTOUT_PROMETHEUS_TOKEN_ENV)"
        )
        raise EngineError(
            f"Prometheus at {server.url} refused the request (HTTP {response.status}): {hint}."
        )
    try:
        body: Any = response.json()
    except http.HttpError:
        raise EngineError(
            f"Prometheus at {server.url} answered HTTP {response.status} without JSON (is it Prometheus?)."
        ) from None
    if not isinstance(body, dict):
        raise EngineError(
            f"Prometheus at {server.url} answered HTTP {response.status} with JSON that is not an API answer."
        )
    if response.status != 200 or body.get("status") != "success":
        raise EngineError(
            f"Prometheus at {server.url}: {body.get('error') or f'HTTP {response.status}'}"
        )
    return body.get("data")


@dataclass(frozen=True)
class RangeSeries:
    labels: dict[str, str]
    points: list[tuple[float, float]]


def query_range(
    server: PromServer | str,
    query: str,
    start_ts: float,
    end_ts: float,
    step_s: float,
    timeout_s: float | None = None,
) -> list[RangeSeries]:
    """One `query_range` call; label names come back lower-cased (dcgm's Hostname/hostname).
    Values that are not numbers (NaN: nothing to divide) are dropped."""
    server = as_server(server)
    if timeout_s is not None:
        server = PromServer(server.url, server.selector, server.token_env, timeout_s)
    check_points(start_ts, end_ts, step_s)
    params = {"query": query, "start": f"{start_ts:.3f}", "end": f"{end_ts:.3f}", "step": f"{step_s:g}"}
    data = api_get(server, "/api/v1/query_range", params) or {}
    if not isinstance(data, dict) or data.get("resultType") != "matrix":
        kind = data.get("resultType") if isinstance(data, dict) else type(data).__name__
        raise EngineError(f"Prometheus at {server.url} answered a {kind!r}, not a range matrix.")
    result = []
    for item in data.get("result") or []:
        labels = {str(k).lower(): str(v) for k, v in (item.get("metric") or {}).items()}
        points = []
        for ts, value in item.get("values") or []:
            try:
                number = float(value)
            except (TypeError, ValueError):
                continue
            if math.isfinite(number):
                points.append((float(ts), number))
        result.append(RangeSeries(labels, points))
    return result


def signals_query(expressions: dict[str, str]) -> str:
    """One query for several signals: each expression tagged with its signal name in
    SIGNAL_LABEL, joined with `or` (one round trip instead of one per signal)."""
    return " or ".join(
        f'label_replace({expression}, "{SIGNAL_LABEL}", "{signal}", "", "")'
        for signal, expression in expressions.items()
    )


def run_parallel(calls: Sequence[Any], workers: int = 8) -> list[Any]:
    """Run argument-less callables concurrently (HTTP waits overlap), results in order; the
    first exception is raised."""
    if len(calls) <= 1:
        return [call() for call in calls]
    with ThreadPoolExecutor(max_workers=min(workers, len(calls))) as pool:
        return [future.result() for future in [pool.submit(call) for call in calls]]


def metric_names(server: PromServer, selector: str, start_ts: float, end_ts: float) -> set[str]:
    """Names of the metrics with series matching `selector` in the window."""
    params = (("match[]", "{" + selector + "}"), ("start", f"{start_ts:.3f}"), ("end", f"{end_ts:.3f}"))
    return {str(name) for name in api_get(server, "/api/v1/label/__name__/values", params) or []}


def label_values(
    server: PromServer, label: str, selector: str, start_ts: float, end_ts: float
) -> list[str]:
    params = (("match[]", "{" + selector + "}"), ("start", f"{start_ts:.3f}"), ("end", f"{end_ts:.3f}"))
    return sorted(str(v) for v in api_get(server, f"/api/v1/label/{label}/values", params) or [])


def scrape_targets(server: PromServer) -> list[ForeignJson]:
    """The active scrape targets: their scrape URL and labels (job, instance, ...)."""
    data = api_get(server, "/api/v1/targets", {"state": "active"}) or {}
    return [t for t in data.get("activeTargets") or [] if isinstance(t, dict)]


# --- GPU history from dcgm-exporter series ----------------------------------------------

#: GPU signal -> PromQL over dcgm-exporter series (FB fields are MiB); `{s}` takes the selector.
GPU_QUERIES: dict[str, str] = {
    "gpu_memory_used_bytes": "DCGM_FI_DEV_FB_USED{s} * 1048576",
    "gpu_memory_total_bytes": "(DCGM_FI_DEV_FB_USED{s} + DCGM_FI_DEV_FB_FREE{s} + DCGM_FI_DEV_FB_RESERVED{s}) * 1048576",
    "gpu_utilization_pct": "DCGM_FI_DEV_GPU_UTIL{s}",
    "gpu_memory_activity_pct": "DCGM_FI_DEV_MEM_COPY_UTIL{s}",
    "gpu_power_w": "DCGM_FI_DEV_POWER_USAGE{s}",
    "gpu_temperature_c": "DCGM_FI_DEV_GPU_TEMP{s}",
    "gpu_sm_clock_mhz": "DCGM_FI_DEV_SM_CLOCK{s}",
    "gpu_memory_clock_mhz": "DCGM_FI_DEV_MEM_CLOCK{s}",
}


def gpu_query(signal: str, selector: str = "") -> str:
    return GPU_QUERIES[signal].replace("{s}", "{" + selector + "}" if selector else "")
