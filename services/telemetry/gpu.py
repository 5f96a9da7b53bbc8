"""GPU samplers: local GPUs through NVML (nvidia-ml-py, module `pynvml`), remote GPUs
through dcgm-exporter's /metrics, and a sampler for machines without an NVIDIA GPU.

No driver, no library or no GPU is a state ("no NVIDIA GPU here ..."), never an error. A
field one GPU does not support (power on some boards, PCIe counters on old drivers) is
skipped alone and remembered, so it costs nothing on the next sample.
"""

from __future__ import annotations

import functools
import importlib
import os
import re
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any
from urllib.parse import urlsplit

from services.core import http
from services.core.config import get_settings
from services.core.urls import http_url
from services.engines.prometheus import Families, SeriesParser
from services.engines.signals import GPU_SIGNAL_NAMES, not_reported
from services.telemetry.snapshot import GpuProcess, Snapshot

MIB = 1024 * 1024
NO_GPU = "no NVIDIA GPU here"
#: NVML's "value not available" for a process's memory (unsigned -1).
NOT_AVAILABLE = (1 << 64) - 1
PCIE_FALLBACK_EVERY_S = 5.0  # nvmlDeviceGetPcieThroughput blocks ~20 ms per call


@dataclass(frozen=True)
class GpuInfo:
    source: str
    index: int
    name: str
    uuid: str | None = None
    memory_total_bytes: int | None = None
    host: str | None = None

    @property
    def title(self) -> str:
        where = f"{self.host} " if self.host else ""
        return f"{where}GPU {self.index}: {self.name}"


@dataclass
class GpuState:
    """Whether GPUs can be read here, in words for the UI, and which."""

    available: bool
    message: str
    gpus: list[GpuInfo] = field(default_factory=list)
    driver_version: str | None = None


def _text(value: Any) -> str:
    return value.decode(errors="replace") if isinstance(value, bytes) else str(value)


# --- engines holding GPU memory ----------------------------------------------------------

_PORT_PATTERNS = ("--port {port}", "--port={port}", ":{port}", "-p {port}")


