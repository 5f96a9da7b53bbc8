"""What the Runs page draws for a run or a comparison: here, where the time went, read from
each engine's stored split by the Benchmarks page's own split view."""

from __future__ import annotations

import pytest

from services.runs import display
from tests.services.runs.test_comparison_split import split_run, timed


def test_a_comparison_view_holds_each_series_split_in_words_table_and_chart(db_url: str) -> None:
    a = split_run("timed", "vllm-cpu", "vllm", timed())
    b = split_run("silent", "sglang-cpu", "sglang", {"requests": 4, "reported": 0})
    split = display.comparison_view([a, b]).split
    assert split.shown
    assert split.lines[0] == (
        f"#{a} vllm-cpu: mean E2E 300.0 ms = queue 1.0 + prefill 20.0 + decode 277.0 + "
        "rest: network, HTTP, front end, client 2.0 ms (rest p50 2.0 / p99 2.0 ms; 4 of 4 "
        "requests timed by the engine, from its report)"
    )
    assert split.lines[1] == f"#{b} sglang-cpu: where the time went: not reported by SGLang"
    assert set(split.table["engine"]) == {f"#{a} vllm-cpu"}
    assert list(split.table["part"]) == [
        "queue (engine)",
        "prefill (engine)",
        "decode (engine)",
        "rest of TTFT",
        "rest of E2E",
    ]
    assert split.figure is not None
    assert sum(trace.x[0] for trace in split.figure.data) == pytest.approx(300.0)
    assert [n.text for n in split.figure.layout.annotations] == ["not reported by SGLang"]


def test_one_runs_view_holds_its_engines_split(db_url: str) -> None:
    run_id = split_run("one", "llama", "llamacpp", timed(queue=None))
    split = display.run_view(run_id).view
    assert split is not None and split.split.shown
    (line,) = split.split.lines
    # llama.cpp times no queue: its line leaves the queue out, its wait stays in the rest.
    assert line.startswith(f"#{run_id} llama: mean E2E 300.0 ms = prefill 20.0 + decode 278.0")


def test_runs_without_a_split_show_none(db_url: str) -> None:
    a = split_run("old", "vllm", "vllm", None)
    split = display.comparison_view([a]).split
    assert not split.shown and split.figure is None and split.table.empty


def test_a_playground_runs_answers_carry_their_engines_own_times(db_url: str) -> None:
    """Each answer's split as the Playground shows it, "not reported by" where its engine timed
    nothing, and nothing for an answer that did not finish."""
    from db.models import Exchange, Run
    from db.session import session_scope
    from services.core.measure import EngineTimes
    from tests.services.runs.test_runs import make_run

    run_id = make_run(kind="playground", engines={})
    timed = EngineTimes(queue_s=0.001, prefill_s=0.02, decode_s=0.277).to_json()
    answers = {
        "vllm": ("finished", {"ttft_s": 0.03, "e2e_s": 0.3, "engine_times": timed}),
        "sglang": ("finished", {"ttft_s": 0.03, "e2e_s": 0.3}),
        "llama": ("failed", {}),
    }
    with session_scope() as session:
        run = session.get(Run, run_id)
        assert run is not None
        run.engines = [
            {"name": "vllm", "kind": "vllm"},
            {"name": "sglang", "kind": "sglang"},
            {"name": "llama", "kind": "llamacpp"},
        ]
        for engine, (status, metrics) in answers.items():
            session.add(
                Exchange(
                    run_id=run_id,
                    conversation_id="c1",
                    engine_name=engine,
                    status=status,
                    answer="hi",
                    metrics=metrics,
                )
            )
    exchanges = display.run_view(run_id).exchanges
    assert exchanges is not None
    own = dict(zip(exchanges["Engine"], exchanges["Engine's own times"]))
    assert own["vllm"] == (
        "queue 1.0 ms · prefill 20.0 ms · decode 277 ms · rest of TTFT 9.0 ms · rest of E2E 2.0 ms"
    )
    assert own["sglang"] == "not reported by SGLang"
    assert own["llama"] == ""
