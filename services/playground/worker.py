"""The background side of a send: an event loop per exchange, streaming every engine through
the shared client and writing partial answers as they grow: the first token at once, then at
most every PERSIST_INTERVAL_S; an engine's own end writes its final row at once (its column
says finished while the others stream); the exchange's end sets the run's status and summary.

It runs in a worker process when the page sends (the warm one of services/playground/warm.py,
so the Streamlit server's GIL pauses never land between a chunk and its timestamp, and no
process starts per send), or in a thread of the caller (`shootout ask`, which is a process of its
own already, and tests that replace the stream). A worker in another process is stopped through
its pipe (services/playground/pool.py) and the database (`lifecycle`'s cancel, checked every
CANCEL_CHECK_S); `is_active` and `wait` read the run's status then."""

from __future__ import annotations

import asyncio
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import update

from db.models import Exchange, Run
from db.session import session_scope
from services.client import ChatRequest, StreamResult, make_http_client, new_event_loop, stream_chat
from services.core import json_schema
from services.core.errors import NotFoundError
from services.core.json_types import JsonOut
from services.core.measure import RequestMetrics
from services.core.processes import pid_alive
from services.playground import pool
from services.playground.records import ExchangeMetrics, ExchangeValues, ReasoningFigures
from services.runstate import lifecycle
from services.runstate.lifecycle import HEARTBEAT_INTERVAL_S, RunStatus

#: The shortest time between two writes of an exchange's growing answers (the first token of a
#: quiet exchange is written at once).
PERSIST_INTERVAL_S = 0.05
#: How often a worker process reads whether someone stored a cancel (a stop sent through the
#: warm worker's pipe arrives at once).
CANCEL_CHECK_S = 0.1


@dataclass
class Stream:
    """One engine's stream of a send, with what arrived so far."""

    exchange_id: int
    engine: str
    request: ChatRequest
    notes: list[str]
    result: StreamResult = field(default_factory=StreamResult)
    status: str = "streaming"
    dirty: bool = True
    #: The ended answer's check against the schema (SchemaCheck.to_json), made once, off the
    #: event loop: a check may take its whole budget while the loop times the other chunks.
    schema_check: JsonOut | None = None

    def check_schema(self) -> None:
        """Check the ended answer against the schema once (its verdict is stored with it)."""
        schema, text = self.request.response_schema, self.result.text
        if self.schema_check is None and schema is not None and text:
            # Over its budget, the check says so and the answer is stored as any other.
            self.schema_check = json_schema.check_text(text, schema).to_json()


