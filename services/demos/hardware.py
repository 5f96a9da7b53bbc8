"""The hardware side of the decode-bound demo: a quick memory-bandwidth measurement of
this machine, and the planner's roofline for an engine's model and weights."""

from __future__ import annotations

import dataclasses
import ipaddress
import time
from dataclasses import dataclass
from urllib.parse import urlsplit

import numpy as np

from services.planner import memory
from services.planner.catalog import get_gpu, get_kv_format, get_model, get_weight_format
from services.planner.presets import GGUF_FILE_TYPES
from services.planner.roofline import DecodePoint, Roofline
from services.planner.specs import GpuSpec

THIS_MACHINE = "this-machine"
#: Peak compute of "this machine" is unknown, so its roofline is the memory bound alone
#: (compute time is taken as nil: the bound is an upper limit, never an estimate).
_UNKNOWN_COMPUTE_TFLOPS = 1e9


@dataclass(frozen=True)
class Bandwidth:
    bytes_per_s: float
    #: How it was obtained, in words for the slide.
    source: str
    measured: bool


def measure_copy_bandwidth(megabytes: int = 256, repeats: int = 5) -> Bandwidth:
    """Copy a `megabytes` array `repeats` times; the best copy's read + write bytes per second.
    Pages are touched first so the timing sees memory, not page faults."""
    elements = megabytes * 1_000_000 // 8
    source = np.ones(elements, dtype=np.float64)
    target = np.empty_like(source)
    np.copyto(target, source)
    best = float("inf")
    for _ in range(max(1, repeats)):
        started = time.perf_counter()
        np.copyto(target, source)
        best = min(best, time.perf_counter() - started)
    moved = 2 * source.nbytes
    del source, target
    rate = moved / best
    return Bandwidth(
        rate, f"measured here by copying {megabytes} MB: {rate / 1e9:.1f} GB/s (read + write)", True
    )


def gpu_bandwidth(gpu_key: str) -> Bandwidth:
    gpu = get_gpu(gpu_key)
    return Bandwidth(
        gpu.bandwidth_bytes_s, f"{gpu.name}: {gpu.bandwidth_bytes_s / 1e12:.2f} TB/s (datasheet)", False
    )


def is_local_url(url: str) -> bool:
    host = urlsplit(url).hostname or ""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@dataclass(frozen=True)
class EngineWeights:
    """Bytes a decode step must stream for one engine's model, and where the figure came from."""

    model_key: str
    weight_format: str
    weight_bytes: float
    source: str


def engine_weights(
    model_key: str, file_bytes: int | None, file_type: str | None, default_format: str | None
) -> EngineWeights:
    """The engine's own report (llama.cpp: the model file's size and type) when there is one,
    else the planner's size of `model_key` in `default_format` (the model's native format)."""
    model = get_model(model_key)
    if file_bytes:
        fmt_key = GGUF_FILE_TYPES.get(f"MOSTLY_{(file_type or '').upper()}") or model.native_dtype
        model = dataclasses.replace(model, file_weight_bytes=file_bytes, file_dtype=fmt_key)
        weights = memory.weight_bytes(model, get_weight_format(fmt_key))
        label = get_weight_format(fmt_key).label if file_type else "its file"
        return EngineWeights(
            model_key,
            fmt_key,
            weights.total,
            f"{weights.total / 1e6:.1f} MB: the model file the engine reports ({label})",
        )
    fmt_key = default_format or model.native_dtype
    fmt = get_weight_format(fmt_key)
    weights = memory.weight_bytes(model, fmt)
    return EngineWeights(
        model_key,
        fmt_key,
        weights.total,
        f"{weights.total / 1e6:.1f} MB: the planner's {model.name} in {fmt.label}",
    )


def decode_point(
    bandwidth: Bandwidth, gpu_key: str | None, weights: EngineWeights, batch: int, context: int
) -> DecodePoint:
    """The planner's decode ceiling for this engine's weights on this hardware."""
    model = get_model(weights.model_key)
    if weights.weight_bytes:
        model = dataclasses.replace(
            model, file_weight_bytes=int(weights.weight_bytes), file_dtype=weights.weight_format
        )
    fmt = get_weight_format(weights.weight_format)
    if gpu_key and gpu_key != THIS_MACHINE:
        gpu = dataclasses.replace(get_gpu(gpu_key), bandwidth_bytes_s=bandwidth.bytes_per_s)
    else:
        gpu = GpuSpec(
            key=THIS_MACHINE,
            name="this machine",
            memory_bytes=0,
            bandwidth_bytes_s=bandwidth.bytes_per_s,
            bf16_tflops=_UNKNOWN_COMPUTE_TFLOPS,
            vendor="cpu",
        )
    roofline = Roofline(model, gpu, fmt, get_kv_format("auto"), memory.weight_bytes(model, fmt), 1)
    return roofline.decode(max(1, batch), max(1, context))
