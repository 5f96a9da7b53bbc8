"""Issue 20: limits of a shared server, enforced on what is actually sent."""

from __future__ import annotations

import pytest

from services import playground
from services.bench import jobs
from services.bench import limits as bench_limits
from services.core.errors import ValidationError
from services.engines import SamplingParams, endpoints
from services.runstate import run_kinds
from services.team import limits


def test_extra_body_cannot_lift_n_or_max_tokens(db_url: str, scripted_server) -> None:  # type: ignore[no-untyped-def]
    for name in ("a", "b"):
        endpoints.add_engine(
            name, scripted_server.base_url, kind="vllm", model=scripted_server.model(tokens=4)
        )
    choices = (
        playground.EngineChoice("a", extra_body={"n": 1000, "max_tokens": 1_000_000}),
        playground.EngineChoice("b"),
    )
    with pytest.raises(ValidationError, match="SHOOTOUT_LIMIT_N"):
        playground.send(
            playground.SendRequest(engines=choices, prompt="hi", params=SamplingParams(max_tokens=8))
        )
    choices = (
        playground.EngineChoice("a", extra_body={"max_tokens": 1_000_000}),
        playground.EngineChoice("b"),
    )
    with pytest.raises(ValidationError, match="SHOOTOUT_LIMIT_MAX_TOKENS"):
        playground.send(
            playground.SendRequest(engines=choices, prompt="hi", params=SamplingParams(max_tokens=8))
        )
    assert playground.history(10) == []  # refused before anything was stored


