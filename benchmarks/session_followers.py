"""A room's load on the presenter: the presenter's Playground TTFT with no followers and with
30 followers polling what the presenter shows (issue 34: within 5%).

Each follower is a thread doing what a follower's screen does on the server: the followers'
poll (`services.sessions.poll`, one row read by its key, and now and then a "still here"
write) once a second, starting at random offsets. The presenter sends Playground exchanges to
two engines of the scripted server (first token at 50 ms, 10 ms per token, 32 tokens), in a
worker process as the page does, and publishes each to the session. Figures: the engine TTFT
the exchange stored, and the wait from `send()` to the first answer text in the database.

    .venv/bin/python -m benchmarks.session_followers [--rounds 10] [--followers 30]
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import tempfile
import threading
import time
from pathlib import Path

from services import playground, sessions
from services.engines import endpoints
from services.playground import EngineChoice, SendRequest
from services.team.access import Viewer
from tests.support.scripted_server import ScriptedServer

POLL_EVERY_S = 1.0


def follower(seat: object, polling: threading.Event, stop: threading.Event, polls: list[float]) -> None:
    assert isinstance(seat, sessions.Seat)
    stop.wait(random.uniform(0, POLL_EVERY_S))
    while not stop.is_set():
        if polling.is_set():
            began = time.perf_counter()
            sessions.poll(seat)
            polls.append(time.perf_counter() - began)
        stop.wait(POLL_EVERY_S)


def exchange(engines: tuple[str, str], presenter: object) -> tuple[float, float]:
    assert isinstance(presenter, sessions.Seat)
    handle = playground.send(
        SendRequest(engines=tuple(EngineChoice(e) for e in engines), prompt="hello"), isolated=True
    )
    sent = time.perf_counter()
    sessions.publish(presenter, sessions.Shown(kind="exchange", run_ids=(handle.run_id,)))
    first = None
    while playground.is_active(handle.run_id):
        if first is None and any(c.answer for c in playground.get_exchange(handle.run_id).columns):
            first = time.perf_counter() - sent
        time.sleep(0.01)
    column = playground.get_exchange(handle.run_id).columns[0]
    assert column.ttft_s is not None, column
    return column.ttft_s, first if first is not None else float("nan")


def measure(
    rounds: int, followers: int, engines: tuple[str, str]
) -> dict[bool, list[tuple[float, float]]]:
    """Exchanges with the followers idle and polling, alternately (the machine's own load drifts
    over minutes; pairs side by side compare under the same drift)."""
    operator = Viewer(role="operator", identity="local")
    info, presenter = sessions.start(operator, "presenter", f"{followers} followers")
    seats = [sessions.join(info.join_code, f"follower-{n}")[1] for n in range(followers)]
    polling, stop = threading.Event(), threading.Event()
    polls: list[float] = []
    threads = [
        threading.Thread(target=follower, args=(s, polling, stop, polls), daemon=True) for s in seats
    ]
    for thread in threads:
        thread.start()
    figures: dict[bool, list[tuple[float, float]]] = {False: [], True: []}
    try:
        exchange(engines, presenter)  # a warm-up: the first worker process starts Python cold
        for n in range(2 * rounds):
            loaded = n % 2 == 1
            if loaded:
                sessions.live.forget_seen()  # each polling spell begins with every "still here" write
                polling.set()
                time.sleep(POLL_EVERY_S)  # every follower polling before the send
            figures[loaded].append(exchange(engines, presenter))
            polling.clear()
    finally:
        stop.set()
        for thread in threads:
            thread.join()
        sessions.end(presenter)
    polls.sort()
    print(
        f"follower poll: p50 {statistics.median(polls) * 1000:.2f} ms, max {polls[-1] * 1000:.1f} ms, {len(polls)} polls"
    )
    return figures


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--followers", type=int, default=30)
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="shootout-session-followers-"))
    os.environ["SHOOTOUT_DATA_DIR"] = str(folder)
    os.environ["SHOOTOUT_DATABASE_URL"] = f"sqlite:///{folder / 'shootout.db'}"

    with ScriptedServer() as server:
        model = server.model(ttft=50, itl=10, tokens=32)
        engines = ("a", "b")
        for name in engines:
            endpoints.add_engine(name, server.base_url, model=model)
        figures = measure(args.rounds, args.followers, engines)
        print(f"{'followers':<10} {'TTFT p50':>10} {'first text p50':>16}")
        medians = {}
        for loaded, label in ((False, "0"), (True, str(args.followers))):
            ttft = statistics.median(f[0] for f in figures[loaded]) * 1000
            first = statistics.median(f[1] for f in figures[loaded]) * 1000
            medians[loaded] = (ttft, first)
            print(f"{label:<10} {ttft:8.1f} ms {first:13.0f} ms")
        print(
            f"TTFT ratio, {args.followers} followers / none: {medians[True][0] / medians[False][0]:.3f} "
            "(issue 34: at most 1.05)"
        )
        print(f"first-text ratio: {medians[True][1] / medians[False][1]:.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
