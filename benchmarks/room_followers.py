"""A room of thirty (issue 47): the presenter sends Playground exchanges in headless Chromium while
N followers are real Streamlit sessions on the follow page (`/session?join=CODE`), each over a
websocket of its own, as a browser tab keeps it, against the real app and the scripted server.

A follower here is what a browser tab is to the server: its websocket, its first run of the page,
and the run_every timers of its fragments, which a browser fires (this client fires them too, at
the interval the server asks for). It draws nothing: it notes when a delta first carries the
answer's first words. Reported for 0, 10 and 30 followers: the presenter's first-words lag (as
benchmarks/playground_first_words.py measures it), each follower's delay from the presenter's
screen to its own (the browser's clock and this process's compared through the wall clock, one
machine), and the CPU of the Streamlit server's process over the sends. Last, one follower's
websocket is dropped and it comes back with its session id (as the browser does): its session
state (its seat) is still there, no reload.

    .venv/bin/python -m benchmarks.room_followers [--sends 6] [--rooms 0,10,30]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Self

import httpx2
import websockets
from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

from benchmarks.playground_first_words import (
    ENGINES,
    chromium,
    first_words_lag,
    new_conversation,
    percentile,
    register,
    wait_idle,
)
from db.session import dispose_all
from services import sessions
from tests.support.scripted_server import WORDS, ScriptedServer
from tests.support.served import start_served_app, stop

FIRST_WORDS = tuple(w.strip() for w in WORDS)
#: Seconds the room idles before the sends, its followers' script runs counted.
IDLE_S = 4.0


def _has_words(text: str) -> bool:
    return any(f" {w}" in f" {text}" for w in FIRST_WORDS)


class Follower:
    """One follower's Streamlit session over its websocket."""

    def __init__(self, url: str, code: str) -> None:
        self.url = url
        self.code = code
        self.session_id = ""
        self.page_hash = ""
        #: Wall-clock times at which a delta carried answer words, since `watch_from`.
        self.first_words: float | None = None
        self.watch_from = float("inf")
        self.timers: dict[str, asyncio.Task[None]] = {}
        self.socket: Any = None
        self.cookies = ""
        self.texts: list[str] = []
        #: Script runs (of the page or a fragment) this session's server has finished.
        self.runs = 0
        self.stopped = False
        #: The address's query, as the page leaves it (a browser sends it with every rerun).
        self.query = f"join={code}"

    def _rerun(self, fragment_id: str = "", auto: bool = False) -> bytes:
        message = BackMsg()
        state = message.rerun_script
        state.query_string = self.query
        state.page_name = "session"
        state.page_script_hash = self.page_hash
        if fragment_id:
            state.fragment_id = fragment_id
            state.is_auto_rerun = auto
        return message.SerializeToString()

    async def _timer(self, fragment_id: str, interval: float) -> None:
        while not self.stopped:
            await asyncio.sleep(interval)
            try:
                await self.socket.send(self._rerun(fragment_id, auto=True))
            except websockets.ConnectionClosed:
                pass  # dropped: the run loop reconnects

    def _handle(self, message: ForwardMsg) -> None:
        kind = message.WhichOneof("type")
        if kind == "new_session":
            self.page_hash = message.new_session.page_script_hash or self.page_hash
            self.session_id = message.new_session.initialize.session_id or self.session_id
        elif kind == "page_info_changed":
            self.query = message.page_info_changed.query_string
        elif kind == "auto_rerun":
            rerun = message.auto_rerun
            old = self.timers.pop(rerun.fragment_id, None)
            if old is not None:
                old.cancel()
            self.timers[rerun.fragment_id] = asyncio.create_task(
                self._timer(rerun.fragment_id, rerun.interval)
            )
        elif kind == "stop_auto_rerun":
            for fragment_id in message.stop_auto_rerun.fragment_ids:
                task = self.timers.pop(fragment_id, None)
                if task is not None:
                    task.cancel()
        elif kind == "script_finished":
            self.runs += 1
        elif kind == "delta" and message.delta.WhichOneof("type") == "new_element":
            element = message.delta.new_element
            if element.WhichOneof("type") == "markdown":
                body = element.markdown.body
                self.texts.append(body)
                if self.first_words is None and time.time() >= self.watch_from and _has_words(body):
                    self.first_words = time.time()

    async def connect(self, resume: bool) -> None:
        address = self.url.replace("http://", "ws://") + "/_stcore/stream"
        protocols = ["streamlit", "PLACEHOLDER_AUTH_TOKEN", self.session_id] if resume else ["streamlit"]
        self.socket = await websockets.connect(
            address,
            subprotocols=protocols,  # type: ignore[arg-type]
            additional_headers={"Cookie": self.cookies, "Origin": self.url},
            max_size=64 * 1024 * 1024,
        )
        for task in self.timers.values():  # a full run registers the fragments' timers again
            task.cancel()
        self.timers.clear()
        await self.socket.send(self._rerun())

    async def run(self) -> None:
        await self.connect(resume=False)
        while not self.stopped:
            try:
                raw = await self.socket.recv()
            except websockets.ConnectionClosed:
                if self.stopped:
                    return
                await asyncio.sleep(0.2)  # dropped: come back with the session id
                await self.connect(resume=True)
                continue
            message = ForwardMsg()
            message.ParseFromString(raw)
            self._handle(message)


