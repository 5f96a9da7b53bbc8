"""Tuning runs over real llama.cpp configurations (short loads on free ports; the shared
engines on 8081-8083 are never touched)."""

from __future__ import annotations

import time

import pytest

from db.models import Run
from db.session import session_scope
from services import local_engines
from services.bench.arrivals import LoadSpec
from services.bench.stats import SloSpec
from services.bench.workloads import WorkloadSpec
from services.core.errors import ValidationError
from services.core.processes import pid_alive
from services.engines.llamacpp.local import server_args
from services.tune import jobs
from services.tune.launch import render_template
from services.tune.spec import TuneSpec
from tests.support.tune import wait_until_ended

TINY = {
    "workload": WorkloadSpec(input_len=16, output_len=8),
    "load": LoadSpec(concurrency=2, requests=4),
}


@pytest.fixture
def llamacpp_installed() -> None:
    assert local_engines.is_installed("llamacpp"), (
        "llama.cpp is not installed: `python cli.py local install`"
    )


def test_a_two_by_two_grid_runs_every_configuration_and_stops_each(
    db_url: str, llamacpp_installed: None
) -> None:
    spec = TuneSpec(
        kind="llamacpp",
        grid={"np": ("1", "2"), "ctk": ("f16", "q8_0")},
        slo=SloSpec(ttft_ms=5000),
        **TINY,
    )
    run_id = jobs.create_run(spec, trusted=True)
    summary = jobs.execute_run(run_id)
    configs = summary["configs"]
    assert [c["label"] for c in configs] == [
        "np=1 ctk=f16",
        "np=1 ctk=q8_0",
        "np=2 ctk=f16",
        "np=2 ctk=q8_0",
    ]
    assert [c["status"] for c in configs] == ["finished"] * 4
    for config in configs:
        assert config["metrics"]["completed"] == 4
        assert config["port"] not in (8081, 8082, 8083)
        assert not pid_alive(config["pid"]), f"{config['label']} left its engine running"
        # What the engine itself reports: as many slots as the configuration asked for.
        assert config["reported"]["/props"]["total_slots"] == int(config["settings"]["np"])
    assert summary["best"]["label"] in summary["engines"]
    assert "-np" in summary["best"]["launch"]["plain"] and summary["best"]["launch"][
        "docker"
    ].startswith("docker run")
    assert summary["pareto"]["ttft_s"] and set(summary["pareto"]["ttft_s"]) <= set(summary["engines"])
    view = jobs.get_run(run_id)
    assert view.status == "finished" and view.progress == 1.0


def test_a_configuration_that_cannot_start_is_recorded_while_the_others_finish(
    db_url: str, llamacpp_installed: None
) -> None:
    spec = TuneSpec(kind="llamacpp", configs=({"--no-such-flag": "1"}, {"np": "1"}), **TINY)
    run_id = jobs.create_run(spec, trusted=True)
    summary = jobs.execute_run(run_id)
    bad, good = summary["configs"]
    assert bad["status"] == "failed_to_start"
    assert bad["reason"].startswith("exited during start-up")
    assert "invalid argument: --no-such-flag" in bad["log_tail"]
    assert not pid_alive(bad["pid"])
    assert good["status"] == "finished" and good["metrics"]["completed"] == 4
    assert summary["engines"]["--no-such-flag=1"]["not_run"] is True
    view = jobs.get_run(run_id)
    assert view.status == "finished_with_errors"
    # Stored as the engine's block, read back the same (not the record's own fields).
    stored = view.configs[1]["metrics"]
    assert stored == summary["engines"]["np=1"] and stored["ttft_s"]["p50"] is not None


def _stored_progress_and_requests(run_id: int) -> tuple[float, int]:
    """The run's stored progress and its stored requests, read together."""
    from sqlalchemy import func, select

    from db.models import RequestResult

    with session_scope() as session:
        answered = session.scalar(
            select(func.count(RequestResult.id)).where(RequestResult.run_id == run_id)
        )
        run = session.get(Run, run_id)
        return (run.progress if run is not None else 0.0), int(answered or 0)


def _stored_progress(run_id: int) -> float:
    with session_scope() as session:
        run = session.get(Run, run_id)
        return run.progress if run is not None else 0.0


