"""Where the time went, as the Benchmarks page, the Runs page, the HTML reports and `cli.py
bench` show it: per engine a stacked bar of the engine's own queue, prefill and decode and the
rest of E2E (the means over the requests it timed, which add up to their mean E2E), a table of
each part's percentiles, one line per engine in words, and per request the same split in words
(the timeline's hover). `split_view` is the three together, for a stored run or comparison."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pandas as pd
import plotly.graph_objects as go

from services.bench.results import Distribution, TimeSplitBlock
from services.bench.stats import RequestRecord
from services.bench.summary import BenchSummary
from services.bench.time_split import (
    PART_TITLES,
    VIA_ROUTER,
    block_clamp_note,
    not_reported,
    part_title,
    shown,
)
from services.core import units
from services.core.measure import TimeSplit
from services.engines import get_adapter
from services.runstate.stored import bench_config

#: Each part of a split: its key in the summary's block, its name, its colour.
PARTS = (
    ("queue_s", "queue (engine)", "#8d99ae"),
    ("prefill_s", "prefill (engine)", "#f2a541"),
    ("decode_s", "decode (engine)", "#3a86ff"),
    ("inference_s", "prefill + decode (engine, not apart)", "#5e60ce"),
    ("e2e_rest_s", "rest: network, HTTP, front end, client", "#d62828"),
)
TABLE_PARTS = tuple(PART_TITLES.items())


def _means(block: TimeSplitBlock) -> dict[str, float]:
    """The means the bar stacks (ms); an engine reporting only prefill + decode together (TGI)
    gets that sum as one part."""

    def mean(key: str) -> float:
        part = block.part(key)
        return (shown(key, part.mean if part is not None else None) or 0.0) * 1000

    means = {key: mean(key) for key in ("queue_s", "prefill_s", "decode_s", "e2e_rest_s")}
    if block.prefill_s is None:
        means["inference_s"] = mean("engine_s") - means["queue_s"]
    return means


def split_figure(summary: BenchSummary, labels: dict[str, str]) -> go.Figure | None:
    """The "where the time went" bar per engine; `labels` names each engine's kind for the
    engines that timed nothing ("not reported by vLLM"). None when no engine reported."""
    engines = BenchSummary.from_json(summary).engines_that_ran()
    blocks = {name: block.time_split for name, block in engines.items()}
    if not any(block.reported for block in blocks.values()):
        return None
    # A router's bar is its worker's times, the router's own time in the rest: its name says so.
    shown_names = {
        name: f"{name} (its worker's times)" if block.via == "router" else name
        for name, block in blocks.items()
    }
    names = list(blocks)
    means = {name: _means(block) if block.reported else {} for name, block in blocks.items()}
    figure = go.Figure()
    for key, title, colour in PARTS:
        values = [means[name].get(key) for name in names]
        if not any(values):
            continue
        figure.add_trace(
            go.Bar(
                y=[shown_names[name] for name in names],
                x=[value or 0.0 for value in values],
                orientation="h",
                name=title,
                marker_color=colour,
                hovertemplate=f"{title}: %{{x:.1f}} ms<extra>%{{y}}</extra>",
            )
        )
    for name in names:
        if not blocks[name].reported:
            figure.add_annotation(
                x=0,
                y=shown_names[name],
                xanchor="left",
                showarrow=False,
                text=not_reported(labels.get(name, name)),
            )
    figure.update_layout(
        barmode="stack",
        title="Where the time went (mean per request, over the requests the engine timed)",
        xaxis_title="ms",
        height=max(220, 90 + 48 * len(names)),
        margin={"t": 48, "b": 40},
        uirevision="constant",
    )
    return figure


def split_table(summary: BenchSummary) -> pd.DataFrame:
    """One row per engine and part: mean, p50 and p99 in ms (engines that timed something)."""
    rows = []
    for name, block in BenchSummary.from_json(summary).engines_that_ran().items():
        split = block.time_split
        if not split.reported:
            continue
        for key, _ in TABLE_PARTS:
            stats = split.part(key)
            if not split.has(key) or stats is None:
                continue
            rows.append(
                {
                    "engine": name,
                    "part": part_title(key, split.via or ""),
                    **{
                        f"{q} (ms)": units.to_ms(shown(key, stats.at(q)), 2)
                        for q in ("mean", "p50", "p99")
                    },
                }
            )
    return pd.DataFrame(rows)


def split_lines(summary: BenchSummary, labels: dict[str, str]) -> list[str]:
    """One line per engine in words: its mean E2E split, or that its engine reported nothing."""
    lines = []
    for name, block in BenchSummary.from_json(summary).engines_that_ran().items():
        split = block.time_split
        if not split.requests:
            continue  # nothing completed, or a run stored before engines' times were read
        if not split.reported:
            lines.append(f"{name}: where the time went: {not_reported(labels.get(name, name))}")
            continue
        means = _means(split)
        parts = " + ".join(
            f"{title.split(' (')[0]} {means[key]:.1f}"
            for key, title, _ in PARTS
            if key in means and (key != "queue_s" or split.queue_reported)
        )
        rest = split.e2e_rest_s or Distribution()
        e2e = split.e2e_s or Distribution()
        clamped = block_clamp_note(split)
        via = VIA_ROUTER if split.via == "router" else ""
        note = "; ".join(part for part in (via, clamped) if part)
        lines.append(
            f"{name}: mean E2E {(e2e.mean or 0) * 1000:.1f} ms "
            f"{'≈' if clamped else '='} {parts} ms (rest p50 "
            f"{units.to_ms(shown('e2e_rest_s', rest.p50), 2)} / p99 "
            f"{units.to_ms(shown('e2e_rest_s', rest.p99), 2)} ms; "
            f"{split.reported} of {split.requests} requests timed by the engine, "
            f"from its {split.source or 'report'})" + (f"; {note}" if note else "")
        )
    return lines


#: What the split means, said once above it on the Runs page and in the HTML reports.
SPLIT_NOTE = (
    "The engine's own queue, prefill and decode beside the client's TTFT and E2E; the rest is "
    "what is left of them, time outside the engine's clock (network, HTTP, its front end, the "
    "client), never below 0 (where the engine counted more than the client saw, a note says by "
    "how much). Percentiles are one part at a time."
)


@dataclass(frozen=True)
class SplitView:
    """Where the time went, whole: the lines in words, the percentile table, the chart (None
    when no engine timed anything). Empty (`shown` false) when no engine has a split block."""

    lines: tuple[str, ...] = ()
    table: pd.DataFrame = field(default_factory=pd.DataFrame)
    figure: go.Figure | None = None

    @property
    def shown(self) -> bool:
        return bool(self.lines)

    @property
    def note(self) -> str:
        return SPLIT_NOTE


def split_view(summary: BenchSummary, labels: dict[str, str]) -> SplitView:
    """The split of a summary's engines (a run's, or a comparison's series as engines)."""
    lines = split_lines(summary, labels)
    if not lines:
        return SplitView()
    return SplitView(
        lines=tuple(lines), table=split_table(summary), figure=split_figure(summary, labels)
    )


