"""Where each request's time went on the running local engines: per engine, the p50/p99 of its
own queue, prefill and decode and of the rest of TTFT and E2E (the time outside the engine's
clock: loopback HTTP, its front end, this client), over requests sent one at a time (or
`--concurrency N` at once), and how many rests were clamped at 0 (the engine counted more time
than the client saw) with the most it counted over.

    .venv/bin/python -m benchmarks.engine_times_rest [--requests 30] [--max-tokens 32]
        [--concurrency 1] [--engine ID ...]
"""

from __future__ import annotations

import argparse
import asyncio
import sys

from services.client import ChatRequest, StreamResult, run_many
from services.core.measure import percentile
from services.engines import SamplingParams, get_adapter
from services.local_engines.backend import get_backend
from services.local_engines.catalog import all_specs
from services.local_engines.state import status

PARTS = ("queue_s", "prefill_s", "decode_s", "ttft_rest_s", "e2e_rest_s")


def requests_for(
    engine_id: str, kind: str, url: str, model: str, args: argparse.Namespace
) -> list[ChatRequest]:
    return [
        ChatRequest(
            base_url=url,
            model=model,
            kind=kind,
            # A different prompt each time, so no answer comes from a prompt cache whole.
            messages=[{"role": "user", "content": f"Write a short line about the number {i}."}],
            params=SamplingParams(temperature=0.0, max_tokens=args.max_tokens, ignore_eos=True),
            read_timeout_s=300,
        )
        for i in range(args.requests + 1)  # the first warms the engine up and is left out
    ]


def report(engine_id: str, kind: str, results: list[StreamResult]) -> str:
    done = [r for r in results[1:] if r.ok]
    splits = [(r.metrics(), r.time_split()) for r in done]
    timed = [(m, s) for m, s in splits if s is not None]
    if not timed:
        return f"{engine_id:16s} {len(done):4d} ok, not reported by {get_adapter(kind).label}"
    cells = []
    for part in PARTS:
        values = [getattr(s, part) for _, s in timed if getattr(s, part) is not None]
        cells.append(
            f"{percentile(values, 50) * 1000:7.2f}/{percentile(values, 99) * 1000:7.2f}"
            if values
            else f"{'-':>15}"
        )
    over = [s.overcount_s for _, s in timed if s.overcount_s > 0]
    clamped = f"{len(over)} ({max(over) * 1000:.2f} ms)" if over else "0"
    return f"{engine_id:16s} {len(timed):4d} " + " ".join(cells) + f"  {clamped}"


async def main_async(args: argparse.Namespace) -> int:
    if args.url:
        # An engine of one's own (a local engine started by hand with other flags).
        kind, model = args.kind or "openai", args.model or "smollm2"
        results = await run_many(
            requests_for(args.url, kind, args.url, model, args), concurrency=args.concurrency
        )
        print(report(args.url, kind, results), flush=True)
        return 0
    running = [s for s in status() if s.status == "running" and (not args.engine or s.id in args.engine)]
    if not running:
        print("no local engine is running (shootout local up)", file=sys.stderr)
        return 1

    specs = {spec.id: spec for spec in all_specs()}
    print(
        f"{'engine':16s} {'n':>4s} "
        + " ".join(f"{p.removesuffix('_s') + ' p50/p99':>15s}" for p in PARTS)
        + "  (ms)  rests clamped at 0 (most over)"
    )
    for engine in running:
        spec = specs[engine.id]
        model = get_backend(spec.backend).served_model
        url = f"http://127.0.0.1:{spec.port}"
        results = await run_many(
            requests_for(spec.id, spec.kind, url, model, args), concurrency=args.concurrency
        )
        print(report(spec.id, spec.kind, results), flush=True)
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=30)
    parser.add_argument("--max-tokens", type=int, default=32)
    parser.add_argument("--concurrency", type=int, default=1)
    parser.add_argument(
        "--engine", action="append", help="a local engine id (default: every running one)"
    )
    parser.add_argument("--url", help="instead, the engine at this base URL (with --kind, --model)")
    parser.add_argument("--kind", help="its kind (vllm, llamacpp...)")
    parser.add_argument("--model", help="the model it serves")
    return asyncio.run(main_async(parser.parse_args()))


if __name__ == "__main__":
    raise SystemExit(main())
