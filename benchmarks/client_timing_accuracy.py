"""How close the client's TTFT and inter-token gaps are to the truth: the scripted server
records when it wrote each chunk (perf_counter, CLOCK_MONOTONIC, shared by processes), the
client records when each chunk arrived. Prints p50/p90 of |client - server| per concurrency
(issue 4 target: within 1 ms at p50 at concurrency 32 with TTFT 50 ms, ITL 10 ms).

    .venv/bin/python -m benchmarks.client_timing_accuracy [--concurrency 32,128] [--loop uvloop]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import uuid

from services.client import ChatRequest, new_event_loop, run_many
from tests.support.scripted_server import ScriptedServer


def _p(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def measure(server: ScriptedServer, concurrency: int, tokens: int, loop: str) -> str:
    ids = [f"acc-{uuid.uuid4().hex}" for _ in range(concurrency)]
    requests = [
        ChatRequest(
            base_url=server.base_url,
            messages=[{"role": "user", "content": "x"}],
            headers={"x-scripted-id": rid},
            model=server.model(ttft=50, itl=10, tokens=tokens),
        )
        for rid in ids
    ]
    factory = new_event_loop if loop == "uvloop" else asyncio.new_event_loop
    with asyncio.Runner(loop_factory=factory) as runner:
        results = runner.run(run_many(requests, concurrency=concurrency))
    ttft_err, itl_err, ttft, itl = [], [], [], []
    for result, rid in zip(results, ids, strict=True):
        assert result.ok, result.error
        log = server.log(rid)
        client, written = result.choices[0].times, log["writes"]
        ttft_err.append(abs(client[0] - written[0]))
        ttft.append(result.ttft_s)
        itl.extend(result.metrics().itl_s)
        for k in range(1, len(client)):
            itl_err.append(abs((client[k] - client[k - 1]) - (written[k] - written[k - 1])))
    ms = 1000
    return (
        f"concurrency {concurrency:4d} ({loop}): |TTFT error| p50 {statistics.median(ttft_err) * ms:.3f} ms "
        f"p90 {_p(ttft_err, 0.9) * ms:.3f} ms; |ITL error| p50 {statistics.median(itl_err) * ms:.3f} ms "
        f"p90 {_p(itl_err, 0.9) * ms:.3f} ms; measured TTFT p50 {statistics.median(ttft) * ms:.2f} ms "
        f"(scripted 50), ITL p50 {statistics.median(itl) * ms:.2f} ms (scripted 10)"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--concurrency", default="32,128")
    parser.add_argument("--tokens", type=int, default=64)
    parser.add_argument("--loop", choices=("asyncio", "uvloop"), default="uvloop")
    args = parser.parse_args()
    with ScriptedServer() as server:
        for concurrency in (int(c) for c in args.concurrency.split(",")):
            print(measure(server, concurrency, args.tokens, args.loop), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
