"""What the Benchmarks page is given: form values -> spec, uploaded prompt files, tables."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from services.bench import jobs
from services.bench import view as views
from services.bench.results import EngineResults
from services.bench.spec import BenchSpec, EngineTarget
from services.core.errors import NotFoundError, ValidationError
from services.engines.endpoints import add_engine
from services.team.access import PermissionDenied, Viewer


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


def test_the_self_check_says_in_plain_words_which_figures_to_trust_and_what_to_do() -> None:
    """Issue 36: a flagged run says which figures it affects, by how much at most, and what to
    do; the raw evidence (lag, lateness, CPU) goes with each engine, one click away. Issue 31:
    a run too short to check says so, never "kept up"."""
    from services.bench.selfcheck import WorkerCheck, report

    lagging = report(
        [WorkerCheck(loop_lag_s=[0.0002] * 95 + [0.01242] * 5, cpu_s=0.02, wall_s=1.0)], open_loop=False
    )
    calm = report([WorkerCheck(loop_lag_s=[0.0002] * 150, cpu_s=0.2, wall_s=1.52)], open_loop=False)
    short = report([WorkerCheck(loop_lag_s=[0.0002] * 12, cpu_s=0.01, wall_s=0.13)], open_loop=False)
    summary = {"engines": {"a": {"generator": lagging}, "b": {"generator": calm}}}
    check = views.run_self_check(summary)
    assert check.state == "client-bound" and check.client_bound
    assert (
        check.title == "Client-bound: the load generator, not the engine, limited some of these figures."
    )
    assert len(check.advice_lines) == 1  # b kept up: nothing to say about its figures
    assert check.advice_lines[0].startswith("a: TTFT and ITL percentiles may be up to ~12.4 ms too high")
    assert (
        "throughput and token counts are unaffected. What to do: run it again on a quieter"
        in (check.advice_lines[0])
    )
    assert [line.split(":")[0] for line in check.evidence_lines] == ["a", "b"]
    assert "CLIENT-BOUND (event-loop lag p99 12.4 ms > 2 ms)" in check.evidence_lines[0]
    assert "CPU per worker 2%" in check.evidence_lines[0]
    assert check.evidence_lines[1].startswith("b: generator kept up (1 worker(s)): loop lag p50/p99")

    unchecked = views.run_self_check({"engines": {"a": {"generator": short}, "b": {"generator": calm}}})
    assert unchecked.state == "could not check" and not unchecked.client_bound
    assert unchecked.title.startswith("Could not check the load generator")
    assert unchecked.advice_lines == [
        (
            "a: The load generator could not check itself (the run lasted 0.13 s; the check needs at "
            "least 0.2 s): TTFT and ITL may include its own delay, unmeasured. What to do: run longer "
            "(more requests or a duration) to get a verdict."
        )
    ]
    kept_up = views.run_self_check({"engines": {"b": {"generator": calm}}})
    assert kept_up.state == "kept up" and kept_up.title.startswith("The load generator kept up")
    assert kept_up.advice_lines == [
        ("TTFT and ITL are the engine's: the generator's own delay was ~0.200 ms at p99.")
    ]
    assert views.run_self_check({"engines": {"imported": {}}}).state is None


def test_the_throughput_table_says_where_each_figure_comes_from() -> None:
    """Issue 36: 64 tokens asked read as 95 served, with no word of the chat template; two
    prefix-hit figures stood unlabelled side by side; no failures read as a blank."""
    from tests.services.runs.test_caveats import caveated_summary

    block, _ = caveated_summary()
    row = views.throughput_table({"engines": {"llamacpp": block}}, 64).iloc[0]
    assert row["input tok/request asked"] == 64
    assert row["input tok/request (as served, chat template included)"] == 95.0
    assert row["prefix hit (%), engine counters, warm-up included"] == 31.4
    assert row["cached/input (%), usage cached_tokens / prompt tokens, measured requests"] == 29.5
    assert row["errors"] == "0"
    # Without a length asked (a trace, a prompt file) the column is left out, not "–".
    assert "input tok/request asked" not in views.throughput_table({"engines": {"a": block}})


def test_the_benchmarks_page_says_the_runs_caveats(db_url: str) -> None:
    from tests.services.runs.test_caveats import caveated_run

    view = views.run_view(caveated_run())
    assert "Load: concurrency 4, 20 requests per engine." in view.notes
    assert any(note.startswith("Warm-up: 2 request") for note in view.notes)
    assert "llamacpp ignores min_tokens (its kind does not take them)." in view.notes
    assert view.self_check.client_bound
    assert view.throughput.iloc[0]["input tok/request asked"] == 64


def test_a_running_benchmark_says_how_long_it_has_left() -> None:
    """Issue 36: a running benchmark gave no time estimate."""
    from datetime import UTC, datetime, timedelta

    now = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
    assert views.time_left(0.25, now - timedelta(seconds=40), now) == (
        "about 2 min 00 s left at the pace so far"
    )
    # A naive start (SQLite) is UTC; a fast pace reads in seconds, a slow one in hours.
    assert views.time_left(0.8, (now - timedelta(seconds=40)).replace(tzinfo=None), now) == (
        "about 10 s left at the pace so far"
    )
    assert views.time_left(0.1, now - timedelta(hours=1), now) == (
        "about 9 h 00 min left at the pace so far"
    )
    # Too early to tell, finished, or no start recorded: no estimate.
    assert views.time_left(0.01, now - timedelta(seconds=5), now) is None
    assert views.time_left(1.0, now - timedelta(seconds=5), now) is None
    assert views.time_left(0.5, None, now) is None


def test_a_live_chart_with_no_answers_yet_says_so_on_zero_based_axes() -> None:
    """Issue 36: before the first answer the live charts showed empty -1..4 axes."""
    figure = views.live_figure([])
    assert [a.text for a in figure.layout.annotations][-1] == "Waiting for the first answers…"
    assert tuple(figure.layout.xaxis.range) == (0, 10) and tuple(figure.layout.yaxis.range) == (0, 1)
    from services.bench.stats import RequestRecord

    failed = [RequestRecord(engine="a", index=0, ok=False, start_s=0.5, error_class="http_500")]
    assert views.live_figure(failed).layout.annotations[-1].text == "No request has succeeded yet."
    done = [RequestRecord(engine="a", index=0, ok=True, start_s=0.5, ttft_s=0.1, e2e_s=1.0)]
    answered = views.live_figure(done)
    assert "Waiting for the first answers…" not in [a.text for a in answered.layout.annotations]
    assert answered.layout.xaxis.range is None and answered.layout.yaxis.rangemode == "tozero"


def test_the_throughput_table_has_each_engines_energy_or_why_not() -> None:
    from services.bench.view.tables import energy_line

    measured = {
        "measured": True,
        "joules": 812.345,
        "method": "power samples",
        "source": "NVML",
        "devices": ["GPU 0: NVIDIA L4"],
        "scope": "all 1 GPU(s) of this machine: which ones the engine uses is not known",
        "duration_s": 10.0,
        "engines": ["gpu"],
        "j_per_output_token": 0.40617,
        "output_tokens_per_j": 2.46201,
    }
    missing = {"measured": False, "reason": "no RAPL counters: /sys/class/powercap does not exist"}
    table = views.throughput_table(
        {"engines": {"gpu": {"energy": measured}, "cpu": {"energy": missing}, "old": {}}}
    )
    rows = {row["engine"]: row for _, row in table.iterrows()}
    assert (rows["gpu"]["energy (J)"], rows["gpu"]["J/output token"]) == (812.3, 0.4062)
    assert rows["gpu"]["output tokens/J"] == 2.462
    assert rows["gpu"]["energy measured by"] == "power samples, NVML"
    assert rows["cpu"]["energy (J)"] == "–"  # not 0
    assert rows["cpu"]["energy measured by"] == f"not measured here: {missing['reason']}"
    assert rows["old"]["energy measured by"] == "–"  # a run from before energy
    assert energy_line(EngineResults.from_json({"energy": measured})) == (
        "energy: 812.3 J over 10.0 s, 0.4062 J/output token, 2.462 output tokens/J "
        f"(power samples, NVML; {measured['scope']})"
    )
    missing_line = energy_line(EngineResults.from_json({"energy": missing}))
    assert missing_line == f"energy: not measured here: {missing['reason']}"
    assert energy_line(EngineResults()) is None
    # A run from before energy has no energy columns at all.
    assert "energy (J)" not in views.throughput_table({"engines": {"old": {"completed": 1}}})


def test_a_viewer_may_name_only_a_prompt_file_they_uploaded(
    db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The widget values are read once, into the form, before the check of the file's place."""
    add_engine("one", "http://127.0.0.1:9", kind="vllm", model="m")
    started: list[BenchSpec] = []
    monkeypatch.setattr(jobs, "start_benchmark", lambda spec, viewer=None: started.append(spec) or 7)
    viewer = Viewer("viewer", "ip:10.0.0.9")
    for path in ("/etc/passwd", " /etc/passwd "):
        with pytest.raises(PermissionDenied, match="read files on the server"):
            views.submit({"engines": ["one"], "workload": "file", "prompts_file": path}, viewer)
    uploaded = views.save_prompt_file("mine.jsonl", b'{"prompt": "hello"}\n')
    values = {"engines": ["one"], "workload": "file", "prompts_file": f" {uploaded} "}
    assert views.submit(values, viewer) == 7
    assert started[0].workload.prompts_file == uploaded
