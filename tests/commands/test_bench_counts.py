"""Issue 55's counters and answers, as the README's command meets them against the scripted
server: short answers with a full-length usage, usage three times its text, a negative
completion count, cached tokens three times the prompt, identical answers at 1 ms and an engine
that ignores max_tokens. Each asserts the --json document, the typed findings and the words."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from services.bench.summary import BenchSummary
from tests.commands.test_gate import run_cli
from tests.support.scripted_server import ScriptedServer

#: The README's command, only the URL and sizes changed (issue 55).
README = ["--concurrency", "8", "--requests", "40", "--input-len", "64", "--output-len", "32"]
#: The findings' checks (services/bench/findings.py), as a gate matches them.
USAGE_VS_STREAM, IMPOSSIBLE_COUNTER = "usage_vs_stream", "impossible_counter"
IGNORED_MAX_TOKENS, IDENTICAL_ANSWERS = "ignored_max_tokens", "identical_answers"
#: A healthy engine: its answers depend on the prompt.
HEALTHY = {"ttft": 10, "itl": 1, "tokens": 32, "vary": 1}


def bench(
    capsys: pytest.CaptureFixture[str], server: ScriptedServer, tmp_path: Path, **scenario: object
) -> tuple[dict[str, Any], dict[str, Any], str]:
    """One `bench --json` run: its document, its engine's block and the printed table."""
    out = tmp_path / f"run-{len(list(tmp_path.glob('run-*.json')))}.json"
    code, table, err = run_cli(
        capsys,
        "bench", "--url", server.base_url, "--model", server.model(**{**HEALTHY, **scenario}),
        *README, "--timeout", "30", "--json", str(out),
    )  # fmt: skip
    assert code == 0, err
    payload = json.loads(out.read_text())
    (block,) = payload["engines"].values()
    return payload, block, table


def only(payload: dict[str, Any], check: str) -> Any:
    found = [f for f in BenchSummary.from_json(payload).findings() if f.check == check]
    assert len(found) == 1, found
    return found[0]


def numbers(value: Any) -> list[float]:
    """Every number of a JSON value (the findings' evidence left out)."""
    if isinstance(value, dict):
        return [n for key, item in value.items() if key != "findings" for n in numbers(item)]
    if isinstance(value, list):
        return [n for item in value for n in numbers(item)]
    return [value] if isinstance(value, (int, float)) and not isinstance(value, bool) else []


def test_short_answers_with_a_full_length_usage_use_the_streams_count(
    db_url: str, scripted_server: ScriptedServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """2 tokens streamed, `completion_tokens: 32` claimed: +172% tok/s and honoured_output_len
    true before; now the stream's 2 per request, not honoured, and a finding with both counts."""
    payload, block, table = bench(capsys, scripted_server, tmp_path, tokens=2, ctok=32)
    assert block["output_tokens"] == 80
    assert block["output_throughput_tok_s"] == pytest.approx(80 / block["duration_s"])
    assert block["honoured_output_len"] is False and block["short_output_requests"] == 40
    finding = only(payload, USAGE_VS_STREAM)
    assert finding.failing and finding.field == "completion_tokens"
    assert (finding.requests, finding.of, finding.reported, finding.stream) == (40, 40, 1280, 80)
    assert "usage 1,280 tokens against the stream's 80" in table
    assert "completion_tokens" in table and "end-of-sequence" not in table
    fingerprint = payload["comparability"][finding.engine]
    assert fingerprint["output_len_served"] == 2.0


def test_usage_three_times_its_text_is_refused(
    db_url: str, scripted_server: ScriptedServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    payload, block, _ = bench(capsys, scripted_server, tmp_path, ctok=96)
    assert block["output_tokens"] == 1280 and block["honoured_output_len"] is True
    finding = only(payload, USAGE_VS_STREAM)
    assert (finding.reported, finding.stream) == (3840, 1280)


def test_a_negative_completion_count_is_refused_never_published(
    db_url: str, scripted_server: ScriptedServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`completion_tokens: -32` gave output_tokens -1280, -565.6 tok/s and a caveat that
    invented a cause (an end-of-sequence token)."""
    payload, block, table = bench(capsys, scripted_server, tmp_path, ctok=-32)
    assert min(numbers(block)) >= 0
    assert min(numbers(payload["comparability"])) >= 0
    assert block["output_tokens"] == 1280 and block["honoured_output_len"] is True
    finding = only(payload, IMPOSSIBLE_COUNTER)
    assert finding.failing and finding.field == "completion_tokens" and finding.requests == 40
    assert "completion_tokens is below 0" in table and "(e.g. -32)" in table
    assert "end-of-sequence" not in table and "shorter than asked" not in table


def test_cached_tokens_above_the_prompt_are_refused(
    db_url: str, scripted_server: ScriptedServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Cached tokens three times the prompt printed "warm prefix cache (300% of prompt
    tokens)" as a fact."""
    payload, block, table = bench(capsys, scripted_server, tmp_path, prompt=20, cached=60)
    assert block["cached_tokens"] is None
    finding = only(payload, IMPOSSIBLE_COUNTER)
    assert finding.field == "cached_tokens" and (finding.reported, finding.stream) == (2400, 800)
    assert "300%" not in table and "warm prefix cache" not in table
    assert "cached_tokens is more than the prompt's tokens (20)" in table
    fingerprint = payload["comparability"][finding.engine]
    assert "cached_share" not in fingerprint and "prefix_cache" not in fingerprint


def test_identical_answers_for_every_prompt_are_a_warning(
    db_url: str, scripted_server: ScriptedServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A cache in front of a broken model: one answer for every prompt at 1 ms TTFT."""
    payload, _, table = bench(capsys, scripted_server, tmp_path, ttft=1, itl=0, vary=0)
    finding = only(payload, IDENTICAL_ANSWERS)
    assert not finding.failing and finding.severity == "warn"
    assert (finding.requests, finding.of) == (40, 40)
    assert "same answer to 40 of 40 distinct prompts" in table


def test_an_engine_that_ignores_max_tokens_is_a_finding(
    db_url: str, scripted_server: ScriptedServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    payload, block, table = bench(capsys, scripted_server, tmp_path, tokens=40, cap=0)
    finding = only(payload, IGNORED_MAX_TOKENS)
    assert finding.failing and (finding.requests, finding.stream) == (40, 1600)
    assert block["output_tokens"] == 1600  # its counter agreed with its stream
    assert "ignored max_tokens" in table


def test_a_healthy_engine_has_no_findings(
    db_url: str, scripted_server: ScriptedServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Several tokens per chunk and the end-of-sequence token in the usage are no disagreement."""
    payload, block, _ = bench(capsys, scripted_server, tmp_path, tpc=3)
    assert block["findings"] == [] and block["output_tokens"] == 1280
    assert BenchSummary.from_json(payload).findings() == []
