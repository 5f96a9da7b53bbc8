"""The normalised signals: one name per quantity, whatever engine or GPU it comes from.

A signal that a source does not expose is absent (with a reason such as "not reported by
llama.cpp"); a signal that is exposed but has no data in the current window (no request
finished, no prompt token arrived) is None. Neither is ever shown as zero.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

SourceGroup = Literal["engine", "gpu"]


@dataclass(frozen=True)
class SignalInfo:
    name: str
    title: str
    unit: str
    group: SourceGroup


def _latency(base: str, title: str) -> list[SignalInfo]:
    return [
        SignalInfo(f"{base}_p50_s", f"{title} p50", "s", "engine"),
        SignalInfo(f"{base}_p90_s", f"{title} p90", "s", "engine"),
        SignalInfo(f"{base}_p99_s", f"{title} p99", "s", "engine"),
        SignalInfo(f"{base}_mean_s", f"{title} mean", "s", "engine"),
    ]


ENGINE_SIGNALS: list[SignalInfo] = [
    SignalInfo("kv_cache_usage", "KV-cache usage", "ratio", "engine"),
    SignalInfo("prefix_cache_hit_rate", "Prefix-cache hit rate", "ratio", "engine"),
    SignalInfo("requests_running", "Requests running", "requests", "engine"),
    SignalInfo("requests_waiting", "Requests waiting", "requests", "engine"),
    SignalInfo("prompt_tokens_per_s", "Prompt tokens/s", "tokens/s", "engine"),
    SignalInfo("generation_tokens_per_s", "Generated tokens/s", "tokens/s", "engine"),
    *_latency("ttft", "TTFT"),
    *_latency("itl", "ITL"),
    *_latency("e2e", "E2E latency"),
    SignalInfo("preemptions_per_s", "Preemptions/s", "1/s", "engine"),
    SignalInfo("spec_decode_acceptance", "Speculative acceptance", "ratio", "engine"),
]

GPU_SIGNALS: list[SignalInfo] = [
    SignalInfo("gpu_memory_used_bytes", "GPU memory used", "bytes", "gpu"),
    SignalInfo("gpu_memory_total_bytes", "GPU memory total", "bytes", "gpu"),
    SignalInfo("gpu_memory_reserved_bytes", "GPU memory reserved", "bytes", "gpu"),
    SignalInfo("gpu_utilization_pct", "GPU utilisation", "%", "gpu"),
    SignalInfo("gpu_memory_activity_pct", "Memory bandwidth activity", "%", "gpu"),
    SignalInfo("gpu_power_w", "Power", "W", "gpu"),
    SignalInfo("gpu_temperature_c", "Temperature", "°C", "gpu"),
    SignalInfo("gpu_sm_clock_mhz", "SM clock", "MHz", "gpu"),
    SignalInfo("gpu_memory_clock_mhz", "Memory clock", "MHz", "gpu"),
    SignalInfo("gpu_pcie_tx_bytes_per_s", "PCIe TX", "bytes/s", "gpu"),
    SignalInfo("gpu_pcie_rx_bytes_per_s", "PCIe RX", "bytes/s", "gpu"),
]

#: What only a router (SGLang's smg) reports about itself: how many requests it routes, how
#: many of its workers are healthy, and its own time per request. Known by name and unit, but
#: not engine signals: an engine never lists them as "not reported".
ROUTER_SIGNALS: list[SignalInfo] = [
    SignalInfo("requests_per_s", "Requests/s", "1/s", "engine"),
    SignalInfo("workers_healthy", "Healthy workers", "workers", "engine"),
    SignalInfo("workers_total", "Workers", "workers", "engine"),
    *_latency("router_request", "Router request time"),
]

SIGNALS: dict[str, SignalInfo] = {s.name: s for s in ENGINE_SIGNALS + GPU_SIGNALS + ROUTER_SIGNALS}
ENGINE_SIGNAL_NAMES: tuple[str, ...] = tuple(s.name for s in ENGINE_SIGNALS)
GPU_SIGNAL_NAMES: tuple[str, ...] = tuple(s.name for s in GPU_SIGNALS)


def signal_names(group: SourceGroup) -> tuple[str, ...]:
    return ENGINE_SIGNAL_NAMES if group == "engine" else GPU_SIGNAL_NAMES


def not_reported(label: str) -> str:
    """The one wording for a signal a source does not expose."""
    return f"not reported by {label}"
