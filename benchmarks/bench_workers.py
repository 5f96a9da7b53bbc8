"""Load-generator workers (issue 15) against the scripted server, in one run:

1. capacity and client CPU: `shootout bench` end to end (database writer included)
   with 1 and with N workers, and the peers where their virtual environments exist
   (AIPerf: --aiperf; inference-perf: --inference-perf), and with --ray over a local
   2-node Ray cluster (2 actors; their CPU and the hub's count). Unpaced server (ITL 0), 128
   streams of 256 tokens for tokens/s and CPU per token, the same with 1-token answers for
   requests/s and CPU per request. CPU is the command's whole process tree (workers
   included), by the marginal method of benchmarks/bench_vs_aiperf.py (a large run minus a
   small one, so start-up and imports cancel out).
2. accuracy with 2 workers: concurrency 32, server TTFT 50 ms and ITL 10 ms; p50 TTFT and
   ITL against those (the server's truth), beside one worker's.
3. 2,000 concurrent streams held by 2 workers: lost requests (sent - completed - failed),
   the most streams in flight, peak RSS per worker.
4. what a worker adds: tokens/s with 1 and N workers against the server's canned stream
   (its bytes built once and resent whole, so the server's CPU per token is next to
   nothing and the client's cores are its own), each added worker's gain as a fraction of
   one worker's capacity, each worker's CPU share (over the measured phase), tokens/s per
   core the workers got (so a gain below 1 shows whether the pooling or missing cores cost
   it), and the server's share of the cores over the whole command (start-up included, so
   it reads low: `top` during a run shows the rest).

The server and the client share this machine's cores: figures from a 2-core VM are ratios
measured back to back, not absolutes.

    .venv/bin/python -m benchmarks.bench_workers [--workers 1,2] [--ray] [--aiperf PATH]
        [--inference-perf PATH] [--skip capacity,accuracy,streams,scaling]
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

from benchmarks import peers
from benchmarks.peers import parent_and_cpu_s, run_tree
from services.bench import selfcheck
from services.bench.arrivals import LoadSpec
from services.bench.runner import execute_load
from services.bench.spec import EngineTarget
from services.bench.stats import summarize_engine
from services.bench.workloads import WorkloadSpec
from tests.support.ray_cluster import ray_cluster
from tests.support.scripted_server import ScriptedServer, log_id_header, timing_errors


def _raise_file_limit() -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


# -- 1. capacity and CPU -------------------------------------------------------------------
def ours(
    server: ScriptedServer,
    model: str,
    requests: int,
    tokens: int,
    concurrency: int,
    workers: int,
    folder: Path,
    ray: str | None = None,
) -> tuple[float, dict]:
    out = folder / f"ours-{workers}-{requests}-{tokens}.json"
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
        str(concurrency),
        "--requests",
        str(requests),
        "--input-len",
        "16",
        "--output-len",
        str(tokens),
        "--json",
        str(out),
        "--quiet",
        "--no-engine-metrics",
        "--no-calibrate",
        "--workers",
        str(workers),
        *(["--ray", ray] if ray else []),
    ]
    # With Ray the load runs in actors (and a hub actor): their CPU counts with the command's.
    used = run_tree(command, ray_actors=bool(ray), env=env, cwd=ROOT, stdout=subprocess.DEVNULL)
    block = next(iter(json.loads(out.read_text())["engines"].values()))
    assert block["failed"] == 0, block["errors_by_class"]
    return used, block


def peer(
    runner: Callable[[str, peers.PeerLoad], peers.PeerRun], path: str, load: peers.PeerLoad
) -> tuple[float, dict]:
    run = runner(path, load)
    requests, tokens = load.requests, load.tokens
    # A per-token figure is only worth something if every token was streamed (peers.py).
    assert run.completed == requests, f"{run.completed} of {requests} requests completed"
    assert run.output_tokens == requests * tokens, f"{run.output_tokens} tokens, not {requests * tokens}"
    return run.cpu_s, {
        "output_tokens": run.output_tokens,
        "completed": run.completed,
        "output_throughput_tok_s": run.tok_s,
        "request_throughput_rps": run.req_s,
    }


def _measure_tool(
    args: argparse.Namespace, label: str, tool: object, server: ScriptedServer, folder: Path, ray: str
) -> dict | None:
    """One tool's figures: tokens/s and µs per token, requests/s and µs per request."""
    figures: dict = {}
    for tokens in (args.tokens, 1):
        model = server.model(ttft=0, itl=0, tokens=tokens)
        runs = []
        sizes = (args.small, args.large) if tokens > 1 else (args.small_1, args.large_1)
        for requests in sizes:
            try:
                if isinstance(tool, int):
                    runs.append(ours(server, model, requests, tokens, args.concurrency, tool, folder))
                elif tool == "ray":
                    runs.append(
                        ours(server, model, requests, tokens, args.concurrency, 2, folder, ray=ray)
                    )
                else:
                    runner, path = tool
                    load = peers.PeerLoad(server, model, requests, tokens, args.concurrency, folder)
                    runs.append(peer(runner, path, load))
            except (subprocess.CalledProcessError, AssertionError, OSError) as error:
                print(f"  {label}: failed ({error})", flush=True)
                return None
        (small_cpu, small), (large_cpu, large) = runs
        if tokens > 1:
            figures["us_per_token"] = (
                (large_cpu - small_cpu) / max(1, large["output_tokens"] - small["output_tokens"]) * 1e6
            )
            figures["tok_s"] = large["output_throughput_tok_s"]
            figures["generator"] = large.get("generator", {})
        else:
            figures["us_per_request"] = (
                (large_cpu - small_cpu) / max(1, large["completed"] - small["completed"]) * 1e6
            )
            figures["req_s"] = large["request_throughput_rps"]
    return figures


