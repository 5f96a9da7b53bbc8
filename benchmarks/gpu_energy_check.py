"""NVML's energy counter against integrated power samples, over the same window, on a machine
with an NVIDIA GPU (issue 33). Standalone: only nvidia-ml-py is needed.

    pip install nvidia-ml-py            # torch too, for a load (else the GPUs are sampled idle)
    python -m benchmarks.gpu_energy_check [--seconds 30] [--interval 0.05] [--gpu 0] [--json]

For each GPU it reads `nvmlDeviceGetTotalEnergyConsumption` (mJ) at the window's start and end
and samples `nvmlDeviceGetPowerUsage` (mW) every --interval in between, integrating the samples
by the trapezoid rule (as services/telemetry/energy does where the counter is missing). With
torch and CUDA present, a matrix-multiplication load runs on every checked GPU from a second
before the window until its end; without them the GPUs are sampled as they are. It prints both
figures per GPU and their ratio (integrated / counter). Note: on many recent boards (A100,
H100) nvmlDeviceGetPowerUsage is a one-second average, so a load that changes faster than that
is smoothed in the samples but not in the counter.

Exits 2 with a message when NVML or a GPU is not there, 1 when no GPU has the counter.
"""

from __future__ import annotations

import argparse
import importlib
import itertools
import json
import sys
import threading
import time
from typing import Any


def trapezoid(samples: list[tuple[float, float]]) -> float:
    total = 0.0
    for (t0, w0), (t1, w1) in itertools.pairwise(samples):
        total += (t1 - t0) * (w0 + w1) / 2.0
    return total


def start_load(indices: list[int], stop: threading.Event) -> tuple[str, list[threading.Thread]]:
    """Matmuls on each GPU until `stop`; what runs, in words, and the threads to join (a CUDA
    thread still running when the interpreter exits aborts it: seen on an H200)."""
    try:
        torch = importlib.import_module("torch")
    except ImportError:
        return "idle (torch is not installed)", []
    if not torch.cuda.is_available():
        return "idle (torch sees no CUDA device)", []

    def work(index: int) -> None:
        device = torch.device(f"cuda:{index}")
        a = torch.randn(8192, 8192, device=device, dtype=torch.bfloat16)
        b = torch.randn(8192, 8192, device=device, dtype=torch.bfloat16)
        c = torch.empty_like(a)
        while not stop.is_set():
            for _ in range(20):
                torch.matmul(a, b, out=c)
            torch.cuda.synchronize(device)

    # NVML's and CUDA's indices agree when CUDA_DEVICE_ORDER=PCI_BUS_ID (the usual case).
    threads = [threading.Thread(target=work, args=(index,), daemon=True) for index in indices]
    for thread in threads:
        thread.start()
    return f"bf16 8192x8192 matmuls (torch {torch.__version__})", threads


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=30.0, help="length of the window")
    parser.add_argument("--interval", type=float, default=0.05, help="seconds between power samples")
    parser.add_argument("--gpu", type=int, action="append", help="GPU index (repeat; default all)")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON too")
    args = parser.parse_args()
    try:
        # Optional: without NVML the check says so and exits 2 (tests put a fake in sys.modules).
        import pynvml
    except ImportError:
        print("no NVML here: pip install nvidia-ml-py", file=sys.stderr)
        return 2
    try:
        pynvml.nvmlInit()
    except Exception as error:  # noqa: BLE001 - LibraryNotFound, DriverNotLoaded, ...
        print(f"no NVIDIA GPU here: NVML did not start ({error})", file=sys.stderr)
        return 2
    try:
        count = pynvml.nvmlDeviceGetCount()
        indices = args.gpu if args.gpu else list(range(count))
        if count == 0 or any(not 0 <= i < count for i in indices):
            print(f"no NVIDIA GPU here to check: the driver sees {count}", file=sys.stderr)
            return 2
        return check(pynvml, indices, args)
    finally:
        pynvml.nvmlShutdown()


def check(pynvml: Any, indices: list[int], args: argparse.Namespace) -> int:
    handles = {i: pynvml.nvmlDeviceGetHandleByIndex(i) for i in indices}
    names = {i: str(pynvml.nvmlDeviceGetName(h)) for i, h in handles.items()}

    def counter(i: int) -> float | None:
        try:
            return pynvml.nvmlDeviceGetTotalEnergyConsumption(handles[i]) / 1000.0
        except pynvml.NVMLError as error:
            if i not in unsupported:
                unsupported[i] = str(error)
            return None

    unsupported: dict[int, str] = {}
    stop = threading.Event()
    load, workers = start_load(indices, stop)
    if not load.startswith("idle"):
        time.sleep(1.0)  # the load reaches its power before the window opens
    samples: dict[int, list[tuple[float, float]]] = {i: [] for i in indices}
    starts = {i: counter(i) for i in indices}
    window_start = time.monotonic()
    deadline = window_start + args.seconds
    while True:
        now = time.monotonic()
        for i in indices:
            try:
                milliwatts = pynvml.nvmlDeviceGetPowerUsage(handles[i])
            except pynvml.NVMLError:
                continue  # a board without a power reading: its row says no samples
            samples[i].append((time.monotonic(), milliwatts / 1000.0))
        if now >= deadline:
            break
        time.sleep(min(args.interval, max(0.0, deadline - now)))
    ends = {i: counter(i) for i in indices}
    window = time.monotonic() - window_start
    stop.set()
    for worker in workers:
        worker.join(timeout=60)
    results = []
    print(f"window {window:.2f} s, load: {load}, power sampled every {args.interval:g} s")
    for i in indices:
        integrated = trapezoid(samples[i])
        start, end = starts[i], ends[i]
        counted = end - start if start is not None and end is not None else None
        ratio = integrated / counted if counted else None
        watts = [w for _, w in samples[i]]
        row = {
            "gpu": i,
            "name": names[i],
            "counter_j": counted,
            "integrated_j": integrated,
            "ratio_integrated_to_counter": ratio,
            "samples": len(watts),
            "mean_w": sum(watts) / len(watts) if watts else None,
            "max_w": max(watts, default=None),
            "counter_unsupported": unsupported.get(i),
        }
        results.append(row)
        counter_text = (
            f"{counted:.1f} J" if counted is not None else f"not supported ({unsupported.get(i)})"
        )
        ratio_text = f"{ratio:.4f}" if ratio is not None else "-"
        print(
            f"GPU {i} {names[i]}: counter {counter_text}, power samples {integrated:.1f} J "
            f"({len(watts)} samples, mean {row['mean_w'] or 0:.1f} W, max {row['max_w'] or 0:.1f} W), "
            f"ratio {ratio_text}"
        )
    if args.json:
        print(
            json.dumps({"window_s": window, "load": load, "interval_s": args.interval, "gpus": results})
        )
    if all(r["counter_j"] is None for r in results):
        print(
            "no GPU here has NVML's energy counter: only power samples can measure it", file=sys.stderr
        )
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
