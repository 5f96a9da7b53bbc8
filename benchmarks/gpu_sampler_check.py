"""Check the NVML sampler on a real NVIDIA GPU while a torch workload allocates, computes
and frees memory. For a machine with a GPU (figures on an H200: docs/figures.md).

    .venv/bin/pip install torch          # a CUDA build; any recent one
    .venv/bin/python -m benchmarks.gpu_sampler_check [--gib 4] [--device 0] [--hz 10]

It samples GPU `--device` through services.telemetry.gpu.NvmlSampler at --hz in a thread
while the main thread: idles 2 s, allocates --gib GiB, runs matmuls for 3 s, allocates as
much again, frees everything (torch.cuda.empty_cache), idles 2 s. It prints the timeline
and PASS/FAIL per check, writes the samples as JSON to $OUT/gpu_sampler_check.json when
OUT is set, and exits 1 if a check fails:

- the sampler sees the GPU (name, driver), every field it reads or which ones it skipped;
- used memory rises by at least 90 % of what torch allocated, and falls back after the free;
- this process is listed among the GPU's processes with at least the allocation (where
  the driver reports per-process memory; containers without the host PID namespace may
  show none, which is reported, not failed);
- utilisation is above 0 during the matmuls;
- one sample costs under 2 ms of CPU.
"""

from __future__ import annotations

import argparse
import json
import os
import threading
import time
from pathlib import Path

from services.telemetry.gpu import NvmlSampler

ROOT = Path(__file__).resolve().parent.parent

