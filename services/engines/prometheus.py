"""Prometheus text exposition -> an index of samples, with label aggregation and
histogram percentiles over a window.

Parsing is prometheus_client's (`text_string_to_metric_families`); this module only picks
which lines to hand it. Comment lines are dropped, so every sample keeps the exact name it
was written with: a counter is looked up as `name` or `name_total` (TGI and Triton write
counters without `_total`; prometheus_client would otherwise append it to typed
counters), and histograms as `name_bucket` / `name_sum` / `name_count` (vLLM's
`vllm:iteration_tokens_total` histogram shows why `_total` is never stripped blindly).
Label names are matched case-insensitively (dcgm-exporter renamed `Hostname` to
`hostname`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from operator import add, sub
from typing import Any, Literal

from prometheus_client.parser import text_string_to_metric_families

LabelFilter = tuple[tuple[str, tuple[str, ...]], ...]
Aggregate = Literal["sum", "max", "mean", "min"]

#: Series that tell a process restart apart from a counter that merely went down.
RESTART_MARKERS = ("process_start_time_seconds",)


@dataclass(frozen=True)
class Histogram:
    """A cumulative histogram: upper bounds sorted ascending (the last is +Inf) with their
    cumulative counts, plus `_sum` and `_count`."""

    bounds: tuple[float, ...]
    counts: tuple[float, ...]
    sum: float
    count: float

    @property
    def buckets(self) -> tuple[tuple[float, float], ...]:
        return tuple(zip(self.bounds, self.counts, strict=True))

    def minus(self, earlier: Histogram) -> Histogram | None:
        """This histogram less an earlier reading of the same series: the observations
        made in between. None when the bucket layout differs (a restart with new buckets)."""
        if self.bounds != earlier.bounds:
            return None
        return Histogram(
            self.bounds,
            tuple(map(sub, self.counts, earlier.counts)),
            self.sum - earlier.sum,
            self.count - earlier.count,
        )

    def plus(self, other: Histogram) -> Histogram:
        return Histogram(
            self.bounds,
            tuple(map(add, self.counts, other.counts)),
            self.sum + other.sum,
            self.count + other.count,
        )

    def quantile(self, q: float) -> float | None:
        """Prometheus' `histogram_quantile`: linear interpolation inside the bucket that
        holds rank q*count; None when the histogram is empty. A rank in the +Inf bucket
        answers the largest finite bound (the most the histogram can say)."""
        if not self.counts:
            return None
        total = self.counts[-1]
        if total <= 0 or math.isnan(total):
            return None
        rank = q * total
        lower_bound, lower_count = 0.0, 0.0
        for bound, count in zip(self.bounds, self.counts, strict=True):
            if count >= rank:
                if math.isinf(bound):
                    return lower_bound if lower_bound > 0 or len(self.bounds) > 1 else None
                if count == lower_count:
                    return bound
                if lower_bound == 0.0 and bound <= 0:
                    return bound
                return lower_bound + (bound - lower_bound) * (rank - lower_count) / (count - lower_count)
            lower_bound, lower_count = bound, count
        return lower_bound

    def mean(self) -> float | None:
        return self.sum / self.count if self.count > 0 else None


class Families:
    """The samples of one scrape, indexed by the exact sample name."""

    def __init__(self, samples: Mapping[str, list[tuple[dict[str, str], float]]] | None = None) -> None:
        self.samples: dict[str, list[tuple[dict[str, str], float]]] = dict(samples or {})

    def __contains__(self, name: str) -> bool:
        return name in self.samples

    def __len__(self) -> int:
        return len(self.samples)

    def names(self) -> list[str]:
        return sorted(self.samples)

    def add(self, name: str, value: float, labels: Mapping[str, str] | None = None) -> None:
        """Add one sample (used to build Families from JSON metrics)."""
        self.samples.setdefault(name, []).append(
            ({k.lower(): v for k, v in (labels or {}).items()}, float(value))
        )

    def select(self, name: str, where: LabelFilter = ()) -> list[tuple[dict[str, str], float]]:
        rows = self.samples.get(name)
        if not rows:
            return []
        if not where:
            return rows
        return [
            (labels, value)
            for labels, value in rows
            if all(labels.get(k) in allowed for k, allowed in where)
        ]

    def gauge(self, name: str, where: LabelFilter = (), agg: Aggregate = "sum") -> float | None:
        """All series of `name` that match `where`, aggregated (other labels summed away)."""
        values = [v for _, v in self.select(name, where) if not math.isnan(v)]
        if not values:
            return None
        if agg == "max":
            return max(values)
        if agg == "min":
            return min(values)
        if agg == "mean":
            return sum(values) / len(values)
        return sum(values)

    def counter(self, name: str, where: LabelFilter = ()) -> float | None:
        for candidate in (name, f"{name}_total"):
            value = self.gauge(candidate, where)
            if value is not None:
                return value
        return None

    def counter_name(self, name: str) -> str | None:
        """The spelling under which counter `name` is present, if any."""
        for candidate in (name, f"{name}_total"):
            if candidate in self.samples:
                return candidate
        return None

    def histogram(self, name: str, where: LabelFilter = ()) -> Histogram | None:
        """Histogram `name` with every non-filtered label summed away, buckets by bound."""
        bucket_rows = self.select(f"{name}_bucket", where)
        if not bucket_rows:
            return None
        by_bound: dict[float, float] = {}
        for labels, value in bucket_rows:
            bound_text = labels.get("le")
            if bound_text is None:
                continue
            try:
                bound = float(bound_text)
            except ValueError:
                continue
            by_bound[bound] = by_bound.get(bound, 0.0) + value
        if not by_bound:
            return None
        bounds = tuple(sorted(by_bound))
        counts = tuple(by_bound[b] for b in bounds)
        total = self.gauge(f"{name}_sum", where)
        count = self.gauge(f"{name}_count", where)
        return Histogram(bounds, counts, total or 0.0, count if count is not None else counts[-1])

    def restart_marker(self) -> float | None:
        for name in RESTART_MARKERS:
            value = self.gauge(name, agg="min")
            if value is not None:
                return value
        return None


class SeriesParser:
    """Prometheus text -> Families for one endpoint read again and again: a series (a line without its
    value) is parsed by prometheus_client the first time it is seen; later reads reuse
    that parse and convert only the new value. On first sight the value read from the
    line's last field is checked against prometheus_client's own parse of it; a line where
    they differ (a timestamp, anything unusual) is never cached and always fully parsed.
    This makes a read of a busy engine about ten times cheaper (parsing labels dominates).
    """

    MAX_SERIES = 20_000

    def __init__(self, keep: tuple[str, ...] | None = None) -> None:
        self.keep = keep
        self._series: dict[str, tuple[str, dict[str, str]]] = {}

    def parse(self, text: str, keep: tuple[str, ...] | None = None) -> Families:
        families = Families()
        samples = families.samples
        fresh: list[str] = []
        keep = keep if keep is not None else self.keep
        for line in text.splitlines():
            if (
                not line
                or line[0] == "#"
                or (keep is not None and (not line.startswith(keep) or "_created" in line))
            ):
                continue
            series, _, value_text = line.rpartition(" ")
            known = self._series.get(series)
            if known is None:
                fresh.append(line)
                continue
            try:
                value = float(value_text)
            except ValueError:
                fresh.append(line)
                continue
            samples.setdefault(known[0], []).append((known[1], value))
        if fresh:
            if len(self._series) > self.MAX_SERIES:
                self._series.clear()  # label churn (pids of dead workers...): start over
            for line, sample in self._parse_lines(fresh):
                labels = {k.lower(): v for k, v in sample.labels.items()} if sample.labels else {}
                value = float(sample.value)
                samples.setdefault(sample.name, []).append((labels, value))
                series, _, value_text = line.rpartition(" ")
                try:
                    again = float(value_text)
                except ValueError:
                    continue
                if sample.timestamp is None and (
                    again == value or (math.isnan(again) and math.isnan(value))
                ):
                    self._series[series] = (sample.name, labels)
        return families

    @staticmethod
    def _parse_lines(lines: list[str]) -> list[tuple[str, Any]]:
        """(line, prometheus_client sample) pairs; one parse for all lines when possible."""
        parsed = [
            x
            for family in text_string_to_metric_families("\n".join(lines) + "\n")
            for x in family.samples
        ]
        if len(parsed) == len(lines):
            return list(zip(lines, parsed, strict=True))
        pairs: list[tuple[str, Any]] = []
        for line in lines:
            for family in text_string_to_metric_families(line + "\n"):
                pairs.extend((line, sample) for sample in family.samples)
        return pairs
