"""The Planner counts what it lists (issue 47: "28 runs" beside 9 runs shown: the count was
of engine results, one per engine of each run)."""

from __future__ import annotations

from db.models import Run
from db.session import session_scope
from tests.app.test_planner_page import planner_page


def test_the_other_runs_checkbox_counts_engine_results_and_runs(db_url: str) -> None:
    block = {"output_throughput_tok_s": 50.0, "concurrency_mean": 4, "completed": 4}
    with session_scope() as session:
        for index in range(3):
            engines = {name: dict(block) for name in ("llamacpp", "vllm", "sglang")}
            session.add(
                Run(kind="benchmark", name=f"cpu {index}", model="smollm2", summary={"engines": engines})
            )
    at = planner_page()
    assert not at.exception
    (box,) = [c for c in at.checkbox if c.key == "planner_run_any"]
    assert box.label == "Also list 9 engine results from 3 runs of another model or hardware"
    box.check().run()
    assert len(at.selectbox(key="planner_run").options) == 9
