"""NVIDIA AIPerf exports (docs/tutorials/working-with-profile-exports.md).

* `profile_export_aiperf.json`: one object; each metric is `{"unit": "ms", "avg": …,
  "p50": …, "p99": …, "min": …, "max": …, "std": …}` keyed by its tag
  (time_to_first_token, inter_token_latency, inter_chunk_latency, request_latency,
  request_throughput, output_token_throughput, total_token_throughput, benchmark_duration,
  request_count, error_request_count, total_isl, total_osl, goodput …), plus
  error_summary, start_time, end_time and input_config. Older releases nest the metrics
  under "records".
* `profile_export_aiperf.csv`: the same numbers in sections: `Metric,avg,min,max,p1,…`
  rows named like "Time to First Token (ms)", then `Metric,Value` rows.
* `profile_export.jsonl`: one record per request (`metadata` with request_start_ns,
  request_end_ns, benchmark_phase; `metrics` of `{value, unit}`; `error`). Imported alone,
  or picked up beside the JSON/CSV when a path is imported.

AIPerf's "inter token latency" is (latency - TTFT) / (output tokens - 1): our TPOT. Its
"inter chunk latency" (gaps between streamed chunks) is our ITL. With a reasoning model its
time_to_first_output_token (TTFO, the first non-reasoning token) is our time to first answer
token, and reasoning_token_count (per record) / total_reasoning_tokens its reasoning tokens,
counted with its tokenizer; output_sequence_length includes them, output_token_count does not.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from db.models import RequestRow
from services.bench.results import Distribution, EngineMetrics, EngineResults
from services.core.errors import ValidationError
from services.core.json_types import ForeignJson, JsonOut
from services.core.measure import thinking_reported
from services.core.units import number_text
from services.importers.common import (
    Counts,
    ImportedRun,
    SourceFile,
    engine_snapshot,
    fill_from_requests,
    integer,
    parse_timestamp,
    reasoning_extra,
    request_row,
    stat_name,
    summary_from_requests,
    to_seconds,
)
from services.runstate.lifecycle import RunStatus

TOOL = "aiperf"
LABEL = "NVIDIA AIPerf (profile export JSON/CSV/JSONL)"
#: AIPerf's latency tags, each read into its field in `_engine_numbers`.
LATENCY_TAGS = (
    "time_to_first_token",
    "time_to_first_output_token",
    "inter_token_latency",
    "inter_chunk_latency",
    "request_latency",
)
#: Who counted AIPerf's reasoning tokens (our rows' `reasoning_source`).
REASONING_SOURCE = "aiperf tokenizer"
#: CSV metric names (lower case, unit removed) -> tags
CSV_NAMES = {
    "time to first token": "time_to_first_token",
    "time to first output token": "time_to_first_output_token",
    "total reasoning tokens": "total_reasoning_tokens",
    "inter token latency": "inter_token_latency",
    "inter chunk latency": "inter_chunk_latency",
    "request latency": "request_latency",
    "request throughput": "request_throughput",
    "output token throughput": "output_token_throughput",
    "total token throughput": "total_token_throughput",
    "goodput": "goodput",
    "benchmark duration": "benchmark_duration",
    "request count": "request_count",
    "error request count": "error_request_count",
    "total input sequence length": "total_isl",
    "total output sequence length": "total_osl",
    "total output tokens": "total_output_tokens",
    "time to second token": "time_to_second_token",
    "output token throughput per user": "output_token_throughput_per_user",
}
SIBLING_RECORDS = "profile_export.jsonl"


def csv_name(cell: str) -> tuple[str, str]:
    """A CSV metric cell's (name, unit): "Request Latency (ms)" -> ("Request Latency", "ms").
    One pass from the end, as `^(.*?)\\s*(?:\\(([^)]*)\\))?\\s*$` read it: that regex took
    13 s on a 2,000-character cell and 110 s on 4,000 (a file a viewer uploads)."""
    text = cell.strip()
    if text.endswith(")"):
        # The earliest "(" with no ")" between it and the last one, as the lazy name had it.
        opening = text.find("(", text.rfind(")", 0, len(text) - 1) + 1, len(text) - 1)
        if opening != -1:
            return text[:opening].rstrip(), text[opening + 1 : -1]
    return text, ""


def _is_metric(value: Any) -> bool:
    return (
        isinstance(value, dict)
        and "unit" in value
        and any(key in value for key in ("avg", "p50", "value"))
    )


def _metrics_object(document: ForeignJson) -> ForeignJson:
    records = document.get("records")
    return records if isinstance(records, dict) else document


def _is_record(obj: Any) -> bool:
    return isinstance(obj, dict) and isinstance(obj.get("metadata"), dict) and "metrics" in obj


def sniff(source: SourceFile) -> bool:
    if isinstance(source.document, dict):
        metrics = _metrics_object(source.document)
        return any(
            _is_metric(metrics.get(tag))
            for tag in (*LATENCY_TAGS, "request_throughput", "request_count")
        )
    if source.lines:
        return all(_is_record(line) for line in source.lines)
    if source.document is None and source.lines is None:
        head = source.text.lstrip().splitlines()[0] if source.text.strip() else ""
        return head.lower().startswith("metric,") and "time to first token" in source.text.lower()
    return False


def _stats(metric: ForeignJson) -> dict[str, float]:
    unit = metric.get("unit")
    stats = {}
    for key, value in metric.items():
        name = stat_name(key)
        seconds = to_seconds(value, unit)
        if name and seconds is not None:
            stats[name] = seconds
    return stats


def _rate(metric: Any) -> float | None:
    if not isinstance(metric, dict):
        return number_text(metric)
    return number_text(metric.get("avg", metric.get("value")))


def _engine_numbers(metrics: ForeignJson) -> tuple[EngineResults, Counts]:
    """The export's figures, and apart the counts it gave (its records tell those it did not)."""

    def latency(tag: str) -> Distribution | None:
        stats = _stats(metrics[tag]) if _is_metric(metrics.get(tag)) else {}
        return Distribution(stats) if stats else None

    def rate(tag: str) -> float | None:
        return _rate(metrics.get(tag))

    duration_metric = metrics.get("benchmark_duration")
    duration = (
        to_seconds(
            duration_metric.get("avg", duration_metric.get("value")), duration_metric.get("unit") or "s"
        )
        if isinstance(duration_metric, dict)
        else None
    )
    completed = integer(_rate(metrics.get("request_count")))
    failed = integer(_rate(metrics.get("error_request_count")))
    input_tokens = integer(_rate(metrics.get("total_isl")))
    output_tokens = integer(_rate(metrics.get("total_osl")) or _rate(metrics.get("total_output_tokens")))
    counts = Counts(input_tokens=input_tokens, output_tokens=output_tokens)
    if completed is not None:
        counts = replace(counts, completed=completed, failed=failed or 0, sent=completed + (failed or 0))
    engine_metrics = {
        tag: dict(metrics[tag])
        for tag in (
            "time_to_second_token",
            "output_token_throughput_per_user",
            "output_sequence_length",
            "input_sequence_length",
        )
        if _is_metric(metrics.get(tag))
    }
    figures = EngineResults(
        ttft_s=latency("time_to_first_token"),
        ttfat_s=latency("time_to_first_output_token"),
        tpot_s=latency("inter_token_latency"),
        itl_s=latency("inter_chunk_latency"),
        e2e_s=latency("request_latency"),
        request_throughput_rps=rate("request_throughput"),
        output_throughput_tok_s=rate("output_token_throughput"),
        total_token_throughput_tok_s=rate("total_token_throughput"),
        goodput_rps=rate("goodput"),
        duration_s=duration,
        input_throughput_tok_s=input_tokens / duration
        if input_tokens is not None and duration
        else None,
        engine_metrics=EngineMetrics(engine_metrics),
    )
    return _with_reasoning_numbers(figures, metrics, output_tokens), counts


