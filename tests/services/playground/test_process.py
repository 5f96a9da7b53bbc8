"""A Playground exchange sent as the page sends it (`isolated=True`): the warm worker process
streams the stored exchange (the Streamlit server never timestamps a token, and no process
starts per send), writes the answers as they arrive, each engine's end at once, and stops on
the Stop button within 200 ms."""

from __future__ import annotations

import time

import pytest

from db.models import Run
from db.session import session_scope
from services import playground
from services.core.processes import pid_alive
from services.engines import endpoints
from services.playground import EngineChoice, SendRequest
from tests.support.scripted_server import WORDS, ScriptedServer


def register(server: ScriptedServer, name: str, **scenario: object) -> str:
    endpoints.add_engine(name, server.base_url, model=server.model(**scenario))
    return name


def worker_pid(run_id: int) -> int | None:
    with session_scope() as session:
        run = session.get(Run, run_id)
        assert run is not None
        return run.worker_pid


def test_a_worker_process_streams_the_exchange_and_stores_its_figures(
    db_url: str, scripted_server: ScriptedServer
) -> None:
    fast = register(scripted_server, "fast", ttft=20, itl=2, tokens=8)
    slow = register(scripted_server, "slow", ttft=150, itl=10, tokens=8, salt=3)
    handle = playground.send(
        SendRequest(engines=(EngineChoice(fast), EngineChoice(slow)), prompt="Hello"), isolated=True
    )
    pid = worker_pid(handle.run_id)
    assert pid is not None and not playground.running_here(handle.run_id)
    assert playground.wait(handle.run_id, 60)
    view = playground.get_exchange(handle.run_id)
    assert view.status == "finished" and not view.active
    by_name = {c.engine: c for c in view.columns}
    assert by_name["fast"].answer == "".join(WORDS[:8])
    for column in view.columns:
        assert column.status == "finished" and column.completion_tokens == 8
        assert column.ttft_s is not None and column.itl_mean_s is not None
    # The figures are the worker's own clock: the slow engine's 150 ms first token shows as such.
    assert by_name["slow"].ttft_s > 0.14 > by_name["fast"].ttft_s  # type: ignore[operator]
    # The warm worker lives on, and the ended exchange names it no more; the next send reuses it.
    assert worker_pid(handle.run_id) is None and pid_alive(pid)
    again = playground.send(
        SendRequest(engines=(EngineChoice(fast), EngineChoice(slow)), prompt="Again"), isolated=True
    )
    assert worker_pid(again.run_id) == pid
    assert playground.wait(again.run_id, 60)


def test_each_column_finishes_when_its_own_engine_does(
    db_url: str, scripted_server: ScriptedServer
) -> None:
    fast = register(scripted_server, "quick", ttft=10, itl=1, tokens=4)
    slow = register(scripted_server, "slowpoke", ttft=10, itl=50, tokens=60, salt=2)
    handle = playground.send(
        SendRequest(engines=(EngineChoice(fast), EngineChoice(slow)), prompt="Hi"), isolated=True
    )
    deadline = time.monotonic() + 30
    seen: dict[str, str] = {}
    while time.monotonic() < deadline:
        seen = {c.engine: c.status for c in playground.get_exchange(handle.run_id).columns}
        if seen["quick"] == "finished":
            break
        time.sleep(0.02)
    assert seen == {"quick": "finished", "slowpoke": "streaming"}
    playground.stop(handle.run_id)
    assert playground.wait(handle.run_id, 15)


def test_stop_reaches_the_worker_process_and_keeps_what_arrived(
    db_url: str, scripted_server: ScriptedServer
) -> None:
    a = register(scripted_server, "a", ttft=10, itl=20, tokens=400)
    b = register(scripted_server, "b", ttft=10, itl=20, tokens=400, salt=1)
    handle = playground.send(
        SendRequest(engines=(EngineChoice(a), EngineChoice(b)), prompt="long"), isolated=True
    )
    deadline = time.monotonic() + 30
    view = playground.get_exchange(handle.run_id)
    while time.monotonic() < deadline and not all(c.answer for c in view.columns):
        time.sleep(0.1)
        view = playground.get_exchange(handle.run_id)
    assert view.active and all(c.answer for c in view.columns)
    clicked = time.monotonic()
    playground.stop(handle.run_id)
    assert playground.wait(handle.run_id, 15)
    assert time.monotonic() - clicked < 0.2  # every stream ended, the exchange stored as stopped
    stopped = playground.get_exchange(handle.run_id)
    assert stopped.status == "cancelled"
    before = {c.engine: c.answer for c in view.columns}
    for column in stopped.columns:
        assert column.status == "cancelled" and len(column.answer) >= len(before[column.engine])
        assert len(column.answer) < len("".join(WORDS)) * 400  # cut, not the whole answer


def test_the_worker_sends_the_request_as_built_even_if_its_engine_changed_since(
    db_url: str, scripted_server: ScriptedServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The request is built once, at the send, and stored: the worker process sends that, not
    one built again from the registry (which may have changed or lost the engine since)."""
    from services.playground import worker
    from services.runstate import worker as run_worker

    gone = register(scripted_server, "gone", tokens=4)
    moved = register(scripted_server, "moved", tokens=4)
    monkeypatch.setattr(worker, "start", lambda run_id, streams: None)  # stored, not started
    handle = playground.send(SendRequest(engines=(EngineChoice(gone), EngineChoice(moved)), prompt="x"))
    endpoints.remove_engine(gone)
    endpoints.remove_engine(moved)
    endpoints.add_engine(moved, "http://127.0.0.1:9/v1", model="elsewhere")
    assert run_worker.main(["playground", str(handle.run_id)]) == 0
    view = playground.get_exchange(handle.run_id)
    assert view.status == "finished" and not view.active
    assert [column.answer for column in view.columns] == [view.columns[0].answer] * 2
    assert view.columns[0].answer
