"""The job service: stored runs, the detached worker, live rows, cancel, interrupted runs."""

from __future__ import annotations

import os
import signal
import time

import pytest
from sqlalchemy import func, select

from db.models import RequestResult, Run
from db.session import session_scope
from services.bench import jobs
from services.bench.arrivals import LoadSpec
from services.bench.spec import BenchSpec, EngineTarget, SweepSpec
from services.bench.stats import SloSpec
from services.bench.workloads import WorkloadSpec
from services.core.errors import NotFoundError, ValidationError
from tests.support.hostile_server import HostileServer
from tests.support.scripted_server import ScriptedServer
from tests.support.waiting import wait_for


def target(server: ScriptedServer, name: str = "scripted", **scenario) -> EngineTarget:
    return EngineTarget(
        name=name,
        base_url=server.base_url,
        kind="vllm",
        model=server.model(**scenario),
        metrics_url=server.root_url + "/metrics",
    )


def row_count(run_id: int) -> int:
    with session_scope() as session:
        return session.scalar(
            select(func.count()).select_from(RequestResult).where(RequestResult.run_id == run_id)
        )


def test_two_engines_side_by_side_summary_format(db_url: str, scripted_server: ScriptedServer) -> None:
    spec = BenchSpec(
        engines=(
            target(scripted_server, "fast", ttft=10, itl=2, tokens=16),
            target(scripted_server, "broken", ttft=10, itl=2, tokens=16, fault="cut", at=8),
        ),
        workload=WorkloadSpec(input_len=16, output_len=16),
        load=LoadSpec(concurrency=4, requests=12, warmup_requests=2),
        slo=SloSpec(ttft_ms=500),
    )
    run_id = jobs.create_run(spec)
    summary = jobs.execute_run(run_id)
    fast, broken = summary["engines"]["fast"], summary["engines"]["broken"]
    assert (fast["completed"], fast["failed"], fast["sent"]) == (12, 0, 12)
    assert (broken["completed"], broken["failed"], broken["sent"]) == (0, 12, 12)
    assert broken["errors_by_class"] == {"stream_cut": 12}
    for key in (
        "duration_s",
        "request_throughput_rps",
        "input_throughput_tok_s",
        "output_throughput_tok_s",
        "total_token_throughput_tok_s",
        "goodput_rps",
        "input_tokens",
        "output_tokens",
        "cached_tokens",
        "schema_valid_rate",
        "honoured_output_len",
        "engine_metrics",
    ):
        assert key in fast
    for metric in ("ttft_s", "tpot_s", "itl_s", "e2e_s"):
        assert set(fast[metric]) >= {"mean", "p50", "p90", "p95", "p99", "min", "max"}
    assert fast["goodput_rps"] == pytest.approx(fast["request_throughput_rps"])
    assert fast["honoured_output_len"] is True
    # Engine metrics came from the scripted server's /metrics, recorded by the child process.
    assert fast["engine_metrics"]["kv_cache_usage_max"] is not None
    view = jobs.get_run(run_id)
    assert view.status == "finished_with_errors"
    assert view.progress == 1.0
    assert row_count(run_id) == 2 * (12 + 2)
    records = jobs.load_records(run_id)
    assert sum(1 for r in records if r.warmup) == 4
    assert all(r.itl_s for r in records if r.ok)
    # The summary is built from the records the writer stored, not read back: reading them
    # back gives the same figures (the run's own facts, like its model, come from the run).
    from_rows = jobs.build_summary(spec, jobs.stored_records(run_id), None, run_id=run_id)
    from_the_run = {
        "cancelled",
        "connections_ahead",
        "energy",
        "engine_metrics",
        "generator",
        "max_streams",
        "model",
        "started_at_unix",
        "unsupported_options",
    }
    differing = sorted(
        {
            key
            for name, block in summary["engines"].items()
            for key in block
            if key not in from_the_run and block[key] != from_rows["engines"][name].get(key)
        }
    )
    assert differing == []


