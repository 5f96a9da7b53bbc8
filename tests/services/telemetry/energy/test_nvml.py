"""NVML energy over the pynvml stand-in: the energy counter, and power samples where a board
has no counter."""

from __future__ import annotations

import time

import pytest

from services.telemetry.energy.maths import joules_between
from services.telemetry.energy.nvml import NvmlEnergySource
from services.telemetry.energy.records import COUNTER, POWER_SAMPLES, EnergyUnavailable
from tests.services.telemetry.fake_pynvml import (
    FakeGpu,
    NVMLError_DriverNotLoaded,
    NVMLError_LibraryNotFound,
    make_fake_pynvml,
)


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_the_energy_counter_in_millijoules_reads_as_joules() -> None:
    gpus = [FakeGpu(energy_mj=418_223_119_405), FakeGpu(name="NVIDIA L4", energy_mj=5_000)]
    source = NvmlEnergySource(make_fake_pynvml(gpus))
    start = source.read()
    assert [(r.device, r.joules, r.method) for r in start] == [
        ("GPU 0: NVIDIA H100 80GB HBM3", 418_223_119.405, COUNTER),
        ("GPU 1: NVIDIA L4", 5.0, COUNTER),
    ]
    gpus[0].energy_mj += 1_234_567
    end = source.read()
    assert joules_between(start[0].joules, end[0].joules) == pytest.approx(1234.567)
    source.close()


def test_a_board_without_the_counter_is_measured_from_power_samples() -> None:
    gpu = FakeGpu(power_mw=300_000, unsupported={"energy"})
    nvml = make_fake_pynvml([gpu])
    clock = Clock()
    # An interval longer than the test: only the reads sample, at the clock's times.
    source = NvmlEnergySource(nvml, clock=clock, interval_s=3600)
    (start,) = source.read()
    assert (start.method, start.joules) == (POWER_SAMPLES, 0.0)
    clock.now, gpu.power_mw = 10.0, 500_000
    (end,) = source.read()
    assert end.joules == pytest.approx((300 + 500) / 2 * 10)
    source.close()
    assert nvml.calls["nvmlShutdown"] == 1


def test_power_is_sampled_in_the_background_between_reads() -> None:
    nvml = make_fake_pynvml([FakeGpu(unsupported={"energy"})])
    source = NvmlEnergySource(nvml, interval_s=0.01)
    source.open()
    before = nvml.calls["nvmlDeviceGetPowerUsage"]
    time.sleep(0.2)
    assert nvml.calls["nvmlDeviceGetPowerUsage"] >= before + 3
    source.close()
    stopped = nvml.calls["nvmlDeviceGetPowerUsage"]
    time.sleep(0.05)
    assert nvml.calls["nvmlDeviceGetPowerUsage"] == stopped


def test_a_board_with_neither_counter_nor_power_is_named() -> None:
    nvml = make_fake_pynvml([FakeGpu(), FakeGpu(name="Old", unsupported={"energy", "power"})])
    with pytest.raises(EnergyUnavailable, match="GPU 1: Old reports neither"):
        NvmlEnergySource(nvml).open()
    assert nvml.calls["nvmlShutdown"] == 1


@pytest.mark.parametrize(
    ("error", "reason"),
    [
        (NVMLError_LibraryNotFound, "libnvidia-ml.so"),
        (NVMLError_DriverNotLoaded, "driver is not loaded"),
    ],
)
def test_no_driver_is_the_no_gpu_reason(error: type, reason: str) -> None:
    with pytest.raises(EnergyUnavailable, match=f"no NVIDIA GPU here: .*{reason}"):
        NvmlEnergySource(make_fake_pynvml(init_error=error)).open()


def test_no_gpu_is_the_no_gpu_reason() -> None:
    with pytest.raises(EnergyUnavailable, match="sees no GPU"):
        NvmlEnergySource(make_fake_pynvml([])).open()


def test_a_gpu_lost_mid_run_is_a_reason() -> None:
    gpu = FakeGpu(energy_mj=1000)
    source = NvmlEnergySource(make_fake_pynvml([gpu]))
    source.read()
    gpu.lost = True
    with pytest.raises(EnergyUnavailable, match="GPU 0: .*lost"):
        source.read()
