"""The client's per-token hot path alone, without sockets, kernel or event-loop wake-ups
(issue 15): HTTP chunks of a realistic content chunk are handed straight to
`Connection.data_received`, one or several chunks a read, and the process CPU per token is
timed (best of 5). Loopback runs (benchmarks/bench_client_cpu.py) spend most of a token's
CPU in the kernel and the loop; this shows the Python share that code changes can move.

    .venv/bin/python -m benchmarks.client_hot_path [--tree PATH] [--per-read 1,2,4] [--think N]

--tree points at another checkout (e.g. an earlier commit exported with git archive) to
compare with. --think N streams a reasoning model's answer: N `reasoning_content` chunks,
then the answer's (a tree that cannot tell them apart reads both as answer chunks).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

_BASE = {
    "id": "chatcmpl-scripted-7f3a2b1c4d5e6123456",
    "object": "chat.completion.chunk",
    "created": 1764600000,
    "model": "scripted:ttft=0,itl=0,tokens=256",
}
_HEAD = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"


def _chunk(choice: dict[str, Any]) -> bytes:
    event = (
        b"data: " + json.dumps({**_BASE, "choices": [choice]}, separators=(",", ":")).encode() + b"\n\n"
    )
    return b"%x\r\n%s\r\n" % (len(event), event)


def _content(text: str, key: str = "content") -> bytes:
    return _chunk({"index": 0, "delta": {key: text}, "finish_reason": None})


class _Transport:
    def write(self, data: bytes) -> None:
        pass

    def abort(self) -> None:
        pass


async def per_token(per_read: int, tokens: int = 20_000, think: int = 0) -> float:
    """Best-of-5 µs of process CPU per token, `per_read` chunks a read, the first `think`
    tokens (after the three the shape is learnt from) thinking."""
    # Not at the top: with --tree, main times the other tree in a child (its services found
    # first), and this process loads none of this checkout's code.
    from services.client.records import StreamResult
    from services.client.stream import Exchange
    from services.client.transport import Connection, StreamClient

    pool = StreamClient(4)
    tokens -= tokens % per_read
    best = float("inf")
    for _ in range(5):
        connection = Connection(pool, ("http", "bench", 1))
        connection.transport = _Transport()  # type: ignore[assignment]  # writes go nowhere
        result = StreamResult(start=time.perf_counter())
        exchange = Exchange(connection, result, None, None, 300.0)
        connection.exchange = exchange
        role = _chunk({"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": None})
        connection.data_received(_HEAD + role)
        for i in range(3):  # the chunks the shape is learnt from
            connection.data_received(_content(f" w{i}", "reasoning_content" if think else "content"))
        reads = [
            b"".join(
                _content(f" tok{(i + j) % 50}", "reasoning_content" if i + j < think else "content")
                for j in range(per_read)
            )
            for i in range(0, tokens, per_read)
        ]
        started = time.process_time()
        for data in reads:
            connection.data_received(data)
        best = min(best, time.process_time() - started)
        assert len(result.choices[0].parts) == tokens + 3
        exchange.settle()
    return best / tokens * 1e6


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tree", help="another checkout to time instead of this one")
    parser.add_argument("--per-read", default="1,2,4")
    parser.add_argument("--think", type=int, default=0)
    args = parser.parse_args()
    if args.tree:
        # The tree's code, not this checkout's: this script again, in a child whose imports
        # find the tree first (the script's own folder holds no package).
        command = [sys.executable, __file__, "--per-read", args.per_read, "--think", str(args.think)]
        return subprocess.run(command, env={**os.environ, "PYTHONPATH": args.tree}).returncode
    # As in per_token: with --tree this process imports none of this checkout's code.
    import services

    tree = Path(services.__file__).resolve().parents[1]
    for count in (int(n) for n in args.per_read.split(",")):
        figure = asyncio.run(per_token(count, think=args.think))
        print(
            f"{tree}: {count} chunk(s) a read, {args.think} thinking: {figure:.3f} µs of CPU per token",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
