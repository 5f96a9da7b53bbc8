"""The run summary as one typed record: what older versions stored still reads, and what is
written keeps the stored shape."""

from __future__ import annotations

from typing import Any

from services.bench import view as views
from services.bench.summary import BenchSummary

#: A summary as a run from before the typed record stored it (a sweep, an SLO search and a
#: key this version does not know).
OLD_SWEEP: dict[str, Any] = {
    "engines": {
        "llama": {"completed": 8, "failed": 1, "from_step": 1, "output_throughput_tok_s": 41.5},
        "vllm": {"completed": 0, "failed": 0, "not_run": True},
    },
    "sweep": [
        {"engine": "llama", "step": 0, "concurrency": 1, "phase": "sweep", "completed": 4},
        {"engine": "llama", "step": 1, "concurrency": 4, "phase": "sweep", "completed": 8},
    ],
    "slo_search": {"llama": {"best": 4, "dimension": "concurrency", "slo": "TTFT p90 ≤ 500 ms"}},
    "stopped_early": {"llama": "TTFT p90 over the SLO"},
    "models": {"llama": "smollm2"},
    "load": "closed loop, concurrency 1→4",
    "workload": "chat",
    "percentiles": [50, 90, 99],
    "ttft_includes_connect": False,
    "engines_run": "one after another",
    "generator": {"client_bound": False, "flagged": [], "checked_loads": 2},
    "a_key_from_a_later_version": {"kept": True},
}


def test_an_old_stored_summary_reads_and_is_written_back_unchanged() -> None:
    summary = BenchSummary.from_json(OLD_SWEEP)
    assert summary.has_results and summary.failed_requests == 1
    assert list(summary.engines_that_ran()) == ["llama"]
    assert summary.step_labels() == {0: "concurrency 1", 1: "concurrency 4"}
    assert summary.slo_search["llama"]["best"] == 4 and summary.engines_run == "one after another"
    assert summary.to_json() == OLD_SWEEP


def test_a_summary_with_missing_or_odd_parts_reads_as_empty_not_as_an_error() -> None:
    for stored in (None, {}, {"engines": None, "sweep": "x", "percentiles": "50"}):
        summary = BenchSummary.from_json(stored)
        assert not summary.has_results and summary.sweep == [] and summary.percentiles is None
    live = {"live": {"engines": {"llama": {"sent": 3}}, "message": "step 1", "updated": 1.0}}
    running = BenchSummary.from_json(live)
    assert not running.has_results and running.to_json() == live  # live counts are not results


def test_the_tables_read_the_typed_summary_and_the_stored_json_alike() -> None:
    typed = views.throughput_table(BenchSummary.from_json(OLD_SWEEP))
    stored = views.throughput_table(OLD_SWEEP)
    assert typed.equals(stored) and list(typed["engine"]) == ["llama"]  # "not run" is a note
    assert views.step_labels(OLD_SWEEP) == {0: "concurrency 1", 1: "concurrency 4"}


def test_what_the_readers_ask_of_a_sweep_is_answered_by_the_record() -> None:
    summary = BenchSummary.from_json(OLD_SWEEP)
    assert summary.sweep_dimension == "concurrency"
    reported = summary.reported_step("llama")  # its block's from_step
    assert reported is not None and reported.to_json() == OLD_SWEEP["sweep"][1]
    assert summary.reported_step("vllm") is None and summary.reported_step("absent") is None
    assert summary.served_model("llama") == "smollm2" and summary.served_model("vllm") is None
    assert not summary.client_bound
    labels = [label for label, _ in summary.self_checks()]
    assert labels == ["llama at concurrency 1", "llama at concurrency 4"]
    assert BenchSummary.from_json({"engines": {"a": {}}}).sweep_dimension == ""


