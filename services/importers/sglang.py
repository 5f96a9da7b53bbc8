"""SGLang `python -m sglang.bench_serving --output-file X.jsonl` results.

One JSON line per benchmark, appended: setup (backend, dataset_name, request_rate, which
is a bare `Infinity` when unlimited, max_concurrency, random_input_len, random_output_len,
random_range_ratio, sharegpt_output_len), totals (duration, completed, total_input_tokens,
total_output_tokens, total_output_tokens_retokenized, request_throughput,
input_throughput, output_throughput, total_throughput in newer versions, concurrency,
accept_length) and `mean_/median_/std_/p<N>_{ttft,tpot,itl,e2e_latency}_ms`.
`--output-details` adds per-request arrays (input_lens, output_lens, ttfts, itls,
generated_texts, errors) but no per-request latency: we take TTFT plus the sum of the
chunk gaps, which is what SGLang's own E2E latency measures for a streamed request.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from db.models import RequestRow
from services.bench.results import EngineMetrics, EngineResults
from services.core.json_types import ForeignJson, JsonOut
from services.core.measure import tpot
from services.core.units import number_text
from services.importers.common import (
    ImportedRun,
    SourceFile,
    engine_snapshot,
    fill_from_requests,
    first_line,
    headline_step,
    integer,
    model_name,
    request_row,
)
from services.importers.vllm import engine_numbers, step_row
from services.runstate.lifecycle import RunStatus

TOOL = "sglang"
LABEL = "SGLang bench_serving (JSONL)"
METRIC_ALIASES = {"ttft": "ttft_s", "tpot": "tpot_s", "itl": "itl_s", "e2e_latency": "e2e_s"}
SIGNATURE_KEYS = {"mean_e2e_latency_ms", "median_e2e_latency_ms", "total_output_tokens_retokenized"}
SETUP_KEYS = (
    "backend",
    "dataset_name",
    "request_rate",
    "max_concurrency",
    "sharegpt_output_len",
    "random_input_len",
    "random_output_len",
    "random_range_ratio",
    "model_id",
    "tokenizer_id",
    "tag",
)
ENGINE_METRIC_KEYS = (
    "concurrency",
    "accept_length",
    "total_output_tokens_retokenized",
    "output_throughput_retokenized",
    "max_output_tokens_per_s",
    "max_concurrent_requests",
)


def sniff(source: SourceFile) -> bool:
    objects = source.objects
    return bool(objects) and all(SIGNATURE_KEYS & obj.keys() for obj in objects)


def _requests(result: ForeignJson, engine: str, step: int | None, offset: int) -> list[RequestRow]:
    ttfts = result.get("ttfts")
    if not isinstance(ttfts, list):
        return []
    errors = _as_list(result.get("errors"))
    itls_all = _as_list(result.get("itls"))
    inputs = _as_list(result.get("input_lens"))
    outputs = _as_list(result.get("output_lens"))
    rows = []
    for i, raw_ttft in enumerate(ttfts):
        error = errors[i] if i < len(errors) else ""
        ttft = number_text(raw_ttft)
        ok = not error and ttft is not None and ttft > 0
        itls = [
            gap
            for gap in (itls_all[i] if i < len(itls_all) and isinstance(itls_all[i], list) else [])
            if number_text(gap) is not None
        ]
        e2e = ttft + sum(itls) if ok and ttft is not None else None
        output_tokens = integer(outputs[i]) if i < len(outputs) else None
        rows.append(
            request_row(
                engine,
                offset + i,
                ok=ok,
                ttft_s=ttft if ok else None,
                e2e_s=e2e,
                tpot_s=tpot(ttft, e2e, output_tokens) if ok else None,
                itl_s=itls if ok else [],
                input_tokens=integer(inputs[i]) if i < len(inputs) else None,
                output_tokens=output_tokens if ok else None,
                error_class=None if ok else (first_line(error) or "error"),
                error=None if ok else (str(error) if error else "failed (no error text in the file)"),
                extra={"e2e_from": "ttft + sum(itls)", **({"step": step} if step is not None else {})},
            )
        )
    return rows


def parse(source: SourceFile, engine_name: str | None = None) -> list[ImportedRun]:
    results = source.objects
    first = results[0]
    engine = str(engine_name or first.get("backend") or "sglang-bench")
    rows: list[RequestRow] = []
    steps: list[EngineResults] = []
    many = len(results) > 1
    for index, result in enumerate(results):
        step_rows = _requests(result, engine, index if many else None, len(rows))
        figures, counts = engine_numbers(result, METRIC_ALIASES)
        figures = replace(
            figures,
            engine_metrics=EngineMetrics(
                {key: result[key] for key in ENGINE_METRIC_KEYS if key in result}
            ),
        )
        if counts.failed is None and step_rows:
            counts = replace(counts, failed=sum(1 for row in step_rows if not row["ok"]))
        numbers = fill_from_requests(figures, step_rows, counts)
        rows.extend(step_rows)
        steps.append(step_row(numbers, engine, result))
    headline = headline_step(steps)
    config: JsonOut = {}
    for key in SETUP_KEYS:
        values = [result.get(key) for result in results if key in result]
        if not values:
            continue
        rate_text = [("inf" if isinstance(v, float) and v == float("inf") else v) for v in values]
        config[key] = rate_text[0] if len({str(v) for v in rate_text}) == 1 else rate_text
    config["import"] = {"tool": LABEL, "file": source.name, "results": len(results)}
    model = model_name(first.get("model_id") or first.get("model"))
    failed = sum(step.failed for step in steps)
    return [
        ImportedRun(
            tool=TOOL,
            name=f"SGLang bench_serving: {source.name}",
            config=config,
            summary={
                "engines": {engine: headline.to_json()},
                "sweep": [step.to_json() for step in steps] if many else [],
            },
            engines=[engine_snapshot(engine, LABEL, model=model, backend=first.get("backend"))],
            model=model,
            workload=str(first["dataset_name"]) if first.get("dataset_name") else None,
            status=RunStatus.FINISHED_WITH_ERRORS if failed else RunStatus.FINISHED,
            requests=rows,
        )
    ]


def _as_list(value: Any) -> list[Any]:
    """A per-request array of the result file; anything else reads as none."""
    return value if isinstance(value, list) else []