def _with_reasoning_numbers(
    figures: EngineResults, metrics: ForeignJson, output_tokens: int | None
) -> EngineResults:
    """The summary's thinking: total reasoning tokens, the answer's (total_osl includes them)
    and whether TTFT includes thinking; as it was when AIPerf reported neither TTFO nor reasoning."""
    reasoning = integer(_rate(metrics.get("total_reasoning_tokens")))
    ttft, ttfo = figures.ttft_s, figures.ttfat_s
    if reasoning is None and not (ttfo and ttfo.values):
        return figures
    includes = thinking_reported(ttft.mean if ttft else None, ttfo.mean if ttfo else None, reasoning)
    if reasoning is None:
        return replace(figures, ttft_includes_reasoning=includes)
    return replace(
        figures,
        ttft_includes_reasoning=includes,
        reasoning_tokens=reasoning,
        reasoning_tokens_source=REASONING_SOURCE,
        answer_tokens=max(0, output_tokens - reasoning) if output_tokens is not None else None,
    )


def _errors_by_class(document: ForeignJson) -> dict[str, int]:
    errors: dict[str, int] = {}
    for entry in document.get("error_summary") or []:
        if isinstance(entry, dict):
            details = entry.get("error_details") or {}
            key = str(details.get("type") or details.get("code") or "error")
            errors[key] = errors.get(key, 0) + (integer(entry.get("count")) or 0)
    return errors


