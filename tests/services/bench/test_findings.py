"""A run's findings (services/bench/findings.py): built from the request records, stored in
each engine block and sweep row, read back typed; runs stored before them read as none."""

from __future__ import annotations

from typing import Any

from services.bench.caveats import run_caveats
from services.bench.findings import (
    IDENTICAL_ANSWERS,
    IMPOSSIBLE_COUNTER,
    USAGE_VS_STREAM,
    Finding,
    findings_of,
    stored_findings,
)
from services.bench.jobs.writer import record_from_row, request_row
from services.bench.results import EngineResults
from services.bench.stats import RequestRecord
from services.bench.summary import BenchSummary
from services.core.counts import Refusal
from tests.services.bench.test_summary import OLD_SWEEP


def record(
    index: int, answer: str | None = "a", prompt: str | None = None, **values: Any
) -> RequestRecord:
    fields: dict[str, Any] = {
        "output_tokens": 32,
        "stream_tokens": 32,
        "answer_digest": answer,
        "prompt_digest": prompt if prompt is not None else f"p{index}",
        **values,
    }
    return RequestRecord(engine="e", index=index, ok=True, **fields)


def test_one_answer_for_every_distinct_prompt_is_a_warning() -> None:
    (found,) = findings_of("e", [record(i) for i in range(40)])
    assert (found.check, found.severity, found.requests, found.of) == (IDENTICAL_ANSWERS, "warn", 40, 40)
    assert not found.failing and "same answer to 40 of 40 distinct prompts" in found.message


def test_answers_that_differ_repeat_prompts_or_are_a_token_long_are_no_warning() -> None:
    assert findings_of("e", [record(i, answer=f"a{i}") for i in range(40)]) == []
    # Most answers the same, but not nine in ten.
    assert findings_of("e", [record(i, answer="a" if i < 30 else f"b{i}") for i in range(40)]) == []
    # The same prompt asked again (a prompt file shorter than the run) answers the same.
    assert findings_of("e", [record(i, prompt=f"p{i % 3}") for i in range(40)]) == []
    # A prefill benchmark's one-token answers agree by nature.
    assert findings_of("e", [record(i, stream_tokens=1, output_tokens=1) for i in range(40)]) == []
    # The warm-up, failures and records without digests (an old row) are not judged.
    assert findings_of("e", [record(i, warmup=True) for i in range(40)]) == []
    assert findings_of("e", [record(i, answer_digest=None) for i in range(40)]) == []


def test_refusals_become_one_finding_per_field_and_rule_with_both_counts() -> None:
    lie = Refusal("completion_tokens", 32, 2, "above_stream")
    negative = Refusal("cached_tokens", -3, None, "negative")
    records = [
        record(i, answer=f"a{i}", stream_tokens=2, output_tokens=2, refused=(lie, negative))
        for i in range(10)
    ]
    records.append(record(10, answer="x"))
    usage, impossible = findings_of("e", records, step=2)
    assert (usage.check, usage.field, usage.requests, usage.of) == (
        USAGE_VS_STREAM,
        "completion_tokens",
        10,
        11,
    )
    assert (usage.reported, usage.stream, usage.step) == (320, 20, 2) and usage.failing
    assert "usage 320 tokens against the stream's 20" in usage.message
    assert (impossible.check, impossible.field, impossible.reported) == (
        IMPOSSIBLE_COUNTER,
        "cached_tokens",
        -30,
    )
    assert "cached_tokens is below 0" in impossible.message and "e.g. -3" in impossible.message


def test_a_records_counts_and_digests_survive_its_stored_row() -> None:
    original = record(
        3, refused=(Refusal("completion_tokens", -32, None, "negative"),), over_max_tokens=True
    )
    back = record_from_row({**request_row(1, original), "engine_name": "e"})
    assert (back.stream_tokens, back.refused, back.over_max_tokens) == (32, original.refused, True)
    assert (back.answer_digest, back.prompt_digest) == ("a", "p3")
    plain = record_from_row({**request_row(1, RequestRecord("e", 1, True)), "engine_name": "e"})
    assert (plain.stream_tokens, plain.refused, plain.answer_digest) == (None, (), None)


def test_findings_read_back_typed_from_blocks_and_sweep_rows_and_old_runs_have_none() -> None:
    found = findings_of("llama", [record(i) for i in range(8)], step=1)
    assert [Finding.from_json(f.to_json()) for f in found] == found
    summary = {
        **OLD_SWEEP,
        "sweep": [
            OLD_SWEEP["sweep"][0],
            {**OLD_SWEEP["sweep"][1], "findings": [f.to_json() for f in found]},
        ],
    }
    assert BenchSummary.from_json(summary).findings() == found
    assert BenchSummary.from_json(summary).findings("vllm") == []
    assert BenchSummary.from_json(summary).to_json() == summary
    assert BenchSummary.from_json(OLD_SWEEP).findings() == []
    assert BenchSummary.from_json({"engines": {"e": {"completed": 1}}}).findings() == []
    # Odd stored entries are dropped, never raised on.
    odd = {"findings": [{"check": "invented"}, "x", None, {**found[0].to_json(), "severity": 3}]}
    assert stored_findings(EngineResults.from_json(odd)) == []
    assert stored_findings(EngineResults.from_json({"findings": "x"})) == []
    notes = run_caveats({}, summary).notes
    assert any(
        line.startswith("Warning: llama gave the same answer") and "(at concurrency 4)" in line
        for line in notes
    )


def test_an_old_runs_impossible_cached_share_is_not_published() -> None:
    """A run stored before counters were refused, with cached tokens three times its prompt."""
    summary = {
        "engines": {
            "e": {"completed": 4, "input_tokens": 80, "cached_tokens": 240, "output_tokens": 64}
        },
        "comparability": {"e": {"prefix_cache": "warm", "cached_share": 3.0, "source": "Shootout"}},
    }
    lines = " ".join(run_caveats({}, summary).notes)
    assert "300%" not in lines and "warm prefix cache" not in lines
