"""Client CPU per streamed token (issue 4 target: <= 10 µs at 128 concurrent streams of
256 tokens), measured with the marginal method: the client process's CPU time for a run of
1,024 requests minus that of a run of 128, divided by the difference in tokens. Fixed
costs (imports, pool start, the first connections) cancel out.

The scripted server runs in its own process, so its CPU is not counted. Several reading
paths can be compared (--paths); the product uses "ours".

    .venv/bin/python -m benchmarks.client_cpu_per_token [--itl 10] [--paths ours,eventsource,sdk]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import time

import httpx2
import uvloop

import services.client.stream
from services.client import (
    ChatRequest,
    StreamResult,
    build_body,
    build_headers,
    make_http_client,
    stream_chat,
)
from services.engines import SamplingParams
from tests.support.scripted_server import ScriptedServer

_SYSTEM_SHARE: list[float] = []


async def _eventsource_reader(
    client: httpx2.AsyncClient, url: str, body: bytes, headers: dict[str, str]
) -> int:
    """The library path: httpx2.EventSource + json.loads per event (for comparison)."""
    streamed = 0
    async with client.stream("POST", url, content=body, headers=headers) as response:
        async for event in httpx2.EventSource(response):
            if event.data == "[DONE]":
                break
            chunk = json.loads(event.data)
            for choice in chunk.get("choices") or ():
                if (choice.get("delta") or {}).get("content"):
                    time.perf_counter()
                    streamed += 1
    return streamed


async def _run(
    path: str, base_url: str, requests: int, concurrency: int, tokens: int, itl: float
) -> tuple[float, int, int]:
    model = ScriptedServer.model(ttft=20, itl=itl, tokens=tokens)
    request = ChatRequest(
        base_url=base_url,
        model=model,
        messages=[{"role": "user", "content": "bench"}],
        params=SamplingParams(max_tokens=tokens),
    )
    body = json.dumps(build_body(request)).encode()
    headers = build_headers(request)
    semaphore = asyncio.Semaphore(concurrency)
    failures = 0
    streamed = 0
    if path == "sdk":
        # openai is a test dependency (requirements-dev.txt) and takes 0.7 s to import: only --paths sdk
        # needs it.
        import openai

        limits = httpx2.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
        client = openai.AsyncOpenAI(
            base_url=base_url,
            api_key="none",
            max_retries=0,
            http_client=httpx2.AsyncClient(limits=limits, timeout=300),
        )
    elif path == "eventsource":
        client = httpx2.AsyncClient(
            limits=httpx2.Limits(max_connections=concurrency, max_keepalive_connections=concurrency),
            timeout=300,
        )
    else:
        client = make_http_client(concurrency)

    async def one() -> None:
        nonlocal failures, streamed
        async with semaphore:
            if path == "ours":
                result = await stream_chat(client, request, body=body, headers=headers)
                failures += not result.ok
                streamed += result.output_tokens
            elif path == "eventsource":
                count = await _eventsource_reader(client, base_url + "/chat/completions", body, headers)
                streamed += count
            else:
                stream = await client.chat.completions.create(
                    model=model,
                    messages=request.messages,
                    stream=True,
                    max_tokens=tokens,
                    stream_options={"include_usage": True},
                )
                async for chunk in stream:
                    if chunk.choices and chunk.choices[0].delta.content:
                        time.perf_counter()
                        streamed += 1

    gc.collect()
    before = os.times()
    await asyncio.gather(*(one() for _ in range(requests)))
    after = os.times()
    used = (after.user - before.user) + (after.system - before.system)
    _SYSTEM_SHARE.append((after.system - before.system) / max(used, 1e-9))
    await client.close() if path == "sdk" else await client.aclose()
    return used, streamed, failures


def _loop_runner(loop_name: str):
    if loop_name == "uvloop":

        def run(coro):
            with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
                return runner.run(coro)

        return run
    return asyncio.run


def measure(path: str, base_url: str, args: argparse.Namespace) -> dict[str, float]:
    run = _loop_runner(args.loop)
    small = run(_run(path, base_url, args.small, args.concurrency, args.tokens, args.itl))
    large = run(_run(path, base_url, args.large, args.concurrency, args.tokens, args.itl))
    per_token = (large[0] - small[0]) / max(1, large[1] - small[1])
    return {
        "us_per_token": per_token * 1e6,
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
    parser.add_argument("--paths", default="ours")
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument(
        "--loop",
        choices=("asyncio", "uvloop"),
        default="uvloop",
        help="event loop (the product's workers use uvloop: services.client.run_blocking)",
    )
    parser.add_argument(
        "--json",
        choices=("json", "orjson"),
        default="orjson",
        help="parser of the hot path (the product's is orjson: services.client.stream._loads)",
    )
    args = parser.parse_args()
    if args.json == "json":
        services.client.stream._loads = json.loads
    _ = StreamResult  # the product's result type, imported so the script fails loudly if it moves
    with ScriptedServer() as server:
        asyncio.run(_run("ours", server.base_url, 32, 32, 16, 1))  # warm the server process
        for path in args.paths.split(","):
            for _repeat in range(args.repeat):
                figures = measure(path, server.base_url, args)
                print(
                    f"{path:12s} {args.loop:8s} {args.json:6s} {figures['us_per_token']:6.2f} µs/token  "
                    f"(CPU {figures['cpu_large_s']:.2f} s for {figures['tokens_large']} tokens, "
                    f"{figures['cpu_small_s']:.2f} s for {figures['tokens_small']}; "
                    f"concurrency {args.concurrency}, ITL {args.itl} ms, failures {figures['failures']}, "
                    f"kernel share of CPU {_SYSTEM_SHARE[-1]:.0%})",
                    flush=True,
                )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
