"""The local engines launcher on real llama.cpp: start, health, register, stop; and its
failures in plain words (port taken, engines not installed, unknown id)."""

from __future__ import annotations

import os
import socket

import pytest

from services import local_engines
from services.core.errors import EngineError, ValidationError
from services.engines import endpoints

pytestmark = pytest.mark.engines


def test_status_of_the_running_engines(all_local_engines_up) -> None:  # type: ignore[no-untyped-def]
    statuses = {s.id: s for s in local_engines.status()}
    assert set(statuses) == {s.id for s in local_engines.specs()}
    for status in statuses.values():
        assert status.status == "running", status.message
        assert status.pid and status.log_file


def test_engines_run_below_the_apps_priority_and_llamacpp_on_one_thread(all_local_engines_up) -> None:  # type: ignore[no-untyped-def]
    """Nice 10, so the client timestamping their tokens gets a core at once; one thread per
    llama-server, so two of them answering together do not stall each other on 2 cores."""
    import os
    from pathlib import Path

    for status in local_engines.status():
        assert os.getpriority(os.PRIO_PROCESS, status.pid) == local_engines.ENGINE_NICENESS, status.id
        if status.kind == "llamacpp":
            arguments = Path(f"/proc/{status.pid}/cmdline").read_bytes().split(b"\0")
            assert b"llama-server" in arguments[0]
            for flag in (b"-t", b"-tb"):
                assert arguments[arguments.index(flag) + 1] == b"1", status.id


def test_start_stop_cycle_on_other_ports(all_local_engines_up, db_url, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """A second llama.cpp (ports moved by SHOOTOUT_LOCAL_PORT_BASE) starts, registers,
    answers /health, and stops cleanly, without touching the shared engines."""
    shared_base = os.environ.get("SHOOTOUT_LOCAL_PORT_BASE")  # a checkout may run its engines elsewhere
    monkeypatch.setenv("SHOOTOUT_LOCAL_PORT_BASE", "18181")
    started = local_engines.start("llamacpp-1slot", wait=True, register=endpoints.register_local)
    try:
        assert started.status == "running" and started.port == 18183
        assert endpoints.get_engine("llamacpp-1slot").base_url == "http://127.0.0.1:18183"
    finally:
        stopped = local_engines.stop("llamacpp-1slot")
    assert stopped.status == "stopped"
    assert not local_engines.pid_alive(started.pid)
    if shared_base is None:
        monkeypatch.delenv("SHOOTOUT_LOCAL_PORT_BASE")
    else:
        monkeypatch.setenv("SHOOTOUT_LOCAL_PORT_BASE", shared_base)
    assert local_engines.status("llamacpp-1slot")[0].status == "running"  # the shared one is untouched


def test_port_taken_is_a_clear_error(all_local_engines_up, db_url, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    with socket.socket() as blocker:
        blocker.bind(("127.0.0.1", 0))
        blocker.listen()
        port = blocker.getsockname()[1]
        monkeypatch.setenv("SHOOTOUT_LOCAL_PORT_BASE", str(port - 2))  # llamacpp-1slot = base + 2
        with pytest.raises(EngineError, match=f"Port {port} is taken"):
            local_engines.start("llamacpp-1slot")


def test_missing_install_is_a_clear_error(db_url, tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("SHOOTOUT_ENGINES_DIR", str(tmp_path / "empty"))
    monkeypatch.setenv("SHOOTOUT_LOCAL_PORT_BASE", "18281")
    assert local_engines.status("vllm-cpu")[0].status == "not_installed"
    with pytest.raises(EngineError, match="not installed"):
        local_engines.start("llamacpp-4slot")
    with pytest.raises(EngineError, match="model is missing"):
        local_engines.start("vllm-cpu")


def test_unknown_engine_id() -> None:
    with pytest.raises(ValidationError, match="llamacpp-4slot"):
        local_engines.get_spec("rm -rf /")


def test_a_second_installer_waits_for_the_first(tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    import threading

    from services.local_engines import installer

    monkeypatch.setattr(installer, "engines_dir", lambda: tmp_path)
    said: list[str] = []
    inside: list[str] = []
    with installer._one_installer(said.append):

        def other_installer() -> None:
            with installer._one_installer(said.append):
                inside.append("second")

        second = threading.Thread(target=other_installer)
        second.start()
        second.join(timeout=1.0)
        assert second.is_alive() and inside == []
        assert said == ["waiting for another install of the local engines (in this folder) to finish"]
    second.join(timeout=5.0)
    assert inside == ["second"]


def test_down_stops_the_engines_together(tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """Each engine gets its SIGTERM at once and the waits overlap: two engines that each take
    1.5 s to go stop in about 1.5 s, not 3 (one after another, the six took about 10 s)."""
    import subprocess
    import time

    from services.local_engines.state import read_state, state_key, write_state

    monkeypatch.setenv("SHOOTOUT_ENGINES_DIR", str(tmp_path / "engines"))
    monkeypatch.setenv("SHOOTOUT_LOCAL_PORT_BASE", "18381")
    slow = 'trap "sleep 1.5; exit 0" TERM; while :; do sleep 0.1; done'
    ids = ["llamacpp-4slot", "llamacpp-1slot"]
    processes = [subprocess.Popen(["sh", "-c", slow], start_new_session=True) for _ in ids]
    time.sleep(0.3)  # the traps are set
    write_state(
        {
            state_key(local_engines.get_spec(engine_id)): {"pid": process.pid, "port": 0}
            for engine_id, process in zip(ids, processes, strict=True)
        }
    )
    started = time.monotonic()
    statuses = local_engines.down(ids)
    elapsed = time.monotonic() - started
    assert [process.poll() for process in processes] == [0, 0]  # each went on its SIGTERM
    assert 1.4 < elapsed < 2.9, elapsed  # one after another: 3 s and more
    assert not [s.id for s in statuses if s.status == "running"]
    assert all("pid" not in entry for entry in read_state().values())