def _line(label: str, figures: dict) -> str:
    check = figures.get("generator") or {}
    found = selfcheck.state(check)
    bound = (
        "client-bound: " + "; ".join(check.get("evidence", []))
        if found == selfcheck.CLIENT_BOUND
        else selfcheck.unchecked_reason(check).join(("could not check (", ")"))
        if found == selfcheck.UNCHECKED
        else "generator kept up"
        if found
        else ""
    )
    return (
        f"  {label:22s} {figures['tok_s']:9.0f} tok/s {figures['us_per_token']:7.2f} µs/token   "
        f"{figures['req_s']:7.0f} req/s {figures['us_per_request']:8.1f} µs/request  {bound}"
    )


def capacity(args: argparse.Namespace) -> None:
    print(
        f"1. capacity and client CPU ({args.concurrency} streams; unpaced server; marginal CPU of "
        f"{args.large} minus {args.small} requests of {args.tokens} tokens, {args.large_1} minus "
        f"{args.small_1} of 1 token; {args.rounds} round(s), the tools interleaved)",
        flush=True,
    )
    tools: list[tuple[str, object]] = [(f"shootout {n} worker(s)", n) for n in args.workers]
    if args.ray:
        tools.append(("shootout Ray, 2 nodes", "ray"))
    if args.aiperf:
        tools.append(("aiperf", (peers.aiperf, args.aiperf)))
    if args.inference_perf:
        tools.append(("inference-perf", (peers.inference_perf, args.inference_perf)))
    rounds: dict[str, list[dict]] = {label: [] for label, _ in tools}
    with contextlib.ExitStack() as stack:
        server = stack.enter_context(ScriptedServer())
        folder = Path(stack.enter_context(tempfile.TemporaryDirectory()))
        address = ""
        if args.ray:
            address = stack.enter_context(ray_cluster(nodes=2)).address
        for number in range(1, args.rounds + 1):
            if args.rounds > 1:
                print(f" round {number}", flush=True)
            for label, tool in tools:
                figures = _measure_tool(args, label, tool, server, folder, address)
                if figures is not None:
                    rounds[label].append(figures)
                    print(_line(label, figures), flush=True)
    if args.rounds > 1:
        print(" medians (this VM's noise is large: compare within a round or by medians)")
        for label, measured in rounds.items():
            if measured:
                median = {
                    key: statistics.median(f[key] for f in measured)
                    for key in ("tok_s", "us_per_token", "req_s", "us_per_request")
                }
                print(_line(label, median), flush=True)


