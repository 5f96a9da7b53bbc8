"""The installer runs every missing install at once (the compile beside the downloads, one that
needs another's work waiting for it there), and a failure in any still fails the install with
its reason while the others go on."""

from __future__ import annotations

import os
import sys
import threading
import time
from pathlib import Path

import pytest

from services.core.errors import EngineError
from services.local_engines import installer
from services.local_engines.backend import LocalBackend


class Fake(LocalBackend):
    served_model = "m"

    def __init__(self, name: str, work) -> None:  # type: ignore[no-untyped-def]
        self.name = name  # type: ignore[misc]
        self._work = work
        self.done = False

    def installed(self) -> bool:
        return self.done

    def install(self, log) -> None:  # type: ignore[no-untyped-def]
        self._work(log)
        self.done = True


@pytest.fixture
def quiet_model(monkeypatch, tmp_path):  # type: ignore[no-untyped-def]
    fetched: list[str] = []
    monkeypatch.setattr(installer, "ensure_gguf", lambda log: fetched.append("gguf"))
    monkeypatch.setenv("SHOOTOUT_ENGINES_DIR", str(tmp_path))
    return fetched


def test_the_compile_runs_while_the_others_install(quiet_model, tmp_path) -> None:  # type: ignore[no-untyped-def]
    others_started = threading.Event()
    compile_seen_others = threading.Event()

    def compile_(log) -> None:  # type: ignore[no-untyped-def]
        # Only true if the other install started while this one was still going.
        if others_started.wait(10):
            compile_seen_others.set()
        log("compiled")

    def download(log) -> None:  # type: ignore[no-untyped-def]
        others_started.set()
        assert compile_seen_others.wait(10)

    said: list[str] = []
    llama = Fake("llamacpp", compile_)
    vllm = Fake("vllm", download)
    installer._install_each([llama, vllm], failures := [], said.append)
    assert failures == []
    assert llama.done and vllm.done
    assert quiet_model == ["gguf"]  # fetched once, before the threads
    # Each backend's own lines go to its log file; the terminal gets its phases and its end.
    assert "compiled" in (tmp_path / "run" / "install-llamacpp.log").read_text()
    assert not any("compiled" in line for line in said)
    assert any(line.startswith("vllm: installed in") for line in said)


