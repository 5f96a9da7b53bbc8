"""The Playground's waiting room (issue 58): which engines answer, which local ones are coming
with their phase and estimate, and a first pick made of engines that answer only."""

from __future__ import annotations

import time

import pytest

from services import local_engines
from services.engines.endpoints import EngineRecord
from services.local_engines.catalog import LocalEngineStatus
from services.playground import arrivals, view


def engine(name: str, kind: str, local: bool = True) -> EngineRecord:
    return EngineRecord(
        id=hash(name) % 1000,
        name=name,
        base_url=f"http://127.0.0.1/{name}",
        kind=kind,
        model="m",
        api_key_env=None,
        metrics_url=None,
        local_id=name if local else None,
    )


def status(engine_id: str, kind: str, state: str, message: str = "") -> LocalEngineStatus:
    return LocalEngineStatus(
        id=engine_id,
        label=f"{kind} label",
        kind=kind,
        port=1,
        url="http://127.0.0.1:1",
        status=state,  # type: ignore[arg-type]
        pid=None,
        log_file=None,
        message=message,
        installed=state != "installing",
    )


@pytest.fixture
def first_minutes(monkeypatch: pytest.MonkeyPatch, tmp_path) -> list[EngineRecord]:  # type: ignore[no-untyped-def]
    """llama.cpp's two answer, vLLM compiles its model, SGLang installs, Triton failed."""
    monkeypatch.setenv("SHOOTOUT_ENGINES_DIR", str(tmp_path))
    found = [
        status("llamacpp-4slot", "llamacpp", "running", "healthy"),
        status("vllm-cpu", "vllm", "starting", "process 1 is up, /health: refused"),
        status("llamacpp-1slot", "llamacpp", "running", "healthy"),
        status(
            "sglang-cpu", "sglang", "installing", "installing: download, 1 min 05 s of about 4 min 00 s"
        ),
        status("triton-python", "triton", "failed", "install failed after 40 s: no torch"),
        status("router-llamacpp", "router", "stopped", "stopped"),
    ]
    monkeypatch.setattr(local_engines, "status", lambda: found)
    monkeypatch.setattr(
        arrivals,
        "read_state",
        lambda: {"vllm-cpu": {"started": time.time() - 70}},
    )
    monkeypatch.setattr(arrivals, "state_key", lambda spec: spec.id)
    registered = [
        engine("llamacpp-4slot", "llamacpp"),
        engine("vllm-cpu", "vllm"),
        engine("llamacpp-1slot", "llamacpp"),
    ]
    monkeypatch.setattr(view, "list_engines", lambda: registered)
    return registered


def test_local_engines_answer_when_healthy_and_the_others_come_with_phase_and_estimate(
    first_minutes: list[EngineRecord],
) -> None:
    room = arrivals.waiting_room(first_minutes)
    # Registered and running is not enough: vLLM's process is up, its model still compiling.
    assert room.ready == ("llamacpp-4slot", "llamacpp-1slot")
    assert not room.waiting
    coming = {a.engine_id: a for a in room.coming}
    assert set(coming) == {"vllm-cpu", "sglang-cpu"}
    assert coming["sglang-cpu"].detail == "installing: download, 1 min 05 s of about 4 min 00 s"
    assert coming["vllm-cpu"].state == "starting"
    assert coming["vllm-cpu"].detail.startswith("starting for 1 min 1")
    assert coming["vllm-cpu"].detail.endswith("it usually takes about 2 min 30 s here")
    assert [(a.engine_id, a.detail) for a in room.failed] == [
        ("triton-python", "install failed after 40 s: no torch")
    ]


def test_one_answering_engine_waits_and_a_remote_one_answers_at_its_word(
    first_minutes: list[EngineRecord],
) -> None:
    room = arrivals.waiting_room(first_minutes[:2])
    assert room.ready == ("llamacpp-4slot",) and room.waiting
    remote = engine("team-vllm", "vllm", local=False)
    assert arrivals.waiting_room([*first_minutes[:2], remote]).ready == ("llamacpp-4slot", "team-vllm")


def test_the_first_pick_leaves_out_an_engine_that_does_not_answer_yet(
    first_minutes: list[EngineRecord],
) -> None:
    room = arrivals.waiting_room(first_minutes)
    # The usual pick starts with vLLM; while it compiles, the pick is the two that answer.
    assert view.default_engines(room) == ["llamacpp-4slot", "llamacpp-1slot"]
    assert "vllm-cpu" in view.default_engines()  # without the room: any registered engine