class _Worker:
    def __init__(self, run_id: int, streams: list[Stream], *, watch_cancel: bool = False) -> None:
        self.run_id = run_id
        self.streams = streams
        #: A worker process learns of a stop from the database (the page is another process).
        self.watch_cancel = watch_cancel
        self.loop: asyncio.AbstractEventLoop | None = None
        #: Set when something arrived or ended: the persister writes at once, not on a timer.
        self.wake: asyncio.Event | None = None
        self.tasks: list[asyncio.Task[Any]] = []
        self.stop_requested = False
        self.streams_done = False
        self.thread = threading.Thread(target=self._main, name=f"playground-{run_id}", daemon=True)
        self.done = threading.Event()

    def start(self) -> None:
        self.thread.start()

    def stop(self) -> None:
        self.stop_requested = True
        loop = self.loop
        if loop is not None and not loop.is_closed():
            for task in self.tasks:
                loop.call_soon_threadsafe(task.cancel)

    def _main(self) -> None:
        try:
            with asyncio.Runner(loop_factory=new_event_loop) as runner:
                runner.run(self._run())
        except Exception as error:  # noqa: BLE001 - the worker must record, never die silently
            _finish_run(self.run_id, self.streams, error=f"{type(error).__name__}: {error}")
        finally:
            with _lock:
                _workers.pop(self.run_id, None)
            self.done.set()

    async def _run(self) -> None:
        self.loop = asyncio.get_running_loop()
        self.wake = asyncio.Event()
        async with make_http_client(len(self.streams) * 2) as client:
            for stream in self.streams:
                self.tasks.append(asyncio.create_task(self._one(client, stream)))
            if self.stop_requested:
                for task in self.tasks:
                    task.cancel()
            persister = asyncio.create_task(self._persist_loop())
            await asyncio.gather(*self.tasks, return_exceptions=True)
            # Let an in-flight partial write land before the final one (never after it).
            self.streams_done = True
            self.wake.set()
            await persister
        await asyncio.to_thread(_finish_run, self.run_id, self.streams)

    async def _one(self, client: Any, stream: Stream) -> None:
        wake = self.wake
        assert wake is not None

        def mark(_index: int, _text: str, _result: StreamResult) -> None:
            stream.dirty = True
            wake.set()

        try:
            await stream_chat(client, stream.request, on_delta=mark, result=stream.result)
        except asyncio.CancelledError:
            stream.status = "cancelled"
            return
        stream.status = "finished" if stream.result.ok else "failed"
        stream.dirty = True
        wake.set()

    async def _persist_loop(self) -> None:
        wake = self.wake
        assert wake is not None
        last_beat = last_check = time.monotonic()
        while not self.streams_done:
            try:
                await asyncio.wait_for(wake.wait(), timeout=CANCEL_CHECK_S)
            except TimeoutError:
                pass
            wake.clear()
            now = time.monotonic()
            if self.watch_cancel and not self.stop_requested and now - last_check >= CANCEL_CHECK_S:
                last_check = now
                if await asyncio.to_thread(lifecycle.cancel_requested, self.run_id):
                    self.stop()
            changed = [s for s in self.streams if s.dirty]
            # An engine silent in a long prefill must not make the exchange look abandoned.
            if not changed and now - last_beat < HEARTBEAT_INTERVAL_S:
                continue
            last_beat = now
            ended = [s for s in changed if s.status != "streaming"]
            if ended:
                await asyncio.gather(*(asyncio.to_thread(s.check_schema) for s in ended))
            rows = []
            for stream in changed:
                stream.dirty = False
                # An engine that ended is final now: its column says so while others stream.
                rows.append(
                    (stream.exchange_id, _row_values(stream, final=stream.status != "streaming"))
                )
            # The database write happens off the event loop so it never delays a chunk's timestamp.
            await asyncio.to_thread(_write_rows, self.run_id, rows)
            if not self.streams_done:
                await asyncio.sleep(PERSIST_INTERVAL_S)


_lock = threading.Lock()
_workers: dict[int, _Worker] = {}


def _row_values(stream: Stream, final: bool) -> ExchangeValues:
    result = stream.result
    figures = result.metrics()
    metrics: ExchangeMetrics = {
        "ttft_s": figures.ttft_s,
        "e2e_s": figures.e2e_s,
        "tpot_s": figures.tpot_s,
        "itl_mean_s": figures.itl_mean_s,
        "itl_p90_s": figures.itl_p90_s,
        "output_tokens": figures.output_tokens,
        "tokens_per_s": (1 / figures.tpot_s) if figures.tpot_s else None,
        "notes": stream.notes,
        **reasoning_figures(figures),
    }
    thinking = result.reasoning_text
    if thinking:
        metrics["thinking"] = thinking
    if final:
        metrics["itl_s"] = figures.itl_s
        metrics["chunk_times_s"] = figures.chunk_times_s
    if final and result.engine_times is not None:
        metrics["engine_times"] = result.engine_times.to_json()
    if final and stream.schema_check is not None:
        # Checked once and stored: a page or a follower's poll reads it, never reruns it.
        metrics["schema_check"] = stream.schema_check
    texts = result.texts
    values: ExchangeValues = {
        "answer": result.text,
        "choices": texts if len(texts) > 1 else [],
        "metrics": metrics,
        "usage": {**(result.usage or {}), **({"timings": result.timings} if result.timings else {})},
        "finish_reason": result.finish_reason,
    }
    if final:
        values["status"] = (
            stream.status if stream.status != "streaming" else ("finished" if result.ok else "failed")
        )
        values["error_class"] = result.error_class
        values["error"] = result.error
    return values


def reasoning_figures(figures: RequestMetrics) -> ReasoningFigures:
    """An answer's timing beside its TTFT, as an exchange's metrics keep it (services/core/measure.py)."""
    return {
        "ttfat_s": figures.ttfat_s,
        "reasoning_tokens": figures.reasoning_tokens,
        "reasoning_tokens_source": figures.reasoning_tokens_source,
        "answer_tokens": figures.answer_tokens,
        "reasoning_tok_s": figures.reasoning_tok_s,
        "answer_tok_s": figures.answer_tok_s,
        "ttft_includes_reasoning": figures.ttft_includes_reasoning,
    }