GIB = 2**30


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gib", type=float, default=4.0, help="GiB per allocation step")
    parser.add_argument("--device", type=int, default=0)
    parser.add_argument("--hz", type=float, default=10.0)
    args = parser.parse_args()

    sampler = NvmlSampler()
    state = sampler.state()
    print(f"sampler: {state.message}")
    if not state.available:
        print("FAIL no GPU visible to NVML")
        return 1
    gpu = next((g for g in state.gpus if g.index == args.device), None)
    if gpu is None:
        print(f"FAIL no GPU {args.device}; have {[g.index for g in state.gpus]}")
        return 1
    print(f"GPU {gpu.index}: {gpu.name}, {gpu.memory_total_bytes / GIB:.1f} GiB, uuid {gpu.uuid}")
    try:
        # Optional and heavy: a CUDA build of torch only where the check runs.
        import torch
    except ImportError:
        print("FAIL torch is not installed here (pip install torch, a CUDA build)")
        return 1
    if not torch.cuda.is_available():
        print("FAIL torch sees no CUDA device")
        return 1
    device = torch.device(f"cuda:{args.device}")

    samples: list[dict] = []
    phases: list[tuple[float, str]] = []
    stop = threading.Event()
    cpu_per_sample: list[float] = []

    def sample_loop() -> None:
        while not stop.is_set():
            cpu0 = time.thread_time()
            snapshot = sampler.sample([args.device])[0]
            cpu_per_sample.append(time.thread_time() - cpu0)
            samples.append(
                {
                    "ts": snapshot.ts,
                    "values": snapshot.values,
                    "missing": snapshot.missing,
                    "processes": snapshot.processes,
                    "error": snapshot.error,
                }
            )
            stop.wait(1.0 / args.hz)

    def phase(name: str) -> None:
        phases.append((time.time(), name))
        print(f"  {name}")

    thread = threading.Thread(target=sample_loop, daemon=True)
    thread.start()
    elements = int(args.gib * GIB / 4)
    phase("idle")
    time.sleep(2)
    phase(f"allocate {args.gib:g} GiB")
    first = torch.empty(elements, dtype=torch.float32, device=device).fill_(1.0)
    torch.cuda.synchronize(device)
    time.sleep(1)
    phase("matmuls")
    a = torch.randn(8192, 8192, device=device)
    deadline = time.time() + 3
    while time.time() < deadline:
        (a @ a).sum().item()
    phase(f"allocate {args.gib:g} GiB more")
    second = torch.empty(elements, dtype=torch.float32, device=device).fill_(2.0)
    torch.cuda.synchronize(device)
    time.sleep(1.5)
    allocated_peak = torch.cuda.memory_allocated(device)
    phase("free")
    del first, second, a
    torch.cuda.synchronize(device)
    torch.cuda.empty_cache()
    time.sleep(2)
    stop.set()
    thread.join()

    def at(start: float, end: float, signal: str) -> list[float]:
        return [
            s["values"][signal]
            for s in samples
            if start <= s["ts"] < end and s["values"].get(signal) is not None
        ]

    bounds = {
        name: (t, phases[i + 1][0] if i + 1 < len(phases) else time.time())
        for i, (t, name) in enumerate(phases)
    }
    names = [name for _, name in phases]
    idle_used = at(*bounds[names[0]], "gpu_memory_used_bytes")
    peak_used = at(*bounds[names[3]], "gpu_memory_used_bytes")
    after_used = at(bounds[names[4]][0] + 1.0, bounds[names[4]][1], "gpu_memory_used_bytes")
    busy_util = at(*bounds[names[2]], "gpu_utilization_pct")

    print("\n   t(s)  used GiB  util %  power W  temp C  SM MHz  processes")
    t0 = samples[0]["ts"] if samples else 0
    for s in samples[:: max(1, len(samples) // 40)]:
        v = s["values"]

        def fmt(key: str, scale: float = 1.0, digits: int = 0, v: dict = v) -> str:
            return "-" if v.get(key) is None else f"{v[key] * scale:.{digits}f}"

        procs = ", ".join(
            f"{p.get('name')}:{(p.get('used_bytes') or 0) / GIB:.1f}" for p in s["processes"]
        )
        print(
            f"  {s['ts'] - t0:5.1f}  {fmt('gpu_memory_used_bytes', 1 / GIB, 2):>8}  {fmt('gpu_utilization_pct'):>6}"
            f"  {fmt('gpu_power_w', 1, 0):>7}  {fmt('gpu_temperature_c'):>6}  {fmt('gpu_sm_clock_mhz'):>6}  {procs}"
        )

    failures = 0

    def check(ok: bool, text: str) -> None:
        nonlocal failures
        failures += not ok
        print(f"{'PASS' if ok else 'FAIL'} {text}")

    print()
    skipped = sorted(samples[-1]["missing"]) if samples else []
    print(f"fields skipped on this GPU: {', '.join(skipped) or 'none'}")
    check(
        bool(samples) and all(s["error"] is None for s in samples),
        f"{len(samples)} samples, none failed",
    )
    allocated = 2 * elements * 4
    rise = (max(peak_used) - min(idle_used)) if peak_used and idle_used else 0
    check(
        rise >= 0.9 * allocated,
        f"memory rose {rise / GIB:.2f} GiB for {allocated / GIB:.2f} GiB allocated "
        f"(torch peak {allocated_peak / GIB:.2f} GiB)",
    )
    fall = (max(peak_used) - min(after_used)) if peak_used and after_used else 0
    check(fall >= 0.9 * allocated, f"memory fell {fall / GIB:.2f} GiB after the free")
    mine = [p for s in samples for p in s["processes"] if p.get("pid") == os.getpid()]
    if mine:
        most = max((p.get("used_bytes") or 0) for p in mine)
        check(most >= allocated, f"this process listed with up to {most / GIB:.2f} GiB")
    else:
        listed = {p.get("pid") for s in samples for p in s["processes"]}
        print(
            f"NOTE this process ({os.getpid()}) is not among the GPU's processes {sorted(listed)} "
            "(other PID namespace?)"
        )
    check(
        bool(busy_util) and max(busy_util) > 0,
        f"utilisation during matmuls up to {max(busy_util or [0]):.0f} %",
    )
    cost_ms = 1000 * sorted(cpu_per_sample)[len(cpu_per_sample) // 2] if cpu_per_sample else 0.0
    check(cost_ms < 2.0, f"one sample costs {cost_ms:.2f} ms CPU (median)")

    out = os.environ.get("OUT")
    if out:
        Path(out).mkdir(parents=True, exist_ok=True)
        (Path(out) / "gpu_sampler_check.json").write_text(
            json.dumps({"gpu": gpu.name, "phases": phases, "samples": samples}, default=str)
        )
    sampler.close()
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