def test_a_huge_prompt_is_refused_before_anything_is_stored(
    db_url: str,
    scripted_server,  # type: ignore[no-untyped-def]
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("SHOOTOUT_LIMIT_PROMPT_CHARS", "1000")
    for name in ("a", "b"):
        endpoints.add_engine(
            name, scripted_server.base_url, kind="vllm", model=scripted_server.model(tokens=4)
        )
    with pytest.raises(ValidationError, match="1,001 characters"):
        playground.send(
            playground.SendRequest(
                engines=(playground.EngineChoice("a"), playground.EngineChoice("b")),
                prompt="x" * 1001,
                params=SamplingParams(max_tokens=8),
            )
        )


def test_concurrent_benchmarks_are_capped(db_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SHOOTOUT_LIMIT_BENCHMARKS", "1")
    limits.check_active("benchmark", 0)
    with pytest.raises(ValidationError, match="1 benchmarks are running on this server already"):
        limits.check_active("benchmark", run_kinds.count_active(jobs.KIND) + 1)


def test_per_viewer_limits_bind_viewers_and_the_server_binds_everyone(
    db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from db.models import Run
    from db.session import session_scope
    from services.team.access import Viewer

    monkeypatch.setenv("SHOOTOUT_LIMIT_BENCHMARKS", "3")
    alice, bob, operator = (
        Viewer("viewer", "ip:10.0.0.1"),
        Viewer("viewer", "ip:10.0.0.2"),
        Viewer("operator", "op"),
    )

    def start(viewer: Viewer) -> None:
        with limits.admitted("benchmark", viewer) as requested_by, session_scope() as session:
            session.add(Run(kind="benchmark", status="running", requested_by=requested_by))

    start(alice)
    with pytest.raises(
        ValidationError, match="You have 1 benchmarks running already; a viewer may have 1"
    ):
        start(alice)
    start(bob)  # another viewer has a share of their own
    start(operator)  # operators: the server's limit only
    with pytest.raises(ValidationError, match="3 benchmarks are running on this server already"):
        start(operator)
    assert run_kinds.count_active("benchmark", requested_by="ip:10.0.0.1") == 1


def test_two_password_logins_from_one_address_are_two_viewers(
    db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A room behind one NAT logs in with the viewer password from one address: each login is a
    viewer with its own share of the per-viewer limits (and its own runs), not one viewer for
    the room. The identity names the address for the log, never the session id."""
    from db.models import Run
    from db.session import session_scope
    from services.team import access

    monkeypatch.setenv("SHOOTOUT_VIEWER_PASSWORD", "viewer-secret")
    monkeypatch.setenv("SHOOTOUT_LIMIT_BENCHMARKS", "3")
    first, second = (access.issue_session("viewer", "ip:10.0.0.7") for _ in range(2))
    alice, bob = access.read_session(first), access.read_session(second)
    assert alice is not None and bob is not None and alice != bob
    assert alice == access.read_session(first)  # the same login is the same viewer
    assert alice.account == bob.account == "ip:10.0.0.7"
    assert access.session_id(first) not in alice.identity

    def start(viewer: access.Viewer) -> None:
        with limits.admitted("benchmark", viewer) as requested_by, session_scope() as session:
            session.add(Run(kind="benchmark", status="running", requested_by=requested_by))

    start(alice)
    start(bob)  # the same address, another login: a share of its own
    with pytest.raises(ValidationError, match="You have 1 benchmarks running already"):
        start(alice)
    budget = limits.UploadBudget()
    monkeypatch.setenv("SHOOTOUT_LIMIT_UPLOAD_MB_PER_VIEWER", "1")
    assert budget.take(alice.identity, 1024 * 1024) is None
    assert budget.take(bob.identity, 1024 * 1024) is None
    assert budget.take(alice.identity, 1) is not None


def test_answers_are_cut_at_the_stored_answer_limit(
    db_url: str,
    scripted_server,  # type: ignore[no-untyped-def]
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An engine that streams 3 MB into a 1 MB limit: the exchange ends as too_large, and what is
    stored stays under the limit."""
    from sqlalchemy import select

    from db.models import Exchange
    from db.session import session_scope

    monkeypatch.setenv("SHOOTOUT_LIMIT_ANSWER_MB", "1")
    endpoints.add_engine(
        "huge",
        scripted_server.base_url,
        kind="vllm",
        model=scripted_server.model(fault="huge", size=3_000_000),
    )
    endpoints.add_engine(
        "fine", scripted_server.base_url, kind="vllm", model=scripted_server.model(tokens=4)
    )
    handle = playground.send(
        playground.SendRequest(
            engines=(playground.EngineChoice("huge"), playground.EngineChoice("fine")),
            prompt="hi",
            params=SamplingParams(max_tokens=8),
        )
    )
    assert playground.wait(handle.run_id, 60)
    with session_scope() as session:
        rows = {
            r.engine_name: r
            for r in session.scalars(select(Exchange).where(Exchange.run_id == handle.run_id))
        }
        assert rows["huge"].error_class == "too_large"
        assert len(rows["huge"].answer.encode()) <= 1024 * 1024
        assert rows["fine"].status == "finished"


def test_a_benchmark_from_the_page_stays_within_the_servers_limits(
    db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from dataclasses import replace

    from services.bench.arrivals import LoadSpec
    from services.bench.spec import BenchSpec, EngineTarget
    from services.bench.workloads import WorkloadSpec
    from services.team.access import Viewer

    monkeypatch.setenv("SHOOTOUT_LIMIT_MAX_TOKENS", "512")
    viewer = Viewer("viewer", "ip:10.0.0.3")
    base = BenchSpec(engines=(EngineTarget("a", "http://127.0.0.1:9"),), load=LoadSpec(requests=10))
    cases = {
        "SHOOTOUT_LIMIT_MAX_TOKENS": replace(base, workload=WorkloadSpec(output_len=1000)),
        "SHOOTOUT_LIMIT_PROMPT_CHARS": replace(base, workload=WorkloadSpec(input_len=1_000_000)),
        "SHOOTOUT_LIMIT_BENCHMARK_REQUESTS": replace(base, load=LoadSpec(requests=1_000_000)),
        "SHOOTOUT_LIMIT_BENCHMARK_MINUTES": replace(
            base, load=LoadSpec(requests=None, duration_s=86_400)
        ),
    }
    for message, spec in cases.items():
        with pytest.raises(ValidationError, match=message):
            jobs.start_benchmark(spec, viewer=viewer)
    assert run_kinds.count_active("benchmark") == 0  # nothing stored, no worker started


def test_a_viewers_benchmark_is_bounded_as_a_whole(db_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 31: each step within the step bounds, the run as a whole not: 64 levels of 60
    minutes, 64 levels x 2 engines of 20,000 requests, 64 workers on a 2-core server."""
    from dataclasses import replace

    from services.bench.arrivals import LoadSpec
    from services.bench.spec import BenchSpec, EngineTarget, SweepSpec
    from services.core import processes
    from services.team.access import Viewer

    monkeypatch.setattr(processes, "usable_cores", lambda: 2)
    viewer, operator = Viewer("viewer", "ip:10.0.0.3"), Viewer("operator", "op")
    engines = (EngineTarget("a", "http://127.0.0.1:9"), EngineTarget("b", "http://127.0.0.1:9"))
    levels = SweepSpec(kind="concurrency", values=tuple(float(v) for v in range(1, 65)))
    base = BenchSpec(engines=engines[:1], load=LoadSpec(requests=10))
    cases = {
        "up to 3,840 minutes in all .64 step.s. of 1 engine.s..*SHOOTOUT_LIMIT_RUN_MINUTES_PER_VIEWER": replace(
            base, sweep=levels, load=LoadSpec(requests=None, duration_s=3600)
        ),
        "up to 2,560,000 requests in all .64 step.s. of 2 engine.s., warm-ups included.*"
        "SHOOTOUT_LIMIT_RUN_REQUESTS_PER_VIEWER": replace(
            base, engines=engines, sweep=levels, load=LoadSpec(requests=20000)
        ),
        "64 load-generator workers is more than this server's 2 cores": replace(base, workers=64),
    }
    for message, spec in cases.items():
        with pytest.raises(ValidationError, match=message):
            jobs.start_benchmark(spec, viewer=viewer)
    assert run_kinds.count_active("benchmark") == 0  # nothing stored, no worker started

    # The SLO search's steps count too: 1, 2, 4 ... 64 is 7 levels, then 4 bisections.
    search = replace(
        base,
        sweep=SweepSpec(kind="slo_search", start=1, max_value=64, search_steps=4),
        load=LoadSpec(requests=None, duration_s=1200),
    )
    assert bench_limits.benchmark_size(search).steps == 11
    with pytest.raises(ValidationError, match="up to 220 minutes"):
        bench_limits.check_benchmark(search, viewer)
    # Engines side by side share a step's minutes.
    side_by_side = replace(
        base, engines=engines, parallel_engines=True, sweep=SweepSpec(kind="rate", values=(1, 2, 4))
    )
    assert (
        bench_limits.benchmark_size(replace(side_by_side, load=LoadSpec(duration_s=600))).minutes == 30
    )
    monkeypatch.setenv("SHOOTOUT_LIMIT_RUN_MINUTES_PER_VIEWER", "1000")
    bench_limits.check_benchmark(search, viewer)  # the operator's variable moves the bound

    # An operator is bound by the server's (per-step) limits only.
    for spec in cases.values():
        bench_limits.check_benchmark(spec.validate(), operator)
    with pytest.raises(ValidationError, match="SHOOTOUT_LIMIT_BENCHMARK_MINUTES"):
        bench_limits.check_benchmark(
            replace(base, load=LoadSpec(requests=None, duration_s=86_400)), operator
        )
