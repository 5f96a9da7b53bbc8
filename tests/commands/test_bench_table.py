"""`shootout bench`'s printed table read from the typed results (services/bench/results.py): an
engine a cancelled run never reached, and a sweep's steps, each a row with its load level."""

from __future__ import annotations

from commands.bench_table import results_table
from services.bench.stats import RequestRecord, summarize_engine


def _records(n: int) -> list[RequestRecord]:
    return [
        RequestRecord(
            engine="a",
            index=i,
            ok=True,
            start_s=i * 0.1,
            ttft_s=0.02,
            e2e_s=0.5,
            itl_s=[0.01] * 9,
            output_tokens=10,
            input_tokens=5,
        )
        for i in range(n)
    ]


def test_an_engine_the_run_never_reached_is_a_row_of_counts_not_a_traceback() -> None:
    engines = {"a": summarize_engine(_records(4)), "b": {"completed": 0, "failed": 0, "not_run": True}}
    lines = results_table({"run_id": 3, "status": "cancelled", "engines": engines}).splitlines()
    row = next(line for line in lines if line.startswith("b "))
    assert row.split() == ["b", "0", "0", "0.00", "0.0", "-", "-", "-", "-"]
    measured = next(line for line in lines if line.startswith("a ")).split()
    assert measured[1:3] == ["4", "0"]
    assert measured[5:] == ["20.0", "20.0", "10.0", "10.0"]  # TTFT and ITL p50/p99 in ms


def test_each_sweep_step_is_a_row_at_its_load_level() -> None:
    rows = [
        {**summarize_engine(_records(2)), "engine": "a", "step": step, "concurrency": level}
        for step, level in ((0, 1), (1, 4))
    ]
    engines = {"a": {**rows[1], "from_step": 1}}
    payload = {"run_id": 4, "status": "finished", "engines": engines, "sweep": rows}
    lines = results_table(payload).splitlines()
    assert lines[1] == "steps (sweep over concurrency):"
    steps = [line.split()[:2] for line in lines if line.startswith("a ")]
    # Each step at its level, then the engine's reported step at its own.
    assert steps == [["a", "1"], ["a", "4"], ["a", "4"]]
    assert "concurrency 1, 4" in lines[0]
