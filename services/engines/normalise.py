"""From one engine's metrics to the normalised signals.

Adapters (services/engines/<kind>.py) declare, per signal, an ordered tuple of
alternatives built from the specs below (`Gauge`, `GaugeRatio`, `CounterRate`,
`CounterRatio`, `Quantile`, `HistogramMean`); the first alternative whose metrics are all
present in a scrape is used, so one adapter covers several releases of an engine. A
signal with no matching alternative is "not reported by <engine>", never zero.

`EngineNormaliser` keeps what windows need between scrapes: counters (and histogram
buckets) are turned into reset-adjusted running totals (a counter that goes down, or a
changed process start time, means the engine restarted: the new value is the increase),
and rates, ratios and percentiles are taken between now and the newest reading at least
one window old.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from services.engines.prometheus import RESTART_MARKERS, Aggregate, Families, Histogram, LabelFilter
from services.engines.signals import ENGINE_SIGNAL_NAMES, SIGNALS, not_reported

InputKind = Literal["gauge", "counter", "histogram"]


@dataclass(frozen=True)
class Metric:
    """A selection of series: a metric name, label values to keep, and a unit scale."""

    name: str
    where: LabelFilter = ()
    scale: float = 1.0


def metric(name: str, scale: float = 1.0, **where: str | tuple[str, ...]) -> Metric:
    """`metric("nv_trt_llm_request_metrics", request_type="active")`; a tuple allows several values."""
    labels = tuple(
        sorted((k.lower(), (v,) if isinstance(v, str) else tuple(v)) for k, v in where.items())
    )
    return Metric(name, labels, scale)


@dataclass(frozen=True)
class Gauge:
    """An instantaneous value."""

    metric: Metric
    agg: Aggregate = "sum"
    note: str = ""

    def inputs(self) -> tuple[tuple[InputKind, Metric], ...]:
        return (("gauge", self.metric),)


@dataclass(frozen=True)
class GaugeRatio:
    """One gauge over another (e.g. used blocks / max blocks)."""

    num: Metric
    den: Metric
    note: str = ""

    def inputs(self) -> tuple[tuple[InputKind, Metric], ...]:
        return (("gauge", self.num), ("gauge", self.den))


@dataclass(frozen=True)
class CounterRate:
    """Per-second increase of the sum of one or more counters over the rate window."""

    parts: tuple[Metric, ...]
    note: str = ""

    def inputs(self) -> tuple[tuple[InputKind, Metric], ...]:
        return tuple(("counter", m) for m in self.parts)


@dataclass(frozen=True)
class CounterRatio:
    """Increase of the numerator counters over increase of the denominator counters."""

    num: tuple[Metric, ...]
    den: tuple[Metric, ...]
    note: str = ""
    empty_reason: str = "nothing counted in the window"

    def inputs(self) -> tuple[tuple[InputKind, Metric], ...]:
        return tuple(("counter", m) for m in self.num + self.den)


@dataclass(frozen=True)
class Quantile:
    """A percentile of the observations made during the latency window."""

    metric: Metric
    q: float
    note: str = ""

    def inputs(self) -> tuple[tuple[InputKind, Metric], ...]:
        return (("histogram", self.metric),)


@dataclass(frozen=True)
class HistogramMean:
    """Mean of the observations made during the latency window (Δsum / Δcount)."""

    metric: Metric
    note: str = ""

    def inputs(self) -> tuple[tuple[InputKind, Metric], ...]:
        return (("histogram", self.metric),)


Spec = Gauge | GaugeRatio | CounterRate | CounterRatio | Quantile | HistogramMean
SignalMap = Mapping[str, tuple[Spec, ...]]


def counters(*names: str) -> tuple[Metric, ...]:
    return tuple(metric(n) for n in names)


def latency_signals(base: str, *histograms: Metric, note: str = "") -> dict[str, tuple[Spec, ...]]:
    """p50/p90/p99/mean signals of latency `base` ("ttft", "itl", "e2e") from the first
    histogram present among `histograms`."""
    return {
        f"{base}_p50_s": tuple(Quantile(h, 0.5, note) for h in histograms),
        f"{base}_p90_s": tuple(Quantile(h, 0.9, note) for h in histograms),
        f"{base}_p99_s": tuple(Quantile(h, 0.99, note) for h in histograms),
        f"{base}_mean_s": tuple(HistogramMean(h, note) for h in histograms),
    }


def metric_prefixes(signal_map: SignalMap, histograms: bool = True) -> tuple[str, ...]:
    """Metric names (line prefixes) the signals need, for `prometheus.SeriesParser`;
    without the latency histograms' names when `histograms` is False."""
    names = {
        m.name
        for specs in signal_map.values()
        for spec in specs
        for kind, m in spec.inputs()
        if histograms or kind != "histogram"
    }
    return tuple(sorted(names | set(RESTART_MARKERS)))


# --- evaluation -------------------------------------------------------------------------

InputKey = tuple[InputKind, Metric]


