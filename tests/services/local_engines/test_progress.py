"""What the installer records of each install (phase, time, estimate, reason) and what `./run.sh`
says before it starts (GB, minutes, the disk check), and `up` starting each backend's engines as
soon as its install ended (issue 48)."""

from __future__ import annotations

import json
import os
import subprocess

import pytest

import services.engines  # noqa: F401 - the engine kinds lend the local engines their backends
from services.local_engines import background, launch, progress
from services.local_engines.catalog import chosen_backends


@pytest.fixture
def engines(monkeypatch: pytest.MonkeyPatch, tmp_path):  # type: ignore[no-untyped-def]
    monkeypatch.setenv("SHOOTOUT_ENGINES_DIR", str(tmp_path))
    return tmp_path


def test_the_estimate_is_this_machines_last_install_else_the_documented_figure(engines) -> None:  # type: ignore[no-untyped-def]
    documented = progress.DOCUMENTED["vllm"][0]
    assert progress.estimate_s("vllm", cores=2) == documented
    # The compile scales with the cores; the downloads do not.
    assert progress.estimate_s("llamacpp", cores=8) < progress.estimate_s("llamacpp", cores=2) / 2
    said: list[str] = []
    recorder = progress.Recorder("vllm", said.append)
    recorder.begin()
    recorder.line("installing")
    recorder.phase("convert")
    recorder.finish()
    assert progress.estimate_s("vllm", cores=2) < 5  # it took no time here
    assert said[0].startswith("vllm: download ") and said[1].startswith("vllm: convert ")
    assert said[2].startswith("vllm: installed in ")
    record = progress.read("vllm")
    assert (
        record is not None
        and record.state == "installed"
        and record.summary().startswith("installed in")
    )


def test_a_failure_keeps_pips_reason_and_its_last_meaningful_lines(engines) -> None:  # type: ignore[no-untyped-def]
    said: list[str] = []
    recorder = progress.Recorder("router", said.append)
    recorder.begin()
    for line in (
        "Collecting smg==1.13.0",
        "WARNING: Location 'file:///opt/x' is ignored: it is neither a file nor a directory.",
        "ERROR: Could not find a version that satisfies the requirement smg==1.13.0",
        "     ━━━━━━━━━━━━━━━━━━━ 90.6/90.6 kB",
        "ERROR: No matching distribution found for smg==1.13.0",
    ):
        recorder.line(line)
    recorder.fail("pip install failed (exit 1)")
    record = progress.read("router")
    assert record is not None and record.state == "failed"
    assert record.reason == "pip install failed (exit 1): No matching distribution found for smg==1.13.0"
    tail = [line for line in said if line.startswith("router|")]
    assert [t.split("|", 1)[1].strip() for t in tail] == [
        "ERROR: Could not find a version that satisfies the requirement smg==1.13.0",
        "ERROR: No matching distribution found for smg==1.13.0",
    ]
    assert said[-1] == f"router: whole log: {engines / 'run' / 'install-router.log'}"


def test_an_install_whose_process_is_gone_is_not_coming_and_down_marks_it_stopped(engines) -> None:  # type: ignore[no-untyped-def]
    recorder = progress.Recorder("sglang", lambda line: None)
    recorder.begin()
    assert progress.coming() == ["sglang"]
    path = progress.record_path("sglang")
    gone = {**json.loads(path.read_text()), "pid": 2**22 + 12345}
    path.write_text(json.dumps(gone))
    assert progress.coming() == []
    record = progress.read("sglang")
    assert record is not None and "install stopped during download" in record.summary()
    assert progress.stop_all() == ["sglang"]
    assert progress.read("sglang").state == "stopped"  # type: ignore[union-attr]


def test_the_plan_says_what_how_big_how_long_and_what_fits(
    monkeypatch: pytest.MonkeyPatch, engines
) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("SHOOTOUT_LOCAL_ENGINES", "llamacpp,vllm,router")
    plan = background.plan()
    assert plan.chosen == ("llamacpp", "vllm", "router") and set(plan.to_install) == set(plan.chosen)
    first = plan.lines()[0]
    assert "installing llamacpp, vllm, router behind it: about 3.9 GB" in first
    assert f"on {os.cpu_count()} core(s)" in first
    assert "SHOOTOUT_LOCAL_ENGINES=" in plan.lines()[1]
    # All at once: the longest install, or the cores' share of them all.
    each = [seconds for seconds, _gb in plan.to_install.values()]
    assert plan.seconds == max(*each, sum(each) / plan.cores)
    tight = background.Plan(plan.chosen, plan.to_install, free_gb=2.0, cores=2)
    assert not tight.fits and tight.fitting() == ["llamacpp", "router"]
    assert (
        "NOT installing" in tight.lines()[-1]
        and "SHOOTOUT_LOCAL_ENGINES=llamacpp,router" in tight.lines()[-1]
    )


