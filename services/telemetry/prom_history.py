"""The engines' own history from a team's Prometheus: the same normalised signals as the
live scraper (KV-cache usage, prefix-cache hit rate, queues, token rates, TTFT/ITL/E2E
percentiles), for any past window, with the GPUs' dcgm-exporter series beside them.

Each adapter's declarative specs (`normalise.Gauge`, `CounterRate`, `Quantile`...) are
translated into PromQL: counters through `rate`/`increase` (Prometheus itself handles
counter resets), histograms through `histogram_quantile` over `rate` of the buckets with
every label but `le` summed away. The first alternative whose metrics Prometheus holds for
that engine is used, as the live scraper does with a scrape; a signal with none is "not
reported by <engine>". All signals of one engine travel in one query (`prom_api.signals_query`).

Engines are matched to registered endpoints by their scrape target (the target whose
scrape URL is the engine's metrics URL; else `instance` = the metrics URL's host:port), or
by hand: SHOOTOUT_PROMETHEUS_ENGINES="name=selector; name2=selector" for engines whose
labels differ (behind a proxy, relabelled in Kubernetes).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC
from typing import Any
from urllib.parse import urlsplit

import numpy as np

from services.core.config import get_settings
from services.core.errors import NotFoundError, ValidationError
from services.core.json_types import ForeignJson, JsonOut
from services.engines import get_adapter
from services.engines.normalise import (
    CounterRate,
    CounterRatio,
    Gauge,
    GaugeRatio,
    HistogramMean,
    Metric,
    Quantile,
    Spec,
)
from services.engines.registry import adapters
from services.engines.signals import ENGINE_SIGNAL_NAMES, GPU_SIGNAL_NAMES, SIGNALS, not_reported
from services.telemetry import prom_api
from services.telemetry.gpu import dcgm_source
from services.telemetry.prom_api import PromServer, quote

#: The shortest rate window: Prometheus needs two samples inside it, and teams scrape
#: every 15-30 s (the live scraper's latency window is 60 s too).
DEFAULT_RATE_WINDOW_S = 60.0
_AGG = {"sum": "sum", "max": "max", "min": "min", "mean": "avg"}


@dataclass(frozen=True)
class PromEngine:
    """An engine as Prometheus knows it: `selector` picks its series."""

    name: str
    kind: str
    label: str
    selector: str
    matched_by: str

    @property
    def source(self) -> str:
        return f"engine:{self.name}"


@dataclass
class HistorySeries:
    """One source on the query's time grid (NaN: no data at that step)."""

    source: str
    kind: str
    label: str
    ts: np.ndarray
    signals: dict[str, np.ndarray]
    not_reported: dict[str, str] = field(default_factory=dict)
    notes: dict[str, str] = field(default_factory=dict)
    selector: str = ""
    matched_by: str = ""
    error: str | None = None

    def points(self, name: str) -> list[float | None]:
        """A signal's value at each step of the grid (None: no data at that step)."""
        return [None if np.isnan(v) else float(v) for v in self.signals[name]]


@dataclass
class PromHistory:
    server: PromServer
    start_ts: float
    end_ts: float
    step_s: float
    rate_window_s: float
    series: list[HistorySeries]
    messages: list[str]

    def to_json(self) -> JsonOut:
        sources = []
        for item in self.series:
            signals = {}
            for name in item.signals:
                points = [[float(t), v] for t, v in zip(item.ts, item.points(name), strict=True)]
                signals[name] = {"unit": SIGNALS[name].unit if name in SIGNALS else "", "points": points}
            sources.append(
                {
                    "source": item.source,
                    "kind": item.kind,
                    "label": item.label,
                    "selector": item.selector,
                    "matched_by": item.matched_by,
                    "signals": signals,
                    "not_reported": item.not_reported,
                    "notes": item.notes,
                }
            )
        return {
            "prometheus": self.server.url,
            "selector": self.server.selector,
            "start": self.start_ts,
            "end": self.end_ts,
            "step_s": self.step_s,
            "rate_window_s": self.rate_window_s,
            "sources": sources,
            "messages": self.messages,
        }


# --- matching engines to Prometheus targets ---------------------------------------------


def parse_engine_mapping(text: str) -> dict[str, str]:
    """`name=selector; name2=selector` -> {name: canonical selector}."""
    mapping: dict[str, str] = {}
    for entry in (text or "").split(";"):
        if not entry.strip():
            continue
        name, equals, selector = entry.partition("=")
        if not equals or not name.strip() or not selector.strip():
            raise ValidationError(
                f'The engine mapping {entry.strip()!r} is not name=selector (e.g. vllm-prod=job="vllm").'
            )
        mapping[name.strip()] = prom_api.parse_selector(selector)
    return mapping


def configured_mapping() -> dict[str, str]:
    return parse_engine_mapping(get_settings().prometheus_engines)


