"""What every importer shares: the parsed file, the run it produces, unit and
statistics helpers that map another tool's numbers onto our engine summary format."""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar, cast

from db.models import REQUEST_RESULT_FIELDS, RequestRow
from services.bench.jobs.writer import record_from_row
from services.bench.results import Distribution, EngineResults
from services.bench.stats import reasoning_block, reasoning_keys
from services.core.errors import ValidationError
from services.core.json_types import ForeignJson, JsonOut
from services.core.measure import describe, thinking_reported
from services.core.units import number_text
from services.importers import reading

T = TypeVar("T")
#: A statistic's value: a number, or (a stored Distribution) whatever the JSON held.
V = TypeVar("V")

#: Per-request row fields, as RequestResult columns.
REQUEST_FIELDS = REQUEST_RESULT_FIELDS


@dataclass
class SourceFile:
    """An uploaded or local file, parsed as far as its format allows."""

    name: str
    text: str
    path: Path | None = None
    #: The whole file as one JSON document, when it is one.
    document: Any = None
    #: One JSON value per non-empty line, when every line is one (JSONL, vLLM --append-result).
    lines: list[Any] | None = None

    @property
    def objects(self) -> list[ForeignJson]:
        """Every top-level JSON object: the document, or each line."""
        if isinstance(self.document, dict):
            return [self.document]
        if isinstance(self.document, list):
            return [item for item in self.document if isinstance(item, dict)]
        return [item for item in (self.lines or []) if isinstance(item, dict)]

    def csv_rows(self) -> list[list[str]]:
        return list(csv.reader(io.StringIO(self.text)))


@dataclass
class ImportedRun:
    """A run read from another tool's file, in our own shapes, not yet stored."""

    tool: str
    name: str
    config: JsonOut
    summary: JsonOut
    engines: list[JsonOut]
    model: str | None = None
    workload: str | None = None
    kind: str = "import"
    status: str = "finished"
    notes: str = ""
    tags: list[str] = field(default_factory=list)
    created_at: datetime | None = None
    started_at: datetime | None = None
    finished_at: datetime | None = None
    error: str | None = None
    #: Lists, or (a streamed import) iterators read once while the run is stored.
    requests: Iterable[RequestRow] = field(default_factory=list)
    exchanges: Iterable[JsonOut] = field(default_factory=list)
    samples: Iterable[JsonOut] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    #: Comma-joined engine names when they are not simply the snapshots' names.
    explicit_engine_names: str | None = None

    @property
    def engine_names(self) -> str:
        if self.explicit_engine_names is not None:
            return self.explicit_engine_names
        return ",".join(str(engine.get("name")) for engine in self.engines if engine.get("name"))


def read_source(data: bytes | str, name: str, path: Path | None = None) -> SourceFile:
    """Parse bytes or text already in memory (tests, and callers that hold a small file)."""
    with reading.open_upload(data.encode("utf-8") if isinstance(data, str) else data, name) as upload:
        upload.path = path
        return source_from(upload, reading.scan(upload))


#: Top-level values no importer reads: the answers in vLLM's and SGLang's --save-detailed files
#: (no imported answer is stored), most of such a file. Never built, so they cost no memory.
UNREAD_KEYS = frozenset({"generated_texts"})


def source_from(upload: reading.Upload, scanned: reading.Scan | None) -> SourceFile:
    """The file as JSON (one document), else as JSON lines, else as text (CSV), read from
    the stream: the whole file is never held as bytes or text beside what it parses to."""
    source = SourceFile(name=upload.name, text="", path=upload.path)
    if scanned is None and reading.is_blank(upload):
        raise ValidationError(f"{upload.name} is empty.")
    if scanned is not None and scanned.kind == "object":
        # The scan built the top-level values it did not skip; the skipped ones come now.
        source.document = dict(scanned.small)
        for key in scanned.keys:
            if key not in source.document and key not in UNREAD_KEYS:
                source.document[key] = next(reading.items(upload, key), None)
        return source
    if scanned is not None and scanned.kind in ("array", "scalar"):
        source.document = next(reading.items(upload, ""), None)
        return source
    lines = reading.json_lines(upload)
    if lines is not None:
        if len(lines) == 1:
            source.document = lines[0]  # one line with a bare Infinity (SGLang's single benchmark)
        else:
            source.lines = lines
        return source
    source.text = reading.text(upload)
    try:
        # One value with a bare NaN or Infinity (SGLang writes them), which only Python's json reads.
        source.document = json.loads(source.text)
    except json.JSONDecodeError:
        pass
    except RecursionError:
        # A hostile file of 100,000 nested brackets: one line, not a traceback with server paths.
        raise ValidationError(f"{upload.name} is nested too deeply to be a results file.") from None
    return source