class Room:
    """N followers on an event loop of their own (a thread), so the presenter's browser is free."""

    def __init__(self, url: str, code: str, size: int) -> None:
        self.followers = [Follower(url, code) for _ in range(size)]
        for follower in self.followers:
            # A browser of its own: the gate's cookie names a different participant each.
            response = httpx2.get(url + "/session", timeout=30)
            follower.cookies = "; ".join(f"{k}={v}" for k, v in response.cookies.items())
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.tasks: list[Any] = []

    def __enter__(self) -> Self:
        self.thread.start()
        for follower in self.followers:
            self.tasks.append(asyncio.run_coroutine_threadsafe(follower.run(), self.loop))
        return self

    def watch(self, since: float) -> None:
        for follower in self.followers:
            follower.first_words, follower.watch_from = None, since

    def drop_one(self) -> Follower:
        follower = self.followers[0]
        asyncio.run_coroutine_threadsafe(follower.socket.close(), self.loop).result(10)
        return follower

    def __exit__(self, *_: object) -> None:
        for follower in self.followers:
            follower.stopped = True
            if follower.socket is not None:
                asyncio.run_coroutine_threadsafe(follower.socket.close(), self.loop).result(10)
        for task in self.tasks:
            task.result(10)
        for follower in self.followers:
            for timer in follower.timers.values():
                self.loop.call_soon_threadsafe(timer.cancel)
        time.sleep(0.2)
        self.loop.call_soon_threadsafe(self.loop.stop)