def _read(families: Families, kind: InputKind, m: Metric) -> float | Histogram | None:
    if kind == "gauge":
        return families.gauge(m.name, m.where)
    if kind == "counter":
        return families.counter(m.name, m.where)
    return families.histogram(m.name, m.where)


def _available(spec: Spec, families: Families) -> bool:
    """True when every series the spec reads is in the scrape (label filter included)."""
    for kind, m in spec.inputs():
        if kind == "histogram":
            present = bool(families.select(f"{m.name}_bucket", m.where))
        elif kind == "counter":
            name = families.counter_name(m.name)
            present = name is not None and bool(families.select(name, m.where))
        else:
            present = bool(families.select(m.name, m.where))
        if not present:
            return False
    return True


@dataclass
class _Reading:
    ts: float
    totals: dict[InputKey, float | Histogram] = field(default_factory=dict)
    with_histograms: bool = True


class ResetTracker:
    """Turns raw counters and histograms into running totals that survive restarts."""

    def __init__(self) -> None:
        self.raw: dict[InputKey, float | Histogram] = {}
        self.total: dict[InputKey, float | Histogram] = {}

    def update(self, key: InputKey, raw: float | Histogram, restarted: bool) -> float | Histogram:
        previous_raw = self.raw.get(key)
        previous_total = self.total.get(key)
        self.raw[key] = raw
        if previous_raw is None or previous_total is None:
            self.total[key] = raw
            return raw
        if isinstance(raw, Histogram):
            assert isinstance(previous_raw, Histogram) and isinstance(previous_total, Histogram)
            increase = raw.minus(previous_raw)
            if (
                restarted
                or increase is None
                or increase.count < 0
                or min(increase.counts, default=0) < 0
            ):
                increase = raw  # restarted: everything it holds is new
            total: float | Histogram = (
                previous_total.plus(increase) if previous_total.bounds == increase.bounds else increase
            )
        else:
            assert isinstance(previous_total, float | int)
            delta = raw if restarted or raw < previous_raw else raw - previous_raw  # type: ignore[operator]  # counters are numbers
            total = previous_total + delta
        self.total[key] = total
        return total


@dataclass
class Normalised:
    """One scrape's signals: values (None = exposed, no data in the window), missing
    (signal -> reason it is absent) and notes (signal -> caveat of the source metric)."""

    values: dict[str, float | None]
    missing: dict[str, str]
    notes: dict[str, str]


def _sane(signal: str, value: float) -> float | None:
    """The value to show, or None when it cannot be right (NaN, infinite, a ratio outside
    0-1 beyond rounding)."""
    if math.isnan(value) or math.isinf(value):
        return None
    info = SIGNALS.get(signal)
    if info is not None and info.unit == "ratio":
        if not -1e-9 <= value <= 1.0 + 1e-9:
            return None
        return min(max(value, 0.0), 1.0)
    return value