def integer(value: Any) -> int | None:
    result = number_text(value)
    return round(result) if result is not None else None


UNIT_SECONDS = {
    "ns": 1e-9,
    "us": 1e-6,
    "µs": 1e-6,
    "ms": 1e-3,
    "s": 1.0,
    "sec": 1.0,
    "secs": 1.0,
    "second": 1.0,
    "seconds": 1.0,
}


def to_seconds(value: Any, unit: str | None) -> float | None:
    result = number_text(value)
    if result is None:
        return None
    factor = UNIT_SECONDS.get((unit or "s").strip().lower())
    return None if factor is None else result * factor


_PERCENTILE_NAME = re.compile(r"^p(\d+(?:\.\d+)?)$")


def stat_name(name: str) -> str | None:
    """Another tool's statistic name as ours: avg/mean -> mean, median -> p50, p99.0 -> p99."""
    name = name.strip().lower()
    if name in ("avg", "mean", "average"):
        return "mean"
    if name in ("median", "p50"):
        return "p50"
    if name in ("std", "std_dev", "stddev"):
        return "std"
    if name in ("min", "max"):
        return name
    match = _PERCENTILE_NAME.match(name)
    if match:
        value = float(match.group(1))
        return f"p{int(value)}" if value == int(value) else f"p{match.group(1)}"
    return None


def merge_stats(reported: Mapping[str, V], computed: Mapping[str, V]) -> dict[str, V]:
    """Statistics the tool reported win; those computed from its per-request data fill gaps."""
    merged = {key: value for key, value in computed.items() if key != "count"}
    merged.update(reported)
    return merged


def request_row(engine: str, index: int, **values: Any) -> RequestRow:
    """A request row with every column: None where `values` says nothing."""
    row: JsonOut = {name: None for name in REQUEST_FIELDS}
    row.update(engine_name=engine, index=index, warmup=False, ok=True, itl_s=[], extra={})
    row.update(values)
    # Every column named, each value as the importer read it for that column.
    return cast(RequestRow, row)


def reasoning_extra(
    ttft_s: float | None, ttfat_s: float | None, reasoning_tokens: int | None, source: str
) -> JsonOut:
    """A request row's `extra` keys for what a peer's file says of its thinking: its time to
    first output token and reasoning tokens (`source`: who counted them), as our own rows
    keep them, so imported and measured runs read the same."""
    includes = thinking_reported(ttft_s, ttfat_s, reasoning_tokens)
    return reasoning_keys(ttfat_s, reasoning_tokens, source, includes)


def reasoning_summary(rows: list[RequestRow]) -> EngineResults | None:
    """The engine block's answer timing (services.bench.stats.reasoning_block) from completed
    rows, when any says something of it; None otherwise (a file without it stays as it was)."""
    extras = [row.get("extra") or {} for row in rows]
    if not any("ttfat_s" in extra or "reasoning_tokens" in extra for extra in extras):
        return None
    return EngineResults.from_json(reasoning_block([record_from_row(row) for row in rows]))


def _described(values: list[float]) -> Distribution | None:
    return Distribution(describe(values)) if values else None


def summary_from_requests(rows: list[RequestRow], duration_s: float | None) -> EngineResults:
    """An engine summary computed from per-request rows (when the tool gave no summary)."""
    result, thinking = _counted(rows, duration_s)
    return result if thinking is None else _with_reasoning(result, thinking, merged=False)


