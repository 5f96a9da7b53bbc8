"""The product's energy meter (services/telemetry/energy) on a real NVIDIA GPU (issue 33).

An "engine" process runs bf16 matmuls on GPU --device with `--port P` in its command line, as a
served engine's command line names its port. The meter must tie the GPU to that process through
NVML's process list, measure one window with NVML's total-energy counter, and agree with the
counter read directly over the same window; the power samples integrated over the window are
printed beside it. A second window after the load has stopped gives the idle figure.

    python -m benchmarks.gpu_meter_check [--seconds 10] [--device 0] [--port 18080]
    python -m benchmarks.gpu_meter_check --load-only 40 --port 18181   # the load alone

Needs nvidia-ml-py, torch with CUDA, and the product's light dependencies (httpx2, orjson,
prometheus-client). Prints one JSON object, also to $OUT/gpu_meter_check.json when OUT is set,
and exits 1 when a check fails, 2 when there is no GPU.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

from benchmarks.gpu_energy_check import trapezoid
from services.telemetry.energy.meter import EnergyMeter

LOAD = """
import sys, time, torch
seconds = float(sys.argv[sys.argv.index("--seconds") + 1])
device = torch.device("cuda:" + sys.argv[sys.argv.index("--device") + 1])
a = torch.randn(8192, 8192, device=device, dtype=torch.bfloat16)
b = torch.randn(8192, 8192, device=device, dtype=torch.bfloat16)
c = torch.empty_like(a)
torch.matmul(a, b, out=c); torch.cuda.synchronize(device)
print("ready", flush=True)
end = time.monotonic() + seconds
while time.monotonic() < end:
    for _ in range(20):
        torch.matmul(a, b, out=c)
    torch.cuda.synchronize(device)
"""


def window(meter: EnergyMeter, nvml, handle, seconds: float) -> dict:  # type: ignore[no-untyped-def]
    samples: list[tuple[float, float]] = []
    stop = threading.Event()

    def sample() -> None:
        while not stop.is_set():
            samples.append((time.monotonic(), nvml.nvmlDeviceGetPowerUsage(handle) / 1000.0))
            time.sleep(0.05)

    sampler = threading.Thread(target=sample, daemon=True)
    counter_start = nvml.nvmlDeviceGetTotalEnergyConsumption(handle)
    opened = meter.begin(["engine"])
    sampler.start()
    time.sleep(seconds)
    result = meter.end(opened)["engine"]
    counter_end = nvml.nvmlDeviceGetTotalEnergyConsumption(handle)
    stop.set()
    sampler.join()
    direct = (counter_end - counter_start) / 1000.0
    return {
        "meter_joules": result.joules,
        "meter_method": result.method,
        "meter_scope": result.scope,
        "meter_devices": list(result.devices),
        "meter_reason": result.reason,
        "meter_duration_s": result.duration_s,
        "counter_joules": direct,
        "integrated_joules": trapezoid(samples),
        "samples": len(samples),
        "mean_watts": direct / seconds if seconds else None,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--device", type=int, default=0)
    parser.add_argument("--port", type=int, default=18080)
    parser.add_argument(
        "--load-only",
        type=float,
        metavar="S",
        help="only run the engine-like GPU load for S seconds, --port in its command line "
        "(benchmarks/gpu_bench_energy.sh runs a benchmark beside it)",
    )
    args = parser.parse_args()
    if args.load_only is not None:
        command = [sys.executable, "-c", LOAD, "--port", str(args.port), "--device", str(args.device)]
        return subprocess.call([*command, "--seconds", str(args.load_only)])
    try:
        # Optional: without NVML the check says so and exits 2.
        import pynvml as nvml

        nvml.nvmlInit()
        handle = nvml.nvmlDeviceGetHandleByIndex(args.device)
    except Exception as error:  # noqa: BLE001 - no NVML or no GPU: said, exit 2
        print(f"gpu_meter_check: no NVIDIA GPU here ({error})", file=sys.stderr)
        return 2

    load = subprocess.Popen(
        [
            sys.executable,
            "-c",
            LOAD,
            "--port",
            str(args.port),
            "--device",
            str(args.device),
            "--seconds",
            str(args.seconds + 20),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    report: dict = {"gpu": nvml.nvmlDeviceGetName(handle), "driver": nvml.nvmlSystemGetDriverVersion()}
    try:
        assert load.stdout is not None
        if load.stdout.readline().strip() != "ready":
            print("gpu_meter_check: the load process did not start", file=sys.stderr)
            return 1
        meter = EnergyMeter({"engine": f"http://127.0.0.1:{args.port}/v1"})
        plan = meter.plan("engine")
        report["plan"] = {"source": plan.source, "scope": plan.scope, "devices": plan.devices}
        report["loaded"] = window(meter, nvml, handle, args.seconds)
    finally:
        load.terminate()
        load.wait(30)
    time.sleep(3)  # the clocks come down
    idle_meter = EnergyMeter({"engine": f"http://127.0.0.1:{args.port}/v1"})
    report["idle"] = window(idle_meter, nvml, handle, min(args.seconds, 5.0))
    report["idle"]["plan_scope"] = idle_meter.plan("engine").scope

    loaded = report["loaded"]
    checks = {
        "the meter ties the GPU to the engine's process": "running the engine's processes"
        in (report["plan"]["scope"] or ""),
        "the meter measured with NVML's counter": loaded["meter_joules"] is not None
        and "counter" in (loaded["meter_method"] or ""),
        "the meter agrees with the counter read directly (5%)": loaded["meter_joules"] is not None
        and abs(loaded["meter_joules"] - loaded["counter_joules"]) <= 0.05 * loaded["counter_joules"],
        "a loaded GPU draws more than an idle one": loaded["counter_joules"] / args.seconds
        > report["idle"]["counter_joules"] / min(args.seconds, 5.0),
        "with no engine process, all GPUs are counted as shared": "shared GPUs"
        in (report["idle"]["plan_scope"] or ""),
    }
    report["checks"] = checks
    text = json.dumps(report, indent=2, default=str)
    print(text)
    if os.environ.get("OUT"):
        Path(os.environ["OUT"], "gpu_meter_check.json").write_text(text)
    for name, ok in checks.items():
        print(f"{'PASS' if ok else 'FAIL'}: {name}")
    return 0 if all(checks.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
