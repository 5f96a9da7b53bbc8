"""benchmarks/gpu_energy_check.py over the pynvml stand-in (the real check needs a GPU): it
compares the counter with integrated power samples, and says when there is no GPU."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]

SHIM = """
import sys, time
from tests.services.telemetry.fake_pynvml import FakeGpu, NVMLError_LibraryNotFound, make_fake_pynvml

class SteadyGpu(FakeGpu):
    # A board drawing a steady 250 W: its counter is 250 J per second of the clock.
    @property
    def energy_mj(self):
        return int(time.monotonic() * 250_000)

    @energy_mj.setter
    def energy_mj(self, value):
        pass

MODE = {mode!r}
if MODE == "no driver":
    module = make_fake_pynvml(init_error=NVMLError_LibraryNotFound)
elif MODE == "no counter":
    module = make_fake_pynvml([FakeGpu(power_mw=250_000, unsupported={{"energy"}})])
else:
    module = make_fake_pynvml([SteadyGpu(power_mw=250_000)])
sys.modules["pynvml"] = module
"""


def check(tmp_path: Path, mode: str) -> subprocess.CompletedProcess:
    (tmp_path / "pynvml.py").write_text(SHIM.format(mode=mode))
    env = {**os.environ, "PYTHONPATH": f"{tmp_path}{os.pathsep}{REPO_ROOT}"}
    return subprocess.run(
        [
            sys.executable,
            "benchmarks/gpu_energy_check.py",
            "--seconds",
            "0.5",
            "--interval",
            "0.02",
            "--json",
        ],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )


def test_counter_and_power_samples_agree_on_a_steady_board(tmp_path: Path) -> None:
    result = check(tmp_path, "steady")
    assert result.returncode == 0, result.stderr
    figures = json.loads(result.stdout.splitlines()[-1])
    (gpu,) = figures["gpus"]
    assert gpu["counter_j"] == pytest.approx(250 * figures["window_s"], rel=0.1)
    assert 0.9 < gpu["ratio_integrated_to_counter"] < 1.1
    assert "GPU 0 NVIDIA H100 80GB HBM3: counter" in result.stdout and "ratio" in result.stdout


def test_no_gpu_exits_non_zero_with_a_message(tmp_path: Path) -> None:
    result = check(tmp_path, "no driver")
    assert result.returncode == 2
    assert "no NVIDIA GPU here: NVML did not start (NVML Shared Library Not Found)" in result.stderr
    assert "Traceback" not in result.stderr


def test_a_board_without_the_counter_is_said(tmp_path: Path) -> None:
    result = check(tmp_path, "no counter")
    assert result.returncode == 1
    assert "counter not supported (Not Supported)" in result.stdout
    assert "only power samples can measure it" in result.stderr