def test_worker_process_runs_on_and_viewers_see_it(db_url: str, scripted_server: ScriptedServer) -> None:
    spec = BenchSpec(
        engines=(target(scripted_server, ttft=5, itl=5, tokens=40),),
        workload=WorkloadSpec(output_len=40),
        load=LoadSpec(concurrency=2, requests=30),
    )
    run_id = jobs.start_benchmark(spec)
    # Live rows and progress appear while it runs (any number of readers).
    wait_for(lambda: jobs.get_run(run_id).status == "running")
    wait_for(lambda: 0 < row_count(run_id) < 30)
    live = jobs.get_run(run_id)
    assert 0 < live.progress < 1
    assert live.live["engines"]["scripted"]["sent"] > 0
    final = wait_for(lambda: (v := jobs.get_run(run_id)).status not in jobs.ACTIVE_STATUSES and v)
    assert final.status == "finished"
    assert final.summary["engines"]["scripted"]["completed"] == 30
    assert "live" not in final.summary


def test_cancel_keeps_partial_results(db_url: str, scripted_server: ScriptedServer) -> None:
    spec = BenchSpec(
        # Each request 2 s: the three in flight when the cancel lands are still in flight.
        engines=(target(scripted_server, ttft=5, itl=20, tokens=100),),
        workload=WorkloadSpec(output_len=100),
        load=LoadSpec(concurrency=3, requests=300),
    )
    run_id = jobs.start_benchmark(spec)
    wait_for(lambda: row_count(run_id) >= 3)
    assert jobs.cancel_run(run_id)
    final = wait_for(lambda: "engines" in (v := jobs.get_run(run_id)).summary and v, timeout_s=20)
    block = final.summary["engines"]["scripted"]
    assert final.status == "cancelled"
    assert (
        block["completed"] + block["failed"] + block["cancelled_requests"]
        == block["sent"]
        == row_count(run_id)
    )
    assert (
        block["cancelled_requests"] == 3
        and block["failed"] == 0
        and "cancelled" not in block["errors_by_class"]
    )
    assert not jobs.cancel_run(run_id)  # already over


def test_killed_worker_is_marked_interrupted_with_partial_summary(
    db_url: str, scripted_server: ScriptedServer
) -> None:
    spec = BenchSpec(
        engines=(target(scripted_server, ttft=5, itl=20, tokens=50),),
        workload=WorkloadSpec(output_len=50),
        load=LoadSpec(concurrency=2, requests=500),
    )
    run_id = jobs.start_benchmark(spec)
    wait_for(lambda: row_count(run_id) >= 4)
    with session_scope() as session:
        pid = session.get(Run, run_id).worker_pid
    os.kill(pid, signal.SIGKILL)
    time.sleep(0.5)
    assert jobs.mark_interrupted_runs(stale_after_s=60) == []  # heartbeat still fresh
    assert jobs.mark_interrupted_runs(stale_after_s=0.1) == [run_id]
    view = jobs.get_run(run_id)
    assert view.status == "interrupted"
    block = view.summary["engines"]["scripted"]
    assert block["sent"] == row_count(run_id) >= 4
    assert block["completed"] + block["failed"] == block["sent"]


def test_concurrency_sweep_and_slo_search(db_url: str, scripted_server: ScriptedServer) -> None:
    engine = target(scripted_server, ttft=20, itl=2, tokens=8)
    sweep = BenchSpec(
        engines=(engine,),
        workload=WorkloadSpec(output_len=8),
        load=LoadSpec(requests=12),
        sweep=SweepSpec(kind="concurrency", values=(1, 2, 4), stop_on_plateau=False),
    )
    summary = jobs.execute_run(jobs.create_run(sweep))
    assert [(row["concurrency"], row["completed"]) for row in summary["sweep"]] == [
        (1, 12),
        (2, 12),
        (4, 12),
    ]
    rates = [row["request_throughput_rps"] for row in summary["sweep"]]
    assert rates[0] < rates[1] < rates[2]
    assert summary["engines"]["scripted"]["from_step"] == 2
    search = BenchSpec(
        engines=(engine,),
        workload=WorkloadSpec(output_len=8),
        load=LoadSpec(requests=10),
        slo=SloSpec(e2e_ms=200, attainment=0.9),
        sweep=SweepSpec(
            kind="slo_search", search_over="concurrency", start=1, max_value=4, search_steps=1
        ),
    )
    summary = jobs.execute_run(jobs.create_run(search))
    found = summary["slo_search"]["scripted"]
    assert found["best"] == 4 and found["reached_maximum"] is True
    assert [row["concurrency"] for row in summary["sweep"]] == [1, 2, 4]


