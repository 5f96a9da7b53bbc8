"""Each engine's own cumulative counters at a benchmark step's first and last instant (issue 54).

The engine metrics recorded with a run are samples about every 0.5 s: a total taken between two
samples misses what happened before the first and after the last. Here the counters an
explanation reads (every counter input of the kind's signals, and its run-split histograms,
services/engines/run_split.py) are read once just before the step's first request and once just
after its last, so a total over the step is exact: the engine's own count of what it did in it.

Both reads run in a thread outside the measured window, each bounded
(services/engines/metrics_read.py) and parsed by prometheus-client's parser
(services/engines/prometheus.py). A total that went down between the two (the engine restarted)
gives no counts at all: `reset` says so.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from itertools import pairwise

from services.bench.results import EngineMetrics
from services.bench.spec import EngineTarget
from services.core import units
from services.core.json_types import JsonOut
from services.engines import get_adapter
from services.engines.metrics_read import MetricsReadError, read_metrics_text
from services.engines.normalise import Metric
from services.engines.prometheus import SeriesParser
from services.engines.run_split import RunSplit, WindowMean, series_key

#: A read of /metrics waits this long at most; a step never waits longer on its edges.
DEADLINE_S = 3.0


@dataclass(frozen=True)
class Edge:
    """One engine's totals at one instant: counters, and histograms as (sum, count)."""

    at: float
    counters: dict[str, float] = field(default_factory=dict)
    histograms: dict[str, tuple[float, float]] = field(default_factory=dict)
    error: str = ""


@dataclass(frozen=True)
class WindowCounts:
    """What one engine counted over one step: each total's increase between its two edges."""

    seconds: float
    counters: dict[str, float] = field(default_factory=dict)
    histograms: dict[str, tuple[float, float]] = field(default_factory=dict)
    #: A total went down between the edges (the engine restarted): no counts are given.
    reset: bool = False
    error: str = ""

    def to_json(self) -> JsonOut:
        out: JsonOut = {"seconds": self.seconds}
        if self.counters:
            out["counters"] = dict(self.counters)
        if self.histograms:
            out["histograms"] = {k: {"sum": s, "count": c} for k, (s, c) in self.histograms.items()}
        if self.reset:
            out["reset"] = True
        if self.error:
            out["error"] = self.error
        return out

    @classmethod
    def from_json(cls, value: object) -> WindowCounts | None:
        if not isinstance(value, Mapping):
            return None
        counters_in = value.get("counters")
        histograms_in = value.get("histograms")
        counters = {
            str(k): found
            for k, v in (counters_in.items() if isinstance(counters_in, Mapping) else ())
            if (found := units.number(v)) is not None
        }
        histograms: dict[str, tuple[float, float]] = {}
        for key, pair in histograms_in.items() if isinstance(histograms_in, Mapping) else ():
            if isinstance(pair, Mapping):
                total, count = units.number(pair.get("sum")), units.number(pair.get("count"))
                if total is not None and count is not None:
                    histograms[str(key)] = (total, count)
        error = value.get("error")
        return cls(
            seconds=units.number(value.get("seconds")) or 0.0,
            counters=counters,
            histograms=histograms,
            reset=value.get("reset") is True,
            error=str(error) if error else "",
        )

    def mean(self, part: WindowMean) -> tuple[float, float] | None:
        """(the mean per request, the requests counted) of one part, None when it counted none."""
        if part.histogram is not None:
            pair = self.histograms.get(series_key(part.histogram))
            total, count = pair if pair is not None else (None, None)
        else:
            total = self.counters.get(series_key(part.total)) if part.total else None
            count = self.counters.get(series_key(part.count)) if part.count else None
        if total is None or count is None or count <= 0:
            return None
        return total / count, count


@dataclass(frozen=True)
class RunSplitMeans:
    """The engine's own run-level split of a step: means per request over its window."""

    requests: int
    source: str
    queue_s: float | None = None
    ttft_s: float | None = None
    e2e_s: float | None = None

    def to_json(self) -> JsonOut:
        return {
            "requests": self.requests,
            "source": self.source,
            "queue_s": self.queue_s,
            "ttft_s": self.ttft_s,
            "e2e_s": self.e2e_s,
        }

    @classmethod
    def from_json(cls, value: object) -> RunSplitMeans | None:
        if not isinstance(value, Mapping):
            return None
        requests = units.number(value.get("requests"))
        if not requests:
            return None
        return cls(
            requests=int(requests),
            source=str(value.get("source") or ""),
            queue_s=units.number(value.get("queue_s")),
            ttft_s=units.number(value.get("ttft_s")),
            e2e_s=units.number(value.get("e2e_s")),
        )


def run_split_of(counts: WindowCounts | None, split: RunSplit | None) -> RunSplitMeans | None:
    """The run-level split of one step from its counts, None when the engine counted no request
    in it, restarted, or gave parts that cannot hold each other (its first token holds its queue,
    its whole request its first token: totals that say otherwise cannot be split)."""
    if counts is None or split is None or counts.reset:
        return None
    means = {name: counts.mean(part) for name, part in split.parts().items()}
    counted = [found[1] for found in means.values() if found is not None]
    if not counted:
        return None

    def of(name: str) -> float | None:
        found = means.get(name)
        return found[0] if found is not None else None

    nested = [value for value in (of("queue"), of("ttft"), of("e2e")) if value is not None]
    if any(a > b for a, b in pairwise(nested)):
        return None
    return RunSplitMeans(
        requests=int(max(counted)),
        source=split.source,
        queue_s=of("queue"),
        ttft_s=of("ttft"),
        e2e_s=of("e2e"),
    )