def test_none_chooses_no_local_engines(monkeypatch: pytest.MonkeyPatch, engines) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("SHOOTOUT_LOCAL_ENGINES", "none")
    assert chosen_backends() == ()
    assert background.plan().lines() == ["Shootout: no local engines (SHOOTOUT_LOCAL_ENGINES=none)."]
    assert launch.up(log=lambda line: None) == []


def test_up_starts_each_backend_as_its_install_ends_and_the_router_last(
    monkeypatch: pytest.MonkeyPatch, engines
) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("SHOOTOUT_LOCAL_ENGINES", "llamacpp,vllm,router")
    events: list[str] = []

    def install(names, log, on_done):  # type: ignore[no-untyped-def]
        # vLLM ends first (llama.cpp still compiles); the router ends before llama.cpp too,
        # and must still wait for it: it fronts the llama.cpp servers.
        for name in ("vllm", "router", "llamacpp"):
            events.append(f"installed {name}")
            on_done(name, True, "")

    monkeypatch.setattr(launch, "is_installed", lambda backend: False)
    monkeypatch.setattr(launch, "install", install)
    monkeypatch.setattr(launch, "start", lambda engine_id, **_: events.append(f"start {engine_id}"))
    monkeypatch.setattr(launch, "wait_healthy", lambda engine_id, timeout_s: launch.status(engine_id)[0])
    monkeypatch.setattr(launch, "status", lambda engine_id: [_Status(engine_id)])
    launch.up(log=lambda line: None)
    assert events == [
        "installed vllm",
        "start vllm-cpu",  # at once, while llama.cpp still builds
        "installed router",
        "installed llamacpp",
        "start llamacpp-4slot",
        "start llamacpp-1slot",
        "start router-llamacpp",  # after every other install ended
    ]


class _Status:
    def __init__(self, engine_id: str) -> None:
        self.id, self.url, self.status = engine_id, "http://127.0.0.1", "running"


def test_a_background_run_is_found_again_and_stopped(
    monkeypatch: pytest.MonkeyPatch, engines, tmp_path
) -> None:  # type: ignore[no-untyped-def]
    real_popen = subprocess.Popen
    asked: list[list[str]] = []
    # A stand-in cli.py that only sleeps: the process runs start()'s own command line, which
    # is what the PID check knows it by.
    (tmp_path / "cli.py").write_text("import time\ntime.sleep(60)\n")
    monkeypatch.setattr(background, "PROJECT_ROOT", tmp_path)

    def popen(command: list[str], **kwargs: object) -> subprocess.Popen:
        asked.append(command)
        return real_popen(command, **kwargs)  # type: ignore[call-overload]

    monkeypatch.setattr(background.subprocess, "Popen", popen)
    pid, fresh = background.start()
    assert fresh and asked[0][-2:] == ["local", "up"]
    assert background.start() == (pid, False)  # `./run.sh` again: the one running goes on
    assert len(asked) == 1
    assert background.stop(timeout_s=5) == [pid]
    assert background.running() == {}


def test_a_start_from_another_checkout_is_kept_and_stopped(
    monkeypatch: pytest.MonkeyPatch, engines, tmp_path
) -> None:  # type: ignore[no-untyped-def]
    # The engines folder is shared: `./run.sh` in a clone starts the whole set, then the Engines
    # page of an app run from another checkout retries one engine. Each knows the other's start
    # (CI's first-minute test: the page's start dropped the clone's from the record).
    for name in ("clone", "app"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "cli.py").write_text("import time\ntime.sleep(60)\n")
    monkeypatch.setattr(background, "PROJECT_ROOT", tmp_path / "clone")
    whole, _ = background.start()
    monkeypatch.setattr(background, "PROJECT_ROOT", tmp_path / "app")
    retry, fresh = background.start(["router-llamacpp"])
    assert fresh and set(background.running()) == {whole, retry}
    monkeypatch.setattr(background, "PROJECT_ROOT", tmp_path / "clone")
    assert set(background.running()) == {whole, retry}
    assert background.start() == (whole, False)
    assert sorted(background.stop(timeout_s=5)) == sorted([whole, retry])
    assert background.running() == {}


def test_status_reads_the_install_record(monkeypatch: pytest.MonkeyPatch, engines) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("SHOOTOUT_LOCAL_ENGINES", "vllm")
    recorder = progress.Recorder("vllm", lambda line: None)
    recorder.begin()
    recorder.phase("convert")
    going = launch.status("vllm-cpu")[0]
    assert going.status == "installing" and going.message.startswith("installing: convert, ")
    assert going.install is not None and going.install["phase"] == "convert"
    recorder.fail("pip install failed (exit 1)")
    failed = launch.status("vllm-cpu")[0]
    assert failed.status == "failed" and "install failed after" in failed.message
    # An install that went well, of a backend missing since (its folder removed): not installed.
    progress.Recorder("vllm", lambda line: None).finish()
    gone = launch.status("vllm-cpu")[0]
    assert gone.status == "not_installed" and gone.message.startswith("not installed yet")
