"""Detection and the shared import path: clear errors for files we cannot read."""

from __future__ import annotations

import pytest

from services import importers, runs
from services.core.errors import ValidationError


@pytest.mark.parametrize(
    ("name", "tool"),
    [
        ("vllm_bench_serve_detailed.json", "vllm"),
        ("vllm_bench_serve_append.jsonl", "vllm"),
        ("sglang_bench_serving.jsonl", "sglang"),
        ("aiperf_run/profile_export_aiperf.json", "aiperf"),
        ("aiperf_run/profile_export.jsonl", "aiperf"),
        ("aiperf_profile_export_aiperf.csv", "aiperf"),
        ("guidellm_benchmarks.json", "guidellm"),
    ],
)
def test_each_sample_is_detected_stored_and_comparable(
    db_url: str, samples, name: str, tool: str
) -> None:
    result = importers.import_file(samples / name)
    assert result.tool == tool and len(result.run_ids) == 1
    comparison = runs.compare_runs(result.run_ids)
    assert comparison.series and any(row.metric == "ttft_s" for row in comparison.rows)


def test_imports_compare_with_each_other(db_url: str, samples) -> None:
    a = importers.import_file(samples / "vllm_bench_serve_detailed.json").run_ids[0]
    b = importers.import_file(samples / "sglang_bench_serving.jsonl").run_ids[0]
    # Two tools, two clients, two loads: no winner is named unless asked to compare anyway.
    refused = runs.compare_runs([a, b])
    assert not refused.comparability.comparable and refused.verdicts == []
    assert "Measured by" in "\n".join(refused.comparability.lines)
    verdict = runs.compare_runs([a, b], allow_incomparable=True).verdicts[0]
    assert verdict.metric == "ttft_s" and verdict.winner == f"{b}:sglang-oai-chat"


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"", "is empty"),
        (b"\xff\xfe\x00garbage", "not UTF-8"),
        (b'{"hello": "world"}', "not a results file"),
        (b"a,b,c\n1,2,3\n", "not a results file"),
    ],
)
def test_unreadable_files_are_clear_errors(db_url: str, data: bytes, message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        importers.import_file(data, "x.json")
    assert runs.list_runs().total == 0


def test_forced_format_must_match(samples) -> None:
    data = (samples / "sglang_bench_serving.jsonl").read_bytes()
    with pytest.raises(ValidationError, match="does not look like vLLM"):
        importers.parse_file(data, "s.jsonl", tool="vllm")
    with pytest.raises(ValidationError, match="Unknown format"):
        importers.parse_file(data, "s.jsonl", tool="nope")


def test_a_broken_file_of_a_known_kind_is_a_clear_error(samples) -> None:
    with pytest.raises(ValidationError, match="looks like GuideLLM"):
        importers.parse_file(b'{"benchmarks": [{"metrics": {"request_totals": "nonsense"}}]}', "b.json")


def test_missing_path(tmp_path) -> None:
    with pytest.raises(ValidationError, match="does not exist"):
        importers.import_file(tmp_path / "nothing.json")


def test_a_deeply_nested_file_is_one_clear_line(db_url: str) -> None:
    """Issue 20: 100,000 nested brackets showed a RecursionError traceback with server paths."""
    from services.core.errors import ValidationError
    from services.importers import import_file

    for text in ("[" * 100_000 + "]" * 100_000, '{"a":' * 50_000 + "1" + "}" * 50_000):
        with pytest.raises(ValidationError, match="nested too deeply"):
            import_file(text.encode(), "deep.json")


def test_a_price_given_at_import_costs_each_engine_and_step(db_url: str, samples) -> None:  # type: ignore[no-untyped-def]
    """Issue 33: an imported run with a price shows $ per 1M tokens from the file's throughputs."""
    from services.core import cost

    result = importers.import_file(samples / "vllm_bench_serve_append.jsonl", usd_per_hour="3.6")
    detail = runs.get_run(result.run_ids[0])
    blocks = [*detail.summary["engines"].values(), *detail.summary.get("sweep", [])]
    assert blocks
    for block in blocks:
        figures = cost.Cost.from_json(block["cost"])
        assert figures.usd_per_hour == 3.6
        assert figures.usd_per_1m_output == pytest.approx(
            cost.usd_per_million(3.6, block["output_throughput_tok_s"])
        )
    assert detail.config["usd_per_hour"] == 3.6
    with pytest.raises(ValidationError, match="not a plain number"):
        importers.import_file(samples / "vllm_bench_serve_append.jsonl", usd_per_hour="$3.60")
    unpriced = runs.get_run(importers.import_file(samples / "vllm_bench_serve_append.jsonl").run_ids[0])
    assert all("cost" not in block for block in unpriced.summary["engines"].values())
