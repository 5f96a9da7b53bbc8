"""The worker's writer thread: request rows in batches, the heartbeat, progress and live
figures, and the cancel flag read on the same beat; and a stored row back as a record."""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable
from typing import Any, cast

from sqlalchemy import insert

from db.models import RequestResult
from db.session import session_scope
from services.bench.stats import CANCELLED, RequestRecord, reasoning_keys
from services.bench.summary import BenchSummary, LiveCounts
from services.core import stored_json
from services.core.counts import Refusal
from services.core.json_types import JsonOut
from services.core.measure import EngineTimes, token_count
from services.runstate import lifecycle
from services.runstate.lifecycle import RunStatus

FLUSH_INTERVAL_S = 0.5


def request_row(run_id: int, record: RequestRecord) -> JsonOut:
    """A record as the RequestResult row to insert (what has no column goes into `extra`)."""
    extra: JsonOut = {}
    if record.step is not None:
        extra["step"] = record.step
    if record.schema_valid is not None:
        extra["schema_valid"] = record.schema_valid
    if record.requested_output_tokens is not None:
        extra["requested_output_tokens"] = record.requested_output_tokens
    extra.update(reasoning_extra(record))
    if record.engine_times is not None:
        extra["engine_times"] = record.engine_times.to_json()
    extra.update(count_extra(record))
    return {
        "run_id": run_id,
        "engine_name": record.engine,
        "index": record.index,
        "warmup": record.warmup,
        "ok": record.ok,
        "scheduled_s": record.scheduled_s,
        "start_s": record.start_s,
        "ttft_s": record.ttft_s,
        "e2e_s": record.e2e_s,
        "tpot_s": record.tpot_s,
        "itl_s": record.itl_s,
        "input_tokens": record.input_tokens,
        "output_tokens": record.output_tokens,
        "cached_tokens": record.cached_tokens,
        "finish_reason": record.finish_reason,
        "error_class": record.error_class,
        "error": record.error,
        "extra": extra,
    }


def reasoning_extra(record: RequestRecord) -> JsonOut:
    """A request's answer timing as its row's `extra` keeps it (no columns: old rows and
    imports read without them)."""
    return reasoning_keys(
        record.ttfat_s,
        record.reasoning_tokens,
        record.reasoning_source,
        record.ttft_includes_reasoning,
    )


def count_extra(record: RequestRecord) -> JsonOut:
    """What a request's counts and answer left for the run's findings (services/bench/findings.py),
    as its row's `extra` keeps it: only what was said (old rows read without them)."""
    extra: JsonOut = {}
    if record.stream_tokens is not None:
        extra["stream_tokens"] = record.stream_tokens
    if record.refused:
        extra["refused"] = [refusal.to_json() for refusal in record.refused]
    if record.over_max_tokens:
        extra["over_max_tokens"] = True
    if record.answer_digest:
        extra["answer_digest"] = record.answer_digest
    if record.prompt_digest:
        extra["prompt_digest"] = record.prompt_digest
    return extra


def _refusals(value: Any) -> tuple[Refusal, ...]:
    listed = value if isinstance(value, list) else []
    return tuple(found for item in listed if (found := Refusal.from_json(item)) is not None)