def test_start_times_place_each_engine_and_sweep_step_on_the_wall_clock() -> None:
    stored = {
        "engines": {
            "a": {"started_at_unix": 100.0},
            "b": {"started_at_unix": 130.5},
            "c": {"started_at_unix": 200.0, "from_step": 1},  # a sweep's: its steps say
            "d": {},
        },
        "sweep": [{"engine": "c", "step": 0, "started_at_unix": 150.0}, {"engine": "c", "step": 1}],
    }
    assert BenchSummary.from_json(stored).start_times() == {
        ("a", None): 100.0,
        ("b", None): 130.5,
        ("c", 0): 150.0,
    }
    assert BenchSummary.from_json(OLD_SWEEP).start_times() == {}  # older runs did not record it


def test_one_rule_for_results_a_run_detail_adds_its_rows_to_the_summary() -> None:
    from datetime import UTC, datetime

    from services.runs.records import RunDetail

    def detail(summary: dict[str, Any], requests: int = 0) -> RunDetail:
        return RunDetail(
            id=1, kind="benchmark", name="", status="completed", created_at=datetime.now(UTC),
            started_at=None, finished_at=None, model=None, workload=None, engine_names=(),
            notes="", tags=(), archived=False, error=None, config={}, summary=summary,
            engines=[], request_count=requests, exchange_count=0, sample_count=0, repeat_ids=(),
        )  # fmt: skip

    live = {"live": {"engines": {"llama": {"sent": 3}}}}
    assert detail(OLD_SWEEP).has_measurements and detail(OLD_SWEEP).results.has_results
    assert not detail(live).has_measurements  # live counts are not results, as in BenchSummary
    assert detail(live, requests=3).has_measurements  # ...but stored rows are


def test_the_runs_self_check_has_a_third_state_and_old_runs_read_honestly() -> None:
    """Issue 31: not client-bound is not "kept up": a load that could not be checked makes the
    run's verdict "could not check", and so does a stored "kept up" that had too few probes."""
    from services.bench.selfcheck import WorkerCheck, report

    kept = report([WorkerCheck(loop_lag_s=[0.0002] * 150, cpu_s=0.2, wall_s=1.52)], open_loop=False)
    short = report([WorkerCheck(loop_lag_s=[0.0002] * 12, cpu_s=0.01, wall_s=0.13)], open_loop=False)
    bound = report([WorkerCheck(loop_lag_s=[0.0002] * 100, cpu_s=0.97, wall_s=1.0)], open_loop=False)

    def of(*blocks: dict) -> BenchSummary:
        return BenchSummary.from_json(
            {"engines": {f"e{i}": {"generator": b} for i, b in enumerate(blocks)}}
        )

    assert of(kept).self_check == "kept up" and not of(kept).client_bound
    assert of(kept, short).self_check == "could not check" and not of(kept, short).client_bound
    assert of(kept, short, bound).self_check == "client-bound" and of(short, bound).client_bound
    sweep = {
        "sweep": [
            {"engine": "a", "step": 0, "generator": kept},
            {"engine": "a", "step": 1, "generator": short},
        ]
    }
    assert BenchSummary.from_json(sweep).self_check == "could not check"
    stored_before = {"client_bound": False, "evidence": [], "loop_lag_samples": 18, "workers": 1}
    assert of(kept, stored_before).self_check == "could not check"
    assert of({**stored_before, "loop_lag_samples": 400}).self_check == "kept up"
    assert BenchSummary.from_json(OLD_SWEEP).self_check is None  # its steps hold no self-check
    assert of({}).self_check is None


def test_client_bound_engines_are_named_by_engine_not_parsed_from_labels() -> None:
    # An engine named "x at y" in a sweep: its labels read "x at y at concurrency 1".
    bound = {"client_bound": True, "checked": True, "workers": 1, "evidence": ["loop lag p99 900 ms"]}
    summary = BenchSummary.from_json(
        {
            "engines": {
                "x at y": {"completed": 1, "from_step": 0},
                "z": {"completed": 1, "from_step": 0},
            },
            "sweep": [
                {"engine": "x at y", "step": 0, "concurrency": 1, "completed": 1, "generator": bound},
                {"engine": "z", "step": 0, "concurrency": 1, "completed": 1},
            ],
        }
    )
    assert summary.client_bound_engines() == {"x at y"}
    assert [label for label, _ in summary.self_checks()] == [
        "x at y at concurrency 1",
        "z at concurrency 1",
    ]
