"""The installer runs a compile-bound install beside the download-bound ones, and a failure in
either still fails the install with its reason."""

from __future__ import annotations

import threading

import pytest

from services.core.errors import EngineError
from services.local_engines import installer
from services.local_engines.backend import LocalBackend


class Fake(LocalBackend):
    served_model = "m"

    def __init__(self, name: str, alongside: bool, work) -> None:  # type: ignore[no-untyped-def]
        self.name = name  # type: ignore[misc]
        self.install_alongside = alongside  # type: ignore[misc]
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
    llama = Fake("llamacpp", True, compile_)
    vllm = Fake("vllm", False, download)
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
        "llamacpp": Fake("llamacpp", True, broken),
        "vllm": Fake("vllm", False, lambda log: None),
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
    llama = Fake("llamacpp", True, lambda log: where.append(threading.current_thread().name))
    installer._install_each([llama], failures := [], lambda line: None)
    assert where == [threading.main_thread().name] and failures == []
    assert quiet_model == []


def test_an_unforeseen_error_in_one_install_never_stops_the_next(quiet_model, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    def broken(log) -> None:  # type: ignore[no-untyped-def]
        raise RuntimeError("a bug of ours")

    backends = {"vllm": Fake("vllm", False, broken), "router": Fake("router", False, lambda log: None)}
    monkeypatch.setattr(installer, "get_backend", backends.__getitem__)
    with pytest.raises(EngineError, match="vllm: RuntimeError: a bug of ours"):
        installer.install(["vllm", "router"], lambda line: None)
    assert backends["router"].done
