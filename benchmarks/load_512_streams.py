"""Issue 8 load check: 512 concurrent streams against a local scripted server for 60 s.

Closed loop: 512 requests in flight at all times; each one that ends is replaced at once.
Prints requests sent / completed / failed by error class, tokens, and the client's RSS
sampled every 5 s (its peak and its growth after warm-up show whether memory is bounded).

    .venv/bin/python -m benchmarks.load_512_streams [--streams 512] [--seconds 60]
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import resource
import sys
import time

from services.client import ChatRequest, make_http_client, new_event_loop, stream_chat
from services.engines import SamplingParams
from tests.support.scripted_server import ScriptedServer


def rss_mib() -> float:
    with open("/proc/self/statm") as handle:
        pages = int(handle.read().split()[1])
    return pages * resource.getpagesize() / 2**20


async def load(base_url: str, model: str, streams: int, seconds: float) -> dict:
    request = ChatRequest(
        base_url=base_url,
        model=model,
        messages=[{"role": "user", "content": "hi"}],
        params=SamplingParams(max_tokens=64),
        read_timeout_s=30,
    )
    errors: collections.Counter[str] = collections.Counter()
    counts = {"sent": 0, "ok": 0, "failed": 0, "tokens": 0}
    rss: list[tuple[float, float]] = []
    stop_at = time.monotonic() + seconds

    async with make_http_client(streams, read_timeout_s=30) as client:

        async def worker() -> None:
            while time.monotonic() < stop_at:
                counts["sent"] += 1
                result = await stream_chat(client, request)
                if result.ok:
                    counts["ok"] += 1
                    counts["tokens"] += (result.usage or {}).get("completion_tokens") or 0
                else:
                    counts["failed"] += 1
                    errors[result.error_class or "?"] += 1

        async def sampler() -> None:
            started = time.monotonic()
            while time.monotonic() < stop_at:
                rss.append((round(time.monotonic() - started, 1), round(rss_mib(), 1)))
                await asyncio.sleep(5)

        await asyncio.gather(sampler(), *(worker() for _ in range(streams)))
    return {**counts, "errors": dict(errors), "rss_mib": rss}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--streams", type=int, default=512)
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--tokens", type=int, default=64)
    parser.add_argument("--itl-ms", type=float, default=20)
    args = parser.parse_args()
    with ScriptedServer(replay_dir=None) as server:
        model = server.model(ttft=50, itl=args.itl_ms, tokens=args.tokens)
        loop = new_event_loop()
        started = time.perf_counter()
        figures = loop.run_until_complete(load(server.base_url, model, args.streams, args.seconds))
        elapsed = time.perf_counter() - started
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(
        f"streams {args.streams}, {elapsed:.1f} s: sent {figures['sent']}, completed {figures['ok']}, "
        f"failed {figures['failed']} {figures['errors'] or ''}"
    )
    print(f"completed + failed = sent: {figures['ok'] + figures['failed'] == figures['sent']}")
    print(f"tokens {figures['tokens']} ({figures['tokens'] / elapsed:.0f}/s)")
    print(f"client RSS MiB over time (s, MiB): {figures['rss_mib']}; peak {peak:.1f} MiB")
    return 0 if figures["failed"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
