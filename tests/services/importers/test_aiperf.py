"""AIPerf profile exports: aggregated JSON (with its per-request records beside it), CSV, JSONL."""

from __future__ import annotations

import pytest

from services import importers
from services.bench.results import EngineResults
from services.importers import aiperf


def test_aggregated_json_with_records_beside_it(samples) -> None:
    path = samples / "aiperf_run" / "profile_export_aiperf.json"
    module, [run] = importers.parse_file(path.read_bytes(), path.name, path=path)
    assert module is aiperf
    assert run.engine_names == "localhost:9000" and run.model == "openai/gpt-oss-20b"
    engine = run.summary["engines"]["localhost:9000"]
    assert engine["ttft_s"]["p50"] == pytest.approx(0.140) and engine["ttft_s"]["std"] == pytest.approx(
        0.04
    )
    assert engine["tpot_s"]["mean"] == pytest.approx(0.0052)  # AIPerf's inter token latency is our TPOT
    assert engine["itl_s"]["p99"] == pytest.approx(0.008)  # its inter chunk latency is our ITL
    assert engine["e2e_s"]["p25"] == pytest.approx(0.6)
    assert (engine["completed"], engine["failed"]) == (200, 4)
    assert engine["duration_s"] == 15.2 and engine["output_throughput_tok_s"] == 1274.63
    assert engine["errors_by_class"] == {"InternalServerError": 3, "RequestCancellationError": 1}
    assert run.config["concurrency"] == 100 and "aiperf profile" in run.config["import"]["cli_command"]
    assert run.started_at.isoformat().startswith("2026-10-17T20:22:08")
    assert len(run.requests) == 4 and run.warnings  # read from profile_export.jsonl beside it


def test_uploaded_json_alone_has_no_rows(samples) -> None:
    path = samples / "aiperf_run" / "profile_export_aiperf.json"
    _, [run] = importers.parse_file(path.read_bytes(), path.name)  # no path: an upload
    assert run.requests == []


def test_per_request_records(samples) -> None:
    path = samples / "aiperf_run" / "profile_export.jsonl"
    _, [run] = importers.parse_file(path.read_bytes(), path.name, engine_name="vllm")
    warmup, first, _second, failed = run.requests
    assert warmup["warmup"] and not first["warmup"]
    assert first["ttft_s"] == pytest.approx(0.1) and first["e2e_s"] == pytest.approx(0.25)
    assert first["itl_s"] == pytest.approx([0.05] * 3) and first["tpot_s"] == pytest.approx(0.05)
    assert first["start_s"] == pytest.approx(1.061)
    assert (
        not failed["ok"]
        and failed["error_class"] == "InternalServerError"
        and failed["input_tokens"] == 550
    )
    engine = run.summary["engines"]["vllm"]
    assert (engine["completed"], engine["failed"]) == (2, 1)  # the warm-up is not counted
    assert engine["ttft_s"]["mean"] == pytest.approx(0.15)
    assert engine["duration_s"] == pytest.approx(1.5)  # first measured start to last end


def test_csv_sections(samples) -> None:
    path = samples / "aiperf_profile_export_aiperf.csv"
    module, [run] = importers.parse_file(path.read_bytes(), path.name)
    assert module is aiperf
    engine = run.summary["engines"]["aiperf"]
    assert engine["ttft_s"]["p50"] == pytest.approx(0.78754) and engine["ttft_s"][
        "max"
    ] == pytest.approx(4.12109)
    assert engine["tpot_s"]["p99"] == pytest.approx(0.05587)
    assert engine["e2e_s"]["mean"] == pytest.approx(6.55036)
    assert engine["request_throughput_rps"] == 13.16 and engine["completed"] == 200
    assert engine["duration_s"] == pytest.approx(15.2)


