"""Local NVIDIA GPUs' energy through NVML (nvidia-ml-py, module `pynvml`).

`nvmlDeviceGetTotalEnergyConsumption` is millijoules since the driver loaded (Volta and
later). Where a GPU does not support it (NVMLError_NotSupported: older boards, some vGPU
and MIG setups), a background thread samples `nvmlDeviceGetPowerUsage` (milliwatts) and
integrates it, and the reading says "power samples": a figure of its own kind, only as good
as the sampling interval and the board's power sensor average.
"""

from __future__ import annotations

import importlib
import threading
import time
from collections.abc import Callable, Sequence
from types import ModuleType, SimpleNamespace
from typing import Any

from services.telemetry.energy.maths import integrate_power
from services.telemetry.energy.records import (
    COUNTER,
    POWER_SAMPLES,
    CounterReading,
    EnergyUnavailable,
)
from services.telemetry.gpu import NO_GPU, engine_for_process, nvml_reason, process_cmdline

#: Boards update their power reading every 20 to 100 ms; a tenth of a second follows it.
POWER_INTERVAL_S = 0.1


def _unsupported(nvml: ModuleType, error: BaseException) -> bool:
    """The call is not there or not supported on this GPU (not a passing failure)."""
    if isinstance(error, (AttributeError, TypeError)):
        return True
    codes = {
        getattr(nvml, n)
        for n in ("NVML_ERROR_NOT_SUPPORTED", "NVML_ERROR_FUNCTION_NOT_FOUND")
        if hasattr(nvml, n)
    }
    return getattr(error, "value", None) in codes


#: How far up a GPU process's parents to look for the engine's command line (vLLM and SGLang
#: hold the GPUs in spawned workers whose own command line names no port).
ANCESTORS = 6


