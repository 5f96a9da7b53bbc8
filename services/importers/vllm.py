"""`vllm bench serve --save-result` files (vllm/benchmarks/serve.py).

One JSON object per benchmark: setup keys (date, backend, label, model_id, tokenizer_id,
num_prompts, request_rate ("inf" when unlimited), burstiness, max_concurrency), totals
(duration, completed, failed, total_input_tokens, total_output_tokens, request_throughput,
request_goodput, output_throughput, total_token_throughput, max_output_tokens_per_s,
max_concurrent_requests) and `mean_/median_/std_/p<N>_{ttft,tpot,itl,e2el}_ms`.
`--save-detailed` adds per-request arrays (input_lens, output_lens, ttfts, itls,
start_times, generated_texts, errors); `latencies` and `queue_times` are kept even without
it. `--append-result` writes one object per line: each becomes a sweep step, and the
step with the highest request throughput gives the run's headline numbers.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from db.models import RequestRow
from services.bench.results import Distribution, EngineMetrics, EngineResults
from services.core.json_types import ForeignJson, JsonOut
from services.core.measure import tpot
from services.core.units import number_text
from services.importers.common import (
    Counts,
    ImportedRun,
    SourceFile,
    engine_snapshot,
    fill_from_requests,
    first_line,
    flat_latency_stats,
    headline_step,
    integer,
    model_name,
    parse_timestamp,
    request_row,
)
from services.runstate.lifecycle import RunStatus

TOOL = "vllm"
LABEL = "vLLM bench serve (result JSON)"
METRIC_ALIASES = {"ttft": "ttft_s", "tpot": "tpot_s", "itl": "itl_s", "e2el": "e2e_s"}
SIGNATURE_KEYS = {
    "mean_e2el_ms",
    "median_e2el_ms",
    "endpoint_type",
    "burstiness",
    "max_concurrent_requests",
}
SGLANG_KEYS = {
    "mean_e2e_latency_ms",
    "median_e2e_latency_ms",
    "total_output_tokens_retokenized",
    "accept_length",
}
SETUP_KEYS = (
    "backend",
    "endpoint_type",
    "label",
    "model_id",
    "tokenizer_id",
    "num_prompts",
    "request_rate",
    "burstiness",
    "max_concurrency",
    "ramp_up_strategy",
    "ramp_up_start_rps",
    "ramp_up_end_rps",
)
PER_REQUEST_KEYS = (
    "input_lens",
    "output_lens",
    "ttfts",
    "itls",
    "latencies",
    "start_times",
    "queue_times",
    "generated_texts",
    "errors",
)
TOTAL_KEYS = (
    "date",
    "duration",
    "completed",
    "failed",
    "total_input_tokens",
    "total_output_tokens",
    "request_throughput",
    "request_goodput",
    "output_throughput",
    "total_token_throughput",
)
ENGINE_METRIC_KEYS = (
    "max_output_tokens_per_s",
    "max_concurrent_requests",
    "rtfx",
    "spec_decode_acceptance_rate",
    "spec_decode_acceptance_length",
    "spec_decode_num_drafts",
    "spec_decode_draft_tokens",
    "spec_decode_accepted_tokens",
)


def extra_metadata(result: ForeignJson) -> JsonOut:
    """`--metadata key=value` pairs (and other setup scalars we do not name)."""
    known = {*SETUP_KEYS, *TOTAL_KEYS, *PER_REQUEST_KEYS, *ENGINE_METRIC_KEYS}
    return {
        key: value
        for key, value in result.items()
        if key not in known
        and not key.endswith("_ms")
        and isinstance(value, (str, int, float))
        and not isinstance(value, bool)
    }


def sniff(source: SourceFile) -> bool:
    objects = source.objects
    return bool(objects) and all(
        SIGNATURE_KEYS & obj.keys() and not SGLANG_KEYS & obj.keys() for obj in objects
    )


def _requests(result: ForeignJson, engine: str, step: int | None, offset: int) -> list[RequestRow]:
    arrays: dict[str, list[Any]] = {
        key: values for key in PER_REQUEST_KEYS if isinstance(values := result.get(key), list)
    }
    lengths = {len(values) for key, values in arrays.items() if key != "generated_texts"}
    if not lengths:
        return []
    count = max(lengths)
    starts = [number_text(v) for v in arrays.get("start_times", [])]
    origin = min((v for v in starts if v is not None), default=None)
    errors = arrays.get("errors")
    rows = []
    for i in range(count):

        def at(key: str, i: int = i) -> Any:
            values = arrays.get(key)
            return values[i] if values is not None and i < len(values) else None

        error = at("errors")
        latency = number_text(at("latencies"))
        ok = (not error) if errors is not None else (latency is not None and latency > 0)
        ttft = number_text(at("ttfts")) if ok else None
        itls = [gap for gap in (at("itls") or []) if number_text(gap) is not None] if ok else []
        e2e = latency if ok and latency else (ttft + sum(itls) if ok and ttft is not None else None)
        output_tokens = integer(at("output_lens"))
        start = number_text(at("start_times"))
        extra: JsonOut = {}
        if step is not None:
            extra["step"] = step
        queue = number_text(at("queue_times"))
        if queue is not None:
            extra["client_queue_s"] = queue
        rows.append(
            request_row(
                engine,
                offset + i,
                ok=ok,
                start_s=(start - origin) if start is not None and origin is not None else None,
                ttft_s=ttft,
                e2e_s=e2e,
                tpot_s=tpot(ttft, e2e, output_tokens) if ok else None,
                itl_s=itls,
                input_tokens=integer(at("input_lens")),
                output_tokens=output_tokens if ok else None,
                error_class=None if ok else (first_line(error) or "error"),
                error=None if ok else (str(error) if error else "failed (no error text in the file)"),
                extra=extra,
            )
        )
    return rows


def engine_numbers(
    result: ForeignJson, aliases: dict[str, str] = METRIC_ALIASES
) -> tuple[EngineResults, Counts]:
    """The result's figures, and apart the counts it gave (its rows tell those it did not)."""
    duration = number_text(result.get("duration") or result.get("benchmark_duration"))
    completed = integer(result.get("completed"))
    failed = integer(result.get("failed"))
    input_tokens = integer(result.get("total_input_tokens") or result.get("total_input"))
    output_tokens = integer(result.get("total_output_tokens") or result.get("total_output"))
    latencies = flat_latency_stats(result, aliases)

    def latency(metric: str) -> Distribution | None:
        return Distribution(latencies[metric]) if metric in latencies else None

    figures = EngineResults(
        duration_s=duration,
        request_throughput_rps=number_text(result.get("request_throughput")),
        input_throughput_tok_s=number_text(result.get("input_throughput"))
        or (input_tokens / duration if input_tokens is not None and duration else None),
        output_throughput_tok_s=number_text(result.get("output_throughput")),
        total_token_throughput_tok_s=number_text(
            result.get("total_token_throughput") or result.get("total_throughput")
        ),
        goodput_rps=number_text(result.get("request_goodput")),
        ttft_s=latency("ttft_s"),
        tpot_s=latency("tpot_s"),
        itl_s=latency("itl_s"),
        e2e_s=latency("e2e_s"),
        engine_metrics=EngineMetrics({key: result[key] for key in ENGINE_METRIC_KEYS if key in result}),
    )
    counts = Counts(
        completed=completed,
        failed=failed,
        sent=completed + failed if completed is not None and failed is not None else None,
        input_tokens=input_tokens,
        output_tokens=output_tokens,
    )
    return figures, counts