def process_cmdline(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            return handle.read().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return ""


def engine_for_process(cmdline: str, engines: Sequence[Any]) -> str | None:
    """The registered engine whose port the process's command line names, if any
    (local engines only: a containerised engine shows under its container's process)."""
    for engine in engines:
        base_url = getattr(engine, "base_url", None)
        port = urlsplit(base_url).port if base_url else None
        if port and any(p.format(port=port) in cmdline for p in _PORT_PATTERNS):
            return str(engine.name)
    return None


class NvmlSampler:
    """Local GPUs via NVML. `nvml` defaults to `import pynvml` at first use."""

    def __init__(self, nvml: ModuleType | None = None, clock: Callable[[], float] = time.time) -> None:
        self._nvml = nvml
        self._clock = clock
        self._lock = threading.Lock()
        self._state: GpuState | None = None
        self._handles: list[Any] = []
        self._unsupported: list[set[str]] = []
        self._pcie_counters: dict[int, tuple[float, float, float]] = {}
        self._pcie_fallback: dict[int, tuple[float, float | None, float | None]] = {}
        self._process_names: dict[int, tuple[str, str]] = {}

    # -- state --

    def state(self) -> GpuState:
        with self._lock:
            if self._state is None:
                self._state = self._init()
            return self._state

    def _init(self) -> GpuState:
        try:
            nvml = self._nvml or importlib.import_module("pynvml")
        except ImportError:
            return GpuState(False, f"{NO_GPU}: nvidia-ml-py (pynvml) is not installed.")
        self._nvml = nvml
        try:
            nvml.nvmlInit()
        except Exception as error:  # noqa: BLE001 - pynvml raises NVMLError_LibraryNotFound, DriverNotLoaded, OSError...
            return GpuState(False, f"{NO_GPU}: {nvml_reason(error)}.")
        try:
            count = int(nvml.nvmlDeviceGetCount())
            driver = self._call(nvml.nvmlSystemGetDriverVersion)
            gpus = []
            self._handles = []
            for index in range(count):
                handle = nvml.nvmlDeviceGetHandleByIndex(index)
                self._handles.append(handle)
                self._unsupported.append(set())
                name = self._call(nvml.nvmlDeviceGetName, handle)
                uuid = self._call(nvml.nvmlDeviceGetUUID, handle)
                memory = self._call(nvml.nvmlDeviceGetMemoryInfo, handle)
                gpus.append(
                    GpuInfo(
                        source=f"gpu:{index}",
                        index=index,
                        name=_text(name) if name is not None else f"GPU {index}",
                        uuid=_text(uuid) if uuid is not None else None,
                        memory_total_bytes=int(memory.total) if memory is not None else None,
                    )
                )
        except Exception as error:  # noqa: BLE001 - any NVML failure is the no-GPU view, never a crash
            return GpuState(
                False, f"{NO_GPU}: NVML answered but listing GPUs failed ({nvml_reason(error)})."
            )
        if not gpus:
            return GpuState(False, f"{NO_GPU}: the NVIDIA driver sees no GPU.")
        return GpuState(
            True,
            f"{len(gpus)} NVIDIA GPU(s), driver {_text(driver) if driver else 'unknown'}.",
            gpus,
            _text(driver) if driver else None,
        )

    def _call(self, fn: Callable[..., Any], *args: Any) -> Any:
        try:
            return fn(*args)
        except Exception:  # noqa: BLE001 - a field this driver lacks is shown as missing
            return None

    def close(self) -> None:
        with self._lock:
            if self._state is not None and self._state.available and self._nvml is not None:
                try:
                    self._nvml.nvmlShutdown()
                except Exception:  # noqa: BLE001, S110 - shutting down a library that already failed
                    pass
            self._state = None

    # -- sampling --

    def sample(
        self, indices: Sequence[int] | None = None, engines: Sequence[Any] = ()
    ) -> list[Snapshot]:
        state = self.state()
        if not state.available:
            return []
        with self._lock:
            now = self._clock()
            wanted = set(indices) if indices is not None else None
            return [
                self._sample_one(gpu, now, engines)
                for gpu in state.gpus
                if wanted is None or gpu.index in wanted
            ]

    def _field(self, index: int, name: str, fn: Callable[[], Any]) -> Any:
        """One NVML read; a field the GPU does not support is skipped from now on."""
        if name in self._unsupported[index]:
            return None
        try:
            return fn()
        except Exception as error:  # noqa: BLE001 - an unsupported field is skipped from now on, any other failure is this sample's gap
            if getattr(error, "value", None) in self._unsupported_codes() or isinstance(
                error, (AttributeError, TypeError)
            ):
                self._unsupported[index].add(name)
            return None

    def _unsupported_codes(self) -> set[int]:
        nvml = self._nvml
        names = (
            "NVML_ERROR_NOT_SUPPORTED",
            "NVML_ERROR_FUNCTION_NOT_FOUND",
            "NVML_ERROR_ARGUMENT_VERSION_MISMATCH",
        )
        return {getattr(nvml, n) for n in names if hasattr(nvml, n)}

    def _sample_one(self, gpu: GpuInfo, now: float, engines: Sequence[Any]) -> Snapshot:
        nvml = self._nvml
        assert nvml is not None
        i, handle = gpu.index, self._handles[gpu.index]
        values: dict[str, float | None] = {}

        memory = self._field(
            i, "memory_v2", lambda: nvml.nvmlDeviceGetMemoryInfo(handle, version=nvml.nvmlMemory_v2)
        )
        if memory is None:
            memory = self._field(i, "memory_v1", lambda: nvml.nvmlDeviceGetMemoryInfo(handle))
        else:
            values["gpu_memory_reserved_bytes"] = float(memory.reserved)
        if memory is not None:
            values["gpu_memory_used_bytes"] = float(memory.used)
            values["gpu_memory_total_bytes"] = float(memory.total)

        utilization = self._field(i, "utilization", lambda: nvml.nvmlDeviceGetUtilizationRates(handle))
        if utilization is not None:
            values["gpu_utilization_pct"] = float(utilization.gpu)
            values["gpu_memory_activity_pct"] = float(utilization.memory)
        power = self._field(i, "power", lambda: nvml.nvmlDeviceGetPowerUsage(handle))
        if power is not None:
            values["gpu_power_w"] = float(power) / 1000.0
        temperature = self._field(
            i, "temperature", lambda: nvml.nvmlDeviceGetTemperature(handle, nvml.NVML_TEMPERATURE_GPU)
        )
        if temperature is not None:
            values["gpu_temperature_c"] = float(temperature)
        sm_clock = self._field(
            i, "sm_clock", lambda: nvml.nvmlDeviceGetClockInfo(handle, nvml.NVML_CLOCK_SM)
        )
        if sm_clock is not None:
            values["gpu_sm_clock_mhz"] = float(sm_clock)
        mem_clock = self._field(
            i, "mem_clock", lambda: nvml.nvmlDeviceGetClockInfo(handle, nvml.NVML_CLOCK_MEM)
        )
        if mem_clock is not None:
            values["gpu_memory_clock_mhz"] = float(mem_clock)
        values.update(self._pcie(i, handle, now))

        processes = self._processes(i, handle, engines)
        if not values:
            return Snapshot(
                gpu.source, "gpu", gpu.name, now, error="the GPU answered no field (lost or reset?)"
            )
        missing = {name: not_reported(gpu.name) for name in GPU_SIGNAL_NAMES if name not in values}
        return Snapshot(
            gpu.source, "gpu", gpu.name, now, values=values, missing=missing, processes=processes
        )

    def _pcie(self, i: int, handle: Any, now: float) -> dict[str, float | None]:
        """PCIe bytes/s from NVML's cumulative byte counters (no blocking); else from
        nvmlDeviceGetPcieThroughput, which measures 20 ms per call, every few seconds."""
        nvml = self._nvml
        assert nvml is not None
        fields = (
            (nvml.NVML_FI_DEV_PCIE_COUNT_TX_BYTES, nvml.NVML_FI_DEV_PCIE_COUNT_RX_BYTES)
            if hasattr(nvml, "NVML_FI_DEV_PCIE_COUNT_TX_BYTES")
            else None
        )
        counters = (
            self._field(i, "pcie_counters", lambda: nvml.nvmlDeviceGetFieldValues(handle, list(fields)))
            if fields
            else None
        )
        if counters is not None:
            try:
                if any(int(value.nvmlReturn) != 0 for value in counters):
                    raise ValueError("not supported")
                tx, rx = float(counters[0].value.ullVal), float(counters[1].value.ullVal)
            except (ValueError, AttributeError, IndexError, TypeError):
                self._unsupported[i].add("pcie_counters")
            else:
                previous = self._pcie_counters.get(i)
                self._pcie_counters[i] = (now, tx, rx)
                if previous is None or now <= previous[0] or tx < previous[1] or rx < previous[2]:
                    return {"gpu_pcie_tx_bytes_per_s": None, "gpu_pcie_rx_bytes_per_s": None}
                seconds = now - previous[0]
                return {
                    "gpu_pcie_tx_bytes_per_s": (tx - previous[1]) / seconds,
                    "gpu_pcie_rx_bytes_per_s": (rx - previous[2]) / seconds,
                }
        if "pcie_throughput" in self._unsupported[i]:
            return {}
        last = self._pcie_fallback.get(i)
        if last is None or now - last[0] >= PCIE_FALLBACK_EVERY_S:
            tx_kb = self._field(
                i,
                "pcie_throughput",
                lambda: nvml.nvmlDeviceGetPcieThroughput(handle, nvml.NVML_PCIE_UTIL_TX_BYTES),
            )
            rx_kb = self._field(
                i,
                "pcie_throughput",
                lambda: nvml.nvmlDeviceGetPcieThroughput(handle, nvml.NVML_PCIE_UTIL_RX_BYTES),
            )
            if tx_kb is None and rx_kb is None:
                return {}
            last = (
                now,
                None if tx_kb is None else tx_kb * 1024.0,
                None if rx_kb is None else rx_kb * 1024.0,
            )
            self._pcie_fallback[i] = last
        return {"gpu_pcie_tx_bytes_per_s": last[1], "gpu_pcie_rx_bytes_per_s": last[2]}

    def _processes(self, i: int, handle: Any, engines: Sequence[Any]) -> list[GpuProcess]:
        nvml = self._nvml
        assert nvml is not None
        found: dict[int, GpuProcess] = {}
        for name, getter in (
            ("compute_processes", "nvmlDeviceGetComputeRunningProcesses"),
            ("graphics_processes", "nvmlDeviceGetGraphicsRunningProcesses"),
        ):
            fn = getattr(nvml, getter, None)
            if fn is None:
                continue
            rows = self._field(i, name, functools.partial(fn, handle)) or []
            for row in rows:
                pid = int(row.pid)
                used = getattr(row, "usedGpuMemory", None)
                used_bytes = None if used is None or int(used) >= NOT_AVAILABLE else int(used)
                entry = found.setdefault(pid, {"pid": pid, "used_bytes": None})
                if used_bytes is not None:
                    entry["used_bytes"] = max(entry["used_bytes"] or 0, used_bytes)
        for pid, entry in found.items():
            process_name, cmdline = self._process_name(pid)
            entry["name"] = process_name
            engine = engine_for_process(cmdline, engines) if engines else None
            if engine:
                entry["engine"] = engine
        return sorted(found.values(), key=lambda e: -(e["used_bytes"] or 0))

    def _process_name(self, pid: int) -> tuple[str, str]:
        cached = self._process_names.get(pid)
        if cached is None:
            cmdline = process_cmdline(pid)
            name = ""
            if cmdline:
                name = os.path.basename(cmdline.split(" ", 1)[0])
            if not name:
                raw = self._call(self._nvml.nvmlSystemGetProcessName, pid) if self._nvml else None
                name = os.path.basename(_text(raw)) if raw else f"pid {pid}"
            cached = (name, cmdline)
            if len(self._process_names) > 4096:
                self._process_names.clear()
            self._process_names[pid] = cached
        return cached


def nvml_reason(error: Exception) -> str:
    name = type(error).__name__
    if "LibraryNotFound" in name:
        return "the NVIDIA driver library (libnvidia-ml.so) is not installed"
    if "DriverNotLoaded" in name:
        return "the NVIDIA driver is not loaded"
    if "NoPermission" in name:
        return "no permission to read the GPU"
    text = str(error).strip()
    return text or name


class NullGpuSampler:
    """For callers that do not want GPUs (or tests): never any GPU."""

    def __init__(self, message: str = f"{NO_GPU}.") -> None:
        self.message = message

    def state(self) -> GpuState:
        return GpuState(False, self.message)

    def sample(
        self, indices: Sequence[int] | None = None, engines: Sequence[Any] = ()
    ) -> list[Snapshot]:
        return []

    def close(self) -> None:
        pass


# --- dcgm-exporter ----------------------------------------------------------------------

_DCGM = {
    "fb_used": "DCGM_FI_DEV_FB_USED",
    "fb_free": "DCGM_FI_DEV_FB_FREE",
    "fb_reserved": "DCGM_FI_DEV_FB_RESERVED",
    "gpu_utilization_pct": "DCGM_FI_DEV_GPU_UTIL",
    "gpu_memory_activity_pct": "DCGM_FI_DEV_MEM_COPY_UTIL",
    "gpu_power_w": "DCGM_FI_DEV_POWER_USAGE",
    "gpu_temperature_c": "DCGM_FI_DEV_GPU_TEMP",
    "gpu_sm_clock_mhz": "DCGM_FI_DEV_SM_CLOCK",
    "gpu_memory_clock_mhz": "DCGM_FI_DEV_MEM_CLOCK",
    "gpu_pcie_tx_bytes_per_s": "DCGM_FI_PROF_PCIE_TX_BYTES",
    "gpu_pcie_rx_bytes_per_s": "DCGM_FI_PROF_PCIE_RX_BYTES",
}
_DCGM_KEEP = tuple(sorted(set(_DCGM.values())))
#: dcgm-exporter on an 8-GPU node answers about 200 KiB.
DCGM_MAX_BYTES = 8 * 1024 * 1024
_SAFE = re.compile(r"[^A-Za-z0-9._-]+")


def dcgm_source(host: str, gpu: str) -> str:
    return f"gpu:{_SAFE.sub('_', host)}/{gpu}"


def dcgm_snapshots(families: Families, default_host: str, ts: float) -> list[Snapshot]:
    """dcgm-exporter series -> one GPU snapshot per (host, gpu). Label names are matched
    case-insensitively (`Hostname` became `hostname` in 2026 builds); FB fields are MiB."""
    # Per (host, gpu): the labels of its first series, and each field's value.
    per_gpu: dict[tuple[str, str], tuple[dict[str, str], dict[str, float]]] = {}
    for signal, metric_name in _DCGM.items():
        for labels, value in families.select(metric_name):
            host = labels.get("hostname") or default_host
            gpu = labels.get("gpu") or labels.get("device") or "0"
            per_gpu.setdefault((host, gpu), (labels, {}))[1][signal] = value
    snapshots = []
    for (host, gpu), (labels, raw) in sorted(per_gpu.items()):
        values: dict[str, float | None] = {}
        if "fb_used" in raw:
            values["gpu_memory_used_bytes"] = raw["fb_used"] * MIB
            if "fb_free" in raw:
                total = raw["fb_used"] + raw["fb_free"] + raw.get("fb_reserved", 0.0)
                values["gpu_memory_total_bytes"] = total * MIB
        if "fb_reserved" in raw:
            values["gpu_memory_reserved_bytes"] = raw["fb_reserved"] * MIB
        for signal in GPU_SIGNAL_NAMES:
            if signal in raw:
                values[signal] = raw[signal]
        label = labels.get("modelname") or "GPU"
        processes: list[GpuProcess] = []
        if labels.get("pod"):
            processes.append(
                {
                    "name": "/".join(
                        x
                        for x in (labels.get("namespace"), labels.get("pod"), labels.get("container"))
                        if x
                    ),
                    "used_bytes": None,
                }
            )
        missing = {
            name: not_reported(f"dcgm-exporter ({label})")
            for name in GPU_SIGNAL_NAMES
            if name not in values
        }
        snapshots.append(
            Snapshot(
                dcgm_source(host, gpu),
                "gpu",
                label,
                ts,
                values=values,
                missing=missing,
                processes=processes,
            )
        )
    return snapshots


def dcgm_metrics_url(url: str) -> str:
    """`host:9400` or `http://host:9400` -> its /metrics URL (a ValidationError for a URL that
    cannot be one)."""
    full = http_url(url, "dcgm-exporter URL")
    if not urlsplit(full).path.strip("/"):
        full = full.rstrip("/") + "/metrics"
    return full


class DcgmUnreadable(Exception):
    """A dcgm-exporter that could not be read; the message says which and why."""


def fetch_dcgm(url: str, parser: SeriesParser, timeout_s: float) -> Families:
    """One scrape of a dcgm-exporter (deadline and byte limit), parsed by prometheus_client:
    the GPU sampler and the energy meter read it the same way."""
    try:
        response = http.fetch(
            "GET",
            url,
            headers={"Accept": "text/plain"},
            deadline_s=timeout_s,
            max_bytes=DCGM_MAX_BYTES,
        )
    except http.HttpError as error:
        raise DcgmUnreadable(f"dcgm-exporter at {url}: {error.detail}") from None
    if response.status != 200:
        raise DcgmUnreadable(f"dcgm-exporter at {url}: HTTP {response.status}")
    try:
        return parser.parse(response.text)
    except ValueError as error:
        raise DcgmUnreadable(f"dcgm-exporter at {url}: unreadable metrics ({error})") from None


class DcgmSampler:
    """Remote GPUs from a dcgm-exporter endpoint (`http://host:9400/metrics`)."""

    def __init__(self, url: str, timeout_s: float = 2.0) -> None:
        self.url = dcgm_metrics_url(url)
        self.host = urlsplit(self.url).hostname or "remote"
        self.timeout_s = timeout_s
        self.lock = threading.Lock()
        self.error: str | None = None
        self._parser = SeriesParser(_DCGM_KEEP)

    def sample(self, now: float | None = None) -> list[Snapshot]:
        ts = time.time() if now is None else now
        with self.lock:
            try:
                families = fetch_dcgm(self.url, self._parser, self.timeout_s)
            except DcgmUnreadable as error:
                self.error = str(error)
                return []
            self.error = None
            snapshots = dcgm_snapshots(families, self.host, ts)
            if not snapshots:
                self.error = f"dcgm-exporter at {self.url} lists no GPU field this dashboard reads"
            return snapshots

    def state(self) -> GpuState:
        snapshots = self.sample()
        if self.error:
            return GpuState(False, self.error)
        gpus = [
            GpuInfo(
                source=s.source,
                index=int(s.source.rsplit("/", 1)[-1]) if s.source.rsplit("/", 1)[-1].isdigit() else 0,
                name=s.label,
                memory_total_bytes=int(s.values["gpu_memory_total_bytes"] or 0)
                if s.values.get("gpu_memory_total_bytes")
                else None,
                host=s.source[4:].rsplit("/", 1)[0],
            )
            for s in snapshots
        ]
        return GpuState(True, f"{len(gpus)} GPU(s) from dcgm-exporter at {self.url}.", gpus)

    def close(self) -> None:
        """Nothing to release: connections belong to services.core.http's shared client."""


def remote_gpu_settings() -> tuple[list[str], str | None]:
    """dcgm-exporter URLs (SHOOTOUT_DCGM_URLS, comma-separated) and a Prometheus server URL
    (SHOOTOUT_PROMETHEUS_URL) for teams that have them."""
    settings = get_settings()
    return list(settings.dcgm_urls), settings.prometheus_url