def _counted(
    rows: list[RequestRow], duration_s: float | None
) -> tuple[EngineResults, EngineResults | None]:
    """The rows' figures, and apart their answer timing (None: no row said anything of it)."""
    measured = [row for row in rows if not row.get("warmup")]
    good = [row for row in measured if row.get("ok")]
    failed = [row for row in measured if not row.get("ok")]
    errors: dict[str, int] = {}
    for row in failed:
        key = row.get("error_class") or "error"
        errors[key] = errors.get(key, 0) + 1
    input_tokens = sum(row.get("input_tokens") or 0 for row in good)
    output_tokens = sum(row.get("output_tokens") or 0 for row in good)
    timed = duration_s if duration_s and duration_s > 0 else None

    def per_second(amount: int) -> float | None:
        return amount / timed if timed else None

    def latency(metric: str) -> Distribution | None:
        return _described([value for row in good if (value := number_text(row.get(metric))) is not None])

    itls = [
        value
        for row in good
        for gap in (row.get("itl_s") or [])
        if (value := number_text(gap)) is not None
    ]
    result = EngineResults(
        completed=len(good),
        failed=len(failed),
        sent=len(measured),
        errors_by_class=errors,
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        duration_s=timed,
        request_throughput_rps=per_second(len(good)),
        input_throughput_tok_s=per_second(input_tokens),
        output_throughput_tok_s=per_second(output_tokens),
        total_token_throughput_tok_s=per_second(input_tokens + output_tokens),
        ttft_s=latency("ttft_s"),
        tpot_s=latency("tpot_s"),
        e2e_s=latency("e2e_s"),
        itl_s=_described(itls),
    )
    return result, reasoning_summary(good)


def _with_reasoning(block: EngineResults, thinking: EngineResults, *, merged: bool) -> EngineResults:
    """The block with the rows' answer timing where it has none (`merged`: the time to first
    answer token merged with the one the tool reported)."""
    return replace(
        block,
        ttfat_s=merge_distributions(block.ttfat_s, thinking.ttfat_s) if merged else thinking.ttfat_s,
        reasoning_tok_s=_known(block.reasoning_tok_s, thinking.reasoning_tok_s),
        answer_tok_s=_known(block.answer_tok_s, thinking.answer_tok_s),
        reasoning_tokens=_known(block.reasoning_tokens, thinking.reasoning_tokens),
        answer_tokens=_known(block.answer_tokens, thinking.answer_tokens),
        reasoning_tokens_source=_known(block.reasoning_tokens_source, thinking.reasoning_tokens_source),
        ttft_includes_reasoning=True
        if thinking.ttft_includes_reasoning
        else _known(block.ttft_includes_reasoning, thinking.ttft_includes_reasoning),
    )


def _known(reported: T | None, computed: T | None) -> T | None:
    """What the tool reported, else what its rows tell."""
    return reported if reported is not None else computed


def merge_distributions(
    reported: Distribution | None, computed: Distribution | None
) -> Distribution | None:
    if computed is None:
        return reported
    return Distribution(merge_stats(dict(reported.values) if reported else {}, dict(computed.values)))


@dataclass(frozen=True)
class Counts:
    """The request and token counts a tool's summary gave: None where it said nothing (its
    per-request rows, when the file has them, tell those)."""

    completed: int | None = None
    failed: int | None = None
    sent: int | None = None
    errors_by_class: dict[str, int] | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None


def fill_from_requests(
    block: EngineResults, rows: list[RequestRow], counts: Counts | None = None
) -> EngineResults:
    """The tool's figures with its `counts`, and what the per-request rows tell that the
    tool's summary lacks (min/max, p90..., counts it did not give)."""
    counts = counts or Counts()
    if not rows:
        return replace(
            block,
            completed=counts.completed or 0,
            failed=counts.failed or 0,
            sent=counts.sent or 0,
            errors_by_class=counts.errors_by_class or {},
            input_tokens=counts.input_tokens,
            output_tokens=counts.output_tokens,
        )
    computed, thinking = _counted(rows, block.duration_s)
    filled = replace(
        block,
        ttft_s=merge_distributions(block.ttft_s, computed.ttft_s),
        tpot_s=merge_distributions(block.tpot_s, computed.tpot_s),
        itl_s=merge_distributions(block.itl_s, computed.itl_s),
        e2e_s=merge_distributions(block.e2e_s, computed.e2e_s),
        completed=_known(counts.completed, computed.completed) or 0,
        failed=_known(counts.failed, computed.failed) or 0,
        sent=_known(counts.sent, computed.sent) or 0,
        errors_by_class=_known(counts.errors_by_class, computed.errors_by_class) or {},
        input_tokens=_known(counts.input_tokens, computed.input_tokens),
        output_tokens=_known(counts.output_tokens, computed.output_tokens),
    )
    return filled if thinking is None else _with_reasoning(filled, thinking, merged=True)