def test_an_unforeseen_error_in_the_thread_fails_the_install(quiet_model, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    def broken(log) -> None:  # type: ignore[no-untyped-def]
        raise RuntimeError("cmake vanished")

    backends = {
        "llamacpp": Fake("llamacpp", broken),
        "vllm": Fake("vllm", lambda log: None),
    }
    monkeypatch.setattr(installer, "get_backend", backends.__getitem__)
    said: list[str] = []
    with pytest.raises(EngineError, match="llamacpp: RuntimeError: cmake vanished"):
        installer.install(["llamacpp", "vllm"], said.append)
    assert backends["vllm"].done
    assert any(
        line.startswith("llamacpp: NOT installed after") and "RuntimeError: cmake vanished" in line
        for line in said
    )


def test_one_backend_alone_installs_in_this_thread(quiet_model) -> None:  # type: ignore[no-untyped-def]
    where: list[str] = []
    llama = Fake("llamacpp", lambda log: where.append(threading.current_thread().name))
    installer._install_each([llama], failures := [], lambda line: None)
    assert where == [threading.main_thread().name] and failures == []
    assert quiet_model == []


def test_an_unforeseen_error_in_one_install_never_stops_the_next(quiet_model, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    def broken(log) -> None:  # type: ignore[no-untyped-def]
        raise RuntimeError("a bug of ours")

    backends = {"vllm": Fake("vllm", broken), "router": Fake("router", lambda log: None)}
    monkeypatch.setattr(installer, "get_backend", backends.__getitem__)
    with pytest.raises(EngineError, match="vllm: RuntimeError: a bug of ours"):
        installer.install(["vllm", "router"], lambda line: None)
    assert backends["router"].done


def test_downloads_run_together_and_a_dependent_waits_only_where_it_needs_to(quiet_model) -> None:  # type: ignore[no-untyped-def]
    """vLLM, SGLang and Triton install at the same time; Triton's own download overlaps vLLM's,
    and it waits for vLLM's end only where it borrows vLLM's torch."""
    running: set[str] = set()
    together: list[set[str]] = []
    lock = threading.Lock()
    all_in = threading.Barrier(3, timeout=10)
    vllm_ended = threading.Event()
    order: list[str] = []

    def work(name: str):  # type: ignore[no-untyped-def]
        def install(log) -> None:  # type: ignore[no-untyped-def]
            with lock:
                running.add(name)
                together.append(set(running))
            all_in.wait()  # each one's download: all three at once, or this times out
            if name == "triton":
                installer.wait_for_install("vllm", log)
                order.append(f"triton borrows torch, vllm ended: {vllm_ended.is_set()}")
            if name == "vllm":
                time.sleep(0.2)
                vllm_ended.set()
            with lock:
                running.discard(name)

        return install

    backends = [Fake(name, work(name)) for name in ("vllm", "sglang", "triton")]
    said: list[str] = []
    installer._install_each(backends, failures := [], said.append)
    assert failures == [] and all(b.done for b in backends)
    assert max(len(group) for group in together) == 3
    assert order == ["triton borrows torch, vllm ended: True"]
    assert "installing vllm, sglang, triton at the same time" in said
    assert installer._ENDED == {}  # nothing left for a later install to wait on


def test_waiting_for_an_install_that_is_not_running_returns_at_once() -> None:
    said: list[str] = []
    installer.wait_for_install("vllm", said.append)
    assert said == []


def test_two_installs_convert_the_model_once(monkeypatch, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """vLLM and SGLang, installing at once, both ask for the converted model: one converts it
    while the other waits, then finds it done."""
    monkeypatch.setenv("SHOOTOUT_ENGINES_DIR", str(tmp_path))
    conversions: list[str] = []

    def convert(command, log, env=None) -> None:  # type: ignore[no-untyped-def]
        time.sleep(0.2)
        conversions.append(command[0])
        (Path(command[-1]) / ".complete").parent.mkdir(parents=True, exist_ok=True)
        (Path(command[-1]) / ".complete").write_text("")

    monkeypatch.setattr(installer, "ensure_gguf", lambda log: tmp_path / "model.gguf")
    monkeypatch.setattr(installer, "pip_install", lambda venv, args, log: None)
    monkeypatch.setattr(installer, "stream", convert)
    threads = [
        threading.Thread(target=installer.ensure_hf_model, args=(venv, lambda line: None))
        for venv in ("vllm", "sglang")
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(conversions) == 1


def test_the_first_pair_installs_with_the_cores_and_the_others_niced_behind(
    quiet_model, tmp_path
) -> None:  # type: ignore[no-untyped-def]
    """Issue 58: llama.cpp's compile (two engines) at full priority, the others niced behind it
    in their priority's order; what each install runs inherits its niceness."""

    def report_niceness(name: str):  # type: ignore[no-untyped-def]
        def work(log) -> None:  # type: ignore[no-untyped-def]
            installer.stream([sys.executable, "-c", "import os; print('niceness', os.nice(0))"], log)

        return work

    first = Fake("llamacpp", report_niceness("llamacpp"))
    first.install_priority = 0  # type: ignore[misc]
    middle = Fake("vllm", report_niceness("vllm"))
    last = Fake("sglang", report_niceness("sglang"))
    last.install_priority = 2  # type: ignore[misc]
    said: list[str] = []
    installer._install_each([first, middle, last], failures := [], said.append)
    assert failures == []
    base = os.nice(0)

    def seen(name: str) -> int:
        log = (tmp_path / "run" / f"install-{name}.log").read_text()
        return int(log.split("niceness ")[1].split()[0]) - base

    # `nice -n N` adds to the niceness this test runs at, up to 19.
    assert (seen("llamacpp"), seen("vllm"), seen("sglang")) == (
        0,
        min(19, base + 10) - base,
        min(19, base + 19) - base,
    )
    assert any(
        "llamacpp first, with the cores; behind it: vllm (nice 10), sglang (nice 19)" in line
        for line in said
    )


def test_without_the_first_pair_the_next_ones_take_the_cores() -> None:
    vllm, sglang = Fake("vllm", None), Fake("sglang", None)
    sglang.install_priority = 2  # type: ignore[misc]
    assert installer.install_niceness(vllm, [vllm, sglang]) == 0
    assert installer.install_niceness(sglang, [vllm, sglang]) == 10
    assert installer.install_niceness(sglang, [sglang]) == 0
