"""The Triton installer's smoke run says why a server died, and borrows only an environment whose
torch and transformers import (a fresh machine once had a vLLM environment that did not)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from services.core.errors import EngineError
from services.engines.triton import local


def test_a_server_that_dies_at_model_load_gives_its_reason(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(local, "venv_dir", lambda: tmp_path)
    script = (
        "print('E1203 failed to load smollm2: ModuleNotFoundError: LlamaConfig'); raise SystemExit(1)"
    )
    monkeypatch.setattr(
        local.TritonBackend, "command", lambda self, port, args: ([sys.executable, "-c", script], {})
    )
    with pytest.raises(EngineError, match="did not become ready: .*LlamaConfig"):
        local.smoke_run(print, timeout_s=30)


def test_stopping_a_process_that_already_exited_is_quiet() -> None:
    process = subprocess.Popen([sys.executable, "-c", "pass"], start_new_session=True)
    process.wait()
    local._stop(process)
    assert process.returncode == 0


def test_an_environment_whose_imports_fail_is_not_borrowed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    minor = f"python{sys.version_info.major}.{sys.version_info.minor}"
    for venv in local.SHARED_TORCH_FROM:
        site = tmp_path / f"{venv}-venv" / "lib" / minor / "site-packages"
        (site / "torch").mkdir(parents=True)
        (site / "transformers").mkdir()
    own = tmp_path / "triton-site"
    own.mkdir()
    monkeypatch.setattr(local, "engines_dir", lambda: tmp_path)
    monkeypatch.setattr(local, "site_packages", lambda: own)
    monkeypatch.setattr(
        local, "_model_imports_fail", lambda: "RuntimeError: operator torchvision::nms does not exist"
    )
    said: list[str] = []
    assert local._borrow_torch(said.append) is None
    assert not (own / "zz-shootout-shared-torch.pth").exists()
    assert all("torchvision::nms" in line for line in said) and len(said) == len(local.SHARED_TORCH_FROM)