def _parent(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as handle:
            # "pid (comm) state ppid ...": comm may hold spaces and parentheses.
            fields = handle.read().rsplit(")", 1)[1].split()
        return int(fields[1]) or None
    except (OSError, IndexError, ValueError):
        return None


class _PowerIntegral:
    """One GPU's power samples integrated as they come: a counter made of samples."""

    def __init__(self) -> None:
        self.joules = 0.0
        self.last: tuple[float, float] | None = None

    def add(self, at: float, watts: float) -> float:
        if self.last is not None:
            self.joules += integrate_power((self.last, (at, watts)))
        self.last = (at, watts)
        return self.joules


class NvmlEnergySource:
    """The energy of local GPUs (`indices`, None: all). `nvml` defaults to `import pynvml`."""

    name = "NVML"

    def __init__(
        self,
        nvml: ModuleType | None = None,
        indices: Sequence[int] | None = None,
        clock: Callable[[], float] = time.monotonic,
        interval_s: float = POWER_INTERVAL_S,
        cmdline: Callable[[int], str] = process_cmdline,
        parent: Callable[[int], int | None] = _parent,
    ) -> None:
        self._nvml = nvml
        self._cmdline = cmdline
        self._parent = parent
        self._indices = list(indices) if indices is not None else None
        self._clock = clock
        self._interval_s = interval_s
        self._lock = threading.Lock()
        self._gpus: list[tuple[str, Any, str]] | None = None  # (label, handle, method)
        self._integrals: dict[str, _PowerIntegral] = {}
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._initialised = False

    def open(self) -> None:
        """Find the GPUs and how each is measured; EnergyUnavailable with the reason if none can be."""
        if self._gpus is not None:
            return
        try:
            nvml = self._nvml or importlib.import_module("pynvml")
        except ImportError:
            raise EnergyUnavailable(f"{NO_GPU}: nvidia-ml-py (pynvml) is not installed") from None
        self._nvml = nvml
        try:
            nvml.nvmlInit()
        except Exception as error:  # noqa: BLE001 - pynvml raises LibraryNotFound, DriverNotLoaded, OSError...
            raise EnergyUnavailable(f"{NO_GPU}: {nvml_reason(error)}") from None
        self._initialised = True
        try:
            gpus = self._list(nvml)
        except EnergyUnavailable:
            self.close()
            raise
        except Exception as error:  # noqa: BLE001 - any NVML failure is "not measured", never a crash
            self.close()
            raise EnergyUnavailable(
                f"NVML answered but listing GPUs failed ({nvml_reason(error)})"
            ) from None
        self._gpus = gpus
        if any(method == POWER_SAMPLES for _, _, method in gpus):
            self._sample_power()
            self._thread = threading.Thread(target=self._run, name="nvml-power", daemon=True)
            self._thread.start()

    def _list(self, nvml: ModuleType) -> list[tuple[str, Any, str]]:
        count = int(nvml.nvmlDeviceGetCount())
        if count == 0:
            raise EnergyUnavailable(f"{NO_GPU}: the NVIDIA driver sees no GPU")
        gpus: list[tuple[str, Any, str]] = []
        lacking: list[str] = []
        for index in self._indices if self._indices is not None else range(count):
            handle = nvml.nvmlDeviceGetHandleByIndex(index)
            raw = nvml.nvmlDeviceGetName(handle)
            label = f"GPU {index}: {raw.decode() if isinstance(raw, bytes) else raw}"
            try:
                nvml.nvmlDeviceGetTotalEnergyConsumption(handle)
                gpus.append((label, handle, COUNTER))
                continue
            except Exception as error:
                if not _unsupported(nvml, error):
                    raise
            try:
                nvml.nvmlDeviceGetPowerUsage(handle)
                gpus.append((label, handle, POWER_SAMPLES))
            except Exception as error:
                if not _unsupported(nvml, error):
                    raise
                lacking.append(label)
        if lacking:
            # A sum that leaves a GPU out would look complete; say which cannot be read instead.
            raise EnergyUnavailable(
                f"{', '.join(lacking)} reports neither an energy counter nor its power draw"
            )
        return gpus

    def devices(self) -> tuple[str, ...]:
        self.open()
        return tuple(label for label, _, _ in self._gpus or ())

    def engine_devices(self, name: str, base_url: str) -> tuple[tuple[str, ...], int] | None:
        """The GPUs running the engine's processes (a process whose command line, or a
        parent's, names the engine's port) and how many other processes share them; None
        when no GPU process can be tied to the engine (a container, another user's process)."""
        self.open()
        nvml = self._nvml
        assert nvml is not None
        target = [SimpleNamespace(name=name, base_url=base_url)]
        owned: list[str] = []
        others = 0
        for label, handle, _ in self._gpus or ():
            try:
                pids = {int(p.pid) for p in nvml.nvmlDeviceGetComputeRunningProcesses(handle)}
            except Exception:  # noqa: BLE001, S112 - no process list: this GPU cannot be tied
                continue
            mine = {pid for pid in pids if self._is_engines(pid, target)}
            if mine:
                owned.append(label)
                others += len(pids - mine)
        return (tuple(owned), others) if owned else None

    def _is_engines(self, pid: int, target: list[SimpleNamespace]) -> bool:
        current: int | None = pid
        for _ in range(ANCESTORS):
            if current is None or current <= 1:
                return False
            if engine_for_process(self._cmdline(current), target):
                return True
            current = self._parent(current)
        return False

    def _sample_power(self) -> None:
        nvml = self._nvml
        assert nvml is not None
        for label, handle, method in self._gpus or ():
            if method != POWER_SAMPLES:
                continue
            try:
                milliwatts = nvml.nvmlDeviceGetPowerUsage(handle)
            except Exception:  # noqa: BLE001, S112 - one missed sample: the next one bridges the gap
                continue
            now = self._clock()
            with self._lock:
                self._integrals.setdefault(label, _PowerIntegral()).add(now, milliwatts / 1000.0)

    def _run(self) -> None:
        while not self._stop.wait(self._interval_s):
            self._sample_power()

    def read(self) -> list[CounterReading]:
        self.open()
        nvml = self._nvml
        assert nvml is not None
        # A sample now, so a window's edges are the moments it was read.
        self._sample_power()
        readings = []
        for label, handle, method in self._gpus or ():
            if method == COUNTER:
                try:
                    millijoules = nvml.nvmlDeviceGetTotalEnergyConsumption(handle)
                except Exception as error:  # noqa: BLE001 - a GPU lost mid-run
                    raise EnergyUnavailable(f"{label}: {nvml_reason(error)}") from None
                readings.append(CounterReading(label, millijoules / 1000.0, COUNTER))
            else:
                with self._lock:
                    integral = self._integrals.get(label)
                    joules = integral.joules if integral is not None else 0.0
                readings.append(CounterReading(label, joules, POWER_SAMPLES))
        return readings

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=2.0)
            self._thread = None
        if self._initialised and self._nvml is not None:
            try:
                self._nvml.nvmlShutdown()
            except Exception:  # noqa: BLE001, S110 - shutting down a library that already failed
                pass
            self._initialised = False
        self._gpus = None
