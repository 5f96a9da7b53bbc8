"""GuideLLM `benchmarks.json` reports (vllm-project/guidellm, GenerativeBenchmarksReport).

`{"benchmarks": [...]}`, one entry per load step (a sweep holds synchronous, throughput
and several constant rates). Each has `config.strategy` (`type_` synchronous / concurrent
with `streams` / throughput / constant or poisson with `rate`), start/end times, and
`metrics`, where every metric is split by status (`successful`, `errored`, `incomplete`,
`total`) and summarised as `{mean, median, mode, variance, std_dev, min, max, count,
total_sum, percentiles: {p001, p01, p05, p10, p25, p50, p75, p90, p95, p99, p999}}`:
request_totals, requests_per_second, request_latency (seconds), time_to_first_token_ms,
time_per_output_token_ms (includes the first token), inter_token_latency_ms
((last - first token) / (output tokens - 1), our TPOT), prompt_token_count,
output_token_count, output_tokens_per_second, tokens_per_second.
`requests.{successful,errored,incomplete}` lists sampled per-request stats
(request_start_time, request_latency, time_to_first_token_ms, inter_token_latency_ms,
prompt_tokens, output_tokens, info.error).

The run's headline numbers are those of the step with the highest request throughput
(as for our own sweeps); every step is in the sweep. GuideLLM has
no chunk-gap ITL, so ITL stays empty for GuideLLM runs. Its time_to_first_output_token_ms
(summary and per request, releases that tell reasoning apart) is our time to first answer
token; its files count no reasoning tokens apart, so a TTFT includes thinking when the first
output token came after the first token.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any
from urllib.parse import urlsplit

from db.models import RequestRow
from services.bench.results import Distribution, EngineMetrics, EngineResults
from services.core.json_types import ForeignJson, JsonOut
from services.core.measure import thinking_reported
from services.core.units import number_text
from services.importers.common import (
    Counts,
    ImportedRun,
    SourceFile,
    engine_snapshot,
    fill_from_requests,
    headline_step,
    integer,
    parse_timestamp,
    reasoning_extra,
    request_row,
    stat_name,
    to_seconds,
)
from services.runstate.lifecycle import RunStatus

TOOL = "guidellm"
LABEL = "GuideLLM (benchmarks.json)"


def sniff(source: SourceFile) -> bool:
    document = source.document
    if not isinstance(document, dict) or not isinstance(document.get("benchmarks"), list):
        return False
    return any(
        isinstance(b, dict) and isinstance(b.get("metrics"), dict) for b in document["benchmarks"]
    )


def _successful(metric: Any) -> ForeignJson | None:
    if not isinstance(metric, dict):
        return None
    block = metric.get("successful")
    return block if isinstance(block, dict) else None


def _stats(block: ForeignJson, unit: str) -> dict[str, float]:
    stats: dict[str, float] = {}
    for key in ("mean", "median", "std_dev", "min", "max"):
        value = to_seconds(block.get(key), unit)
        if value is not None:
            stats[stat_name(key) or key] = value
    for key, value in (block.get("percentiles") or {}).items():
        # GuideLLM names p0.1 "p001" and p99.9 "p999"; keep the ones that read plainly.
        if key in ("p001", "p999"):
            continue
        name = stat_name(key)
        seconds = to_seconds(value, unit)
        if name and seconds is not None:
            stats.setdefault(name, seconds)
    return stats


def _numbers(benchmark: ForeignJson) -> tuple[EngineResults, Counts]:
    """A benchmark's figures, and apart the counts it gave (its rows tell those it did not)."""
    metrics = benchmark.get("metrics") or {}

    def latency(name: str, unit: str) -> Distribution | None:
        block = _successful(metrics.get(name))
        return Distribution(_stats(block, unit)) if block and integer(block.get("count")) else None

    def rate(name: str) -> float | None:
        block = _successful(metrics.get(name))
        return number_text(block.get("mean")) if block else None

    totals = metrics.get("request_totals") or {}
    completed = integer(totals.get("successful"))
    counts = Counts()
    if completed is not None:
        errored = integer(totals.get("errored")) or 0
        incomplete = integer(totals.get("incomplete")) or 0
        counts = Counts(
            completed=completed,
            failed=errored + incomplete,
            sent=completed + errored + incomplete,
            errors_by_class={k: v for k, v in (("errored", errored), ("incomplete", incomplete)) if v},
        )

    def total(name: str) -> int | None:
        block = _successful(metrics.get(name))
        return integer(block.get("total_sum")) if block else None

    counts = replace(
        counts, input_tokens=total("prompt_token_count"), output_tokens=total("output_token_count")
    )
    duration = number_text(benchmark.get("duration"))
    if duration is None:
        start, end = number_text(benchmark.get("start_time")), number_text(benchmark.get("end_time"))
        duration = end - start if start is not None and end is not None else None
    ttft = latency("time_to_first_token_ms", "ms")
    ttfat = latency("time_to_first_output_token_ms", "ms")
    tpot_incl_first = _successful(metrics.get("time_per_output_token_ms"))
    incl_first = number_text(tpot_incl_first.get("mean")) if tpot_incl_first else None
    figures = EngineResults(
        ttft_s=ttft,
        ttfat_s=ttfat,
        tpot_s=latency("inter_token_latency_ms", "ms"),
        e2e_s=latency("request_latency", "s"),
        request_throughput_rps=rate("requests_per_second"),
        output_throughput_tok_s=rate("output_tokens_per_second"),
        total_token_throughput_tok_s=rate("tokens_per_second"),
        duration_s=duration or None,
        input_throughput_tok_s=counts.input_tokens / duration
        if duration and counts.input_tokens is not None
        else None,
        ttft_includes_reasoning=thinking_reported(ttft.mean if ttft else None, ttfat.mean, None)
        if ttfat is not None
        else None,
        engine_metrics=EngineMetrics(
            {"guidellm_time_per_output_token_incl_first_ms": incl_first}
            if incl_first is not None
            else {}
        ),
    )
    return figures, counts


