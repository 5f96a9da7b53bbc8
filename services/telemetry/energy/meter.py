"""Which source measures each engine's energy, and one window per benchmark step.

An engine on this machine (a loopback or this host's name in its URL) is measured by NVML
when there are NVIDIA GPUs, else by the CPU packages' RAPL counters (the CPU-served local
engines). An engine elsewhere is measured by a dcgm-exporter on its host when one is
configured (SHOOTOUT_DCGM_URLS); otherwise it is "not measured here", with the reason.

Local GPUs count where the engine's processes run (NVML's process list, matched by the port in
their command lines); where no process can be tied to the engine, a GPU source counts all the
GPUs it sees and says so (shared GPUs). Engines run together share one window, and say so.
"""

from __future__ import annotations

import functools
import socket
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import ModuleType
from typing import Protocol
from urllib.parse import urlsplit

from services.telemetry.energy.dcgm import DcgmEnergySource
from services.telemetry.energy.maths import joules_between
from services.telemetry.energy.nvml import NvmlEnergySource
from services.telemetry.energy.rapl import POWERCAP_ROOT, RaplSource
from services.telemetry.energy.records import (
    COUNTER,
    POWER_SAMPLES,
    CounterReading,
    EnergyResult,
    EnergyUnavailable,
)
from services.telemetry.gpu import dcgm_metrics_url

LOOPBACK = ("localhost", "127.0.0.1", "::1", "0.0.0.0", "[::1]")


class EnergySource(Protocol):
    name: str

    def open(self) -> None: ...

    def devices(self) -> tuple[str, ...]: ...

    def read(self) -> list[CounterReading]: ...

    def close(self) -> None: ...


@dataclass(frozen=True)
class EnergyPlan:
    """How one engine is measured: a source (by key) and what it covers, or why not."""

    source: str | None = None
    scope: str | None = None
    reason: str | None = None
    #: The source's devices that count (the GPUs running the engine); None: all of them.
    devices: tuple[str, ...] | None = None


@dataclass
class EnergyWindow:
    engines: tuple[str, ...]
    started: float
    #: Source key -> its readings at the start, or the reason it could not be read.
    readings: dict[str, list[CounterReading] | str] = field(default_factory=dict)


def is_local(host: str | None) -> bool:
    if not host:
        return False
    host = host.lower()
    return host in LOOPBACK or host.endswith(".localhost") or host == socket.gethostname().lower()


class EnergyMeter:
    """Energy per benchmark step for a set of engines (name -> base URL)."""

    def __init__(
        self,
        engines: dict[str, str],
        *,
        dcgm_urls: Sequence[str] = (),
        nvml: ModuleType | None = None,
        rapl_root: Path = POWERCAP_ROOT,
        clock: Callable[[], float] = time.monotonic,
        sources: dict[str, EnergySource] | None = None,
    ) -> None:
        """`sources` replaces a source by key ("nvml", "rapl", "dcgm:URL"), opened or not."""
        self.engines = dict(engines)
        self.dcgm_urls = [dcgm_metrics_url(u) for u in dcgm_urls]
        self._factories: dict[str, Callable[[], EnergySource]] = {
            "nvml": lambda: NvmlEnergySource(nvml),
            "rapl": lambda: RaplSource(rapl_root),
        }
        for url in self.dcgm_urls:
            self._factories[f"dcgm:{url}"] = functools.partial(DcgmEnergySource, url)
        for key, given in (sources or {}).items():
            self._factories[key] = functools.partial(lambda source: source, given)
        self._clock = clock
        self._sources: dict[str, EnergySource | str] = {}
        self._plans: dict[str, EnergyPlan] = {}

    # -- which source measures which engine --

    def _source(self, key: str) -> EnergySource | str:
        """The opened source, or the reason it cannot measure here (tried once)."""
        found = self._sources.get(key)
        if found is None:
            source = self._factories[key]()
            try:
                source.open()
                found = source
            except EnergyUnavailable as error:
                source.close()
                found = str(error)
            except Exception as error:  # noqa: BLE001 - energy is a figure beside the run, never its end
                source.close()
                found = f"{source.name} failed to start ({type(error).__name__}: {error})"
            self._sources[key] = found
        return found

    def plan(self, engine: str) -> EnergyPlan:
        cached = self._plans.get(engine)
        if cached is None:
            try:
                cached = self._plan(engine)
            except Exception as error:  # noqa: BLE001 - energy is a figure beside the run, never its end
                cached = EnergyPlan(reason=f"choosing an energy source failed ({error})")
            self._plans[engine] = cached
        return cached

    def _plan(self, engine: str) -> EnergyPlan:
        host = urlsplit(self.engines.get(engine) or "").hostname
        local = is_local(host)
        exporters = [
            f"dcgm:{url}"
            for url in self.dcgm_urls
            if (urlsplit(url).hostname or "") == host or (local and is_local(urlsplit(url).hostname))
        ]
        # Here NVML first: it ties GPUs to the engine's processes and has no collect interval.
        candidates = ["nvml", *exporters, "rapl"] if local else exporters
        reasons = []
        for key in candidates:
            source = self._source(key)
            if isinstance(source, str):
                reasons.append(source)
                continue
            if isinstance(source, NvmlEnergySource):
                owned = source.engine_devices(engine, self.engines.get(engine) or "")
                if owned is not None:
                    devices, others = owned
                    scope = f"the {len(devices)} GPU(s) running the engine's processes" + (
                        f", shared with {others} other process(es)" if others else ""
                    )
                    return EnergyPlan(key, scope, devices=devices)
            return EnergyPlan(key, _scope(key, source.devices(), host))
        if not local:
            reasons.insert(
                0,
                f"the engine runs on {host or 'another machine'}, not here, and no dcgm-exporter "
                "on that host is configured (SHOOTOUT_DCGM_URLS)",
            )
        return EnergyPlan(reason="; ".join(reasons))

    # -- windows --

    def begin(self, engines: Sequence[str]) -> EnergyWindow:
        window = EnergyWindow(tuple(engines), self._clock())
        for engine in engines:
            key = self.plan(engine).source
            if key is not None and key not in window.readings:
                window.readings[key] = self._read(key)
        return window

    def end(self, window: EnergyWindow) -> dict[str, EnergyResult]:
        duration = self._clock() - window.started
        ends = {key: self._read(key) for key in window.readings}
        results: dict[str, EnergyResult] = {}
        for engine in window.engines:
            plan = self.plan(engine)
            if plan.source is None:
                results[engine] = EnergyResult(reason=plan.reason)
                continue
            sharing = [e for e in window.engines if _overlap(plan, self.plan(e))]
            scope = plan.scope
            if len(sharing) > 1:
                scope = f"{scope}; shared by the engines that ran together ({', '.join(sharing)})"
            result = _window_result(
                self._source_name(plan.source),
                _only(window.readings[plan.source], plan.devices),
                _only(ends[plan.source], plan.devices),
                scope,
                duration,
            )
            results[engine] = replace(result, engines=tuple(sharing)) if result.measured else result
        return results

    def _read(self, key: str) -> list[CounterReading] | str:
        source = self._source(key)
        if isinstance(source, str):
            return source
        try:
            return source.read()
        except EnergyUnavailable as error:
            return str(error)
        except Exception as error:  # noqa: BLE001 - energy is a figure beside the run, never its end
            return f"{source.name} failed ({type(error).__name__}: {error})"

    def _source_name(self, key: str) -> str:
        source = self._sources.get(key)
        return source.name if source is not None and not isinstance(source, str) else key

    def close(self) -> None:
        for source in self._sources.values():
            if not isinstance(source, str):
                source.close()
        self._sources.clear()
        self._plans.clear()


