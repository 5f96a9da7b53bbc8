"""A fake `pynvml` module for the GPU paths (install with
`monkeypatch.setitem(sys.modules, "pynvml", make_fake_pynvml(...))`).

It implements the calls `services.telemetry.gpu.NvmlSampler` makes, with nvidia-ml-py's
names, constants and error classes, over a list of `FakeGpu`s whose fields tests change.
"""

from __future__ import annotations

import types
from dataclasses import dataclass, field
from typing import Any

NVML_SUCCESS = 0
NVML_ERROR_NOT_SUPPORTED = 3
NVML_ERROR_GPU_IS_LOST = 15
NVML_ERROR_LIBRARY_NOT_FOUND = 12
NVML_ERROR_DRIVER_NOT_LOADED = 9
NVML_ERROR_FUNCTION_NOT_FOUND = 13
NVML_ERROR_ARGUMENT_VERSION_MISMATCH = 25


class NVMLError(Exception):
    def __init__(self, value: int) -> None:
        super().__init__(value)
        self.value = value

    def __str__(self) -> str:
        return {
            NVML_ERROR_NOT_SUPPORTED: "Not Supported",
            NVML_ERROR_GPU_IS_LOST: "GPU is lost",
            NVML_ERROR_LIBRARY_NOT_FOUND: "NVML Shared Library Not Found",
            NVML_ERROR_DRIVER_NOT_LOADED: "Driver Not Loaded",
            NVML_ERROR_FUNCTION_NOT_FOUND: "Function Not Found",
        }.get(self.value, f"NVML error {self.value}")


class NVMLError_LibraryNotFound(NVMLError):
    def __init__(self) -> None:
        super().__init__(NVML_ERROR_LIBRARY_NOT_FOUND)


class NVMLError_DriverNotLoaded(NVMLError):
    def __init__(self) -> None:
        super().__init__(NVML_ERROR_DRIVER_NOT_LOADED)


@dataclass
class FakeProcess:
    pid: int
    usedGpuMemory: int | None


@dataclass
class FakeGpu:
    name: str = "NVIDIA H100 80GB HBM3"
    uuid: str = "GPU-00000000-0000-0000-0000-000000000000"
    total: int = 80 * 2**30
    used: int = 10 * 2**30
    reserved: int = 512 * 2**20
    util_gpu: int = 50
    util_memory: int = 20
    power_mw: int = 300_000
    temperature: int = 60
    sm_clock: int = 1980
    mem_clock: int = 2619
    pcie_tx_bytes: int = 0
    pcie_rx_bytes: int = 0
    pcie_tx_kbps: int = 1000
    pcie_rx_kbps: int = 2000
    #: nvmlDeviceGetTotalEnergyConsumption, millijoules since the driver loaded; add "energy"
    #: to `unsupported` for a board without it (NVMLError_NotSupported).
    energy_mj: int = 0
    processes: list[FakeProcess] = field(default_factory=list)
    unsupported: set[str] = field(default_factory=set)
    lost: bool = False


