"""Running requests outside a load generator: the fast event loop, one request with a
client of its own, and a batch over one pool."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from typing import Any

from services.client.records import ChatRequest, DeltaCallback, StreamResult
from services.client.transport import make_http_client, stream_chat


def new_event_loop() -> asyncio.AbstractEventLoop:
    """uvloop's event loop (its per-read cost is a fraction of asyncio's, see
    benchmarks/client_cpu_per_token.py --loop), else the standard one."""
    try:
        # Optional (the standard loop stands in), and only a process that sends requests pays for it.
        import uvloop
    except ImportError:  # pragma: no cover - uvloop is in requirements.txt
        return asyncio.new_event_loop()
    return uvloop.new_event_loop()


def run_blocking(coroutine: Any) -> Any:
    """Run a coroutine to completion on a fresh fast event loop (worker threads, CLI)."""
    # The answer is handed over outside the task: in the main thread, Python 3.11's Runner
    # ends by formatting an error message that holds the repr of its SIGINT handler, whose
    # arguments include the task and so the repr of the task's result. For a benchmark that
    # result is every request with every inter-token gap: 0.1 s per 512 requests, about
    # 1 µs per streamed token, spent on a string nobody reads.
    answer: list[Any] = []

    async def main() -> None:
        answer.append(await coroutine)

    with asyncio.Runner(loop_factory=new_event_loop) as runner:
        runner.run(main())
    return answer[0]


async def run_chat(
    request: ChatRequest, *, on_delta: DeltaCallback | None = None, result: StreamResult | None = None
) -> StreamResult:
    """One request with a client of its own (playground, CLI checks)."""
    async with make_http_client(
        4, connect_timeout_s=request.connect_timeout_s, read_timeout_s=request.read_timeout_s
    ) as client:
        return await stream_chat(client, request, on_delta=on_delta, result=result)


async def run_many(requests: Iterable[ChatRequest], *, concurrency: int = 32) -> list[StreamResult]:
    """Send requests with at most `concurrency` in flight over one pool; results in order."""
    pending = list(requests)
    results: list[StreamResult] = [StreamResult() for _ in pending]
    semaphore = asyncio.Semaphore(concurrency)
    async with make_http_client(concurrency) as client:

        async def one(position: int) -> None:
            async with semaphore:
                await stream_chat(client, pending[position], result=results[position])

        await asyncio.gather(*(one(i) for i in range(len(pending))))
    return results
