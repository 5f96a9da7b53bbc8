"""What recording the engine's own times costs per request, in µs of client CPU, per engine
shape: keeping the closing chunks' own fields (the stream's hot path, on those chunks only),
the adapter reading them once the stream ended, the split of TTFT and E2E, the stored row's
JSON, and a pooled load's record pickled with them (against one without).

    .venv/bin/python -m benchmarks.engine_times_cost [--rounds 7] [--count 20000]
"""

from __future__ import annotations

import argparse
import pickle
import statistics
import time
from collections.abc import Callable
from typing import Any

import orjson

from services.bench.stats import RequestRecord
from services.client.records import StreamResult
from services.client.stream import keep_engine_fields
from services.client.transport import read_engine_times
from services.core.measure import EngineTimes, time_split

USAGE = {
    "prompt_tokens": 41,
    "completion_tokens": 64,
    "total_tokens": 105,
    "prompt_tokens_details": {"cached_tokens": 0},
}
BASE = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "smollm2"}
#: The closing chunks as each engine sends them (vLLM: finish, then usage with `metrics`;
#: llama.cpp: `timings` on both), parsed as the client parses them.
CLOSING = {
    "vllm": [
        {**BASE, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
        {
            **BASE,
            "choices": [],
            "usage": USAGE,
            "metrics": {
                "time_to_first_token_ms": 31.2,
                "generation_time_ms": 842.5,
                "queue_time_ms": 0.4,
                "mean_itl_ms": 13.4,
                "tokens_per_second": 73.2,
            },
        },
    ],
    "llamacpp": [
        {
            **BASE,
            "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
            "timings": {
                "cache_n": 0,
                "prompt_n": 41,
                "prompt_ms": 30.1,
                "prompt_per_token_ms": 0.73,
                "prompt_per_second": 1362.1,
                "predicted_n": 64,
                "predicted_ms": 830.2,
                "predicted_per_token_ms": 12.97,
                "predicted_per_second": 77.1,
            },
        },
        {**BASE, "choices": [], "usage": USAGE},
    ],
    "tgi": [
        {**BASE, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
        {**BASE, "choices": [], "usage": USAGE},
    ],
    "openai": [
        {**BASE, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
        {**BASE, "choices": [], "usage": USAGE},
    ],
}
HEADERS = {
    b"content-type": b"text/event-stream",
    b"date": b"Thu, 03 Dec 2026 14:00:00 GMT",
    b"server": b"uvicorn",
    b"transfer-encoding": b"chunked",
}
TGI_HEADERS = {
    **HEADERS,
    b"x-queue-time": b"1",
    b"x-inference-time": b"861",
    b"x-time-per-token": b"13",
    b"x-prompt-tokens": b"41",
}


def per_item_us(work: Callable[[], Any], count: int, rounds: int) -> float:
    timings = []
    for _ in range(rounds):
        began = time.perf_counter()
        work()
        timings.append(time.perf_counter() - began)
    return statistics.median(timings) / count * 1e6


def measure(kind: str, count: int, rounds: int) -> dict[str, float]:
    chunks = [orjson.loads(orjson.dumps(chunk)) for chunk in CLOSING[kind]]
    headers = TGI_HEADERS if kind == "tgi" else HEADERS
    results = [StreamResult(usage=USAGE) for _ in range(count)]

    def keep() -> None:
        for result in results:
            result.engine_fields = None
            for chunk in chunks:
                keep_engine_fields(result, chunk)

    def read() -> None:
        for result in results:
            read_engine_times(result, kind, headers)

    keep()
    read()
    engine = results[0].engine_times

    def split() -> None:
        for _ in range(count):
            time_split(0.0335, 0.9021, engine)

    def stored() -> None:
        for _ in range(count):
            EngineTimes.from_json(engine.to_json() if engine else None)

    record = RequestRecord(
        "e", 1, True, 0.0, 0.0, 0.0335, 0.9021, [0.013] * 63, 41, 64, 0, engine_times=engine
    )
    bare = RequestRecord("e", 1, True, 0.0, 0.0, 0.0335, 0.9021, [0.013] * 63, 41, 64, 0)

    def pickled(item: RequestRecord) -> Callable[[], None]:
        def work() -> None:
            for _ in range(count):
                pickle.loads(pickle.dumps(item))

        return work

    figures = {
        "keep fields": per_item_us(keep, count, rounds),
        "adapter read": per_item_us(read, count, rounds),
        "split": per_item_us(split, count, rounds),
        "row JSON out+in": per_item_us(stored, count, rounds),
    }
    figures["total"] = sum(figures.values())
    figures["pickle delta"] = per_item_us(pickled(record), count, rounds) - per_item_us(
        pickled(bare), count, rounds
    )
    return figures


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--count", type=int, default=20000)
    args = parser.parse_args()
    print(f"µs per request, median of {args.rounds} rounds of {args.count}")
    header = (
        "engine",
        "keep fields",
        "adapter read",
        "split",
        "row JSON out+in",
        "total",
        "pickle delta",
    )
    print(" | ".join(header))
    for kind in CLOSING:
        figures = measure(kind, args.count, args.rounds)
        print(" | ".join([kind, *(f"{figures[h]:.2f}" for h in header[1:])]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
