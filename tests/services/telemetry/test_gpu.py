"""GPU samplers against a fake `pynvml` and the dcgm-exporter fixture."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from services.engines.signals import GPU_SIGNAL_NAMES
from services.telemetry import gpu as gpu_module
from services.telemetry.gpu import DcgmSampler, NvmlSampler, dcgm_snapshots, engine_for_process
from services.telemetry.scraper import ScrapeTarget
from tests.services.telemetry.fake_pynvml import (
    FakeGpu,
    FakeProcess,
    NVMLError_DriverNotLoaded,
    NVMLError_LibraryNotFound,
    make_fake_pynvml,
)
from tests.services.telemetry.support import MetricsServer, Route
from tests.support.metrics_text import parse_text

GIB = 2**30


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def install(monkeypatch: pytest.MonkeyPatch, **options) -> object:  # type: ignore[no-untyped-def]
    fake = make_fake_pynvml(**options)
    monkeypatch.setitem(sys.modules, "pynvml", fake)
    return fake


@pytest.mark.parametrize(
    ("error", "words"),
    [
        (NVMLError_LibraryNotFound, "libnvidia-ml.so"),
        (NVMLError_DriverNotLoaded, "driver is not loaded"),
    ],
)
def test_no_driver_is_a_state_not_an_error(monkeypatch: pytest.MonkeyPatch, error, words) -> None:  # type: ignore[no-untyped-def]
    install(monkeypatch, init_error=error)
    sampler = NvmlSampler()
    state = sampler.state()
    assert not state.available
    assert state.message.startswith("no NVIDIA GPU here") and words in state.message
    assert sampler.sample() == []


def test_no_library_installed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pynvml", None)  # import pynvml -> ImportError
    state = NvmlSampler().state()
    assert not state.available and "not installed" in state.message


def test_no_gpu_listed(monkeypatch: pytest.MonkeyPatch) -> None:
    install(monkeypatch, gpus=[])
    state = NvmlSampler().state()
    assert not state.available and state.message == "no NVIDIA GPU here: the NVIDIA driver sees no GPU."


def test_this_machine_without_gpu_says_so() -> None:
    # The real nvidia-ml-py on a machine with no NVIDIA driver (this CI machine).
    state = NvmlSampler().state()
    if state.available:  # pragma: no cover - on a GPU machine
        assert state.gpus
    else:
        assert state.message.startswith("no NVIDIA GPU here")


def test_full_sample(monkeypatch: pytest.MonkeyPatch) -> None:
    install(monkeypatch, gpus=[FakeGpu(name="NVIDIA A100", used=20 * GIB), FakeGpu(used=30 * GIB)])
    clock = Clock()
    sampler = NvmlSampler(clock=clock)
    state = sampler.state()
    assert state.available and [g.source for g in state.gpus] == ["gpu:0", "gpu:1"]
    assert state.gpus[0].name == "NVIDIA A100" and state.driver_version == "570.172.08"
    first = sampler.sample()
    assert [s.source for s in first] == ["gpu:0", "gpu:1"]
    values = first[0].values
    assert values["gpu_memory_used_bytes"] == 20 * GIB
    assert values["gpu_memory_total_bytes"] == 80 * GIB
    assert values["gpu_memory_reserved_bytes"] == 512 * 2**20
    assert values["gpu_utilization_pct"] == 50 and values["gpu_memory_activity_pct"] == 20
    assert values["gpu_power_w"] == 300.0 and values["gpu_temperature_c"] == 60
    assert values["gpu_sm_clock_mhz"] == 1980 and values["gpu_memory_clock_mhz"] == 2619
    assert values["gpu_pcie_tx_bytes_per_s"] is None  # a rate needs two readings
    assert first[0].missing == {} and first[0].label == "NVIDIA A100"
    assert [s.source for s in sampler.sample(indices=[1])] == ["gpu:1"]


def test_pcie_rate_from_cumulative_counters(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = install(monkeypatch)
    clock = Clock()
    sampler = NvmlSampler(clock=clock)
    sampler.sample()
    fake.gpus[0].pcie_tx_bytes += 5_000_000  # type: ignore[attr-defined]
    fake.gpus[0].pcie_rx_bytes += 1_000_000  # type: ignore[attr-defined]
    clock.now += 0.5
    values = sampler.sample()[0].values
    assert values["gpu_pcie_tx_bytes_per_s"] == pytest.approx(10_000_000)
    assert values["gpu_pcie_rx_bytes_per_s"] == pytest.approx(2_000_000)
    assert fake.calls.get("nvmlDeviceGetPcieThroughput", 0) == 0  # type: ignore[attr-defined]


def test_pcie_falls_back_to_the_blocking_call_seldom(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = install(monkeypatch, pcie_counters=False)
    clock = Clock()
    sampler = NvmlSampler(clock=clock)
    for _ in range(4):
        values = sampler.sample()[0].values
        clock.now += 1.0
    assert values["gpu_pcie_tx_bytes_per_s"] == 1000 * 1024
    assert fake.calls["nvmlDeviceGetPcieThroughput"] == 2  # type: ignore[attr-defined]  # once, TX and RX
    assert fake.calls["nvmlDeviceGetFieldValues"] == 1  # type: ignore[attr-defined]  # unsupported: not asked again


def test_an_unsupported_field_is_skipped_alone_and_not_asked_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    fake = install(monkeypatch, gpus=[FakeGpu(unsupported={"power", "clocks"})])
    sampler = NvmlSampler()
    for _ in range(3):
        snapshot = sampler.sample()[0]
    assert "gpu_power_w" not in snapshot.values and "gpu_sm_clock_mhz" not in snapshot.values
    assert snapshot.missing["gpu_power_w"] == "not reported by NVIDIA H100 80GB HBM3"
    assert snapshot.values["gpu_memory_used_bytes"] == 10 * GIB
    assert fake.calls["nvmlDeviceGetPowerUsage"] == 1  # type: ignore[attr-defined]
    assert snapshot.reading("gpu_power_w").reason == "not reported by NVIDIA H100 80GB HBM3"


def test_memory_info_v1_fallback(monkeypatch: pytest.MonkeyPatch) -> None:
    install(monkeypatch, memory_v2=False)
    sampler = NvmlSampler()
    values = sampler.sample()[0].values
    assert values["gpu_memory_used_bytes"] == 10 * GIB + 512 * 2**20  # v1 counts reserved as used
    assert "gpu_memory_reserved_bytes" not in values
    values = sampler.sample()[0].values
    assert values["gpu_memory_total_bytes"] == 80 * GIB


def test_lost_gpu_gives_an_error_snapshot(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = install(monkeypatch, gpus=[FakeGpu(), FakeGpu()])
    sampler = NvmlSampler()
    sampler.sample()
    fake.gpus[1].lost = True  # type: ignore[attr-defined]
    ok, lost = sampler.sample()
    assert ok.error is None and lost.error and "no field" in lost.error
    assert lost.reading("gpu_memory_used_bytes").value is None


def test_processes_and_which_engine_holds_them(monkeypatch: pytest.MonkeyPatch) -> None:
    gpu = FakeGpu(
        processes=[FakeProcess(4242, 6 * GIB), FakeProcess(4343, None), FakeProcess(4444, (1 << 64) - 1)]
    )
    install(monkeypatch, gpus=[gpu])
    cmdlines = {
        4242: "/venv/bin/python -m vllm.entrypoints.openai.api_server --port 8082",
        4343: "",
        4444: "",
    }
    monkeypatch.setattr(gpu_module, "process_cmdline", lambda pid: cmdlines.get(pid, ""))
    engines = [
        ScrapeTarget(
            "vllm-cpu", "vllm", "http://127.0.0.1:8082/metrics", base_url="http://127.0.0.1:8082"
        )
    ]
    processes = NvmlSampler().sample(engines=engines)[0].processes
    assert processes[0] == {"pid": 4242, "used_bytes": 6 * GIB, "name": "python", "engine": "vllm-cpu"}
    assert {p["pid"]: p["used_bytes"] for p in processes} == {4242: 6 * GIB, 4343: None, 4444: None}
    assert processes[1]["name"] == "proc4343"  # no /proc entry: NVML's process name


def test_engine_for_process_matches_ports_only() -> None:
    engines = [ScrapeTarget("a", "llamacpp", None, base_url="http://127.0.0.1:8081")]
    assert engine_for_process("llama-server -m m.gguf --host 127.0.0.1 --port 8081", engines) == "a"
    assert engine_for_process("llama-server --port=8081", engines) == "a"
    assert engine_for_process("llama-server --port 18081", engines) is None


def test_dcgm_fixture_maps_to_gpu_signals(shared_dir: Path) -> None:
    text = (shared_dir / "fixtures/metrics/dcgm_exporter.txt").read_text()
    for variant in (text, text.replace("Hostname=", "hostname=")):
        snapshots = dcgm_snapshots(parse_text(variant), "fallback", 5.0)
        assert [s.source for s in snapshots] == ["gpu:gpu-node-07/0", "gpu:gpu-node-07/1"]
        first = snapshots[0]
        assert first.label == "NVIDIA H100 80GB HBM3"
        assert first.values["gpu_temperature_c"] == 61 and first.values["gpu_utilization_pct"] == 97
        assert first.values["gpu_power_w"] == pytest.approx(561.337)
        fb_used = parse_text(text).gauge("DCGM_FI_DEV_FB_USED", (("gpu", ("0",)),))
        assert first.values["gpu_memory_used_bytes"] == fb_used * 2**20
        assert first.values["gpu_memory_total_bytes"] == pytest.approx(81_559 * 2**20)
        assert set(first.values) | set(first.missing) == set(GPU_SIGNAL_NAMES)


def test_dcgm_sampler_over_http(shared_dir: Path) -> None:
    text = (shared_dir / "fixtures/metrics/dcgm_exporter.txt").read_text()
    with MetricsServer() as server:
        server.routes["/metrics"] = Route(body=text)
        sampler = DcgmSampler(server.url)  # base URL: /metrics is added
        state = sampler.state()
        assert (
            state.available
            and next(g.title for g in state.gpus) == "gpu-node-07 GPU 0: NVIDIA H100 80GB HBM3"
        )
        assert len(sampler.sample()) == 2
        assert server.requests[-1][1]["accept"] == "text/plain"
        sampler.close()
    down = DcgmSampler(server.url)
    assert down.sample() == [] and down.error and "connection refused" in down.error
    assert not down.state().available