def kind_labels(config: Any) -> dict[str, str]:
    """Each engine's kind as words ("vLLM"), by engine name, from a run's stored spec."""
    engines = bench_config(config).get("engines", [])
    return {str(e.get("name")): get_adapter(e.get("kind")).label for e in engines}


def request_words(record: RequestRecord) -> str:
    """One request's split in words (the timeline's hover): the engine's parts and the rest."""
    split = record.time_split
    return split_words(split) if split is not None else "engine times not reported"


def split_words(split: TimeSplit) -> str:
    """The parts in words, in one unit (units.duration_unit)."""
    named = [
        (name, value)
        for name, value in (
            ("queue", split.queue_s),
            ("prefill", split.prefill_s),
            ("decode", split.decode_s),
            ("rest of TTFT", split.ttft_rest_s),
            ("rest of E2E", split.e2e_rest_s),
        )
        if value is not None
    ]
    if split.prefill_s is None and split.engine_s is not None:
        named.insert(1, ("prefill + decode", split.engine_s - (split.queue_s or 0.0)))
    unit = units.duration_unit(value for _, value in named)
    parts = [f"{name} {units.duration(value, unit)}" for name, value in named]
    if split.clamp_note:
        parts.append(split.clamp_note)
    if split.via == "router":
        parts.insert(0, VIA_ROUTER)
    return " · ".join(parts)
