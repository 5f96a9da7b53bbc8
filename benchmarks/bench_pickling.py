"""What a pooled load pays to pickle what crosses between processes: a conversation (the
coordinator, or Ray's hub, to a worker) and a request record (back), per object, with the
dataclasses' own pickling and with services/bench/pickling.py's, measured in the same run.

    .venv/bin/python -m benchmarks.bench_pickling [--rounds 5]
"""

from __future__ import annotations

import argparse
import pickle
import statistics
import time
from collections.abc import Callable
from typing import Any

from services.bench.spec import RequestSettings
from services.bench.stats import RequestRecord
from services.bench.workloads import Conversation, Turn, WorkloadSpec, iter_conversations

COUNT = 2000


def per_object_us(work: Callable[[], Any], count: int, rounds: int) -> float:
    timings = []
    for _ in range(rounds):
        began = time.perf_counter()
        work()
        timings.append(time.perf_counter() - began)
    return statistics.median(timings) / count * 1e6


def samples() -> tuple[list[Conversation], list[RequestRecord]]:
    drawn = iter_conversations(
        WorkloadSpec(input_len=16, output_len=1), salt="bench", text=RequestSettings().text
    )
    conversations = [next(drawn) for _ in range(COUNT)]
    records = [
        RequestRecord(
            engine="engine",
            index=index,
            ok=True,
            scheduled_s=1.0 + index,
            start_s=1.0 + index,
            ttft_s=0.01,
            e2e_s=0.02,
            input_tokens=16,
            output_tokens=1,
            requested_output_tokens=1,
            finish_reason="length",
        )
        for index in range(COUNT)
    ]
    return conversations, records


def measure(
    conversations: list[Conversation], records: list[RequestRecord], rounds: int
) -> dict[str, float]:
    blobs = [pickle.dumps(item, protocol=pickle.HIGHEST_PROTOCOL) for item in conversations]
    batch = pickle.dumps(records, protocol=pickle.HIGHEST_PROTOCOL)
    assert [pickle.loads(blob) for blob in blobs] == conversations
    assert pickle.loads(batch) == records
    return {
        "conversation dumps": per_object_us(
            lambda: [pickle.dumps(item, protocol=pickle.HIGHEST_PROTOCOL) for item in conversations],
            COUNT,
            rounds,
        ),
        "conversation loads": per_object_us(
            lambda: [pickle.loads(blob) for blob in blobs], COUNT, rounds
        ),
        "conversation bytes": len(blobs[0]),
        "record dumps (a batch)": per_object_us(
            lambda: pickle.dumps(records, protocol=pickle.HIGHEST_PROTOCOL), COUNT, rounds
        ),
        "record loads (a batch)": per_object_us(lambda: pickle.loads(batch), COUNT, rounds),
        "record bytes": len(batch) / COUNT,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    conversations, records = samples()
    ours = measure(conversations, records, args.rounds)
    # The dataclasses' own pickling: the same classes without the override.
    classes = (Turn, Conversation, RequestRecord)
    saved = [cls.__dict__["__reduce__"] for cls in classes]
    for cls in classes:
        del cls.__reduce__
    try:
        theirs = measure(conversations, records, args.rounds)
    finally:
        for cls, reduce in zip(classes, saved, strict=True):
            cls.__reduce__ = reduce
    print(f"{COUNT} objects, median of {args.rounds} rounds; µs per object (bytes where said)")
    print(f"  {'':26s} {'dataclass':>10s} {'ours':>10s}")
    for key in ours:
        print(f"  {key:26s} {theirs[key]:10.2f} {ours[key]:10.2f}")
    per_request = sum(theirs[key] - ours[key] for key in ours if "bytes" not in key)
    print(f"  saved per request (one conversation and one record each way): {per_request:.2f} µs")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