def test_a_reasoning_models_records_carry_ttfo_and_reasoning_tokens(samples) -> None:
    """AIPerf's TTFO (first non-reasoning token) is our time to first answer token and its
    reasoning_token_count our reasoning tokens (counted by its tokenizer): two requests of 30
    and 60 thinking tokens, answers of 20 and 40, first tokens at 100 and 200 ms, first answer
    tokens at 400 and 500 ms, ends at 600 and 900 ms."""
    path = samples / "aiperf_reasoning" / "profile_export.jsonl"
    _, [run] = importers.parse_file(path.read_bytes(), path.name, engine_name="qwen")
    first, _second = run.requests
    assert first["ttft_s"] == pytest.approx(0.1) and first["extra"]["ttfat_s"] == pytest.approx(0.4)
    assert first["output_tokens"] == 50  # output_sequence_length: thinking and answer
    assert first["extra"]["reasoning_tokens"] == 30 and first["extra"]["ttft_includes_reasoning"]
    assert first["extra"]["reasoning_source"] == aiperf.REASONING_SOURCE
    engine = run.summary["engines"]["qwen"]
    assert engine["ttft_includes_reasoning"] is True
    assert engine["ttfat_s"]["mean"] == pytest.approx(0.45) and engine["ttft_s"][
        "mean"
    ] == pytest.approx(0.15)
    assert (engine["reasoning_tokens"], engine["answer_tokens"]) == (90, 60)
    # Reasoning: 30 / (0.4 - 0.1) = 100 and 60 / 0.3 = 200 tok/s; answer: 19 / 0.2 = 95 and
    # 39 / 0.4 = 97.5 tok/s.
    assert engine["reasoning_tok_s"]["p50"] == pytest.approx(150.0)
    assert engine["answer_tok_s"]["min"] == pytest.approx(95.0)
    assert engine["answer_tok_s"]["max"] == pytest.approx(97.5)


def test_a_reasoning_models_summary_carries_ttfo(samples) -> None:
    path = samples / "aiperf_reasoning" / "profile_export_aiperf.json"
    _, [run] = importers.parse_file(path.read_bytes(), path.name)  # an upload: no records
    engine = run.summary["engines"]["localhost:8000"]
    assert engine["ttfat_s"]["p50"] == pytest.approx(0.45) and engine["ttft_s"]["p50"] == pytest.approx(
        0.15
    )
    assert (engine["reasoning_tokens"], engine["answer_tokens"], engine["output_tokens"]) == (
        90,
        60,
        150,
    )
    assert engine["reasoning_tokens_source"] == aiperf.REASONING_SOURCE
    assert engine["ttft_includes_reasoning"] is True


def test_a_model_that_does_not_think_says_so(samples) -> None:
    path = samples / "aiperf_run" / "profile_export_aiperf.json"
    _, [run] = importers.parse_file(path.read_bytes(), path.name)
    engine = EngineResults.from_json(run.summary["engines"]["localhost:9000"])
    assert engine.ttfat_s is None and not engine.ttft_includes_reasoning


def test_a_stored_import_says_its_ttft_includes_thinking(db_url: str, samples) -> None:
    """The comparability check reads the run-level flag, as it does a benchmark run's."""
    from db.models import Run
    from db.session import session_scope
    from services.bench.jobs import stored_records

    [run_id] = importers.import_file(samples / "aiperf_reasoning" / "profile_export.jsonl").run_ids
    [plain_id] = importers.import_file(samples / "aiperf_run" / "profile_export_aiperf.json").run_ids
    with session_scope() as session:
        thinking, plain = session.get(Run, run_id), session.get(Run, plain_id)
        assert thinking is not None and plain is not None
        assert thinking.summary["ttft_includes_reasoning"] is True
        assert "ttft_includes_reasoning" not in plain.summary
    records = stored_records(run_id)
    assert [r.ttfat_s for r in records] == pytest.approx([0.4, 0.5])
    assert [r.reasoning_tokens for r in records] == [30, 60]
    assert all(r.ttft_includes_reasoning for r in records)


def test_a_csv_metric_cell_reads_as_the_old_pattern_did() -> None:
    import re

    from hypothesis import given, settings
    from hypothesis import strategies as st

    old = re.compile(r"^(?P<name>.*?)\s*(?:\((?P<unit>[^)]*)\))?\s*$")

    @settings(max_examples=400, deadline=None)
    @given(st.text(alphabet="ab ()\t", max_size=30))
    def same(cell: str) -> None:
        match = old.match(cell.strip())
        assert match is not None
        assert aiperf.csv_name(cell) == (match.group("name").strip(), match.group("unit") or "")

    same()
    assert aiperf.csv_name(" Request Latency (ms) ") == ("Request Latency", "ms")


def test_a_100k_character_header_cell_reads_in_linear_time(samples) -> None:
    """Issue 57: the old pattern took 13 s on 2,000 characters and 110 s on 4,000."""
    import time

    path = samples / "aiperf_profile_export_aiperf.csv"
    header, rest = path.read_bytes().split(b"\n", 1)
    assert header.lower().startswith(b"metric,")  # the row below lands in a metric section
    hostile = ("a" + " " * 100_000 + "x)" + ",1" * header.count(b",") + "\n").encode()
    started = time.perf_counter()
    module, [run] = importers.parse_file(header + b"\n" + hostile + rest, path.name)
    assert module is aiperf and run.summary["engines"]["aiperf"]["completed"] == 200
    assert time.perf_counter() - started < 2.0