def test_cancel_mid_sweep_stops_the_engine_and_keeps_what_ran(
    db_url: str, llamacpp_installed: None
) -> None:
    long_load = {
        "workload": WorkloadSpec(input_len=16, output_len=32),
        "load": LoadSpec(concurrency=1, requests=200),
    }
    spec = TuneSpec(kind="llamacpp", grid={"np": ("1", "2", "3")}, **long_load)
    run_id = jobs.start_tuning(spec)
    deadline = time.monotonic() + 90
    running = None
    while time.monotonic() < deadline:
        view = jobs.get_run(run_id)
        running = next((c for c in view.configs if c["status"] == "running"), None)
        if running is not None and running["pid"]:
            break
        time.sleep(0.3)
    assert running is not None, f"no configuration started: {jobs.get_run(run_id).configs}"
    assert pid_alive(running["pid"])
    # Some requests answered: the stored progress moves with each one, inside a configuration
    # (it once moved only between configurations: this waited out its whole minute).
    while time.monotonic() < deadline + 60 and _stored_progress(run_id) <= 0:
        time.sleep(0.2)
    moved, answered = _stored_progress_and_requests(run_id)
    assert 0 < moved < 1 / 3 and answered < 200, (
        f"progress {moved} first stored with {answered} of the first configuration's 200 requests"
    )
    assert jobs.cancel_run(run_id)
    view = wait_until_ended(run_id, 60)
    assert view.status == "cancelled" and view.finished_at is not None
    for config in view.configs:
        assert not pid_alive(config["pid"]), (
            f"{config['label']} (pid {config['pid']}) still runs after cancel"
        )
    # The configuration running when the cancel lands is cancelled and the later ones never run.
    # On a loaded machine the first may finish its requests before the worker's next beat reads
    # the cancel: then it stays finished, and the one after it is the cancelled one.
    statuses = [c["status"] for c in view.configs]
    stopped_at = statuses.index("cancelled")
    assert statuses[:stopped_at] == ["finished"] * stopped_at, statuses
    assert statuses[stopped_at + 1 :] == ["not_run"] * (len(statuses) - stopped_at - 1), statuses
    assert stopped_at < len(statuses) - 1, (
        f"the cancel came only after the last configuration: {statuses}"
    )
    assert view.configs[0]["metrics"]["completed"] >= 1


def test_command_templates_run_without_a_shell_and_quote_only_inside_a_token() -> None:
    argv = render_template(
        'ssh gpu-box "vllm serve m --port {port} {args}" --name {name}',
        port=9001,
        name="t-1",
        args=["--max-num-seqs", "8", "--x", "a b;rm -rf /"],
    )
    assert argv == [
        "ssh",
        "gpu-box",
        "vllm serve m --port 9001 --max-num-seqs 8 --x 'a b;rm -rf /'",
        "--name",
        "t-1",
    ]
    argv = render_template(
        "docker run -p {port}:8000 img {args}", port=9001, name="t", args=["--a", "x y"]
    )
    assert argv == ["docker", "run", "-p", "9001:8000", "img", "--a", "x y"]


def test_a_command_template_starts_a_real_engine(db_url: str, llamacpp_installed: None) -> None:
    server, model = local_engines.llama_server_path(), local_engines.gguf_path()
    proven = " ".join(server_args())  # what this machine's build needs (--no-repack or nothing)
    template = (
        f"{server} -m {model} {proven} --host 127.0.0.1 --port {{port}} -t 1 -tb 1 -c 2048 {{args}}"
    )
    spec = TuneSpec(
        kind="llamacpp", launcher="command", start_command=template, grid={"np": ("1",)}, **TINY
    )
    run_id = jobs.create_run(spec, trusted=True)
    config = jobs.execute_run(run_id)["configs"][0]
    assert config["status"] == "finished", config
    assert config["command"][-2:] == ["-np", "1"] and not pid_alive(config["pid"])


def test_untrusted_callers_get_neither_raw_flags_nor_templates() -> None:
    with pytest.raises(ValidationError, match="Raw flag"):
        TuneSpec(configs=({"--slot-save-path": "/tmp"},)).validate(trusted=False)
    with pytest.raises(ValidationError, match="Command templates"):
        TuneSpec(launcher="command", start_command="docker run {port}").validate(trusted=False)
    with pytest.raises(ValidationError, match="np: expected a whole number"):
        TuneSpec(grid={"np": ("two",)}).validate(trusted=False)