def test_validation_and_missing_runs(db_url: str) -> None:
    with pytest.raises(ValidationError, match="at least one engine"):
        jobs.create_run(BenchSpec(engines=()))
    with pytest.raises(NotFoundError):
        jobs.get_run(12345)
    with pytest.raises(NotFoundError):
        jobs.engine_target("no-such-engine")


def test_a_registered_engine_becomes_a_target_with_its_metrics_url(db_url: str) -> None:
    from services.engines import endpoints

    endpoints.add_engine(
        "vllm-a", "http://gpu-box:8000/v1/", kind="vllm", model="m", api_key_env="VLLM_KEY"
    )
    target = jobs.engine_target("vllm-a")
    assert target == EngineTarget.from_record(endpoints.get_engine("vllm-a"))
    assert target == EngineTarget(
        name="vllm-a",
        base_url="http://gpu-box:8000",
        kind="vllm",
        model="m",
        api_key_env="VLLM_KEY",
        metrics_url="http://gpu-box:8000/metrics",  # the kind's path: scraped with the run
    )


def test_engine_samples_summary() -> None:
    rows = [
        {"prefix_cache_hit_rate": 0.5, "prompt_tokens_per_s": 100.0, "kv_cache_usage": 0.2},
        {"prefix_cache_hit_rate": 1.0, "prompt_tokens_per_s": 300.0, "kv_cache_usage": 0.6},
        {"_error": "unreachable"},
        {"kv_cache_usage": None},
    ]
    metrics = jobs.summarize_engine_samples(rows)
    assert metrics.prefix_cache_hit_rate == pytest.approx((50 + 300) / 400)
    assert metrics.at("kv_cache_usage_max") == 0.6
    assert jobs.summarize_engine_samples([]).prefix_cache_hit_rate is None


def test_cancelled_before_its_worker_started(db_url: str, scripted_server: ScriptedServer) -> None:
    run_id = jobs.create_run(BenchSpec(engines=(target(scripted_server),), load=LoadSpec(requests=5)))
    assert jobs.cancel_run(run_id)
    summary = jobs.execute_run(run_id)
    assert summary["engines"]["scripted"]["sent"] == 0
    assert jobs.get_run(run_id).status == "cancelled"
    assert row_count(run_id) == 0


def test_engines_at_the_same_time(db_url: str, scripted_server: ScriptedServer) -> None:
    spec = BenchSpec(
        engines=(
            target(scripted_server, "a", ttft=5, itl=5, tokens=20),
            target(scripted_server, "b", ttft=5, itl=5, tokens=20),
        ),
        workload=WorkloadSpec(output_len=20),
        load=LoadSpec(mode="rate", rate=40, requests=None, duration_s=0.5),
        parallel_engines=True,
    )
    summary = jobs.execute_run(jobs.create_run(spec))
    a, b = summary["engines"]["a"], summary["engines"]["b"]
    assert summary["engines_run"] == "together"
    assert a["completed"] > 5 and b["completed"] > 5
    assert abs(a["started_at_unix"] - b["started_at_unix"]) < 0.5


