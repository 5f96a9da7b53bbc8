"""Client CPU per streamed token, whole commands side by side: `shootout bench` (the
product end to end: the load generator, the database writer, the engine-metrics recorder)
against NVIDIA AIPerf (`aiperf profile`), in the same run, on the same scripted server.

Marginal method (issue 4): CPU of the command's whole process tree (user + system, children
included) for 1,024 requests minus that for 128 requests, divided by the difference in
streamed tokens; start-up, imports and tokenizer loading cancel out. 128 concurrent streams
of 256 tokens, ITL 10 ms. Both tools run with their defaults (both scrape the server's
/metrics); AIPerf also re-tokenizes every answer with the model's tokenizer, as it does by
default.

AIPerf goes in a virtual environment of its own (its dependencies clash with the app's):
    python -m venv /tmp/aiperf-venv && /tmp/aiperf-venv/bin/pip install aiperf==0.13.0
    .venv/bin/python -m benchmarks.bench_vs_aiperf --aiperf /tmp/aiperf-venv/bin/aiperf
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

from benchmarks import peers
from benchmarks.peers import run_tree
from tests.support.scripted_server import ScriptedServer


def run_ours(
    server: ScriptedServer, model: str, requests: int, args: argparse.Namespace, folder: Path
) -> tuple[float, int]:
    out = folder / f"ours-{requests}.json"
    env = {
        **os.environ,
        "SHOOTOUT_DATA_DIR": str(folder),
        "SHOOTOUT_DATABASE_URL": f"sqlite:///{folder / 'db.sqlite'}",
    }
    command = [
        sys.executable,
        str(ROOT / "cli.py"),
        "bench",
        "--url",
        server.base_url,
        "--model",
        model,
        "--kind",
        "vllm",
        "--concurrency",
        str(args.concurrency),
        "--requests",
        str(requests),
        "--input-len",
        "16",
        "--output-len",
        str(args.tokens),
        "--json",
        str(out),
        "--quiet",
        *args.ours_extra,
    ]
    used = run_tree(command, env=env, cwd=ROOT, stdout=subprocess.DEVNULL)
    block = next(iter(json.loads(out.read_text())["engines"].values()))
    assert block["failed"] == 0, block["errors_by_class"]
    return used, block["output_tokens"]


def run_aiperf(
    server: ScriptedServer, model: str, requests: int, args: argparse.Namespace, folder: Path
) -> tuple[float, int]:
    load = peers.PeerLoad(server, model, requests, args.tokens, args.concurrency, folder)
    run = peers.aiperf(args.aiperf, load)
    assert run.completed == requests, f"AIPerf completed {run.completed} of {requests}"
    # Streamed tokens: the server's own count of what it sent (AIPerf's count is its tokenizer's).
    return run.cpu_s, run.output_tokens


def measure(name: str, runner, server: ScriptedServer, args: argparse.Namespace) -> float:  # type: ignore[no-untyped-def]
    model = server.model(ttft=20, itl=args.itl, tokens=args.tokens)
    with tempfile.TemporaryDirectory() as folder:
        small = runner(server, model, args.small, args, Path(folder))
        large = runner(server, model, args.large, args, Path(folder))
    per_token = (large[0] - small[0]) / max(1, large[1] - small[1])
    print(
        f"  {name:32s} {per_token * 1e6:7.2f} µs/token  (process tree CPU {small[0]:.2f} s for {small[1]} tokens, "
        f"{large[0]:.2f} s for {large[1]})",
        flush=True,
    )
    return per_token


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--aiperf", default="/tmp/aiperf-venv/bin/aiperf")
    parser.add_argument("--concurrency", type=int, default=128)
    parser.add_argument("--tokens", type=int, default=256)
    parser.add_argument("--itl", type=float, default=10.0)
    parser.add_argument("--small", type=int, default=128)
    parser.add_argument("--large", type=int, default=1024)
    parser.add_argument(
        "--repeat",
        type=int,
        default=3,
        help="rounds, each measuring every tool once (this VM's noise is about ±1 µs a run)",
    )
    parser.add_argument("--skip-aiperf", action="store_true")
    args = parser.parse_args()
    tools = [
        ("shootout without engine metrics", run_ours, ["--no-engine-metrics"]),
        ("shootout", run_ours, []),
    ]
    if not args.skip_aiperf:
        tools.append(("aiperf", run_aiperf, []))
    figures: dict[str, list[float]] = {name: [] for name, _, _ in tools}
    started = time.monotonic()
    with ScriptedServer() as server:
        for round_number in range(1, args.repeat + 1):
            print(f"round {round_number}", flush=True)
            for name, runner, extra in tools:
                args.ours_extra = extra
                figures[name].append(measure(name, runner, server, args))
    print(f"median of {args.repeat} rounds (min, max):")
    for name, values in figures.items():
        print(
            f"  {name:32s} {statistics.median(values) * 1e6:7.2f} µs/token  "
            f"({min(values) * 1e6:.2f}, {max(values) * 1e6:.2f})"
        )
    if not args.skip_aiperf:
        ratio = statistics.median(figures["aiperf"]) / statistics.median(figures["shootout"])
        print(
            f"AIPerf uses {ratio:.1f}x the CPU per token of shootout (medians; concurrency {args.concurrency}, "
            f"{args.tokens}-token answers, ITL {args.itl:g} ms; {time.monotonic() - started:.0f} s)"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