def step_row(block: EngineResults, engine: str, result: ForeignJson) -> EngineResults:
    """A sweep row: the step's figures at its load level (the result's rate and concurrency)."""
    return replace(
        block,
        engine=engine,
        rate=number_text(result.get("request_rate")),
        concurrency=integer(result.get("max_concurrency")),
    )


def parse(source: SourceFile, engine_name: str | None = None) -> list[ImportedRun]:
    results = source.objects
    first = results[0]
    engine = engine_name or first.get("label") or first.get("backend") or "vllm-bench"
    engine = str(engine)
    rows: list[RequestRow] = []
    steps: list[EngineResults] = []
    many = len(results) > 1
    for index, result in enumerate(results):
        step_rows = _requests(result, engine, index if many else None, len(rows))
        figures, counts = engine_numbers(result)
        numbers = fill_from_requests(figures, step_rows, counts)
        rows.extend(step_rows)
        steps.append(step_row(numbers, engine, result))
    headline = headline_step(steps)
    config = {key: first[key] for key in SETUP_KEYS if key in first}
    for key in ("request_rate", "max_concurrency"):
        values = [result.get(key) for result in results]
        if len({str(value) for value in values}) > 1:
            config[key] = values
    config["import"] = {
        "tool": LABEL,
        "file": source.name,
        "date": first.get("date"),
        "results": len(results),
    }
    metadata = extra_metadata(first)
    if metadata:
        config["metadata"] = metadata
    model = model_name(first.get("model_id"))
    created = parse_timestamp(first.get("date"))
    failed = sum(step.failed for step in steps)
    return [
        ImportedRun(
            tool=TOOL,
            name=f"vllm bench serve: {source.name}",
            config=config,
            summary={
                "engines": {engine: headline.to_json()},
                "sweep": [step.to_json() for step in steps] if many else [],
            },
            engines=[
                engine_snapshot(
                    engine,
                    LABEL,
                    model=model,
                    backend=first.get("backend"),
                    tokenizer_id=first.get("tokenizer_id"),
                )
            ],
            model=model,
            workload=str(metadata["dataset_name"]) if "dataset_name" in metadata else None,
            status=RunStatus.FINISHED_WITH_ERRORS if failed else RunStatus.FINISHED,
            created_at=created,
            finished_at=created,
            requests=rows,
        )
    ]
