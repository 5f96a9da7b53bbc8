"""Client CPU per streamed token of the load generator (issue 4: <= 10 µs at 128 concurrent
streams of 256 tokens), by the marginal method: the client process's CPU for a run of 1,024
requests minus that of a run of 128, divided by the difference in tokens, so fixed costs
(imports, pool start, first connections) cancel out. The kernel's share (system time: the
reads, epoll, the TCP acknowledgements) is shown apart.

Paths (--paths), measured one after another in the same run:
  bare     the rig's floor: a do-nothing asyncio.Protocol on uvloop that only takes a
           timestamp per read (no HTTP parsing, no JSON): the kernel and the loop
  client   the shared streaming client (services.client.stream_chat, asyncio protocols +
           httptools + orjson on uvloop) that the benchmark runner uses
  runner   the whole load generator (services.bench.runner: workload, request building,
           per-token records) in closed loop, without the database
(The product end to end, database writer and engine-metrics recorder included, is measured
by benchmarks/bench_vs_aiperf.py.)

The scripted server runs in its own process, so only the client's CPU is counted.

    .venv/bin/python -m benchmarks.bench_client_cpu [--paths bare,client,runner] [--itl 10]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import resource
import time

from services.bench.arrivals import LoadSpec
from services.bench.runner import EngineTarget, execute_load
from services.bench.workloads import WorkloadSpec
from services.client import (
    ChatRequest,
    build_body,
    build_headers,
    chat_url,
    make_http_client,
    run_blocking,
    stream_chat,
)
from services.client.transport import request_bytes, split_url
from services.engines import SamplingParams
from tests.support.scripted_server import ScriptedServer


def _request(base_url: str, tokens: int, itl: float) -> ChatRequest:
    model = ScriptedServer.model(ttft=20, itl=itl, tokens=tokens)
    return ChatRequest(
        base_url=base_url,
        model=model,
        messages=[{"role": "user", "content": "bench"}],
        params=SamplingParams(max_tokens=tokens),
    )


async def _run_client(
    base_url: str, requests: int, concurrency: int, tokens: int, itl: float
) -> tuple[float, int, int]:
    request = _request(base_url, tokens, itl)
    semaphore = asyncio.Semaphore(concurrency)
    counts = {"failures": 0, "tokens": 0}
    client = make_http_client(concurrency)
    body = json.dumps(build_body(request)).encode()
    headers = build_headers(request)

    async def one() -> None:
        async with semaphore:
            result = await stream_chat(client, request, body=body, headers=headers)
            counts["failures"] += not result.ok
            counts["tokens"] += result.output_tokens

    gc.collect()
    cpu = time.process_time()
    await asyncio.gather(*(one() for _ in range(requests)))
    used = time.process_time() - cpu
    await client.aclose()
    return used, counts["tokens"], counts["failures"]


class _Null:
    """asyncio.Protocol that timestamps each read and waits for the chunked terminator."""

    def __init__(self, done) -> None:  # type: ignore[no-untyped-def]
        self.done = done
        self.reads = 0
        self.transport = None

    def connection_made(self, transport) -> None:  # type: ignore[no-untyped-def]
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        time.perf_counter()
        self.reads += 1
        if data.endswith(b"0\r\n\r\n") and not self.done.done():
            self.done.set_result(self.reads)

    def connection_lost(self, exc) -> None:  # type: ignore[no-untyped-def]
        if not self.done.done():
            self.done.set_result(self.reads)

    def eof_received(self) -> None:
        return None


async def _run_bare(
    base_url: str, requests: int, concurrency: int, tokens: int, itl: float
) -> tuple[float, int, int]:
    request = _request(base_url, tokens, itl)
    (_scheme, host, port), host_header, path = split_url(chat_url(base_url))
    payload = request_bytes(
        host_header, path, json.dumps(build_body(request)).encode(), build_headers(request)
    )
    loop = asyncio.get_running_loop()
    semaphore = asyncio.Semaphore(concurrency)
    idle: list = []
    counts = {"tokens": 0}

    async def one() -> None:
        async with semaphore:
            done = loop.create_future()
            if idle:
                sock_transport, protocol = idle.pop()
                protocol.done = done
            else:
                sock_transport, protocol = await loop.create_connection(lambda: _Null(done), host, port)
            sock_transport.write(payload)
            await done
            counts["tokens"] += tokens
            idle.append((sock_transport, protocol))

    gc.collect()
    cpu = time.process_time()
    await asyncio.gather(*(one() for _ in range(requests)))
    used = time.process_time() - cpu
    for sock_transport, _ in idle:
        sock_transport.close()
    return used, counts["tokens"], 0


def _run_runner(
    base_url: str, requests: int, concurrency: int, tokens: int, itl: float
) -> tuple[float, int, int]:
    engine = EngineTarget(
        name="scripted",
        base_url=base_url,
        kind="openai",
        model=ScriptedServer.model(ttft=20, itl=itl, tokens=tokens),
    )
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
        if path == "bare":
            return run_blocking(_run_bare(base_url, requests, args.concurrency, args.tokens, args.itl))
        if path == "runner":
            return _run_runner(base_url, requests, args.concurrency, args.tokens, args.itl)
        return run_blocking(_run_client(base_url, requests, args.concurrency, args.tokens, args.itl))

    def timed(requests: int) -> tuple[float, int, int, float]:
        before = resource.getrusage(resource.RUSAGE_SELF)
        used, tokens, failures = once(requests)
        after = resource.getrusage(resource.RUSAGE_SELF)
        return used, tokens, failures, after.ru_stime - before.ru_stime

    small = timed(args.small)
    large = timed(args.large)
    per_token = (large[0] - small[0]) / max(1, large[1] - small[1])
    system = (large[3] - small[3]) / max(1, large[1] - small[1])
    return {
        "us_per_token": per_token * 1e6,
        "system_us_per_token": system * 1e6,
        "cpu_small_s": small[0],
        "cpu_large_s": large[0],
        "tokens_small": small[1],
        "tokens_large": large[1],
        "failures": small[2] + large[2],
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--concurrency", type=int, default=128)
    parser.add_argument("--tokens", type=int, default=256)
    parser.add_argument("--itl", type=float, default=10.0, help="ms between tokens")
    parser.add_argument("--small", type=int, default=128)
    parser.add_argument("--large", type=int, default=1024)
    parser.add_argument("--paths", default="bare,client,runner")
    parser.add_argument("--repeat", type=int, default=1)
    args = parser.parse_args()
    with ScriptedServer() as server:
        run_blocking(_run_client(server.base_url, 32, 32, 16, 1))  # warm the server process
        for path in args.paths.split(","):
            for _ in range(args.repeat):
                figures = measure(path, server.base_url, args)
                print(
                    f"{path:13s} {figures['us_per_token']:6.2f} µs/token, of which kernel "
                    f"{figures['system_us_per_token']:5.2f}  (CPU {figures['cpu_large_s']:.2f} s for "
                    f"{figures['tokens_large']} tokens, {figures['cpu_small_s']:.2f} s for {figures['tokens_small']}; "
                    f"concurrency {args.concurrency}, ITL {args.itl:g} ms, failures {figures['failures']})",
                    flush=True,
                )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