def cpu_seconds(pid: int) -> float:
    """User + system CPU of a process so far (its children not counted)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def start_session(page: Any, url: str) -> str:
    page.goto(f"{url}/session")
    wait_idle(page)
    page.locator(".st-key-session_start button").click()
    page.get_by_text("Presenting").first.wait_for()
    code = sessions.list_sessions()[0].join_code
    page.get_by_role("link", name="Playground", exact=True).filter(visible=True).first.click()
    page.locator(".st-key-pg_prompt textarea").wait_for()
    wait_idle(page)
    return code


def one_room(
    page: Any, url: str, code: str, server: ScriptedServer, size: int, sends: int, pid: int
) -> dict[str, Any]:
    with Room(url, code, size) as room:
        time.sleep(3 + size * 0.2)  # every follower's first run
        idle_runs = [f.runs for f in room.followers]
        time.sleep(IDLE_S)  # nothing shown changes: what does a follower's screen cost then?
        idle_runs = [f.runs - before for f, before in zip(room.followers, idle_runs, strict=True)]
        send_runs = [f.runs for f in room.followers]
        lags: list[float] = []
        delays: list[float] = []
        missed = 0
        began_cpu, began = cpu_seconds(pid), time.monotonic()
        for index in range(sends):
            new_conversation(page)
            room.watch(time.time())
            lag, _own = first_words_lag(page, server, f"Room question {index + 1}, please answer.")
            shown = page.evaluate("() => (performance.timeOrigin + window.__firstWords) / 1000")
            lags.append(lag)
            for follower in room.followers:
                if follower.first_words is None:
                    missed += 1
                else:
                    delays.append(follower.first_words - shown)
        cpu = (cpu_seconds(pid) - began_cpu) / (time.monotonic() - began)
        send_runs = [f.runs - before for f, before in zip(room.followers, send_runs, strict=True)]
        resumed = None
        if size:
            follower = room.drop_one()
            before = follower.session_id
            time.sleep(2.0)
            new_conversation(page)
            room.watch(time.time())
            first_words_lag(page, server, "After the drop, please answer.")
            resumed = follower.first_words is not None and follower.session_id == before
    return {
        "followers": size,
        "lags": lags,
        "delays": delays,
        "missed": missed,
        "cpu": cpu,
        "resumed": resumed,
        #: Script runs per follower: over IDLE_S with nothing new, and per send.
        "idle_runs": idle_runs,
        "runs_per_send": [runs / sends for runs in send_runs],
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sends", type=int, default=6)
    parser.add_argument("--rooms", default="0,10,30")
    parser.add_argument("--ttft-ms", type=float, default=300.0)
    args = parser.parse_args()
    # Imported here: the benchmark's only use of Playwright (a test dependency).
    from playwright.sync_api import sync_playwright

    rooms = [int(n) for n in args.rooms.split(",")]
    load_before = os.getloadavg()[0]
    results = []
    with tempfile.TemporaryDirectory() as tmp, ScriptedServer() as server:
        data_dir = Path(tmp)
        os.environ["SHOOTOUT_DATABASE_URL"] = f"sqlite:///{data_dir / 'shootout.db'}"
        os.environ["SHOOTOUT_DATA_DIR"] = str(data_dir)
        # Timed refresh on (the followers' screens poll), as a served app has it.
        app = start_served_app(data_dir, {"SHOOTOUT_NO_AUTOREFRESH": "0"})
        try:
            register(server, args.ttft_ms, tokens=40)
            with sync_playwright() as playwright:
                browser = chromium(playwright)
                page = browser.new_page(viewport={"width": 1440, "height": 1000})
                page.set_default_timeout(60_000)
                code = start_session(page, app.url)
                new_conversation(page)
                first_words_lag(page, server, "Warm-up, not counted.")
                for size in rooms:
                    results.append(
                        one_room(page, app.url, code, server, size, args.sends, app.process.pid)
                    )
                browser.close()
        finally:
            stop(app)
            dispose_all()
    print(
        f"cores: {os.cpu_count()}, load average {load_before:.2f} before, {os.getloadavg()[0]:.2f} after; engines {', '.join(ENGINES)}; "
        "the team server's per-client caps (SHOOTOUT_CONNECTIONS_PER_CLIENT, 500) left as they are"
    )
    for found in results:
        lags = [lag * 1000 for lag in found["lags"]]
        line = (
            f"{found['followers']:>2} followers: presenter first words p50 {statistics.median(lags):.0f} ms "
            f"(max {max(lags):.0f}), server CPU {found['cpu'] * 100:.0f}% of a core"
        )
        if found["followers"]:
            delays = [d * 1000 for d in found["delays"]]
            line += (
                f"; follower behind the presenter p50 {percentile(delays, 0.5):.0f} ms, "
                f"p90 {percentile(delays, 0.9):.0f}, max {max(delays):.0f} ms, missed {found['missed']}; "
                f"dropped websocket resumed: {found['resumed']}; a follower's script runs: "
                f"{statistics.mean(found['idle_runs']) / IDLE_S:.2f} a second idle, "
                f"{statistics.mean(found['runs_per_send']):.1f} per send"
            )
        print(line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
