"""Which source measures each engine, and the energy of a window."""

from __future__ import annotations

from pathlib import Path

import pytest

from services.telemetry.energy.meter import EnergyMeter
from services.telemetry.energy.records import EnergyResult
from tests.services.telemetry.energy.test_rapl import RANGE_UJ, zone
from tests.services.telemetry.fake_pynvml import (
    FakeGpu,
    NVMLError_LibraryNotFound,
    make_fake_pynvml,
)
from tests.services.telemetry.support import MetricsServer, Route

LOCAL = {"a": "http://127.0.0.1:8081/v1"}


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_local_engine_on_gpus_is_measured_by_nvml(tmp_path: Path) -> None:
    gpus = [FakeGpu(energy_mj=1_000_000), FakeGpu(energy_mj=2_000_000)]
    clock = Clock()
    meter = EnergyMeter(LOCAL, nvml=make_fake_pynvml(gpus), rapl_root=tmp_path, clock=clock)
    window = meter.begin(["a"])
    gpus[0].energy_mj += 300_000
    gpus[1].energy_mj += 200_500
    clock.now += 2.5
    (result,) = meter.end(window).values()
    assert result.joules == pytest.approx(500.5)
    assert (result.method, result.source, result.duration_s) == ("energy counter", "NVML", 2.5)
    assert result.devices == ("GPU 0: NVIDIA H100 80GB HBM3", "GPU 1: NVIDIA H100 80GB HBM3")
    assert result.scope and "all 2 GPU(s) of this machine" in result.scope and "shared" in result.scope
    meter.close()


def test_engines_run_together_share_the_window() -> None:
    gpu = FakeGpu(energy_mj=0)
    meter = EnergyMeter({**LOCAL, "b": "http://localhost:8082"}, nvml=make_fake_pynvml([gpu]))
    window = meter.begin(["a", "b"])
    gpu.energy_mj = 90_000
    results = meter.end(window)
    assert results["a"].joules == results["b"].joules == 90.0
    assert results["a"].engines == results["b"].engines == ("a", "b")
    assert "shared by the engines that ran together (a, b)" in (results["a"].scope or "")


def test_a_cpu_served_local_engine_is_measured_by_rapl_wrap_included(tmp_path: Path) -> None:
    package = zone(tmp_path, "intel-rapl:0", "package-0", RANGE_UJ - 1_000_000)
    meter = EnergyMeter(
        LOCAL, nvml=make_fake_pynvml(init_error=NVMLError_LibraryNotFound), rapl_root=tmp_path
    )
    window = meter.begin(["a"])
    (package / "energy_uj").write_text("2000000\n")
    (result,) = meter.end(window).values()
    assert result.joules == pytest.approx(3.0)
    assert result.source == "RAPL (CPU package)" and "CPU package(s)" in (result.scope or "")


def test_nothing_readable_here_says_why_never_zero(tmp_path: Path) -> None:
    meter = EnergyMeter(
        LOCAL, nvml=make_fake_pynvml(init_error=NVMLError_LibraryNotFound), rapl_root=tmp_path / "none"
    )
    (result,) = meter.end(meter.begin(["a"])).values()
    assert result == EnergyResult(reason=result.reason) and result.joules is None
    assert result.reason and "libnvidia-ml.so" in result.reason and "no RAPL counters" in result.reason
    assert result.label.startswith("not measured here: no NVIDIA GPU here")


def test_a_remote_engine_needs_a_dcgm_exporter_on_its_host(tmp_path: Path) -> None:
    meter = EnergyMeter({"far": "http://gpu-node-07:8000"}, nvml=make_fake_pynvml([FakeGpu()]))
    (result,) = meter.end(meter.begin(["far"])).values()
    assert result.reason and result.reason.startswith("the engine runs on gpu-node-07, not here")


