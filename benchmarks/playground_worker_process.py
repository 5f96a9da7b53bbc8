"""Playground exchanges streamed in a thread of the sending process (as before, and as
`cli.py ask` still does) against a worker process of their own (what the page does now), with
the sending process busy or not: a busy Python thread stands in for the Streamlit server
rendering pages for several viewers, holding the GIL between a chunk's arrival and its
timestamp.

Per mode, against the scripted server (first token at 50 ms, then 10 ms per token, 32 tokens):
the engine's own TTFT and mean ITL as the exchange stored them (truth: 50 ms and 10 ms) and
the wait from `send()` returning to the first answer text in the database (what a user sees
as the start; a worker process first has to start Python).

    .venv/bin/python -m benchmarks.playground_worker_process [--rounds 5]
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import threading
import time
from pathlib import Path

from services import playground
from services.engines import endpoints
from services.playground import EngineChoice, SendRequest
from tests.support.scripted_server import ScriptedServer

ROOT = Path(__file__).resolve().parent.parent


def busy(stop: threading.Event) -> None:
    """Pure-Python work that holds the GIL in slices, like page scripts building tables."""
    while not stop.is_set():
        sum(i * i for i in range(20_000))


def one(engines: tuple[str, str], isolated: bool) -> tuple[float, float, float]:
    handle = playground.send(
        SendRequest(engines=tuple(EngineChoice(e) for e in engines), prompt="hello"), isolated=isolated
    )
    sent = time.perf_counter()
    first = None
    while playground.is_active(handle.run_id):
        if first is None and any(c.answer for c in playground.get_exchange(handle.run_id).columns):
            first = time.perf_counter() - sent
        time.sleep(0.01)
    view = playground.get_exchange(handle.run_id)
    column = view.columns[0]
    assert column.ttft_s is not None and column.itl_mean_s is not None, view
    return column.ttft_s, column.itl_mean_s, first if first is not None else float("nan")


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="shootout-pg-process-"))
    os.environ["SHOOTOUT_DATA_DIR"] = str(folder)
    os.environ["SHOOTOUT_DATABASE_URL"] = f"sqlite:///{folder / 'shootout.db'}"

    with ScriptedServer() as server:
        model = server.model(ttft=50, itl=10, tokens=32)
        engines = ("a", "b")
        for name in engines:
            endpoints.add_engine(name, server.base_url, model=model)
        print(f"{'mode':<28} TTFT p50   ITL mean p50   first text after send, p50")
        for load in (False, True):
            for isolated in (False, True):
                stop = threading.Event()
                hogs = [threading.Thread(target=busy, args=(stop,), daemon=True) for _ in range(2)]
                if load:
                    for hog in hogs:
                        hog.start()
                try:
                    figures = [one(engines, isolated) for _ in range(args.rounds)]
                finally:
                    stop.set()
                ttft = statistics.median(f[0] for f in figures) * 1000
                itl = statistics.median(f[1] for f in figures) * 1000
                first = statistics.median(f[2] for f in figures) * 1000
                mode = ("worker process" if isolated else "thread") + (", busy sender" if load else "")
                print(f"{mode:<28} {ttft:8.1f} ms {itl:10.2f} ms {first:14.0f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