def series_of(target: EngineTarget) -> list[tuple[str, Metric]]:
    """The series read at each edge for one engine: its run split's, then every counter its
    signals read (prompt and generation tokens, preemptions, cache hits), each once."""
    adapter = get_adapter(target.kind)
    found: dict[str, tuple[str, Metric]] = {}
    split = adapter.run_split_for(target.model)
    for part in split.parts().values() if split is not None else ():
        for kind, m in part.series():
            found.setdefault(f"{kind}:{series_key(m)}", (kind, m))
    for specs in adapter.signals_for(target.model).values():
        for spec in specs:
            for kind, m in spec.inputs():
                if kind == "counter":
                    found.setdefault(f"counter:{series_key(m)}", ("counter", m))
    return list(found.values())


def read_edge(target: EngineTarget, metrics_url: str | None, now: float | None = None) -> Edge:
    """One engine's totals now (an Edge with an error when its metrics cannot be read)."""
    at = time.time() if now is None else now
    wanted = series_of(target)
    if not metrics_url or not wanted:
        return Edge(at=at, error="no metrics to read")
    try:
        text = read_metrics_text(metrics_url, target.api_key_env, DEADLINE_S)
    except MetricsReadError as error:
        return Edge(at=at, error=error.reason)
    return edge_of(text, wanted, at)


def edge_of(text: str, wanted: Sequence[tuple[str, Metric]], at: float) -> Edge:
    """The totals of the `wanted` series (`series_of`) on one metrics page."""
    keep = tuple(sorted({m.name for _kind, m in wanted}))
    try:
        families = SeriesParser(keep).parse(text)
    except ValueError as error:
        return Edge(at=at, error=f"unreadable metrics: {error}")
    counters: dict[str, float] = {}
    histograms: dict[str, tuple[float, float]] = {}
    for kind, m in wanted:
        if kind == "histogram":
            found = families.histogram(m.name, m.where)
            if found is not None:
                histograms[series_key(m)] = (found.sum * m.scale, found.count)
        else:
            value = families.counter(m.name, m.where)
            if value is not None:
                counters[series_key(m)] = value * m.scale
    return Edge(at=at, counters=counters, histograms=histograms)


def window(first: Edge, last: Edge) -> WindowCounts:
    """The increase of each total read at both edges."""
    seconds = round(max(0.0, last.at - first.at), 6)
    error = first.error or last.error
    if error:
        return WindowCounts(seconds=seconds, error=error)
    counters = {k: v - first.counters[k] for k, v in last.counters.items() if k in first.counters}
    histograms = {
        k: (s - first.histograms[k][0], c - first.histograms[k][1])
        for k, (s, c) in last.histograms.items()
        if k in first.histograms
    }
    # A total that went down: a restart, or an engine whose counters lie (a sum of times that
    # shrank while its count grew). Either way nothing over the window can be said.
    went_down = any(v < 0 for v in counters.values()) or any(
        s < 0 or c < 0 for s, c in histograms.values()
    )
    if went_down:
        return WindowCounts(seconds=seconds, reset=True)
    return WindowCounts(seconds=seconds, counters=counters, histograms=histograms)


class WindowMeter:
    """Reads each engine's edges around a step, as the energy meter does (begin, end)."""

    def __init__(self, targets: Sequence[EngineTarget], metrics_urls: Mapping[str, str | None]) -> None:
        self.targets = {target.name: target for target in targets}
        self.metrics_urls = dict(metrics_urls)

    def serving(self, targets: Sequence[EngineTarget]) -> None:
        """The engines as the run found them (each model it discovered): a kind that labels its
        totals per model (Triton) is read for the model it serves."""
        self.targets.update({target.name: target for target in targets if target.name in self.targets})

    def begin(self, engines: Sequence[str]) -> dict[str, Edge]:
        return {
            name: read_edge(self.targets[name], self.metrics_urls.get(name))
            for name in engines
            if name in self.targets
        }

    def end(self, first: Mapping[str, Edge]) -> dict[str, WindowCounts]:
        return {
            name: window(edge, read_edge(self.targets[name], self.metrics_urls.get(name)))
            for name, edge in first.items()
        }


def with_window(
    metrics: EngineMetrics | None, counts: WindowCounts, kind: str | None, model: str | None = None
) -> EngineMetrics:
    """An engine's metrics over a step with its counts over the window (`window`) and, for a
    kind that counts its requests' times, its run-level split (`run_split`) of the model it
    served."""
    values: dict[str, object] = dict(metrics.values) if metrics is not None else {}
    values["window"] = counts.to_json()
    split = run_split_of(counts, get_adapter(kind).run_split_for(model) if kind else None)
    if split is not None:
        values["run_split"] = split.to_json()
    return EngineMetrics(values)