def _write_rows(run_id: int, rows: list[tuple[int, ExchangeValues]]) -> None:
    # One UPDATE per row, no load: the less Python here, the less this thread holds the GIL
    # while a chunk waits for its timestamp.
    with session_scope() as session:
        for exchange_id, values in rows:
            session.execute(update(Exchange).where(Exchange.id == exchange_id).values(**values))
        lifecycle.beat(run_id, session)


def _finish_run(run_id: int, streams: list[Stream], error: str | None = None) -> None:
    for stream in streams:
        stream.check_schema()
    rows = [(s.exchange_id, _row_values(s, final=True)) for s in streams]
    _write_rows(run_id, rows)
    statuses = [values["status"] for _, values in rows]
    reason: str | None | lifecycle.Keep = lifecycle.KEEP
    if error:
        status, reason = RunStatus.FAILED, error
    elif "cancelled" in statuses:
        status = RunStatus.CANCELLED
    elif all(s == "finished" for s in statuses):
        status = RunStatus.FINISHED
    elif any(s == "finished" for s in statuses):
        status = RunStatus.FINISHED_WITH_ERRORS
    else:
        status = RunStatus.FAILED
        reason = "; ".join(f"{s.engine}: {s.result.error}" for s in streams if s.result.error)
    # A cancelled exchange is complete too: each answer ended, cut or not. Its worker (a warm
    # process that lives on for the next send) writes nothing more: the run names none now.
    lifecycle.finish(
        run_id,
        status,
        error=reason,
        progress=1.0,
        worker_pid=None,
        summary={
            "engines": {
                s.engine: {
                    "ttft_s": {"p50": values["metrics"]["ttft_s"]}
                    if values["metrics"]["ttft_s"] is not None
                    else None,
                    "output_throughput_tok_s": values["metrics"]["tokens_per_s"],
                    "ttfat_s": {"p50": values["metrics"]["ttfat_s"]}
                    if values["metrics"]["ttfat_s"] is not None
                    else None,
                    "ttft_includes_reasoning": values["metrics"]["ttft_includes_reasoning"],
                    "failed": 0 if values["status"] == "finished" else 1,
                }
                for s, (_, values) in zip(streams, rows, strict=True)
            }
        },
    )


def start(run_id: int, streams: list[Stream]) -> None:
    """Stream every engine of this stored exchange in a worker thread of its own."""
    worker = _Worker(run_id, streams)
    with _lock:
        _workers[run_id] = worker
    worker.start()


def run_here(run_id: int, streams: list[Stream]) -> None:
    """Stream every engine of this stored exchange in the calling thread, until every answer
    ended or a stop came (a signal, or a cancel stored by another process)."""
    worker = _Worker(run_id, streams, watch_cancel=True)
    with _lock:
        _workers[run_id] = worker
    worker._main()


def stop(run_id: int) -> None:
    """Stop every stream of this exchange; what arrived is kept (status "cancelled")."""
    with _lock:
        worker = _workers.get(run_id)
    if worker is not None:
        worker.stop()
        return

    # Its worker is another process: the warm worker hears it through its pipe at once; any
    # worker sees the stored cancel within CANCEL_CHECK_S.
    pool.tell_stop(run_id)
    try:
        lifecycle.request_cancel(run_id, "playground", "playground exchange")
    except NotFoundError:
        pass


def running_here(run_id: int) -> bool:
    """Whether this process streams the exchange."""
    with _lock:
        return run_id in _workers


def streaming(run_id: int, status: str, worker_pid: int | None) -> bool:
    """Whether an exchange with this stored status and worker still streams: in this process,
    or in a worker process (which may still be writing its final rows after a stop has already
    marked the run cancelled)."""
    return (
        running_here(run_id)
        or status in lifecycle.ACTIVE_STATUSES
        or (worker_pid is not None and pid_alive(worker_pid))
    )


def is_active(run_id: int) -> bool:
    """Whether the exchange still streams, in this process or in a worker process."""
    if running_here(run_id):
        return True

    with session_scope() as session:
        run = session.get(Run, run_id)
        if run is None:
            return False
        status, pid = run.status, run.worker_pid
    return streaming(run_id, status, pid)


def wait(run_id: int, timeout_s: float = 60.0) -> bool:
    """Block until the exchange's streams are done (CLI and tests); False on timeout."""
    with _lock:
        worker = _workers.get(run_id)
    if worker is not None:
        return worker.done.wait(timeout_s)
    deadline = time.monotonic() + timeout_s
    while is_active(run_id):
        if time.monotonic() >= deadline:
            return False
        time.sleep(PERSIST_INTERVAL_S / 2)
    return True
