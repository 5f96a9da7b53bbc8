"""Load generation over Ray (issue 15): is a Ray run at moderate load client-bound?

A local two-node Ray cluster (tests/support/ray_cluster.py, one CPU each) and the scripted
server on this host; open loop (Poisson) at --rate for --duration seconds, then a closed
loop of --concurrency streams for as long, both with 2 Ray workers. Prints the self-check's
figures (loop lag, send lateness, CPU per worker), the verdict and requests/s.

    .venv/bin/python -m benchmarks.bench_ray [--rate 50] [--concurrency 16] [--duration 8]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

from services.bench.arrivals import LoadSpec
from services.bench.runner import execute_load
from services.bench.spec import EngineTarget
from services.bench.stats import summarize_engine
from services.bench.workloads import WorkloadSpec
from tests.support.ray_cluster import ray_cluster
from tests.support.scripted_server import ScriptedServer


def one(server: ScriptedServer, address: str, label: str, load: LoadSpec) -> dict:
    engine = EngineTarget(
        name="scripted",
        base_url=server.base_url,
        kind="vllm",
        model=server.model(ttft=20, itl=5, tokens=32),
    )
    outcome = execute_load(
        engine, WorkloadSpec(input_len=16, output_len=32), load, workers=2, ray_address=address
    )
    summary = summarize_engine(outcome.records, fixed_output=True)
    generator = outcome.generator
    measured = [r for r in outcome.measured if r.start_s is not None and r.e2e_s is not None]
    span = max(r.start_s + r.e2e_s for r in measured) - min(r.start_s for r in measured)
    return {
        "load": label,
        "sent": summary["sent"],
        "completed": summary["completed"],
        "requests_per_s": round(summary["completed"] / span, 1),
        "workers": generator.get("workers"),
        "loop_lag_ms": generator.get("loop_lag_ms"),
        "send_lateness_ms": generator.get("send_lateness_ms"),
        "cpu_share": generator.get("cpu_share"),
        "client_bound": generator.get("client_bound"),
        "evidence": generator.get("evidence"),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rate", type=float, default=50.0)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--duration", type=float, default=8.0)
    args = parser.parse_args()
    rows = []
    with ScriptedServer() as server, ray_cluster(nodes=2) as cluster:
        loads = {
            f"rate {args.rate:g}/s": LoadSpec(
                mode="rate",
                rate=args.rate,
                concurrency=None,
                requests=None,
                duration_s=args.duration,
                seed=1,
            ),
            f"concurrency {args.concurrency}": LoadSpec(
                concurrency=args.concurrency, requests=None, duration_s=args.duration
            ),
            f"rate {args.rate:g}/s, {int(args.rate * args.duration / 2)} requests": LoadSpec(
                mode="rate",
                rate=args.rate,
                concurrency=None,
                requests=int(args.rate * args.duration / 2),
                seed=1,
            ),
        }
        for label, load in loads.items():
            rows.append(one(server, cluster.address, label, load))
            print(json.dumps(rows[-1]), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
