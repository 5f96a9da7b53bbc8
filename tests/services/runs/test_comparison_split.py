"""Where the time went in a comparison of stored runs: the engine's own queue, prefill and
decode and the rest as rows of the compare table (p50, p99), "not reported by <engine>" where
its engine timed nothing, and the same rules the table already follows."""

from __future__ import annotations

from typing import Any

import pytest

from db.models import Run
from db.session import session_scope
from services import runs
from services.bench.results import TimeSplitBlock
from services.bench.stats import RequestRecord, split_block
from services.bench.time_split import part_note
from services.core.measure import EngineTimes
from services.runs.records import SPLIT_METRICS
from services.runs.tables import comparison_table
from tests.services.runs.test_runs import engine_summary, make_run


def timed(rest: float = 0.002, queue: float | None = 0.001, count: int = 4) -> dict[str, Any]:
    """A stored `time_split` block of requests with known engine times: E2E 300 ms, TTFT
    30 ms, prefill 20 ms, the rest of E2E `rest`, decode what is left."""
    records = [
        RequestRecord(
            engine="e",
            index=index,
            ok=True,
            start_s=float(index),
            ttft_s=0.03,
            e2e_s=0.3,
            output_tokens=10,
            engine_times=EngineTimes(
                queue_s=queue, prefill_s=0.02, decode_s=0.3 - 0.02 - (queue or 0.0) - rest
            ),
        )
        for index in range(count)
    ]
    return split_block(records)


def split_run(name: str, engine: str, kind: str, block: dict[str, Any] | None, **fields: Any) -> int:
    """A stored benchmark whose engine (of `kind`) has the given `time_split` block (and any
    other `fields` in its summary)."""
    summary = engine_summary(0.03, 0.001, 0.3, 500.0, completed=4) | fields
    if block is not None:
        summary["time_split"] = block
    run_id = make_run(name=name, engines={engine: summary})
    with session_scope() as session:
        run = session.get(Run, run_id)
        assert run is not None
        run.engines = [{**snapshot, "kind": kind} for snapshot in run.engines]
    return run_id


def test_the_compare_table_has_the_split_and_says_who_reported_nothing(db_url: str) -> None:
    a = split_run("timed", "vllm-cpu", "vllm", timed())
    b = split_run("silent", "sglang-cpu", "sglang", {"requests": 4, "reported": 0})
    comparison = runs.compare_runs([a, b])
    rows = {row.label: row for row in comparison.rows}
    assert rows["Queue (engine) p50"].values == (pytest.approx(0.001), None)
    assert rows["Prefill (engine) p99"].values == (pytest.approx(0.02), None)
    assert rows["Decode (engine) p50"].values == (pytest.approx(0.277), None)
    assert rows["Rest of TTFT p50"].values == (pytest.approx(0.009), None)
    assert rows["Rest of E2E p99"].values == (pytest.approx(0.002), None)
    assert rows["Rest of E2E p50"].notes == (None, "not reported by SGLang")
    table = comparison_table(comparison).set_index("Metric")
    assert table.loc["Queue (engine) p50", f"#{a} vllm-cpu (baseline)"] == "1.0 ms"
    assert table.loc["Decode (engine) p50", f"#{a} vllm-cpu (baseline)"] == "277 ms"
    assert table.loc["Queue (engine) p50", f"#{b} sglang-cpu"] == "not reported by SGLang"
    assert table.loc["Queue (engine) p50", f"Δ #{b} sglang-cpu"] == ""
    # Beside the latency rows, before throughput; no verdict is made of them.
    labels = [row.label for row in comparison.rows]
    assert labels.index("E2E latency p99") < labels.index("Queue (engine) p50")
    assert labels.index("Rest of E2E p99") < labels.index("Output throughput")
    assert not any(verdict.metric in SPLIT_METRICS for verdict in comparison.verdicts)


def test_changes_of_the_split_are_marked_like_any_latency(db_url: str) -> None:
    a = split_run("before", "vllm", "vllm", timed(rest=0.002))
    b = split_run("after", "vllm", "vllm", timed(rest=0.004))
    rest = {row.label: row for row in runs.compare_runs([a, b]).rows}["Rest of E2E p50"]
    assert rest.changes[1] == pytest.approx(100.0)
    assert rest.marks == (None, "worse")
    # A rest at or below 0 (the engine's clock ran past the client's) gets no per cent.
    c = split_run("negative", "vllm", "vllm", timed(rest=-0.001))
    rest = {row.label: row for row in runs.compare_runs([c, a]).rows}["Rest of E2E p50"]
    assert rest.changes[1] is None and rest.marks[1] == "worse"


def test_an_engine_without_a_queue_clock_says_so_for_that_part_only(db_url: str) -> None:
    a = split_run("vllm", "vllm", "vllm", timed())
    b = split_run("llama", "llama", "llamacpp", timed(queue=None))
    rows = {row.label: row for row in runs.compare_runs([a, b]).rows}
    assert rows["Queue (engine) p50"].notes == (None, "not reported by llama.cpp")
    assert rows["Prefill (engine) p50"].values == (pytest.approx(0.02), pytest.approx(0.02))
    assert not rows["Prefill (engine) p50"].notes


def test_runs_stored_without_a_split_get_no_split_rows(db_url: str) -> None:
    """Imports and runs stored before engines' times were read: nothing to say, no rows."""
    a = split_run("old", "vllm", "vllm", None)
    b = split_run("old too", "vllm", "vllm", None)
    assert not [row for row in runs.compare_runs([a, b]).rows if row.metric in SPLIT_METRICS]
    c = split_run("new", "vllm", "vllm", timed())
    rows = {row.label: row for row in runs.compare_runs([a, c]).rows}
    # An old run's cell is "—": no one can tell whether its engine reported the times.
    assert rows["Queue (engine) p50"].values == (None, pytest.approx(0.001))
    assert not rows["Queue (engine) p50"].notes


def test_incomparable_runs_keep_their_split_rows_and_name_no_winner(db_url: str) -> None:
    a = split_run("honoured", "vllm", "vllm", timed(), honoured_output_len=True)
    b = split_run("stopped early", "vllm", "vllm", timed(rest=0.01), honoured_output_len=False)
    comparison = runs.compare_runs([a, b])
    assert not comparison.comparability.comparable
    assert comparison.verdicts == []
    rows = {row.label: row for row in comparison.rows}
    assert rows["Rest of E2E p50"].values == (pytest.approx(0.002), pytest.approx(0.01))


def test_a_part_note_needs_a_block_that_says_something() -> None:
    def note(block: dict[str, Any], label: str) -> str | None:
        return part_note(TimeSplitBlock.from_json(block), "queue_s", label)

    assert note({}, "vLLM") is None
    assert note({"requests": 3, "reported": 0}, "vLLM") == "not reported by vLLM"
    assert note(timed(queue=None), "llama.cpp") == "not reported by llama.cpp"
    assert note(timed(), "vLLM") is None