def _host_port(url: str) -> str | None:
    parts = urlsplit(url)
    if not parts.hostname:
        return None
    port = parts.port or (443 if parts.scheme == "https" else 80)
    return f"{parts.hostname}:{port}"


def _same_url(a: str, b: str) -> bool:
    return a.rstrip("/").replace("://localhost:", "://127.0.0.1:") == b.rstrip("/").replace(
        "://localhost:", "://127.0.0.1:"
    )


def detect_kind(names: set[str]) -> str:
    """The engine kind whose metric prefixes appear among `names` ("openai" when none)."""
    for adapter in adapters():
        if adapter.metric_markers and any(n.startswith(adapter.metric_markers) for n in names):
            return adapter.kind
    return "openai"


def registered_engines(
    server: PromServer, engine_names: Sequence[str], mapping: dict[str, str] | None = None
) -> list[PromEngine]:
    """Registered engines, each with the selector of its series in Prometheus."""
    # CLI start: `shootout history` asks Prometheus only; the database (0.2 s) loads when a run or a
    # registered engine is named.
    from services.engines.endpoints import get_engine

    mapping = configured_mapping() if mapping is None else mapping
    targets: list[ForeignJson] | None = None
    result = []
    for name in engine_names:
        record = get_engine(name)
        adapter = get_adapter(record.kind)
        if name in mapping:
            result.append(PromEngine(name, record.kind, adapter.label, mapping[name], "manual mapping"))
            continue
        metrics_url = record.resolved_metrics_url or record.base_url
        if targets is None:
            targets = prom_api.scrape_targets(server)
        target = next((t for t in targets if _same_url(str(t.get("scrapeUrl", "")), metrics_url)), None)
        if target is not None:
            labels = target.get("labels") or {}
            selector = ",".join(
                f"{k}={quote(str(labels[k]))}" for k in ("job", "instance") if k in labels
            )
            result.append(PromEngine(name, record.kind, adapter.label, selector, "scrape target"))
        elif (host_port := _host_port(metrics_url)) is not None:
            result.append(
                PromEngine(
                    name, record.kind, adapter.label, f"instance={quote(host_port)}", "instance label"
                )
            )
    return result


def job_engines(server: PromServer, job: str, start_ts: float, end_ts: float) -> list[PromEngine]:
    """Every instance of scrape job `job` as an engine named after its instance."""
    base = prom_api.join_selectors(f"job={quote(job)}", server.selector)
    instances = prom_api.label_values(server, "instance", base, start_ts, end_ts)
    if not instances:
        raise NotFoundError(f"Prometheus at {server.url} has no series of job {job!r} in the window.")
    return [
        PromEngine(i, "", "", f"job={quote(job)},instance={quote(i)}", "job label") for i in instances
    ]


# --- specs -> PromQL ----------------------------------------------------------------------


def _series(m: Metric, name: str, selector: str) -> str:
    matchers = [selector] if selector else []
    for label, values in m.where:
        if len(values) == 1:
            matchers.append(f"{label}={quote(values[0])}")
        else:
            matchers.append(f"{label}=~{quote('|'.join(re.escape(v) for v in values))}")
    return f"{name}{{{','.join(matchers)}}}"


def _scaled(expression: str, scale: float) -> str:
    return expression if scale == 1.0 else f"({expression}) * {scale!r}"


def _counter(m: Metric, names: set[str]) -> str | None:
    return next((c for c in (m.name, f"{m.name}_total") if c in names), None)


def spec_expression(spec: Spec, names: set[str], selector: str, window: str) -> str | None:
    """PromQL for one spec over the series Prometheus holds (`names`), or None when one
    of its metrics is not there."""

    def counter_sum(parts: tuple[Metric, ...], function: str) -> str | None:
        terms = []
        for m in parts:
            name = _counter(m, names)
            if name is None:
                return None
            terms.append(_scaled(f"sum({function}({_series(m, name, selector)}[{window}]))", m.scale))
        return " + ".join(terms)

    if isinstance(spec, Gauge):
        if spec.metric.name not in names:
            return None
        return _scaled(
            f"{_AGG[spec.agg]}({_series(spec.metric, spec.metric.name, selector)})", spec.metric.scale
        )
    if isinstance(spec, GaugeRatio):
        if spec.num.name not in names or spec.den.name not in names:
            return None
        num = _scaled(f"sum({_series(spec.num, spec.num.name, selector)})", spec.num.scale)
        den = _scaled(f"sum({_series(spec.den, spec.den.name, selector)})", spec.den.scale)
        return f"({num}) / ({den})"
    if isinstance(spec, CounterRate):
        return counter_sum(spec.parts, "rate")
    if isinstance(spec, CounterRatio):
        counted, base = counter_sum(spec.num, "increase"), counter_sum(spec.den, "increase")
        return None if counted is None or base is None else f"({counted}) / ({base})"
    m = spec.metric
    if f"{m.name}_bucket" not in names:
        return None
    if isinstance(spec, Quantile):
        buckets = f"sum by (le) (rate({_series(m, m.name + '_bucket', selector)}[{window}]))"
        return _scaled(f"histogram_quantile({spec.q!r}, {buckets})", m.scale)
    if isinstance(spec, HistogramMean):
        total = f"sum(rate({_series(m, m.name + '_sum', selector)}[{window}]))"
        count = f"sum(rate({_series(m, m.name + '_count', selector)}[{window}]))"
        return _scaled(f"{total} / {count}", m.scale)
    return None