def make_fake_pynvml(
    gpus: list[FakeGpu] | None = None,
    init_error: type[NVMLError] | None = None,
    memory_v2: bool = True,
    pcie_counters: bool = True,
    driver: str = "570.172.08",
) -> types.ModuleType:
    """A module object standing in for pynvml. `module.calls` counts calls per function."""
    gpus = gpus if gpus is not None else [FakeGpu()]
    module = types.ModuleType("pynvml")
    calls: dict[str, int] = {}
    module.calls = calls  # type: ignore[attr-defined]
    module.gpus = gpus  # type: ignore[attr-defined]

    def counted(name: str):
        def wrap(fn):
            def inner(*args: Any, **kwargs: Any) -> Any:
                calls[name] = calls.get(name, 0) + 1
                return fn(*args, **kwargs)

            setattr(module, name, inner)
            return inner

        return wrap

    def gpu_of(handle: int, feature: str) -> FakeGpu:
        gpu = gpus[handle]
        if gpu.lost:
            raise NVMLError(NVML_ERROR_GPU_IS_LOST)
        if feature in gpu.unsupported:
            raise NVMLError(NVML_ERROR_NOT_SUPPORTED)
        return gpu

    for name, value in {
        "NVMLError": NVMLError,
        "NVMLError_LibraryNotFound": NVMLError_LibraryNotFound,
        "NVMLError_DriverNotLoaded": NVMLError_DriverNotLoaded,
        "NVML_SUCCESS": NVML_SUCCESS,
        "NVML_ERROR_NOT_SUPPORTED": NVML_ERROR_NOT_SUPPORTED,
        "NVML_ERROR_FUNCTION_NOT_FOUND": NVML_ERROR_FUNCTION_NOT_FOUND,
        "NVML_ERROR_ARGUMENT_VERSION_MISMATCH": NVML_ERROR_ARGUMENT_VERSION_MISMATCH,
        "NVML_TEMPERATURE_GPU": 0,
        "NVML_CLOCK_SM": 1,
        "NVML_CLOCK_MEM": 2,
        "NVML_PCIE_UTIL_TX_BYTES": 0,
        "NVML_PCIE_UTIL_RX_BYTES": 1,
        "NVML_FI_DEV_PCIE_COUNT_TX_BYTES": 197,
        "NVML_FI_DEV_PCIE_COUNT_RX_BYTES": 198,
        "nvmlMemory_v2": 0x02000028,
    }.items():
        setattr(module, name, value)

    @counted("nvmlInit")
    def nvml_init() -> None:
        if init_error is not None:
            raise init_error()

    @counted("nvmlShutdown")
    def nvml_shutdown() -> None:
        pass

    @counted("nvmlSystemGetDriverVersion")
    def driver_version() -> str:
        return driver

    @counted("nvmlDeviceGetCount")
    def count() -> int:
        return len(gpus)

    @counted("nvmlDeviceGetHandleByIndex")
    def handle_by_index(index: int) -> int:
        return index

    @counted("nvmlDeviceGetName")
    def name(handle: int) -> str:
        return gpus[handle].name

    @counted("nvmlDeviceGetUUID")
    def uuid(handle: int) -> str:
        return gpus[handle].uuid

    @counted("nvmlDeviceGetMemoryInfo")
    def memory(handle: int, version: int | None = None) -> Any:
        gpu = gpu_of(handle, "memory")
        if version:
            if not memory_v2:
                raise NVMLError(NVML_ERROR_FUNCTION_NOT_FOUND)
            return types.SimpleNamespace(
                total=gpu.total,
                used=gpu.used,
                reserved=gpu.reserved,
                free=gpu.total - gpu.used - gpu.reserved,
            )
        return types.SimpleNamespace(
            total=gpu.total, used=gpu.used + gpu.reserved, free=gpu.total - gpu.used - gpu.reserved
        )

    @counted("nvmlDeviceGetUtilizationRates")
    def utilization(handle: int) -> Any:
        gpu = gpu_of(handle, "utilization")
        return types.SimpleNamespace(gpu=gpu.util_gpu, memory=gpu.util_memory)

    @counted("nvmlDeviceGetPowerUsage")
    def power(handle: int) -> int:
        return gpu_of(handle, "power").power_mw

    @counted("nvmlDeviceGetTotalEnergyConsumption")
    def total_energy(handle: int) -> int:
        return gpu_of(handle, "energy").energy_mj

    @counted("nvmlDeviceGetTemperature")
    def temperature(handle: int, sensor: int) -> int:
        return gpu_of(handle, "temperature").temperature

    @counted("nvmlDeviceGetClockInfo")
    def clock(handle: int, kind: int) -> int:
        gpu = gpu_of(handle, "clocks")
        return gpu.sm_clock if kind == 1 else gpu.mem_clock

    @counted("nvmlDeviceGetFieldValues")
    def field_values(handle: int, field_ids: list[int]) -> list[Any]:
        gpu = gpu_of(handle, "pcie")
        if not pcie_counters:
            raise NVMLError(NVML_ERROR_NOT_SUPPORTED)
        values = []
        for field_id in field_ids:
            raw = gpu.pcie_tx_bytes if field_id == 197 else gpu.pcie_rx_bytes
            values.append(types.SimpleNamespace(nvmlReturn=0, value=types.SimpleNamespace(ullVal=raw)))
        return values

    @counted("nvmlDeviceGetPcieThroughput")
    def pcie_throughput(handle: int, counter: int) -> int:
        gpu = gpu_of(handle, "pcie")
        return gpu.pcie_tx_kbps if counter == 0 else gpu.pcie_rx_kbps

    @counted("nvmlDeviceGetComputeRunningProcesses")
    def compute_processes(handle: int) -> list[FakeProcess]:
        return list(gpu_of(handle, "processes").processes)

    @counted("nvmlDeviceGetGraphicsRunningProcesses")
    def graphics_processes(handle: int) -> list[FakeProcess]:
        gpu_of(handle, "processes")
        return []

    @counted("nvmlSystemGetProcessName")
    def process_name(pid: int) -> bytes:
        return f"proc{pid}".encode()

    return module