def record_from_row(row: Any) -> RequestRecord:
    """A stored RequestResult (ORM row or mapping) back as a statistics record."""
    get = row.get if isinstance(row, dict) else (lambda key, default=None: getattr(row, key, default))
    extra = get("extra") or {}
    return RequestRecord(
        # A stored row always has both (non-null columns); the getter's type cannot say so.
        engine=cast(str, get("engine_name")),
        index=cast(int, get("index")),
        ok=bool(get("ok")),
        warmup=bool(get("warmup")),
        scheduled_s=get("scheduled_s"),
        start_s=get("start_s"),
        ttft_s=get("ttft_s"),
        e2e_s=get("e2e_s"),
        itl_s=list(get("itl_s") or []),
        input_tokens=get("input_tokens"),
        output_tokens=get("output_tokens"),
        cached_tokens=get("cached_tokens"),
        requested_output_tokens=extra.get("requested_output_tokens"),
        error_class=get("error_class"),
        error=get("error"),
        finish_reason=get("finish_reason"),
        schema_valid=extra.get("schema_valid"),
        step=extra.get("step"),
        ttfat_s=stored_json.number(extra.get("ttfat_s")),
        reasoning_tokens=token_count(extra.get("reasoning_tokens")),
        reasoning_source=stored_json.text(extra.get("reasoning_source")),
        ttft_includes_reasoning=extra.get("ttft_includes_reasoning") is True,
        engine_times=EngineTimes.from_json(extra.get("engine_times")),
        stream_tokens=token_count(extra.get("stream_tokens")),
        refused=_refusals(extra.get("refused")),
        over_max_tokens=extra.get("over_max_tokens") is True,
        answer_digest=stored_json.nonempty_text(extra.get("answer_digest")),
        prompt_digest=stored_json.nonempty_text(extra.get("prompt_digest")),
    )


class DatabaseSink:
    """Takes records from the event loop (a deque append) and writes them from its own
    thread in batches, with the heartbeat, progress and live figures; reads the cancel
    flag (status "cancelled") on the same beat."""

    def __init__(
        self,
        run_id: int,
        progress: Callable[[], float] = lambda: 0.0,
        interval_s: float = FLUSH_INTERVAL_S,
    ) -> None:
        self.run_id = run_id
        self.progress = progress
        self.interval_s = interval_s
        self.pending: queue.SimpleQueue[RequestRecord] = queue.SimpleQueue()
        self.cancelled = threading.Event()
        self.stopped = threading.Event()
        #: Every record stored so far, in the order of its row id: the run's summary is built
        #: from exactly what the database holds without reading it back.
        self.stored: list[RequestRecord] = []
        self.counts: dict[str, dict[str, int]] = {}
        self.message = ""
        self.last_error: str | None = None
        self._thread = threading.Thread(target=self._loop, name=f"bench-writer-{run_id}", daemon=True)

    def start(self) -> DatabaseSink:
        self._thread.start()
        return self

    def add(self, record: RequestRecord) -> None:
        self.pending.put(record)

    def should_stop(self) -> bool:
        return self.cancelled.is_set()

    def _loop(self) -> None:
        while not self.stopped.wait(self.interval_s):
            self.flush()
        self.flush()

    def flush(self) -> None:
        records: list[RequestRecord] = []
        while True:
            try:
                records.append(self.pending.get_nowait())
            except queue.Empty:
                break
        for record in records:
            counts = self.counts.setdefault(
                record.engine, {"sent": 0, "completed": 0, "failed": 0, "cancelled": 0, "warmup": 0}
            )
            if record.warmup:
                counts["warmup"] += 1
            else:
                counts["sent"] += 1
                counts[
                    "completed"
                    if record.ok
                    else "cancelled"
                    if record.error_class == CANCELLED
                    else "failed"
                ] += 1
        try:
            with session_scope() as session:
                if records:
                    session.execute(
                        insert(RequestResult), [request_row(self.run_id, r) for r in records]
                    )
                status = lifecycle.status_of(self.run_id, session)
                progress = round(self.progress(), 4)
                if status == RunStatus.RUNNING:
                    live = LiveCounts(engines=self.counts, message=self.message, updated=time.time())
                    summary = BenchSummary(live=live).to_json()
                    lifecycle.beat(self.run_id, session, progress=progress, summary=summary)
                else:
                    lifecycle.beat(self.run_id, session, progress=progress)
            self.stored.extend(records)
            self.last_error = None
        except Exception as error:  # noqa: BLE001 - keep the rows and try again next beat
            self.last_error = f"{type(error).__name__}: {error}"
            for record in records:
                self.pending.put(record)
            return
        if status in (RunStatus.CANCELLED, None):
            self.cancelled.set()

    def close(self) -> None:
        self.stopped.set()
        self._thread.join(timeout=60)
        if not self.pending.empty():
            self.flush()