def _strategy(benchmark: ForeignJson) -> ForeignJson:
    for holder in ("config", "args"):
        strategy = (benchmark.get(holder) or {}).get("strategy")
        if isinstance(strategy, dict):
            return strategy
    return {}


@dataclass(frozen=True)
class Load:
    """A benchmark's load: GuideLLM's strategy and the level it ran at."""

    strategy: str = ""
    concurrency: int | None = None
    rate: float | None = None

    def to_json(self) -> JsonOut:
        load: JsonOut = {"strategy": self.strategy} if self.strategy else {}
        if self.concurrency is not None:
            load["concurrency"] = self.concurrency
        if self.rate is not None:
            load["rate"] = self.rate
        return load

    def row(self, block: EngineResults, engine: str) -> EngineResults:
        """A sweep row: the benchmark's figures at this load."""
        strategy = {"strategy": self.strategy} if self.strategy else {}
        return replace(
            block,
            engine=engine,
            concurrency=self.concurrency,
            rate=self.rate,
            extra={**block.extra, **strategy},
        )


def _load(strategy: ForeignJson) -> Load:
    kind = str(strategy.get("type_") or strategy.get("type") or "")
    streams = integer(strategy.get("streams") or strategy.get("max_concurrency"))
    return Load(
        strategy=kind,
        concurrency=streams if streams is not None else 1 if kind == "synchronous" else None,
        rate=number_text(strategy.get("rate")),
    )