def test_a_dead_workers_engine_is_stopped_at_recovery(db_url: str, llamacpp_installed: None) -> None:
    import os
    import signal

    from services.runstate.run_kinds import mark_interrupted_after_restart as recover_interrupted_runs

    spec = TuneSpec(
        kind="llamacpp",
        grid={"np": ("1", "2")},
        workload=WorkloadSpec(input_len=16, output_len=32),
        load=LoadSpec(concurrency=1, requests=500),
    )
    run_id = jobs.start_tuning(spec)
    deadline = time.monotonic() + 90
    running = None
    while running is None and time.monotonic() < deadline:
        running = next(
            (c for c in jobs.get_run(run_id).configs if c["status"] == "running" and c["pid"]), None
        )
        time.sleep(0.3)
    assert running is not None
    from db.models import Run
    from db.session import session_scope

    with session_scope() as session:
        worker = session.get(Run, run_id).worker_pid
    os.kill(worker, signal.SIGKILL)  # the worker dies without cleaning up
    time.sleep(0.5)
    assert pid_alive(running["pid"])
    assert run_id in recover_interrupted_runs(stale_after_s=0.0)
    deadline = time.monotonic() + 20
    while pid_alive(running["pid"]) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not pid_alive(running["pid"])
    assert jobs.get_run(run_id).status == "interrupted"


def test_a_price_is_checked_kept_and_names_the_cheapest_configuration() -> None:
    """Issue 33: the spec's price is validated like an engine's and kept in the stored spec;
    analyse stores the cheapest configuration meeting the SLOs with its launch command."""
    from services.core import cost

    spec = TuneSpec(kind="llamacpp", grid={"np": ("1", "2")}, usd_per_hour="3.6", **TINY)  # type: ignore[arg-type]
    checked = spec.validate(trusted=False)
    assert checked.usd_per_hour == 3.6
    assert TuneSpec.from_dict(checked.to_dict()).usd_per_hour == 3.6
    with pytest.raises(ValidationError, match="not a plain number"):
        TuneSpec(kind="llamacpp", grid={"np": ("1",)}, usd_per_hour="3,60", **TINY).validate(
            trusted=False
        )  # type: ignore[arg-type]

    def entry(np: str, tok_s: float) -> dict:
        block = {
            "completed": 4,
            "output_throughput_tok_s": tok_s,
            "ttft_s": {"p90": 0.1},
            "itl_s": {"p90": 0.01},
        }
        block[cost.SUMMARY_KEY] = cost.cost_of_block(3.6, block).to_json()
        return {
            "label": f"np={np}",
            "status": "finished",
            "sweep": [],
            "metrics": block,
            "full_settings": {"np": np},
        }

    summary = jobs.analyse(checked, [entry("1", 40.0), entry("2", 80.0)])
    # The keys in the order every version stored them (issue 57: `cheapest` is written last).
    assert list(summary) == [
        "configs",
        "engines",
        "pareto",
        "best",
        "kind",
        "load",
        "workload",
        "slo",
        "conclusion_headline",
        "cheapest",
    ]
    cheapest = summary["cheapest"]
    assert cheapest["label"] == "np=2" and "$12.50 per 1M output tokens" in cheapest["reason"]
    assert "-np 2" in cheapest["launch"]["plain"]


def test_each_configuration_carries_its_energy_or_why_not(db_url: str) -> None:
    """Issue 33: a configuration's step is metered like a benchmark's, so it stores joules per
    output token where a counter is readable and the reason where not, never 0 J. The engine
    here is the scripted server, started by a command template."""
    import sys

    from services.telemetry.energy.records import EnergyResult
    from services.tune import view as views
    from tests.support import scripted_server

    template = f"{sys.executable} {scripted_server.__file__} --port {{port}}"
    spec = TuneSpec(
        kind="llamacpp",
        launcher="command",
        start_command=template,
        grid={"np": ("1",)},
        usd_per_hour="3.6",  # type: ignore[arg-type]
        **TINY,
    )
    run_id = jobs.create_run(spec, trusted=True)
    summary = jobs.execute_run(run_id)
    (config,) = summary["configs"]
    assert config["status"] == "finished", config
    energy = EnergyResult.from_json(config["metrics"]["energy"])
    assert energy is not None
    if energy.measured:
        assert energy.j_per_output_token and energy.j_per_output_token > 0
    else:
        assert energy.reason and energy.joules is None
    cell = views.config_table(summary)[views.ENERGY_COLUMN].iloc[0]
    assert cell.endswith(" J") if energy.measured else cell.startswith("not measured here: ")