def _overlap(one: EnergyPlan, other: EnergyPlan) -> bool:
    """Whether two engines' figures count some device in common."""
    if one.source != other.source:
        return False
    return one.devices is None or other.devices is None or bool(set(one.devices) & set(other.devices))


def _only(
    readings: list[CounterReading] | str, devices: tuple[str, ...] | None
) -> list[CounterReading] | str:
    if isinstance(readings, str) or devices is None:
        return readings
    return [r for r in readings if r.device in devices]


def _scope(key: str, devices: tuple[str, ...], host: str | None) -> str:
    if key == "rapl":
        return (
            f"{len(devices)} CPU package(s) of this machine: everything running on it, "
            "not only the engine"
        )
    where = "this machine" if key == "nvml" else f"{host} (dcgm-exporter)"
    return (
        f"all {len(devices)} GPU(s) of {where}: which ones the engine uses is not known, "
        "so they are counted as shared GPUs"
    )


def _window_result(
    source: str,
    start: list[CounterReading] | str,
    end: list[CounterReading] | str,
    scope: str | None,
    duration: float,
) -> EnergyResult:
    if isinstance(start, str) or isinstance(end, str):
        return EnergyResult(reason=start if isinstance(start, str) else str(end))
    before = {r.device: r for r in start}
    total = 0.0
    methods = set()
    devices = []
    for reading in end:
        first = before.get(reading.device)
        if first is None:
            return EnergyResult(reason=f"{reading.device} appeared during the step")
        spent = joules_between(first.joules, reading.joules, reading.wrap_j)
        if spent is None:
            return EnergyResult(
                reason=f"the energy counter of {reading.device} went backwards "
                "(driver reloaded or GPU reset during the step)"
            )
        total += spent
        methods.add(reading.method)
        devices.append(reading.device)
    if total == 0.0 and duration > 0:
        # Hardware at work never spends nothing: the source did not update inside the window.
        return EnergyResult(
            reason=f"the energy counters did not move during the step ({duration:.1f} s): "
            f"{source} updates less often than that"
        )
    method = (
        COUNTER
        if methods == {COUNTER}
        else POWER_SAMPLES
        if methods == {POWER_SAMPLES}
        else (f"{COUNTER} and {POWER_SAMPLES}")
    )
    return EnergyResult(
        joules=total,
        method=method,
        source=source,
        devices=tuple(devices),
        scope=scope,
        duration_s=duration,
    )
