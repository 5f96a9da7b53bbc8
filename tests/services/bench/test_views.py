"""What the Benchmarks page is given: form values -> spec, uploaded prompt files, tables."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from services.bench import jobs, views
from services.bench.spec import BenchSpec, EngineTarget
from services.endpoints import add_engine
from services.errors import NotFoundError, ValidationError


def test_form_values_make_a_validated_spec(db_url: str) -> None:
    add_engine("one", "http://127.0.0.1:9", kind="vllm", model="m")
    spec = views.spec_from_form(
        {
            "engines": ["one"],
            "workload": "shared_prefix",
            "prefix_groups": 2,
            "prefix_len": 64,
            "input_len": 8,
            "output_len": 16,
            "mode": "rate",
            "rate": 3.5,
            "arrival": "gamma",
            "burstiness": 0.5,
            "max_concurrency": 4,
            "bound": "duration",
            "duration_s": 30,
            "warmup": 1,
            "slo_ttft_ms": 200,
            "slo_tpot_ms": 0,
            "sweep": "rate",
            "sweep_values": "1, 2 4",
            "parallel": True,
            "timeout_s": 60,
        }
    )
    assert spec.engines[0].name == "one" and spec.engines[0].kind == "vllm"
    assert (spec.load.mode, spec.load.rate, spec.load.concurrency, spec.load.duration_s) == (
        "rate",
        3.5,
        4,
        30.0,
    )
    assert spec.load.requests is None
    assert spec.slo.ttft_ms == 200 and spec.slo.tpot_ms is None
    assert spec.sweep.values == (1.0, 2.0, 4.0)
    assert spec.parallel_engines and spec.workload.prefix_groups == 2
    with pytest.raises(ValidationError, match="Choose at least one engine"):
        views.spec_from_form({"engines": []})
    with pytest.raises(NotFoundError):
        views.spec_from_form({"engines": ["missing"]})
    with pytest.raises(ValidationError, match="not valid JSON"):
        views.spec_from_form({"engines": ["one"], "workload": "structured", "schema_text": "{nope"})


def test_uploaded_prompt_files_are_kept_and_checked(db_url: str, tmp_path: Path) -> None:
    content = (json.dumps({"prompt": "hello"}) + "\n").encode()
    path = views.save_prompt_file("my prompts.jsonl", content)
    assert Path(path).read_bytes() == content
    assert Path(path).parent == tmp_path / "workloads"
    assert views.save_prompt_file("my prompts.jsonl", content) == path  # same content, same file
    with pytest.raises(ValidationError, match="not JSON"):
        views.save_prompt_file("bad.jsonl", b"{oops\n")


def test_tables_from_a_summary() -> None:
    block = {
        "ttft_s": {"mean": 0.1, "p50": 0.1, "p90": 0.2, "p95": 0.25, "p99": 0.3, "max": 0.4},
        "completed": 3,
        "failed": 1,
        "errors_by_class": {"stream_cut": 1},
        "request_throughput_rps": 1.234,
        "engine_metrics": {"prefix_cache_hit_rate": 0.5},
    }
    table = views.percentile_table({"engines": {"a": block}}, (50, 99.9))
    row = table[table["metric"] == "TTFT"].iloc[0]
    assert row["p50 (ms)"] == 100.0 and row["p99 (ms)"] == 300.0 and "p99.9 (ms)" in table.columns
    throughput = views.throughput_table({"engines": {"a": block}})
    assert throughput.iloc[0]["errors"] == "stream_cut 1"
    assert throughput.iloc[0]["requests/s"] == 1.23
    # No SLO, no schema: those columns are left out instead of reading "None".
    assert "goodput req/s" not in throughput.columns and "schema valid" not in throughput.columns


def test_a_sweep_names_its_steps_by_load_level() -> None:
    from services.bench.stats import RequestRecord

    summary = {
        "sweep": [
            {"engine": "a", "step": 0, "concurrency": 1},
            {"engine": "a", "step": 1, "concurrency": 4},
        ],
        "engines": {"a": {"from_step": 1}},
    }
    assert views.step_labels(summary) == {0: "concurrency 1", 1: "concurrency 4"}
    records = [RequestRecord(engine="a", index=0, ok=True, start_s=0.0, ttft_s=0.1, e2e_s=0.2, step=1)]
    assert (
        views.concurrency_figure(records, views.step_labels(summary)).data[0].name == "a, concurrency 4"
    )
    assert list(views.timeline_figure(records, views.step_labels(summary)).data[0].y) == [
        "a #0, concurrency 4"
    ]


def test_engines_run_one_after_another_are_drawn_one_after_another() -> None:
    """Issue 19: each engine was drawn from its own time zero on one axis, so a sequential
    run looked simultaneous."""
    from services.bench.stats import RequestRecord

    summary = {"engines": {"a": {"started_at_unix": 1000.0}, "b": {"started_at_unix": 1012.5}}}
    records = [
        RequestRecord(engine=e, index=0, ok=True, start_s=0.5, ttft_s=0.1, e2e_s=1.0, output_tokens=4)
        for e in ("a", "b")
    ]
    offsets = views.run_offsets(summary)
    assert offsets == {("a", None): 0.0, ("b", None): 12.5}
    timeline = views.timeline_figure(records, None, offsets)
    assert list(timeline.data[0].base) == [0.5, 13.0]
    assert "wall clock" in timeline.layout.xaxis.title.text
    concurrency = views.concurrency_figure(records, None, offsets)
    assert min(concurrency.data[1].x) == pytest.approx(13.0)
    assert "own start" in views.timeline_figure(records).layout.xaxis.title.text


def _item(run_id: int, name: str) -> jobs.BenchRunItem:
    return jobs.BenchRunItem(run_id, name, "finished", 1.0, "one", None)


def test_the_run_picker_follows_the_address_else_the_newest() -> None:
    recent = [_item(7, "newest"), _item(5, "older")]
    assert views.run_choice(recent, None).selected == 7
    assert views.run_choice(recent, "nonsense").selected == 7
    chosen = views.run_choice(recent, "5")
    assert (chosen.selected, chosen.labels) == (5, {7: "#7 newest", 5: "#5 older"})
    # A run older than the list (a shared link) gets a label of its own, first.
    assert list(views.run_choice(recent, "2").labels) == [2, 7, 5]


def _view(status: str, counts: dict[str, dict[str, int]] | None = None) -> views.RunView:
    run = jobs.BenchRunView(
        id=3,
        name="n",
        status=status,
        progress=0.5,
        spec=BenchSpec(engines=(EngineTarget(name="one", base_url="http://127.0.0.1:9", model="m"),)),
        summary={},
        error=None,
        created_at=None,
        started_at=None,
        finished_at=None,
        live={"message": "3/10 *sent*"},
    )
    return views.RunView(run, counts or {}, pd.DataFrame(), pd.DataFrame(), {}, [])


def test_a_run_view_says_its_status_once_in_the_right_tone() -> None:
    assert _view("finished").status_level == "success"
    assert _view("finished_with_errors").status_markdown == "Status: finished with errors"
    cancelled = _view("cancelled")
    assert cancelled.status_level == "warning"
    assert "partial results" in cancelled.status_markdown
    assert _view("failed").status_level == "error"
    # What the worker wrote is escaped: a message does not become markup.
    assert _view("running").progress_markdown == r"running: 3/10 \*sent\*"


def test_live_counts_name_cancelled_requests_only_when_there_are_some() -> None:
    block = {"sent": 4, "completed": 3, "failed": 1, "cancelled": 0, "warmup": 2}
    view = _view("running", {"a": block, "b": {**block, "cancelled": 2}})
    assert view.count_lines == [
        "a: 3 completed, 1 failed, 2 warm-up",
        "b: 3 completed, 1 failed, 2 cancelled, 2 warm-up",
    ]
    assert not view.has_tables
