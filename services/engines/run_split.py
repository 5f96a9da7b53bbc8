"""A run-level split of a request's time, for engines that time no single request but count the
time of all of them: SGLang's queue, first-token and end-to-end histograms, TensorRT-LLM's request
histograms, Triton's cumulative queue and request durations.

Each part is a mean per request over a benchmark step's window: the increase of a total (a
histogram's `_sum`, or a duration counter) over the increase of its count, both read at the step's
first and last instant (services.bench.window_counts.py). It is the run's mean, never a
request's, and it counts every request the engine finished in the window (the warm-up's too): an
explanation says so, and never adds it to a per-request split.
"""

from __future__ import annotations

from dataclasses import dataclass

from services.engines.normalise import Metric


@dataclass(frozen=True)
class WindowMean:
    """A mean per request from two cumulative series: a histogram (its `_sum` over its `_count`),
    or a total counter over a count counter."""

    histogram: Metric | None = None
    total: Metric | None = None
    count: Metric | None = None

    def series(self) -> list[tuple[str, Metric]]:
        """The series to read at each edge: ("histogram" | "counter", metric)."""
        if self.histogram is not None:
            return [("histogram", self.histogram)]
        return [("counter", m) for m in (self.total, self.count) if m is not None]


@dataclass(frozen=True)
class RunSplit:
    """The parts an engine's own run totals give: its queue, its time to the first token and its
    whole request (prefill is then first token less queue, decode whole less first token)."""

    queue: WindowMean | None = None
    ttft: WindowMean | None = None
    e2e: WindowMean | None = None
    #: Where the parts come from, in the engine's words (its metric names).
    source: str = ""

    def parts(self) -> dict[str, WindowMean]:
        found = {"queue": self.queue, "ttft": self.ttft, "e2e": self.e2e}
        return {name: part for name, part in found.items() if part is not None}


def series_key(m: Metric) -> str:
    """One series selection as a stable text key: its name and label filter."""
    if not m.where:
        return m.name
    labels = ",".join(f"{name}={'|'.join(values)}" for name, values in m.where)
    return f"{m.name}{{{labels}}}"