class EngineNormaliser:
    """State for one engine endpoint: feed it every scrape with `update`."""

    def __init__(
        self,
        signal_map: SignalMap,
        label: str,
        rate_window_s: float = 10.0,
        latency_window_s: float = 60.0,
    ) -> None:
        self.signal_map = signal_map
        self.label = label
        self.rate_window_s = rate_window_s
        self.latency_window_s = latency_window_s
        # Every engine signal is answered: with a value, None, or the reason it is missing.
        self.signal_names = ENGINE_SIGNAL_NAMES + tuple(
            n for n in signal_map if n not in ENGINE_SIGNAL_NAMES
        )
        self.tracker = ResetTracker()
        self.history: deque[_Reading] = deque()
        self._restart_marker: float | None = None
        # Signals read only from histograms (latency percentiles over a long window) may be
        # refreshed less often than the rest: `update(..., with_histograms=False)` repeats
        # their last result and skips the bulk of the parsing.
        self.histogram_signals = {
            name
            for name in self.signal_names
            if (specs := signal_map.get(name))
            and all(isinstance(s, Quantile | HistogramMean) for s in specs)
        }
        self._histogram_result = Normalised({}, {}, {})

    def update(
        self,
        families: Families,
        ts: float,
        restart_marker: float | None = None,
        with_histograms: bool = True,
    ) -> Normalised:
        marker = restart_marker if restart_marker is not None else families.restart_marker()
        restarted = (
            marker is not None
            and self._restart_marker is not None
            and abs(marker - self._restart_marker) > 0.5
        )
        if marker is not None:
            self._restart_marker = marker

        chosen: dict[str, Spec] = {}
        missing: dict[str, str] = {}
        for signal in self.signal_names:
            if not with_histograms and signal in self.histogram_signals:
                continue
            alternatives = self.signal_map.get(signal, ())
            spec = next((s for s in alternatives if _available(s, families)), None)
            if spec is None:
                missing[signal] = not_reported(self.label)
            else:
                chosen[signal] = spec

        reading = _Reading(ts, with_histograms=with_histograms)
        gauges: dict[InputKey, float | None] = {}
        for spec in chosen.values():
            for kind, m in spec.inputs():
                key = (kind, m)
                if key in gauges or key in reading.totals:
                    continue
                raw = _read(families, kind, m)
                if kind == "gauge":
                    gauges[key] = raw  # type: ignore[assignment]  # a gauge reads as a number
                elif raw is not None:
                    reading.totals[key] = self.tracker.update(key, raw, restarted)
        self.history.append(reading)
        self._trim(ts)

        bases = (
            self._base(reading, self.rate_window_s),
            self._base(reading, self.latency_window_s, True),
        )
        self._deltas: dict[tuple[InputKey, float | bool], tuple[float | Histogram | None, float]] = {}
        values: dict[str, float | None] = {}
        notes: dict[str, str] = {}
        for signal, spec in chosen.items():
            value = self._evaluate(spec, reading, bases, gauges)
            if spec.note:
                notes[signal] = spec.note
            if value is not None:
                shown = _sane(signal, value)
                if shown is None:
                    # A broken or restarting engine can report hits above queries, NaN, or a
                    # usage of -3: show "no data" and say why rather than plot nonsense.
                    notes[signal] = f"the engine reported {value:g}, which cannot be right; not shown"
                value = shown
            values[signal] = value
        if with_histograms:
            self._histogram_result = Normalised(
                {k: v for k, v in values.items() if k in self.histogram_signals},
                {k: v for k, v in missing.items() if k in self.histogram_signals},
                {k: v for k, v in notes.items() if k in self.histogram_signals},
            )
        else:
            values.update(self._histogram_result.values)
            missing.update(self._histogram_result.missing)
            notes.update(self._histogram_result.notes)
        return Normalised(
            {k: values[k] for k in self.signal_names if k in values},
            {k: missing[k] for k in self.signal_names if k in missing},
            notes,
        )

    # -- windows --

    def _trim(self, now: float) -> None:
        horizon = now - max(self.rate_window_s, self.latency_window_s)
        while len(self.history) >= 2 and self.history[1].ts <= horizon:
            self.history.popleft()

    def _base(self, now: _Reading, window: float, histograms: bool = False) -> _Reading | None:
        """The newest reading at least `window` old, else the oldest one (a short window
        while the history fills); None when there is only the current reading."""
        base = None
        for reading in self.history:
            if reading is now:
                break
            if histograms and not reading.with_histograms:
                continue
            if base is None or reading.ts <= now.ts - window:
                base = reading
            else:
                break
        return base

    def _delta(
        self, key: InputKey, now: _Reading, base: _Reading | None
    ) -> tuple[float | Histogram | None, float]:
        """The increase of input `key` between base and now (cached for this update: the
        four latency signals of a histogram share one window)."""
        cached = self._deltas.get((key, base is not None and base.ts))
        if cached is not None:
            return cached
        if base is None or key not in base.totals or key not in now.totals:
            result: tuple[float | Histogram | None, float] = (None, 0.0)
        else:
            current, earlier = now.totals[key], base.totals[key]
            if isinstance(current, Histogram):
                assert isinstance(earlier, Histogram)
                result = (current.minus(earlier), now.ts - base.ts)
            else:
                result = (current - earlier, now.ts - base.ts)  # type: ignore[operator]  # numbers here
        self._deltas[(key, base is not None and base.ts)] = result
        return result

    def _evaluate(
        self,
        spec: Spec,
        now: _Reading,
        bases: tuple[_Reading | None, _Reading | None],
        gauges: dict[InputKey, float | None],
    ) -> float | None:
        rate_base, latency_base = bases
        if isinstance(spec, Gauge):
            value = gauges.get(("gauge", spec.metric))
            return None if value is None else value * spec.metric.scale
        if isinstance(spec, GaugeRatio):
            num, den = gauges.get(("gauge", spec.num)), gauges.get(("gauge", spec.den))
            if num is None or not den:
                return None
            return (num * spec.num.scale) / (den * spec.den.scale)
        if isinstance(spec, CounterRate):
            total, seconds = 0.0, 0.0
            for m in spec.parts:
                delta, seconds = self._delta(("counter", m), now, rate_base)
                if delta is None or seconds <= 0:
                    return None
                total += float(delta) * m.scale  # type: ignore[arg-type]  # a counter's delta is a number
            return total / seconds
        if isinstance(spec, CounterRatio):
            sums = []
            for group in (spec.num, spec.den):
                total = 0.0
                for m in group:
                    delta, _ = self._delta(("counter", m), now, rate_base)
                    if delta is None:
                        return None
                    total += float(delta) * m.scale  # type: ignore[arg-type]  # a counter's delta is a number
                sums.append(total)
            return sums[0] / sums[1] if sums[1] > 0 else None
        # Histograms
        delta, _ = self._delta(("histogram", spec.metric), now, latency_base)
        if not isinstance(delta, Histogram) or delta.count <= 0:
            return None
        value = delta.quantile(spec.q) if isinstance(spec, Quantile) else delta.mean()
        return None if value is None else value * spec.metric.scale