def _csv_metrics(source: SourceFile) -> ForeignJson:
    """The CSV's sections as the JSON's metric objects."""
    metrics: ForeignJson = {}
    header: list[str] | None = None
    for row in source.csv_rows():
        if not row or not any(cell.strip() for cell in row):
            header = None
            continue
        if row[0].strip().lower() in ("metric", "endpoint"):
            header = [cell.strip().lower() for cell in row]
            continue
        if header is None or header[0] != "metric":
            continue  # GPU telemetry sections start with Endpoint; not imported
        name, unit = csv_name(row[0])
        tag = CSV_NAMES.get(name.strip().lower())
        if not tag:
            continue
        unit = unit.strip()
        if header[1:2] == ["value"]:
            metrics[tag] = {"unit": unit, "avg": number_text(row[1]) if len(row) > 1 else None}
        else:
            metrics[tag] = {
                "unit": unit,
                **{name: number_text(cell) for name, cell in zip(header[1:], row[1:])},
            }
    if not metrics:
        raise ValidationError(f"{source.name}: no AIPerf metrics found in the CSV.")
    return metrics


def _records(lines: list[Any], engine: str) -> tuple[list[RequestRow], float | None]:
    """profile_export.jsonl records -> request rows, and the span they cover in seconds."""
    starts = [integer((line.get("metadata") or {}).get("request_start_ns")) for line in lines]
    ends = [integer((line.get("metadata") or {}).get("request_end_ns")) for line in lines]
    origin = min((s for s in starts if s is not None), default=None)
    rows = []
    measured_starts: list[int] = []
    measured_ends: list[int] = []
    for index, line in enumerate(lines):
        metadata = line.get("metadata") or {}
        metrics = line.get("metrics") or {}
        error = line.get("error")

        def value(tag: str, as_seconds: bool = True, metrics: ForeignJson = metrics) -> Any:
            item = metrics.get(tag)
            if not isinstance(item, dict):
                return None
            raw = item.get("value")
            if isinstance(raw, list):
                return [to_seconds(v, item.get("unit")) for v in raw] if as_seconds else raw
            return to_seconds(raw, item.get("unit")) if as_seconds else raw

        warmup = str(metadata.get("benchmark_phase") or "profiling").lower() == "warmup"
        ok = not error and not metadata.get("was_cancelled")
        start, end = starts[index], ends[index]
        if not warmup and start is not None and end is not None:
            measured_starts.append(start)
            measured_ends.append(end)
        itls = value("inter_chunk_latency")
        reasoning = integer(value("reasoning_token_count", False))
        output_tokens = integer(value("output_sequence_length", False)) or _plus(
            integer(value("output_token_count", False)), reasoning
        )
        ttft = value("time_to_first_token") if ok else None
        thinking = (
            reasoning_extra(ttft, value("time_to_first_output_token"), reasoning, REASONING_SOURCE)
            if ok
            else {}
        )
        rows.append(
            request_row(
                engine,
                _or_index(integer(metadata.get("session_num")), index),
                warmup=warmup,
                ok=ok,
                start_s=(start - origin) / 1e9 if start is not None and origin is not None else None,
                ttft_s=ttft,
                e2e_s=value("request_latency") if ok else None,
                tpot_s=value("inter_token_latency") if ok else None,
                itl_s=[v for v in itls if v is not None] if ok and isinstance(itls, list) else [],
                input_tokens=integer(value("input_sequence_length", False) or value("error_isl", False)),
                output_tokens=output_tokens if ok else None,
                error_class=None if ok else str((error or {}).get("type") or "cancelled"),
                error=None if ok else str((error or {}).get("message") or "request was cancelled"),
                extra={
                    **{
                        k: metadata[k]
                        for k in ("x_request_id", "conversation_id", "turn_index")
                        if k in metadata
                    },
                    **thinking,
                },
            )
        )
    span = (max(measured_ends) - min(measured_starts)) / 1e9 if measured_starts else None
    return rows, span


