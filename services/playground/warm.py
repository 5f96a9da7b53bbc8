"""The warm Playground worker: `python -m services.playground.warm`, started by the server
(services/playground/pool.py) before anyone sends, with the streaming code already imported.

It reads lines from its pipe: `run N` streams stored exchange N in a thread of its own (an event
loop each, as services/playground/worker.py runs every exchange), `stop N` stops one at once.
When the pipe closes (the server went) it lets the running exchanges end, then exits; SIGTERM
or SIGINT stop them first (what arrived is kept)."""

from __future__ import annotations

import signal
import sys
import threading
from typing import BinaryIO

from services.core.errors import ShootoutError
from services.playground import sending, worker
from services.runstate import lifecycle
from services.runstate.lifecycle import RunStatus
from services.runstate.worker import _raise_file_limit


def _stream(run_id: int) -> None:
    try:
        streams = sending.streams_for(run_id)
    except ShootoutError as error:  # an engine removed between the send and this start
        lifecycle.finish(run_id, RunStatus.FAILED, error=str(error), worker_pid=None)
        print(f"error: exchange {run_id}: {error}", file=sys.stderr, flush=True)
        return
    worker.run_here(run_id, streams)


def _stop_all(threads: dict[int, threading.Thread]) -> None:
    for run_id in list(threads):
        worker.stop(run_id)


def serve(pipe: BinaryIO) -> int:
    """Take exchanges from `pipe` until it closes, then wait for the running ones."""
    threads: dict[int, threading.Thread] = {}
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: _stop_all(threads))
    for raw in pipe:
        verb, _, value = raw.decode(errors="replace").strip().partition(" ")
        if not value.isdigit():
            continue
        run_id = int(value)
        if verb == "run":
            thread = threading.Thread(target=_stream, args=(run_id,), name=f"exchange-{run_id}")
            threads[run_id] = thread
            thread.start()
        elif verb == "stop":
            worker.stop(run_id)
        for done in [r for r, t in threads.items() if not t.is_alive()]:
            del threads[done]
    for thread in list(threads.values()):
        thread.join()
    return 0


#: How long a thread may hold the GIL before another may take it (Python's default is 5 ms): a
#: chunk that arrives while a database write runs gets its timestamp within this.
SWITCH_INTERVAL_S = 0.0005


def main() -> int:
    _raise_file_limit()
    sys.setswitchinterval(SWITCH_INTERVAL_S)
    return serve(sys.stdin.buffer)


if __name__ == "__main__":
    raise SystemExit(main())