def engine_expressions(
    kind: str, label: str, names: set[str], selector: str, window: str, signals: Sequence[str]
) -> tuple[dict[str, str], dict[str, str], dict[str, str]]:
    """(signal -> PromQL, signal -> reason it is missing, signal -> note) for one engine."""
    signal_map = get_adapter(kind).telemetry_signals
    expressions, missing, notes = {}, {}, {}
    for signal in signals:
        chosen = None
        for spec in signal_map.get(signal, ()):
            expression = spec_expression(spec, names, selector, window)
            if expression is not None:
                chosen = (spec, expression)
                break
        if chosen is None:
            missing[signal] = not_reported(label)
            continue
        expressions[signal] = chosen[1]
        if chosen[0].note:
            notes[signal] = chosen[0].note
    return expressions, missing, notes


# --- the history ---------------------------------------------------------------------------


def _grid(start_ts: float, end_ts: float, step_s: float) -> np.ndarray:
    return start_ts + step_s * np.arange(int((end_ts - start_ts) / step_s + 1e-9) + 1)


def _place(
    grid: np.ndarray, start_ts: float, step_s: float, points: list[tuple[float, float]]
) -> np.ndarray:
    """The points on the grid (Prometheus answers at start + k * step exactly)."""
    values = np.full(len(grid), np.nan)
    if points:
        array = np.asarray(points, dtype=float)
        index = np.rint((array[:, 0] - start_ts) / step_s).astype(int)
        keep = (index >= 0) & (index < len(grid))
        values[index[keep]] = array[keep, 1]
    return values


def _engine_series(
    server: PromServer,
    engine: PromEngine,
    start_ts: float,
    end_ts: float,
    step_s: float,
    window: str,
    signals: Sequence[str],
    grid: np.ndarray,
) -> tuple[HistorySeries | None, str | None]:
    selector = prom_api.join_selectors(engine.selector, server.selector)
    names = prom_api.metric_names(server, selector, start_ts, end_ts)
    if not names:
        return None, (
            f"Prometheus at {server.url} has no series for {engine.name} ({{{selector}}}, matched by "
            f"{engine.matched_by}) in the window; map it by hand with SHOOTOUT_PROMETHEUS_ENGINES if its labels differ."
        )
    kind = (
        engine.kind if engine.kind and get_adapter(engine.kind).telemetry_signals else detect_kind(names)
    )
    label = get_adapter(kind).label
    expressions, missing, notes = engine_expressions(kind, label, names, selector, window, signals)
    values: dict[str, np.ndarray] = {}
    if expressions:
        answer = prom_api.query_range(
            server, prom_api.signals_query(expressions), start_ts, end_ts, step_s
        )
        for item in answer:
            signal = item.labels.get(prom_api.SIGNAL_LABEL)
            if signal in expressions:
                values[signal] = _place(grid, start_ts, step_s, item.points)
        for signal, array in values.items():
            info = SIGNALS.get(signal)
            if info is not None and info.unit == "ratio":
                bad = np.isfinite(array) & ((array < -1e-9) | (array > 1 + 1e-9))
                if bad.any():
                    notes[signal] = (
                        f"Prometheus answered {array[bad][0]:g}, which cannot be right; not shown"
                    )
                array[bad] = np.nan
                np.clip(array, 0.0, 1.0, out=array)
        for signal in expressions:
            values.setdefault(signal, np.full(len(grid), np.nan))  # exposed, no data in the window
    series = HistorySeries(
        engine.source,
        kind,
        label,
        grid,
        values,
        missing,
        notes,
        selector=selector,
        matched_by=engine.matched_by,
    )
    return series, None