def test_a_cancelled_run_reports_cancelled_requests_and_engines_that_never_ran() -> None:
    """Issue 19: requests the user stopped counted as failures (error rate 0.25), and an
    engine cancelled before its turn read "0.0 req/s, -100% worse" in Compare."""
    from services.bench import view as views
    from services.bench.stats import RequestRecord
    from services.runs import _headline

    spec = BenchSpec(
        engines=(
            EngineTarget(name="a", base_url="http://x:1"),
            EngineTarget(name="b", base_url="http://x:2"),
        ),
        load=LoadSpec(concurrency=2, requests=10),
    )
    records = [
        RequestRecord(
            engine="a", index=i, ok=True, start_s=i * 0.1, ttft_s=0.05, e2e_s=0.2, output_tokens=4
        )
        for i in range(3)
    ]
    records.append(
        RequestRecord(engine="a", index=3, ok=False, start_s=0.4, e2e_s=0.1, error_class="cancelled")
    )
    summary = jobs.build_summary(spec, records, None)
    a, b = summary["engines"]["a"], summary["engines"]["b"]
    assert (a["completed"], a["failed"], a["cancelled_requests"], a["sent"]) == (3, 0, 1, 4)
    assert a["error_rate"] == 0.0
    assert b["not_run"] is True
    table = views.throughput_table(summary)
    assert list(table["engine"]) == ["a"] and table.iloc[0]["cancelled"] == 1
    assert list(views.percentile_table(summary)["engine"].unique()) == ["a"]
    assert "b: not run" in _headline("benchmark", summary)


def test_the_runs_generator_verdict_names_the_loads_it_could_not_check() -> None:
    """Issue 31: the stored run-level block carries the third state: `checked` false, with each
    load that could not be checked and why, beside the flagged ones."""
    from services.bench.selfcheck import WorkerCheck, report

    kept = report([WorkerCheck(loop_lag_s=[0.0002] * 150, cpu_s=0.2, wall_s=1.52)], open_loop=False)
    short = report([WorkerCheck(loop_lag_s=[0.0002] * 12, cpu_s=0.01, wall_s=0.13)], open_loop=False)
    bound = report([WorkerCheck(loop_lag_s=[0.0002] * 100, cpu_s=0.97, wall_s=1.0)], open_loop=False)
    per_step = {
        ("a", None): {"generator": kept},
        ("b", 0): {"generator": short},
        ("b", 1): {"generator": bound},
    }
    assert jobs.generator_verdict(per_step) == {
        "client_bound": True,
        "checked": False,
        "flagged": [{"engine": "b", "step": 1, "evidence": ["worker 0 used 97% of a core > 85%"]}],
        "unchecked": [
            {"engine": "b", "step": 0, "reason": "the run lasted 0.13 s; the check needs at least 0.2 s"}
        ],
        "checked_loads": 3,
    }
    assert jobs.generator_verdict({("a", None): {"generator": kept}})["checked"] is True


def test_each_step_carries_the_price_it_ran_with_and_its_cost() -> None:
    """Issue 33: the cost comes from the price stored with the run (the spec's snapshot of the
    engine), through services/core/cost.py; an engine without a price says so, never 0."""
    from services.bench.stats import RequestRecord
    from services.core import cost

    spec = BenchSpec(
        engines=(
            EngineTarget(name="priced", base_url="http://x:1", usd_per_hour=3.6),
            EngineTarget(name="free", base_url="http://x:2"),
        ),
        load=LoadSpec(concurrency=1, requests=2),
        slo=SloSpec(ttft_ms=100),
    )
    records = [
        RequestRecord(
            engine=name,
            index=i,
            ok=True,
            start_s=float(i),
            ttft_s=ttft,
            e2e_s=1.0,
            input_tokens=100,
            output_tokens=1000,
        )
        for name in ("priced", "free")
        for i, ttft in enumerate((0.05, 0.5))
    ]
    summary = jobs.build_summary(spec, records, None)
    priced = summary["engines"]["priced"]
    figures = cost.Cost.from_json(priced[cost.SUMMARY_KEY])
    # 2000 output tokens over 2 s, 1000 of them within the SLO: 1000 and 500 tok/s.
    assert figures.usd_per_hour == 3.6
    assert figures.usd_per_1m_output == pytest.approx(cost.usd_per_million(3.6, 1000.0))
    assert figures.usd_per_1m_total == pytest.approx(cost.usd_per_million(3.6, 1100.0))
    assert figures.usd_per_1m_output_goodput == pytest.approx(cost.usd_per_million(3.6, 500.0))
    free = cost.Cost.from_json(summary["engines"]["free"][cost.SUMMARY_KEY])
    assert free == cost.Cost() and not free.priced
    # The spec stored with the run keeps the price, so a later edit of the engine changes nothing.
    again = BenchSpec.from_dict(spec.to_dict())
    assert again.engines[0].usd_per_hour == 3.6