def with_reasoning_flag(summary: JsonOut) -> JsonOut:
    """The summary with the run-level `ttft_includes_reasoning` a benchmark run's has, when an
    engine's TTFT includes thinking (a file that says nothing of it is stored as it was)."""
    engines = summary.get("engines")
    blocks = list(engines.values()) if isinstance(engines, dict) else []
    if "ttft_includes_reasoning" in summary or not any(
        EngineResults.from_json(block).ttft_includes_reasoning for block in blocks
    ):
        return summary
    return {**summary, "ttft_includes_reasoning": True}


def parse_timestamp(value: Any) -> datetime | None:
    """ISO 8601, vLLM's 20250101-120000, or epoch seconds -> an aware UTC datetime."""
    if value is None or value == "":
        return None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        try:
            return datetime.fromtimestamp(float(value), tz=UTC)
        except (OverflowError, OSError, ValueError):
            return None
    text = str(value).strip()
    for pattern in ("%Y%m%d-%H%M%S",):
        try:
            return datetime.strptime(text, pattern).replace(tzinfo=UTC)
        except ValueError:
            pass
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def engine_snapshot(
    name: str, tool: str, model: str | None = None, base_url: str | None = None, **info: Any
) -> JsonOut:
    """An engine entry for Run.engines: what we know of the server from another tool's file."""
    return {
        "name": name,
        "base_url": base_url,
        "kind": None,
        "model": model,
        "version": None,
        "info": {"imported_from": tool, **{k: v for k, v in info.items() if v is not None}},
    }


def model_name(value: Any) -> str | None:
    """A model name from another tool's file: text, else nothing (a file may hold a list or a
    number there, which must not reach the database's text column)."""
    return (value.strip()[:300] or None) if isinstance(value, str) else None


def first_line(text: Any, limit: int = 60) -> str | None:
    if not text:
        return None
    line = (
        str(text).strip().splitlines()[-1]
        if "Traceback" in str(text)
        else str(text).strip().splitlines()[0]
    )
    return line[:limit] or None


_FLAT_STAT = re.compile(r"^(mean|median|std|min|max|p\d+(?:\.\d+)?)_([a-z0-9_]+?)_ms$")


def flat_latency_stats(result: ForeignJson, aliases: dict[str, str]) -> dict[str, dict[str, float]]:
    """vLLM/SGLang style keys (`mean_ttft_ms`, `p99_e2el_ms`, `median_e2e_latency_ms`)
    -> {"ttft_s": {"mean": ..., "p99": ...}} in seconds. `aliases` maps their metric
    names (ttft, e2el, e2e_latency, ...) to ours (ttft_s, e2e_s, ...)."""
    stats: dict[str, dict[str, float]] = {}
    for key, value in result.items():
        match = _FLAT_STAT.match(key)
        if not match:
            continue
        metric = aliases.get(match.group(2))
        stat = stat_name(match.group(1))
        seconds = to_seconds(value, "ms")
        if metric and stat and seconds is not None:
            stats.setdefault(metric, {})[stat] = seconds
    return stats


def headline_step(steps: list[EngineResults]) -> EngineResults:
    """The engine's headline numbers for a sweep: the step with the highest request
    throughput (the rule our own benchmark sweeps use), marked with `from_step`."""
    best = max(range(len(steps)), key=lambda i: steps[i].request_throughput_rps or 0.0)
    extra = {key: value for key, value in steps[best].extra.items() if key != "strategy"}
    return replace(
        steps[best],
        engine=None,
        rate=None,
        concurrency=None,
        step=None,
        phase=None,
        extra=extra,
        from_step=best if len(steps) > 1 else steps[best].from_step,
    )