def _requests(benchmark: ForeignJson, engine: str, step: int | None, offset: int) -> list[RequestRow]:
    groups = benchmark.get("requests")
    if not isinstance(groups, dict):
        return []
    origin = number_text(benchmark.get("start_time"))
    rows: list[RequestRow] = []
    for status in ("successful", "errored", "incomplete"):
        for stats in groups.get(status) or []:
            if not isinstance(stats, dict):
                continue
            ok = status == "successful"
            start = number_text(stats.get("request_start_time") or stats.get("start_time"))
            info = stats["info"] if isinstance(stats.get("info"), dict) else {}
            error = info.get("error") or stats.get("error")
            ttft = to_seconds(stats.get("time_to_first_token_ms"), "ms") if ok else None
            ttfo = to_seconds(stats.get("time_to_first_output_token_ms"), "ms") if ok else None
            rows.append(
                request_row(
                    engine,
                    offset + len(rows),
                    ok=ok,
                    start_s=(start - origin) if start is not None and origin is not None else None,
                    ttft_s=ttft,
                    e2e_s=number_text(stats.get("request_latency")) if ok else None,
                    tpot_s=to_seconds(stats.get("inter_token_latency_ms"), "ms") if ok else None,
                    input_tokens=integer(stats.get("prompt_tokens")),
                    output_tokens=integer(stats.get("output_tokens")) if ok else None,
                    error_class=None if ok else status,
                    error=None if ok else str(error or f"request {status}"),
                    extra={
                        "request_id": stats.get("request_id"),
                        **({"step": step} if step is not None else {}),
                        **(reasoning_extra(ttft, ttfo, None, "") if ttfo is not None else {}),
                    },
                )
            )
    return rows


def _find(document: ForeignJson, benchmark: ForeignJson, key: str) -> str | None:
    """GuideLLM moved the target/model between releases: look where each release kept it."""
    places = [
        document.get("args"),
        document.get("metadata"),
        benchmark.get("config"),
        benchmark.get("args"),
        (benchmark.get("benchmarker") or {}).get("backend")
        if isinstance(benchmark.get("benchmarker"), dict)
        else None,
    ]
    for place in places:
        if isinstance(place, dict):
            value = place.get(key)
            if isinstance(value, str) and value:
                return value
            for inner in place.values():
                if isinstance(inner, dict) and isinstance(inner.get(key), str) and inner.get(key):
                    return str(inner[key])
    return None


def parse(source: SourceFile, engine_name: str | None = None) -> list[ImportedRun]:
    document: ForeignJson = source.document
    benchmarks = [
        b for b in document["benchmarks"] if isinstance(b, dict) and isinstance(b.get("metrics"), dict)
    ]
    first = benchmarks[0]
    target = _find(document, first, "target")
    model = _find(document, first, "model")
    host = urlsplit(target).netloc if target and "://" in target else target
    engine = str(engine_name or host or "guidellm")
    rows: list[RequestRow] = []
    steps: list[EngineResults] = []
    many = len(benchmarks) > 1
    for index, benchmark in enumerate(benchmarks):
        step_rows = _requests(benchmark, engine, index if many else None, len(rows))
        figures, counts = _numbers(benchmark)
        numbers = fill_from_requests(figures, step_rows, counts)
        rows.extend(step_rows)
        steps.append(_load(_strategy(benchmark)).row(numbers, engine))
    headline = headline_step(steps)
    config: JsonOut = {"strategies": [_load(_strategy(b)).to_json() for b in benchmarks]}
    args = document.get("args")
    if isinstance(args, dict):
        config["args"] = {
            k: v
            for k, v in args.items()
            if isinstance(v, (str, int, float, bool, list)) and k != "target"
        }
    config["import"] = {
        "tool": LABEL,
        "file": source.name,
        "target": target,
        "benchmarks": len(benchmarks),
    }
    started = parse_timestamp(number_text(first.get("start_time")))
    finished = parse_timestamp(number_text(benchmarks[-1].get("end_time")))
    failed = sum(step.failed for step in steps)
    return [
        ImportedRun(
            tool=TOOL,
            name=f"GuideLLM: {source.name}",
            config=config,
            summary={
                "engines": {engine: headline.to_json()},
                "sweep": [step.to_json() for step in steps] if many else [],
            },
            engines=[engine_snapshot(engine, LABEL, model=model, base_url=target)],
            model=model,
            status=RunStatus.FINISHED_WITH_ERRORS if failed else RunStatus.FINISHED,
            created_at=started,
            started_at=started,
            finished_at=finished,
            requests=rows,
        )
    ]