def test_a_price_does_not_change_what_repeats_a_run() -> None:
    from db.models import run_fingerprint

    bare = BenchSpec(engines=(EngineTarget(name="a", base_url="http://x:1"),)).to_dict()
    priced = BenchSpec(
        engines=(EngineTarget(name="a", base_url="http://x:1", usd_per_hour=2.0),)
    ).to_dict()
    before = dict(
        bare, engines=[{k: v for k, v in e.items() if k != "usd_per_hour"} for e in bare["engines"]]
    )
    fingerprints = {run_fingerprint("benchmark", "m", "w", c) for c in (bare, priced, before)}
    assert len(fingerprints) == 1
    # A tuning run's price sits at the top of its config: ignored there too.
    tunes = {
        run_fingerprint("tune", "m", "w", {"kind": "llamacpp", **p}) for p in ({}, {"usd_per_hour": 2.0})
    }
    assert len(tunes) == 1


def test_the_engines_own_account_ends_within_a_short_request_timeout(db_url: str) -> None:
    """What the engine says of itself is read before the run with a 5 s deadline of its own,
    and within the run's request timeout where that is shorter (`bench --timeout 1`): here
    against a server that sends a byte every 0.5 s and never ends."""
    with HostileServer("trickle") as server:
        engine = EngineTarget(name="x", base_url=server.url + "/v1", kind="vllm", model="m")
        spec = BenchSpec(
            engines=(engine,),
            workload=WorkloadSpec(input_len=8, output_len=8),
            load=LoadSpec(concurrency=1, requests=1),
            timeout_s=1.0,
        )
        run_id = jobs.create_run(spec)
        started = time.monotonic()
        jobs.store_reported_settings(run_id, spec)
        assert time.monotonic() - started < 2.5


def test_engine_samples_keep_what_an_explanation_reads() -> None:
    # Issue 54: running, waiting (and how often), preemption, KV p90 and near full, token rates.
    rows = [
        {"requests_running": 4, "requests_waiting": 0, "kv_cache_usage": 0.5, "preemptions_per_s": 0.0},
        {"requests_running": 4, "requests_waiting": 3, "kv_cache_usage": 0.97, "preemptions_per_s": 2.0},
        {
            "requests_running": 2,
            "requests_waiting": 1,
            "kv_cache_usage": 0.99,
            "generation_tokens_per_s": 80.0,
        },
        {"requests_running": float("nan"), "requests_waiting": True, "_error": None},
    ]
    kept = jobs.summarize_engine_samples(rows).to_json()
    assert kept["requests_running_max"] == 4 and kept["requests_running_mean"] == pytest.approx(10 / 3)
    assert kept["requests_waiting_share"] == pytest.approx(2 / 3) and kept["requests_waiting_max"] == 3
    assert kept["preempting_share"] == 0.5 and kept["preemptions_per_s_max"] == 2.0
    assert kept["kv_cache_usage_p90"] == pytest.approx(0.986)
    assert kept["kv_cache_near_full_share"] == pytest.approx(2 / 3)
    assert kept["generation_tokens_per_s_mean"] == 80.0 and kept["spec_decode_acceptance_mean"] is None
    assert kept["samples"] == 4


def test_kv_p90_is_the_one_percentile_of_the_project() -> None:
    # Nearest rank on three samples gives the top one (1.0); linear interpolation, the definition
    # of every other percentile shown (services.core.measure.percentile), gives 0.9.
    rows = [{"kv_cache_usage": usage} for usage in (1.0, 0.0, 0.5)]
    assert jobs.summarize_engine_samples(rows).at("kv_cache_usage_p90") == pytest.approx(0.9)
    assert jobs.summarize_engine_samples([{"requests_running": 2}]).at("kv_cache_usage_p90") is None
