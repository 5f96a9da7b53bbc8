"""A finished run's results as tables: latency percentiles and throughput, one row per engine."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import pandas as pd

from services.bench.caveats import ENGINE_HIT_SOURCE, USAGE_HIT_SOURCE
from services.bench.results import EngineResults
from services.bench.summary import BenchSummary
from services.core import units
from services.core.json_types import JsonOut
from services.core.measure import percentile_key
from services.telemetry.energy.records import NOT_MEASURED, EnergyResult

METRIC_TITLES = {"ttft_s": "TTFT", "tpot_s": "TPOT", "itl_s": "ITL", "e2e_s": "E2E latency"}
#: Shown beside TTFT for an engine whose TTFT includes thinking (for the others it is TTFT).
TTFAT_TITLE = "time to first answer token"


def percentile_table(
    summary: BenchSummary, percentiles: tuple[float, ...] = (50, 90, 95, 99)
) -> pd.DataFrame:
    """One row per engine and latency metric: mean, percentiles and max in milliseconds."""
    rows = []
    keys = ["mean", *(percentile_key(q) for q in sorted({50.0, 90.0, 95.0, 99.0, *percentiles})), "max"]
    for name, block in BenchSummary.from_json(summary).engines_that_ran().items():
        titles = list(METRIC_TITLES.items())
        if block.ttft_includes_reasoning:
            titles.insert(1, ("ttfat_s", TTFAT_TITLE))
        for metric, title in titles:
            stats = block.latency(metric)
            row: JsonOut = {"engine": name, "metric": title}
            for key in keys:
                row[f"{key} (ms)"] = units.to_ms(stats.at(key) if stats is not None else None, 2)
            rows.append(row)
    return fill_missing(pd.DataFrame(rows))


#: Columns whose figures have more than one reading: each says where it comes from.
SERVED_INPUT_COLUMN = "input tok/request (as served, chat template included)"
ASKED_INPUT_COLUMN = "input tok/request asked"
ENGINE_HIT_COLUMN = f"prefix hit (%), {ENGINE_HIT_SOURCE}"
USAGE_HIT_COLUMN = f"cached/input (%), {USAGE_HIT_SOURCE}"


def throughput_table(summary: BenchSummary, requested_input: int | None = None) -> pd.DataFrame:
    """One row per engine: counts, throughputs, goodput and the cache figures. Input tokens
    per request as served sit beside `requested_input` (the length the run asked for, before
    the chat template), and the engine's prefix hit rate beside usage's cached share."""
    rows = []
    for name, block in BenchSummary.from_json(summary).engines_that_ran().items():
        metrics = block.engine_metrics
        errors = ", ".join(f"{k} {v}" for k, v in sorted(block.errors_by_class.items()))
        input_tokens = block.input_tokens
        cached = block.cached_tokens
        rows.append(
            {
                "engine": name,
                "completed": block.completed,
                "failed": block.failed,
                # Stopped by the user in flight: neither completed nor the engine's failure.
                "cancelled": block.cancelled_requests or None,
                # No failures is a count of 0, not a blank that reads as "not reported".
                "errors": errors or "0",
                "requests/s": _round(block.request_throughput_rps),
                "output tok/s": _round(block.output_throughput_tok_s),
                "total tok/s": _round(block.total_token_throughput_tok_s),
                "goodput req/s": _round(block.goodput_rps),
                ASKED_INPUT_COLUMN: requested_input,
                SERVED_INPUT_COLUMN: _ratio(input_tokens, block.completed, 1),
                "output tokens": block.output_tokens,
                "cached tokens": cached,
                # Shares as percentages, as the Monitor and Runs pages show them.
                ENGINE_HIT_COLUMN: _percent(metrics.prefix_cache_hit_rate),
                USAGE_HIT_COLUMN: _percent(_ratio(cached, input_tokens)),
                "KV usage max (%)": _percent(metrics.at("kv_cache_usage_max")),
                "schema valid (%)": _percent(block.schema_valid_rate),
                **reasoning_columns(block),
                **energy_columns(block),
            }
        )
    # A column no engine has a value for (goodput without SLOs, schema validity without a
    # schema) says nothing: leave it out rather than show "None" in every row; a cell one
    # engine lacks reads "–" (not reported), never "None".
    return fill_missing(pd.DataFrame(rows).dropna(axis=1, how="all"))


@dataclass(frozen=True)
class ReasoningFigures:
    """A reasoning model's figures as the table and the CLI line show them (each None for an
    engine that did not think)."""

    tokens: int | None = None
    answer_tokens: int | None = None
    counted_by: str | None = None
    reasoning_tok_s_p50: float | None = None
    answer_tok_s_p50: float | None = None


def reasoning_figures(block: EngineResults) -> ReasoningFigures:
    """Reasoning and answer tokens, their rates (median per request), and who counted the
    reasoning tokens; all None for an engine that did not think."""
    reasoning = block.reasoning_tokens
    if not reasoning:
        return ReasoningFigures()
    source = block.reasoning_tokens_source
    return ReasoningFigures(
        tokens=reasoning,
        answer_tokens=block.answer_tokens,
        counted_by=REASONING_SOURCES.get(source, source) if source else None,
        reasoning_tok_s_p50=_round(block.reasoning_tok_s.p50 if block.reasoning_tok_s else None),
        answer_tok_s_p50=_round(block.answer_tok_s.p50 if block.answer_tok_s else None),
    )


def reasoning_columns(block: EngineResults) -> JsonOut:
    """The table's reasoning columns; None for an engine that did not think (the column then
    drops out)."""
    figures = reasoning_figures(block)
    return dict(
        zip(
            REASONING_COLUMNS,
            (
                figures.tokens,
                figures.answer_tokens,
                figures.counted_by,
                figures.reasoning_tok_s_p50,
                figures.answer_tok_s_p50,
            ),
            strict=True,
        )
    )


ENERGY_COLUMNS = ("energy (J)", "J/output token", "output tokens/J", "energy measured by")


def energy_columns(block: EngineResults) -> JsonOut:
    """The step's joules, per output token and tokens per joule, and how they were measured,
    or "not measured here: <reason>"; None for a run from before energy (the columns drop)."""
    energy = EnergyResult.from_json(block.energy)
    if energy is None:
        return dict.fromkeys(ENERGY_COLUMNS)
    return {
        "energy (J)": _round(energy.joules, 1),
        "J/output token": _significant(energy.j_per_output_token),
        "output tokens/J": _significant(energy.output_tokens_per_j),
        "energy measured by": (
            ", ".join(part for part in (energy.method, energy.source, energy.tokens_counted) if part)
            if energy.measured
            else energy.label
        ),
    }


def energy_line(block: EngineResults) -> str | None:
    """One line on a step's energy for the CLI table and the page's notes; None for a run
    from before energy."""
    energy = EnergyResult.from_json(block.energy)
    if energy is None:
        return None
    if not energy.measured:
        return f"energy: {energy.label}"
    per_token = (
        f", {energy.j_per_output_token:.4g} J/output token, "
        f"{energy.output_tokens_per_j:.4g} output tokens/J"
        + (f" ({energy.tokens_counted})" if energy.tokens_counted else "")
        if energy.j_per_output_token is not None and energy.output_tokens_per_j is not None
        else ", no output tokens to divide by"
    )
    return (
        f"energy: {energy.joules:.1f} J over {energy.duration_s or 0:.1f} s{per_token} "
        f"({energy.method}, {energy.source}; {energy.scope})"
    )


def _significant(value: float | None, digits: int = 4) -> float | None:
    return float(f"{value:.{digits}g}") if value is not None and math.isfinite(value) else None


REASONING_COLUMNS = (
    "reasoning tokens",
    "answer tokens",
    "reasoning counted by",
    "reasoning tok/s (p50)",
    "answer tok/s (p50)",
)
#: Who counted the reasoning tokens, in words.
REASONING_SOURCES = {
    "usage": "engine (usage.completion_tokens_details)",
    "stream": "client (thinking deltas)",
    "usage+stream": "engine for some requests, client for others",
}


def reasoning_line(block: EngineResults) -> str | None:
    """One line on an engine's thinking for the CLI table and reports; None when its TTFT
    does not include thinking (its time to first answer token is its TTFT)."""
    if not block.ttft_includes_reasoning:
        return None
    answer = block.ttfat_s
    figures = reasoning_figures(block)
    p50, p99 = (answer.p50, answer.p99) if answer else (None, None)
    unit = units.duration_unit((p50, p99))
    rates = {"reasoning": figures.reasoning_tok_s_p50, "answer": figures.answer_tok_s_p50}
    return (
        f"TTFT includes thinking; first answer token p50 {units.duration(p50, unit, missing='-')}, "
        f"p99 {units.duration(p99, unit, missing='-')}; {figures.tokens} reasoning tokens "
        f"(counted by {figures.counted_by or 'nobody'}), "
        f"{figures.answer_tokens} answer tokens; p50 "
        + ", ".join(
            units.rate(rates[part], f"{part} tok/s", missing=f"- {part} tok/s")
            for part in ("reasoning", "answer")
        )
    )


def _ratio(part: Any, whole: Any, digits: int | None = None) -> float | None:
    if not isinstance(part, (int, float)) or not isinstance(whole, (int, float)) or whole <= 0:
        return None
    value = part / whole
    return round(value, digits) if digits is not None else value


def _percent(value: Any) -> float | None:
    found = units.number(value)
    return None if found is None else round(found * 100, 1)


def fill_missing(frame: pd.DataFrame, mark: str = "–") -> pd.DataFrame:
    """Missing cells as a dash: Streamlit draws None and NaN as the word "None"."""
    return frame.astype(object).where(frame.notna(), mark)


def step_labels(summary: BenchSummary) -> dict[int, str]:
    """Sweep step -> its load level in words ("concurrency 4", "rate 2.5")."""
    return BenchSummary.from_json(summary).step_labels()


def _round(value: Any, digits: int = 2) -> float | None:
    found = units.number(value)
    return None if found is None else round(found, digits)


def fold_not_measured(frame: pd.DataFrame, column: str, subject: str) -> tuple[pd.DataFrame, str | None]:
    """The table with `column`'s long "not measured here: <reason>" cells folded into one note
    (issue 47: the same sentence in every row). Every row not measured: the column goes and the
    note says why; some rows: their cells read "not measured" and the note gives the reasons."""
    if frame.empty or column not in frame:
        return frame, None
    cells = frame[column].astype(str)
    folded = cells.str.startswith(NOT_MEASURED)
    if not folded.any():
        return frame, None
    reasons = list(dict.fromkeys(cell.removeprefix(NOT_MEASURED).lstrip(": ") for cell in cells[folded]))
    note = f"{subject}: {NOT_MEASURED}: " + "; ".join(reasons)
    if folded.all():
        return frame.drop(columns=[column]), note + "."
    frame = frame.copy()
    frame.loc[folded, column] = "not measured"
    return frame, note + " (the rows that say not measured)."