# -- 2. accuracy -----------------------------------------------------------------------------
def _ms_p50(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[len(ordered) // 2] * 1000 if ordered else float("nan")


def accuracy(args: argparse.Namespace) -> None:
    print(
        "2. accuracy (concurrency 32, server TTFT 50 ms, ITL 10 ms, 64 tokens): p50 as measured, and "
        "p50 of the error against the server's own record of each write (the truth; "
        "benchmarks/bench_accuracy.py's method)",
        flush=True,
    )
    with ScriptedServer() as server:
        target = EngineTarget(
            name="s",
            base_url=server.base_url,
            kind="vllm",
            model=server.model(ttft=50, itl=10, tokens=64),
        )
        for workers in (1, 2):
            tag = f"w{workers}-"
            outcome = execute_load(
                target,
                WorkloadSpec(input_len=16, output_len=64),
                LoadSpec(concurrency=32, requests=256, warmup_requests=32),
                workers=workers,
                request_headers=functools.partial(log_id_header, tag),
            )
            block = summarize_engine(outcome.records, fixed_output=True)
            signed_ttft, signed_itl = timing_errors(server, outcome, tag)
            ttft_errors, itl_errors = [abs(e) for e in signed_ttft], [abs(e) for e in signed_itl]
            ttft, itl = block["ttft_s"]["p50"] * 1000, block["itl_s"]["p50"] * 1000
            print(
                f"  {workers} worker(s): TTFT p50 {ttft:.2f} ms, error p50 {_ms_p50(ttft_errors):.3f} ms; "
                f"ITL p50 {itl:.2f} ms, error p50 {_ms_p50(itl_errors):.3f} ms; "
                f"{block['completed']}/{block['sent']} completed; "
                f"loop lag p99 {outcome.generator['loop_lag_ms'].get('p99')} ms",
                flush=True,
            )


# -- 3. many streams -------------------------------------------------------------------------
def streams(args: argparse.Namespace) -> None:
    count = args.streams
    print(
        f"3. {count} concurrent streams over 2 workers (server ITL 100 ms, 40 tokens: each stream lasts ~4 s)",
        flush=True,
    )
    with ScriptedServer() as server:
        target = EngineTarget(
            name="s",
            base_url=server.base_url,
            kind="vllm",
            model=server.model(ttft=200, itl=100, tokens=40),
        )
        began = time.perf_counter()
        outcome = execute_load(
            target,
            WorkloadSpec(input_len=8, output_len=40),
            LoadSpec(concurrency=count, requests=count),
            workers=2,
            timeout_s=120,
        )
        block = summarize_engine(outcome.records, fixed_output=True)
        lost = block["sent"] - block["completed"] - block["failed"] - block.get("cancelled_requests", 0)
        rss = ", ".join(f"{w['peak_rss_mb']:.0f} MB" for w in outcome.generator["per_worker"])
        print(
            f"  sent {block['sent']}, completed {block['completed']}, failed {block['failed']} "
            f"({block['errors_by_class']}), lost {lost}; most in flight {block['concurrency_max']}; "
            f"peak RSS per worker {rss}; {time.perf_counter() - began:.1f} s; "
            f"self-check: {selfcheck.headline(outcome.generator)}",
            flush=True,
        )


# -- 4. what a worker adds ----------------------------------------------------------------
def scaling(args: argparse.Namespace) -> None:
    cores = len(os.sched_getaffinity(0))
    print(
        f"4. what a worker adds ({args.concurrency} streams x {args.tokens} tokens, {args.large} "
        f"requests, canned server stream; {cores} cores shared by the server, the command's "
        f"coordinator and database writer, and its workers; {args.rounds} round(s))",
        flush=True,
    )
    counts = sorted({1, *args.workers})
    measured: dict[int, list[float]] = {count: [] for count in counts}
    per_core: dict[int, list[float]] = {count: [] for count in counts}
    with ScriptedServer() as server, tempfile.TemporaryDirectory() as folder:
        assert server.process is not None
        model = server.model(ttft=0, itl=0, tokens=args.tokens, canned=1)
        for number in range(1, args.rounds + 1):
            for count in counts:
                server_before, began = parent_and_cpu_s(server.process.pid)[1], time.perf_counter()
                _, block = ours(
                    server, model, args.large, args.tokens, args.concurrency, count, Path(folder)
                )
                wall = time.perf_counter() - began
                server_share = (parent_and_cpu_s(server.process.pid)[1] - server_before) / wall
                tok_s = block["output_throughput_tok_s"]
                measured[count].append(tok_s)
                workers = (block.get("generator") or {}).get("per_worker", [])
                shares = ", ".join(f"{w['cpu_share']:.0%}" for w in workers)
                # Tokens per second of worker CPU: what a worker delivers for each core it gets.
                per_core[count].append(tok_s / max(1e-9, sum(w["cpu_share"] for w in workers)))
                print(
                    f"  round {number}, {count} worker(s): {tok_s:9.0f} tok/s; CPU per worker {shares} "
                    f"({per_core[count][-1]:.0f} tok/s per core of workers); "
                    f"server {server_share:.2f} cores (of {cores}) over the whole command, start-up included",
                    flush=True,
                )
    one, one_per_core = statistics.median(measured[1]), statistics.median(per_core[1])
    for count in counts[1:]:
        many = statistics.median(measured[count])
        gain = (many - one) / (count - 1) / one
        print(
            f"  medians: {count} workers {many:.0f} tok/s against 1 worker's {one:.0f}: each added worker "
            f"adds {gain:.2f} of one worker's capacity; per core a worker got, {count} workers delivered "
            f"{statistics.median(per_core[count]) / one_per_core:.2f} of what 1 worker did",
            flush=True,
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", default="1,2", help="worker counts to measure, e.g. 1,2,4,8")
    parser.add_argument("--concurrency", type=int, default=128)
    parser.add_argument("--rounds", type=int, default=1, help="capacity rounds (medians printed)")
    parser.add_argument("--tokens", type=int, default=256)
    parser.add_argument("--small", type=int, default=256)
    parser.add_argument("--large", type=int, default=4096)
    # 1-token answers cost little each: more of them, or the marginal CPU is mostly noise. A
    # Ray run's fixed CPU (three actors starting, about 1 s each here) moves by a few tenths
    # of a second from run to run: over 8,192 - 1,024 requests that moved Ray's figure from
    # 80 to 290 µs between repeats; over 32,768 it moves by a quarter as much.
    parser.add_argument("--small-1", type=int, default=1024)
    parser.add_argument("--large-1", type=int, default=32768)
    parser.add_argument("--streams", type=int, default=2000)
    parser.add_argument("--aiperf", help="path of an `aiperf` executable (its own virtual environment)")
    parser.add_argument(
        "--inference-perf", help="path of an `inference-perf` executable (Python 3.12 venv)"
    )
    parser.add_argument(
        "--ray", action="store_true", help="also a run over a local 2-node Ray cluster (2 actors)"
    )
    parser.add_argument("--skip", default="", help="parts to skip: capacity, accuracy, streams, scaling")
    args = parser.parse_args()
    args.workers = [int(part) for part in args.workers.split(",") if part]
    skip = set(args.skip.split(","))
    _raise_file_limit()
    print(f"{len(os.sched_getaffinity(0))} usable cores", flush=True)
    if "capacity" not in skip:
        capacity(args)
    if "accuracy" not in skip:
        accuracy(args)
    if "streams" not in skip:
        streams(args)
    if "scaling" not in skip:
        scaling(args)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