def test_a_dcgm_exporter_on_the_engines_host_measures_it(shared_dir: Path) -> None:
    text = (shared_dir / "fixtures/metrics/dcgm_exporter.txt").read_text()
    with MetricsServer() as server:
        server.routes["/metrics"] = Route(body=text)
        # NVML comes first for an engine here; without it, the exporter on this host.
        no_driver = make_fake_pynvml(init_error=NVMLError_LibraryNotFound)
        meter = EnergyMeter(LOCAL, dcgm_urls=[server.url], nvml=no_driver)
        same = meter.end(meter.begin(["a"]))["a"]
        window = meter.begin(["a"])
        server.routes["/metrics"] = Route(
            body=text.replace("418223119405", "418224119405").replace("402917006311", "402917506311")
        )
        (result,) = meter.end(window).values()
    assert result.joules == pytest.approx(1500.0)
    assert result.source == f"dcgm-exporter at {server.url}/metrics"
    # An exporter that has not refreshed inside the step (its collect interval) is not 0 J.
    assert same.joules is None and "did not move during the step" in (same.reason or "")
    assert "gpu-node-07 GPU 1: NVIDIA H100 80GB HBM3" in result.devices


def test_a_reset_counter_is_a_reason() -> None:
    gpu = FakeGpu(energy_mj=5_000_000)
    meter = EnergyMeter(LOCAL, nvml=make_fake_pynvml([gpu]))
    window = meter.begin(["a"])
    gpu.energy_mj = 10
    (result,) = meter.end(window).values()
    assert result.joules is None and "went backwards" in (result.reason or "")


def test_the_stored_form_round_trips() -> None:
    measured = EnergyResult(
        joules=12.5,
        method="power samples",
        source="NVML",
        devices=("GPU 0: X",),
        scope="all 1 GPU(s)",
        duration_s=3.0,
        engines=("a",),
        j_per_output_token=0.125,
        output_tokens_per_j=8.0,
    )
    assert EnergyResult.from_json(measured.to_json()) == measured
    missing = EnergyResult(reason="no RAPL counters")
    assert EnergyResult.from_json(missing.to_json()) == missing
    assert EnergyResult.from_json(None) is None
    assert EnergyResult.from_json({"measured": True, "joules": "x"}).reason == "no energy counter"


def test_the_gpus_running_the_engines_processes_are_the_ones_counted() -> None:
    from services.telemetry.energy.nvml import NvmlEnergySource
    from tests.services.telemetry.fake_pynvml import FakeProcess

    # vLLM's API server (pid 100) names the port; its spawned EngineCore (300) holds the GPUs.
    cmdlines = {
        100: "python -m vllm.entrypoints.openai.api_server --port 8081",
        300: "VLLM::EngineCore",
        200: "python train.py",
        201: "python other.py",
    }
    parents = {300: 100, 100: 1, 200: 1, 201: 1}
    gpus = [
        FakeGpu(energy_mj=0, processes=[FakeProcess(300, 2**30)]),
        FakeGpu(energy_mj=0, processes=[FakeProcess(200, 2**30)]),
        FakeGpu(energy_mj=0, processes=[FakeProcess(300, 2**30), FakeProcess(201, 2**30)]),
    ]
    source = NvmlEnergySource(make_fake_pynvml(gpus), cmdline=cmdlines.get, parent=parents.get)
    meter = EnergyMeter({**LOCAL, "other": "http://127.0.0.1:9999"}, sources={"nvml": source})
    window = meter.begin(["a", "other"])
    for gpu in gpus:
        gpu.energy_mj = 10_000
    results = meter.end(window)
    engine = results["a"]
    assert engine.joules == 20.0  # GPUs 0 and 2, not GPU 1's trainer
    assert engine.devices == ("GPU 0: NVIDIA H100 80GB HBM3", "GPU 2: NVIDIA H100 80GB HBM3")
    assert engine.scope and engine.scope.startswith("the 2 GPU(s) running the engine's processes")
    assert "shared with 1 other process(es)" in engine.scope
    # An engine tied to no GPU process counts them all, and shares the window with "a".
    assert results["other"].joules == 30.0 and "shared GPUs" in (results["other"].scope or "")
    assert results["a"].engines == ("a", "other")