def _sibling_records(source: SourceFile) -> list[Any]:
    if source.path is None:
        return []
    sibling = Path(source.path).with_name(SIBLING_RECORDS)
    if not sibling.is_file() or sibling == Path(source.path):
        return []
    lines = []
    with sibling.open(encoding="utf-8") as handle:
        for line in handle:
            if line.strip():
                try:
                    lines.append(json.loads(line))
                except json.JSONDecodeError:
                    return []
    return [line for line in lines if _is_record(line)]


def _host(url: Any) -> str | None:
    if not url:
        return None
    text = str(url)
    parts = urlsplit(text if "://" in text else f"http://{text}")
    return parts.netloc or None


def parse(source: SourceFile, engine_name: str | None = None) -> list[ImportedRun]:
    document: ForeignJson = source.document if isinstance(source.document, dict) else {}
    input_config = document.get("input_config") or {}
    endpoint = input_config.get("endpoint") or {}
    url = endpoint.get("url") or (endpoint.get("urls") or [None])[0]
    models = endpoint.get("model_names") or []
    model = str(models[0]) if models else None
    engine = str(engine_name or _host(url) or "aiperf")
    record_lines = source.lines if source.lines else _sibling_records(source)
    rows, span = _records(record_lines, engine) if record_lines else ([], None)
    warnings = []
    if source.lines:
        numbers = summary_from_requests(rows, span)
    else:
        metrics = _metrics_object(document) if document else _csv_metrics(source)
        figures, counts = _engine_numbers(metrics)
        numbers = fill_from_requests(figures, rows, counts)
        if rows:
            warnings.append(f"per-request records read from {SIBLING_RECORDS} beside {source.name}")
    errors = _errors_by_class(document)
    if errors:
        numbers = replace(numbers, errors_by_class=errors)
    loadgen = input_config.get("loadgen") or {}
    config: JsonOut = {
        key: loadgen[key]
        for key in ("concurrency", "request_rate", "request_rate_mode", "request_count")
        if key in loadgen
    }
    if endpoint:
        config["endpoint"] = {
            k: endpoint[k] for k in ("type", "streaming", "custom_endpoint") if k in endpoint
        }
    prompt = ((input_config.get("input") or {}).get("prompt")) or {}
    if prompt:
        config["prompt"] = prompt
    config["import"] = {
        "tool": LABEL,
        "file": source.name,
        "cli_command": input_config.get("cli_command"),
    }
    started = parse_timestamp(document.get("start_time"))
    finished = parse_timestamp(document.get("end_time"))
    failed = numbers.failed
    return [
        ImportedRun(
            tool=TOOL,
            name=f"AIPerf: {source.name}",
            config=config,
            summary={"engines": {engine: numbers.to_json()}, "sweep": []},
            engines=[engine_snapshot(engine, LABEL, model=model, base_url=str(url) if url else None)],
            model=model,
            status=RunStatus.FINISHED_WITH_ERRORS if failed else RunStatus.FINISHED,
            created_at=started or finished,
            started_at=started,
            finished_at=finished,
            requests=rows,
            warnings=warnings,
        )
    ]


def _plus(answer: int | None, reasoning: int | None) -> int | None:
    """output_token_count leaves the reasoning tokens out; output_sequence_length keeps them."""
    return None if answer is None else answer + (reasoning or 0)


def _or_index(number: int | None, index: int) -> int:
    return index if number is None else number
