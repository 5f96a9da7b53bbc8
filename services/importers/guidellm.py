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

from typing import Any
from urllib.parse import urlsplit

from services.core.measure import thinking_reported
from services.importers.common import (
    ImportedRun,
    SourceFile,
    engine_snapshot,
    fill_from_requests,
    headline_step,
    integer,
    number,
    parse_timestamp,
    reasoning_extra,
    request_row,
    stat_name,
    to_seconds,
)
from services.runstate.lifecycle import RunStatus

TOOL = "guidellm"
LABEL = "GuideLLM (benchmarks.json)"
LATENCY_METRICS = {
    "time_to_first_token_ms": ("ttft_s", "ms"),
    "time_to_first_output_token_ms": ("ttfat_s", "ms"),
    "inter_token_latency_ms": ("tpot_s", "ms"),
    "request_latency": ("e2e_s", "s"),
}
RATE_METRICS = {
    "requests_per_second": "request_throughput_rps",
    "output_tokens_per_second": "output_throughput_tok_s",
    "tokens_per_second": "total_token_throughput_tok_s",
}


def sniff(source: SourceFile) -> bool:
    document = source.document
    if not isinstance(document, dict) or not isinstance(document.get("benchmarks"), list):
        return False
    return any(
        isinstance(b, dict) and isinstance(b.get("metrics"), dict) for b in document["benchmarks"]
    )


def _successful(metric: Any) -> dict[str, Any] | None:
    if not isinstance(metric, dict):
        return None
    block = metric.get("successful")
    return block if isinstance(block, dict) else None


def _stats(block: dict[str, Any], unit: str) -> dict[str, float]:
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


def _numbers(benchmark: dict[str, Any]) -> dict[str, Any]:
    metrics = benchmark.get("metrics") or {}
    numbers: dict[str, Any] = {}
    for name, (ours, unit) in LATENCY_METRICS.items():
        block = _successful(metrics.get(name))
        if block and integer(block.get("count")):
            numbers[ours] = _stats(block, unit)
    for name, ours in RATE_METRICS.items():
        block = _successful(metrics.get(name))
        if block and number(block.get("mean")) is not None:
            numbers[ours] = number(block["mean"])
    totals = metrics.get("request_totals") or {}
    completed = integer(totals.get("successful"))
    if completed is not None:
        errored = integer(totals.get("errored")) or 0
        incomplete = integer(totals.get("incomplete")) or 0
        numbers.update(
            completed=completed,
            failed=errored + incomplete,
            sent=completed + errored + incomplete,
            errors_by_class={k: v for k, v in (("errored", errored), ("incomplete", incomplete)) if v},
        )
    for name, ours in (("prompt_token_count", "input_tokens"), ("output_token_count", "output_tokens")):
        block = _successful(metrics.get(name))
        if block and number(block.get("total_sum")) is not None:
            numbers[ours] = integer(block["total_sum"])
    duration = number(benchmark.get("duration"))
    if duration is None:
        start, end = number(benchmark.get("start_time")), number(benchmark.get("end_time"))
        duration = end - start if start is not None and end is not None else None
    if duration:
        numbers["duration_s"] = duration
        if numbers.get("input_tokens") is not None:
            numbers["input_throughput_tok_s"] = numbers["input_tokens"] / duration
    if "ttfat_s" in numbers:
        ttft, ttfo = numbers.get("ttft_s") or {}, numbers["ttfat_s"]
        numbers["ttft_includes_reasoning"] = thinking_reported(ttft.get("mean"), ttfo.get("mean"), None)
    tpot_incl_first = _successful(metrics.get("time_per_output_token_ms"))
    if tpot_incl_first and number(tpot_incl_first.get("mean")) is not None:
        numbers["engine_metrics"] = {
            "guidellm_time_per_output_token_incl_first_ms": number(tpot_incl_first["mean"])
        }
    return numbers


def _strategy(benchmark: dict[str, Any]) -> dict[str, Any]:
    for holder in ("config", "args"):
        strategy = (benchmark.get(holder) or {}).get("strategy")
        if isinstance(strategy, dict):
            return strategy
    return {}


def _load(strategy: dict[str, Any]) -> dict[str, Any]:
    kind = str(strategy.get("type_") or strategy.get("type") or "")
    load: dict[str, Any] = {"strategy": kind} if kind else {}
    if kind == "synchronous":
        load["concurrency"] = 1
    streams = integer(strategy.get("streams") or strategy.get("max_concurrency"))
    if streams is not None:
        load["concurrency"] = streams
    rate = number(strategy.get("rate"))
    if rate is not None:
        load["rate"] = rate
    return load


def _requests(
    benchmark: dict[str, Any], engine: str, step: int | None, offset: int
) -> list[dict[str, Any]]:
    groups = benchmark.get("requests")
    if not isinstance(groups, dict):
        return []
    origin = number(benchmark.get("start_time"))
    rows: list[dict[str, Any]] = []
    for status in ("successful", "errored", "incomplete"):
        for stats in groups.get(status) or []:
            if not isinstance(stats, dict):
                continue
            ok = status == "successful"
            start = number(stats.get("request_start_time") or stats.get("start_time"))
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
                    e2e_s=number(stats.get("request_latency")) if ok else None,
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


def _find(document: dict[str, Any], benchmark: dict[str, Any], key: str) -> str | None:
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
    document: dict[str, Any] = source.document
    benchmarks = [
        b for b in document["benchmarks"] if isinstance(b, dict) and isinstance(b.get("metrics"), dict)
    ]
    first = benchmarks[0]
    target = _find(document, first, "target")
    model = _find(document, first, "model")
    host = urlsplit(target).netloc if target and "://" in target else target
    engine = str(engine_name or host or "guidellm")
    rows: list[dict[str, Any]] = []
    steps = []
    many = len(benchmarks) > 1
    for index, benchmark in enumerate(benchmarks):
        step_rows = _requests(benchmark, engine, index if many else None, len(rows))
        numbers = fill_from_requests(_numbers(benchmark), step_rows)
        rows.extend(step_rows)
        steps.append({"engine": engine, **_load(_strategy(benchmark)), **numbers})
    headline = headline_step(steps)
    config: dict[str, Any] = {"strategies": [_load(_strategy(b)) for b in benchmarks]}
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
    started = parse_timestamp(number(first.get("start_time")))
    finished = parse_timestamp(number(benchmarks[-1].get("end_time")))
    failed = sum(int(step.get("failed") or 0) for step in steps)
    return [
        ImportedRun(
            tool=TOOL,
            name=f"GuideLLM: {source.name}",
            config=config,
            summary={"engines": {engine: headline}, "sweep": steps if many else []},
            engines=[engine_snapshot(engine, LABEL, model=model, base_url=target)],
            model=model,
            status=RunStatus.FINISHED_WITH_ERRORS if failed else RunStatus.FINISHED,
            created_at=started,
            started_at=started,
            finished_at=finished,
            requests=rows,
        )
    ]
