"""Client CPU per streamed token of the load generator's HTTP paths (issue 4: <= 10 µs at 128
concurrent streams of 256 tokens), by the marginal method: the client process's CPU for a run
of 1,024 requests minus that of a run of 128, divided by the difference in tokens, so fixed
costs (imports, pool start, first connections) cancel out.

Paths (--paths):
  httpx2        the shared client (services.client.stream_chat over httpx2)
  fast-asyncio  services.bench.transport on the standard asyncio loop, orjson
  fast-uvloop   services.bench.transport on uvloop, orjson (what the benchmark worker uses)
  fast-json     fast-uvloop with the standard json module instead of orjson
  runner        the whole benchmark runner (services.bench.runner) in closed loop, no database

The scripted server runs in its own process, so only the client's CPU is counted.

    .venv/bin/python benchmarks/bench_client_cpu.py [--paths fast-uvloop,httpx2] [--itl 10]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from services.bench import transport  # noqa: E402
from services.client import ChatRequest, build_body, build_headers, make_http_client, stream_chat  # noqa: E402
from services.engines import SamplingParams  # noqa: E402
from tests.support.scripted_server import ScriptedServer  # noqa: E402


def _request(base_url: str, tokens: int, itl: float) -> ChatRequest:
    model = ScriptedServer.model(ttft=20, itl=itl, tokens=tokens)
    return ChatRequest(base_url=base_url, model=model, messages=[{"role": "user", "content": "bench"}],
                       params=SamplingParams(max_tokens=tokens))


async def _run_client(path: str, base_url: str, requests: int, concurrency: int, tokens: int,
                      itl: float) -> tuple[float, int, int]:
    request = _request(base_url, tokens, itl)
    semaphore = asyncio.Semaphore(concurrency)
    counts = {"failures": 0, "tokens": 0}
    if path == "httpx2":
        import json

        client = make_http_client(concurrency)
        body = json.dumps(build_body(request)).encode()
        headers = build_headers(request)

        async def one() -> None:
            async with semaphore:
                result = await stream_chat(client, request, body=body, headers=headers)
                counts["failures"] += not result.ok
                counts["tokens"] += result.output_tokens
    else:
        fast = transport.FastChatClient()
        payload = fast.prepare(request)

        async def one() -> None:
            async with semaphore:
                result = await fast.stream_chat(request, payload=payload)
                counts["failures"] += not result.ok
                counts["tokens"] += result.output_tokens

    gc.collect()
    cpu = time.process_time()
    await asyncio.gather(*(one() for _ in range(requests)))
    used = time.process_time() - cpu
    if path == "httpx2":
        await client.aclose()
    else:
        await fast.aclose()
    return used, counts["tokens"], counts["failures"]


def _run_runner(base_url: str, requests: int, concurrency: int, tokens: int, itl: float) -> tuple[float, int, int]:
    from services.bench.arrivals import LoadSpec
    from services.bench.runner import EngineTarget, execute_load
    from services.bench.workloads import WorkloadSpec

    engine = EngineTarget(name="scripted", base_url=base_url, kind="openai",
                          model=ScriptedServer.model(ttft=20, itl=itl, tokens=tokens))
    workload = WorkloadSpec(input_len=16, output_len=tokens)
    load = LoadSpec(mode="concurrency", concurrency=concurrency, requests=requests)
    gc.collect()
    cpu = time.process_time()
    outcome = execute_load(engine, workload, load)
    used = time.process_time() - cpu
    done = [r for r in outcome.records if r.ok]
    return used, sum(r.output_tokens or 0 for r in done), len(outcome.records) - len(done)


def measure(path: str, base_url: str, args: argparse.Namespace) -> dict[str, float]:
    def once(requests: int) -> tuple[float, int, int]:
        if path == "runner":
            return _run_runner(base_url, requests, args.concurrency, args.tokens, args.itl)
        if path == "fast-asyncio" or path == "httpx2":
            return asyncio.run(_run_client(path, base_url, requests, args.concurrency, args.tokens, args.itl))
        import uvloop

        return uvloop.run(_run_client(path, base_url, requests, args.concurrency, args.tokens, args.itl))

    if path == "fast-json":
        import json

        transport._loads = json.loads
    small = once(args.small)
    large = once(args.large)
    if path == "fast-json":
        import orjson

        transport._loads = orjson.loads
    per_token = (large[0] - small[0]) / max(1, large[1] - small[1])
    return {"us_per_token": per_token * 1e6, "cpu_small_s": small[0], "cpu_large_s": large[0],
            "tokens_small": small[1], "tokens_large": large[1], "failures": small[2] + large[2]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--concurrency", type=int, default=128)
    parser.add_argument("--tokens", type=int, default=256)
    parser.add_argument("--itl", type=float, default=10.0, help="ms between tokens")
    parser.add_argument("--small", type=int, default=128)
    parser.add_argument("--large", type=int, default=1024)
    parser.add_argument("--paths", default="fast-uvloop,fast-asyncio,fast-json,httpx2,runner")
    parser.add_argument("--repeat", type=int, default=1)
    args = parser.parse_args()
    with ScriptedServer() as server:
        asyncio.run(_run_client("fast-asyncio", server.base_url, 32, 32, 16, 1))  # warm the server process
        for path in args.paths.split(","):
            for _ in range(args.repeat):
                figures = measure(path, server.base_url, args)
                print(f"{path:13s} {figures['us_per_token']:6.2f} µs/token  (CPU {figures['cpu_large_s']:.2f} s for "
                      f"{figures['tokens_large']} tokens, {figures['cpu_small_s']:.2f} s for {figures['tokens_small']}; "
                      f"concurrency {args.concurrency}, ITL {args.itl:g} ms, failures {figures['failures']})", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