def gpu_series(
    server: PromServer,
    start_ts: float,
    end_ts: float,
    step_s: float,
    grid: np.ndarray,
    signals: Sequence[str] = (),
) -> list[HistorySeries]:
    """dcgm-exporter GPUs on the grid, one source per host and GPU index."""
    wanted = [s for s in (signals or GPU_SIGNAL_NAMES) if s in prom_api.GPU_QUERIES]
    if not wanted:
        return []
    query = prom_api.signals_query({s: prom_api.gpu_query(s, server.selector) for s in wanted})
    by_source: dict[str, HistorySeries] = {}
    for item in prom_api.query_range(server, query, start_ts, end_ts, step_s):
        signal = item.labels.get(prom_api.SIGNAL_LABEL)
        if signal not in wanted:
            continue
        host = item.labels.get("hostname") or item.labels.get("instance", "remote").split(":")[0]
        source = dcgm_source(host, item.labels.get("gpu", "0"))
        entry = by_source.get(source)
        if entry is None:
            entry = by_source[source] = HistorySeries(
                source, "gpu", item.labels.get("modelname", "GPU"), grid, {}
            )
        entry.signals[signal] = _place(grid, start_ts, step_s, item.points)
    return [by_source[s] for s in sorted(by_source)]


def history(
    server: PromServer,
    start_ts: float,
    end_ts: float,
    step_s: float | None = None,
    engine_names: Sequence[str] = (),
    job: str | None = None,
    signals: Sequence[str] = (),
    gpus: bool = True,
    rate_window_s: float = DEFAULT_RATE_WINDOW_S,
    mapping: dict[str, str] | None = None,
) -> PromHistory:
    """Engines (registered ones by name, or every instance of a scrape job) and GPUs over a
    window, normalised. `signals` narrows what is asked (all when empty)."""
    unknown = [s for s in signals if s not in SIGNALS]
    if unknown:
        raise ValidationError(f"Unknown signal(s) {', '.join(unknown)}; known: {', '.join(SIGNALS)}.")
    step = step_s if step_s is not None else prom_api.step_for(start_ts, end_ts)
    prom_api.check_points(start_ts, end_ts, step)
    window_s = max(rate_window_s, step)
    window = f"{round(window_s * 1000)}ms"
    engine_signals = [s for s in (signals or ENGINE_SIGNAL_NAMES) if SIGNALS[s].group == "engine"]
    gpu_signals = [s for s in (signals or GPU_SIGNAL_NAMES) if SIGNALS[s].group == "gpu"]
    engines = registered_engines(server, engine_names, mapping) if engine_names else []
    if job:
        engines += job_engines(server, job, start_ts, end_ts)
    grid = _grid(start_ts, end_ts, step)
    calls: list[Any] = (
        [
            (
                lambda e=engine: _engine_series(
                    server, e, start_ts, end_ts, step, window, engine_signals, grid
                )
            )
            for engine in engines
        ]
        if engine_signals
        else []
    )
    if gpus and gpu_signals:
        calls.append(lambda: gpu_series(server, start_ts, end_ts, step, grid, gpu_signals))
    results = prom_api.run_parallel(calls)
    series: list[HistorySeries] = []
    messages: list[str] = []
    for result in results:
        if isinstance(result, list):
            series.extend(result)
        else:
            item, message = result
            if item is not None:
                series.append(item)
            if message:
                messages.append(message)
    return PromHistory(server, start_ts, end_ts, step, window_s, series, messages)


@dataclass(frozen=True)
class RunWindow:
    run_id: int
    start_ts: float
    end_ts: float
    engine_names: list[str]


def run_window(run_id: int) -> RunWindow:
    """A stored run's window (its start and end times, imported runs included) and its engines."""
    # CLI start: `shootout history` asks Prometheus only; the database (0.2 s) loads when a run or a
    # registered engine is named.
    from db.models import Run
    from db.session import session_scope
    from services.runstate import blind

    with session_scope() as session:
        run = session.get(Run, run_id)
        if run is None:
            raise NotFoundError(f"Run #{run_id} does not exist.")
        if blind.run_hidden(session, run):  # its engines' charts would name them
            raise ValidationError(f"Run #{run_id} is a blind exchange: {blind.HIDDEN_NOTE}.")
        started, finished = run.started_at, run.finished_at
        names = [n.strip() for n in (run.engine_names or "").split(",") if n.strip()]
    if started is None or finished is None:
        raise ValidationError(
            f"Run #{run_id} has no {'start' if started is None else 'end'} time, so it has no window to ask Prometheus for."
        )
    start_ts, end_ts = (
        t.replace(tzinfo=UTC).timestamp() if t.tzinfo is None else t.timestamp()
        for t in (started, finished)
    )
    if end_ts <= start_ts:
        end_ts = start_ts + 1.0
    return RunWindow(run_id, start_ts, end_ts, names)


def registered_names(names: Sequence[str]) -> tuple[list[str], list[str]]:
    """(registered, unknown) among engine names."""
    # CLI start: `shootout history` asks Prometheus only; the database (0.2 s) loads when a run or a
    # registered engine is named.
    from services.engines.endpoints import list_engines

    known = {e.name for e in list_engines()}
    return [n for n in names if n in known], [n for n in names if n not in known]
