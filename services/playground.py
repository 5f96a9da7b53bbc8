"""Playground: one prompt to 2-6 engines at once, streamed and measured live, stored.

A send is one Run (kind "playground") with one Exchange row per engine; the turns of a
multi-turn chat are runs sharing a conversation id, each engine continuing with its own
earlier answers. The streams run in a background thread that owns an event loop (never in
the Streamlit script thread) and use the shared client (`services.client`), so the page and
the benchmarks measure the same way. Partial answers are written to the database every
PERSIST_INTERVAL_S, so a reload or a click never loses what already arrived; the page polls.
"""

from __future__ import annotations

import asyncio
import json
import re
import threading
import time
import uuid
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import jsonschema
from sqlalchemy import select

from db.models import Exchange, Run
from db.session import session_scope
from services import endpoints, lifecycle, limits
from services.client import (
    ChatRequest,
    StreamResult,
    as_curl,
    as_openai_python,
    build_body,
    make_http_client,
    new_event_loop,
    stream_chat,
)
from services.endpoints import EngineRecord
from services.engines import SamplingParams, get_adapter
from services.errors import NotFoundError, ValidationError
from services.lifecycle import HEARTBEAT_INTERVAL_S, RunStatus, is_stale
from services.measure import cached_tokens, token_count

# Diff and votes live in modules of their own; importing them here keeps `playground.X` the one
# entry point the page, the CLI and the tests use.
from services.playground_text import word_diff  # noqa: F401 - re-exported
from services.playground_votes import (  # noqa: F401 - re-exported
    BlindVote,
    PairTally,
    blind_order,
    blind_vote,
    tally,
    vote,
    vote_best,
    votes_for,
)

if TYPE_CHECKING:
    from services.access import Viewer

MIN_ENGINES = 2
MAX_ENGINES = 6
PERSIST_INTERVAL_S = 0.25
EXTRA_KEYS = ("top_k", "min_tokens", "ignore_eos")


# ---------------------------------------------------------------------------------------
# Records in and out
# ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class EngineChoice:
    """One column: a registered engine, optionally another model and raw `extra_body` fields."""

    engine: str
    model: str | None = None
    extra_body: dict[str, Any] | None = None


@dataclass(frozen=True)
class SendRequest:
    engines: tuple[EngineChoice, ...]
    prompt: str
    system: str = ""
    params: SamplingParams = field(default_factory=SamplingParams)
    schema: dict[str, Any] | None = None
    #: Continue this conversation (None starts one).
    conversation_id: str | None = None


@dataclass(frozen=True)
class SendHandle:
    run_id: int
    conversation_id: str
    turn: int


@dataclass
class SchemaCheck:
    valid: bool
    #: Where it fails ("$.items[0].price"), and why, in words.
    path: str = ""
    message: str = ""


@dataclass
class Column:
    """One engine's answer with its live measurements (what a page column shows)."""

    engine: str
    model: str | None
    kind: str
    status: str
    answer: str
    choices: list[str]
    ttft_s: float | None = None
    itl_mean_s: float | None = None
    itl_p90_s: float | None = None
    tokens_per_s: float | None = None
    e2e_s: float | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    cached_tokens: int | None = None
    finish_reason: str | None = None
    error_class: str | None = None
    error: str | None = None
    notes: list[str] = field(default_factory=list)
    schema_check: SchemaCheck | None = None
    #: Turn 1's figures of the same engine in this conversation (the prefix-cache effect).
    first_turn_ttft_s: float | None = None
    first_turn_cached_tokens: int | None = None


@dataclass
class ExchangeView:
    run_id: int
    conversation_id: str
    turn: int
    prompt: str
    system: str
    status: str
    active: bool
    columns: list[Column]
    params: dict[str, Any]
    schema: dict[str, Any] | None
    created_at: datetime | None = None

    @property
    def first_token_engine(self) -> str | None:
        timed = [c for c in self.columns if c.ttft_s is not None]
        return min(timed, key=lambda c: c.ttft_s or 0).engine if timed else None

    @property
    def fastest_engine(self) -> str | None:
        """Highest decode rate among the answers that finished."""
        timed = [c for c in self.columns if c.tokens_per_s is not None and c.status == "finished"]
        return max(timed, key=lambda c: c.tokens_per_s or 0).engine if timed else None


@dataclass
class Turn:
    run_id: int
    turn: int
    prompt: str
    answers: dict[str, str]


@dataclass
class HistoryItem:
    run_id: int
    conversation_id: str
    turn: int
    prompt: str
    engines: list[str]
    status: str
    created_at: datetime


# ---------------------------------------------------------------------------------------
# Pure helpers
# ---------------------------------------------------------------------------------------


def parse_schema(text: str) -> dict[str, Any]:
    """A JSON schema typed by the user, checked to be a schema."""
    try:
        schema = json.loads(text)
    except json.JSONDecodeError as error:
        raise ValidationError(
            f"The schema is not JSON: {error.msg} at line {error.lineno}, column {error.colno}."
        ) from None
    if not isinstance(schema, dict):
        raise ValidationError("The schema must be a JSON object.")
    try:
        jsonschema.validators.validator_for(schema).check_schema(schema)
    except jsonschema.SchemaError as error:
        raise ValidationError(f"Not a valid JSON schema: {error.message}") from None
    return schema


def check_answer(text: str, schema: dict[str, Any]) -> SchemaCheck:
    """Validate an answer against the schema: valid, or where and why not."""
    stripped = text.strip()
    fenced = re.fullmatch(r"```(?:json)?\s*(.*?)\s*```", stripped, flags=re.DOTALL)
    if fenced:
        stripped = fenced.group(1)
    try:
        instance = json.loads(stripped)
    except json.JSONDecodeError as error:
        return SchemaCheck(
            False, "$", f"not JSON: {error.msg} (line {error.lineno}, column {error.colno})"
        )
    validator = jsonschema.validators.validator_for(schema)(schema)
    violation = jsonschema.exceptions.best_match(validator.iter_errors(instance))
    if violation is None:
        return SchemaCheck(True)
    return SchemaCheck(False, violation.json_path, violation.message)


def _messages(system: str, history: list[tuple[str, str]], prompt: str) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = []
    if system.strip():
        messages.append({"role": "system", "content": system})
    for user, assistant in history:
        messages.append({"role": "user", "content": user})
        messages.append({"role": "assistant", "content": assistant})
    messages.append({"role": "user", "content": prompt})
    return messages


def _params_dict(params: SamplingParams) -> dict[str, Any]:
    return {
        "temperature": params.temperature,
        "top_p": params.top_p,
        "max_tokens": params.max_tokens,
        "seed": params.seed,
        "stop": list(params.stop),
        "n": params.n,
        "top_k": params.top_k,
        "min_tokens": params.min_tokens,
        "ignore_eos": params.ignore_eos,
    }


def params_from_dict(values: dict[str, Any]) -> SamplingParams:
    known = {
        k: values.get(k) for k in ("temperature", "top_p", "max_tokens", "seed", "top_k", "min_tokens")
    }
    return SamplingParams(
        **known,
        stop=tuple(values.get("stop") or ()),
        n=int(values.get("n") or 1),
        ignore_eos=bool(values.get("ignore_eos")),
    )


def _engine_params(record: EngineRecord, params: SamplingParams) -> tuple[SamplingParams, list[str]]:
    """The parameters this engine gets, and notes on what it does not take."""
    adapter = get_adapter(record.kind)
    notes = []
    ignored = [name for name in adapter.unsupported(params) if name != "n"]
    if ignored:
        notes.append(f"{adapter.label} does not take {', '.join(ignored)}: not sent.")
    if params.n > 1 and not adapter.supports_n:
        notes.append(f"{adapter.label} does not support parallel sampling (n > 1): sent n = 1.")
        params = replace(params, n=1)
    return params, notes


def _validate(request: SendRequest) -> None:
    count = len(request.engines)
    if count < MIN_ENGINES or count > MAX_ENGINES:
        raise ValidationError(f"Choose {MIN_ENGINES} to {MAX_ENGINES} engines (got {count}).")
    names = [c.engine for c in request.engines]
    if len(set(names)) != len(names):
        raise ValidationError("Each engine can appear once.")
    if not request.prompt.strip():
        raise ValidationError("Type a prompt first.")
    limits.check_prompt(request.prompt, request.system)
    p = request.params
    if p.temperature is not None and not 0 <= p.temperature <= 2:
        raise ValidationError("Temperature must be between 0 and 2.")
    if p.top_p is not None and not 0 < p.top_p <= 1:
        raise ValidationError("top_p must be above 0 and at most 1.")
    if p.max_tokens is not None and p.max_tokens < 1:
        raise ValidationError("Max tokens must be at least 1.")
    if not 1 <= p.n <= 8:
        raise ValidationError("n (parallel samples) must be between 1 and 8.")


# ---------------------------------------------------------------------------------------
# Sending: a worker thread per send, owning an event loop
# ---------------------------------------------------------------------------------------


@dataclass
class _Stream:
    exchange_id: int
    engine: str
    request: ChatRequest
    notes: list[str]
    result: StreamResult = field(default_factory=StreamResult)
    status: str = "streaming"
    dirty: bool = True


class _Worker:
    def __init__(self, run_id: int, streams: list[_Stream]) -> None:
        self.run_id = run_id
        self.streams = streams
        self.loop: asyncio.AbstractEventLoop | None = None
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
            await persister
        await asyncio.to_thread(_finish_run, self.run_id, self.streams)

    async def _one(self, client: Any, stream: _Stream) -> None:
        def mark(_index: int, _text: str, _result: StreamResult) -> None:
            stream.dirty = True

        try:
            await stream_chat(client, stream.request, on_delta=mark, result=stream.result)
        except asyncio.CancelledError:
            stream.status = "cancelled"
            return
        stream.status = "finished" if stream.result.ok else "failed"
        stream.dirty = True

    async def _persist_loop(self) -> None:
        last_beat = time.monotonic()
        while not self.streams_done:
            await asyncio.sleep(PERSIST_INTERVAL_S)
            changed = [s for s in self.streams if s.dirty]
            # An engine silent in a long prefill must not make the exchange look abandoned.
            if not changed and time.monotonic() - last_beat < HEARTBEAT_INTERVAL_S:
                continue
            last_beat = time.monotonic()
            rows = []
            for stream in changed:
                stream.dirty = False
                rows.append((stream.exchange_id, _row_values(stream, final=False)))
            # The database write happens off the event loop so it never delays a chunk's timestamp.
            await asyncio.to_thread(_write_rows, self.run_id, rows)


_lock = threading.Lock()
_workers: dict[int, _Worker] = {}


def _row_values(stream: _Stream, final: bool) -> dict[str, Any]:
    result = stream.result
    figures = result.metrics()
    metrics: dict[str, Any] = {
        "ttft_s": figures.ttft_s,
        "e2e_s": figures.e2e_s,
        "tpot_s": figures.tpot_s,
        "itl_mean_s": figures.itl_mean_s,
        "itl_p90_s": figures.itl_p90_s,
        "output_tokens": figures.output_tokens,
        "tokens_per_s": (1 / figures.tpot_s) if figures.tpot_s else None,
        "notes": stream.notes,
    }
    if final:
        metrics["itl_s"] = figures.itl_s
        metrics["chunk_times_s"] = figures.chunk_times_s
    texts = result.texts
    values: dict[str, Any] = {
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


def _write_rows(run_id: int, rows: list[tuple[int, dict[str, Any]]]) -> None:
    with session_scope() as session:
        for exchange_id, values in rows:
            row = session.get(Exchange, exchange_id)
            if row is None:
                continue
            for key, value in values.items():
                setattr(row, key, value)
        lifecycle.beat(run_id, session)


def _finish_run(run_id: int, streams: list[_Stream], error: str | None = None) -> None:
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
    # A cancelled exchange is complete too: each answer ended, cut or not.
    lifecycle.finish(
        run_id,
        status,
        error=reason,
        progress=1.0,
        summary={
            "engines": {
                s.engine: {
                    "ttft_s": {"p50": values["metrics"]["ttft_s"]}
                    if values["metrics"]["ttft_s"] is not None
                    else None,
                    "output_throughput_tok_s": values["metrics"]["tokens_per_s"],
                    "failed": 0 if values["status"] == "finished" else 1,
                }
                for s, (_, values) in zip(streams, rows, strict=True)
            }
        },
    )


def _conversation_history(conversation_id: str) -> tuple[int, dict[str, list[tuple[str, str]]]]:
    """(last turn, per engine [(prompt, that engine's own answer)])."""
    with session_scope() as session:
        rows = session.scalars(
            select(Exchange)
            .where(Exchange.conversation_id == conversation_id)
            .order_by(Exchange.turn, Exchange.id)
        ).all()
    history: dict[str, list[tuple[str, str]]] = {}
    last = 0
    for row in rows:
        last = max(last, row.turn)
        history.setdefault(row.engine_name, []).append((_last_prompt(row), row.answer or ""))
    return last, history


def send(request: SendRequest, viewer: Viewer | None = None) -> SendHandle:
    """Store the exchange and start streaming it to every chosen engine in the background.
    Refused past the server's or this viewer's limit of exchanges streaming at once."""
    _validate(request)
    records = {c.engine: endpoints.get_engine(c.engine) for c in request.engines}
    conversation_id = request.conversation_id or uuid.uuid4().hex[:16]
    turn: int = 0
    history: dict[str, list[tuple[str, str]]] = {}
    if request.conversation_id:
        turn, history = _conversation_history(request.conversation_id)
        if turn == 0:
            raise NotFoundError(f"Conversation {request.conversation_id} not found.")
    turn += 1
    now = datetime.now(UTC)
    streams: list[_Stream] = []
    with limits.admitted("playground", viewer) as requested_by, session_scope() as session:
        run = Run(
            kind="playground",
            requested_by=requested_by,
            name=request.prompt.strip().splitlines()[0][:120],
            status="running",
            config={
                "conversation_id": conversation_id,
                "turn": turn,
                "prompt": request.prompt,
                "system": request.system,
                "params": _params_dict(request.params),
                "schema": request.schema,
                "engines": [
                    {"engine": c.engine, "model": c.model, "extra_body": c.extra_body}
                    for c in request.engines
                ],
            },
            engines=[
                {"name": r.name, "kind": r.kind, "base_url": r.base_url, "model": r.model}
                for r in records.values()
            ],
            engine_names=",".join(records),
            model=next((c.model or records[c.engine].model for c in request.engines), None),
            workload="playground",
            started_at=now,
            heartbeat_at=now,
        )
        session.add(run)
        session.flush()
        for choice in request.engines:
            record = records[choice.engine]
            params, notes = _engine_params(record, request.params)
            messages = _messages(request.system, history.get(choice.engine, []), request.prompt)
            model = choice.model or record.model or ""
            exchange = Exchange(
                run_id=run.id,
                conversation_id=conversation_id,
                turn=turn,
                engine_name=record.name,
                model=model,
                messages=messages,
                status="streaming",
                params={
                    **_params_dict(params),
                    "schema": request.schema,
                    "extra_body": choice.extra_body,
                    "kind": record.kind,
                },
                metrics={"notes": notes},
            )
            session.add(exchange)
            session.flush()
            chat = ChatRequest(
                base_url=record.base_url,
                model=model,
                messages=messages,
                params=params,
                kind=record.kind,
                api_key_env=record.api_key_env,
                response_schema=request.schema,
                extra_body=choice.extra_body or None,
                read_timeout_s=120.0,
                total_timeout_s=600.0,
                max_response_bytes=limits.answer_bytes(),
            )
            limits.check_body(build_body(chat))  # as sent: extra_body cannot lift n or max_tokens
            streams.append(_Stream(exchange.id, record.name, chat, notes))
        run_id = run.id
    worker = _Worker(run_id, streams)
    with _lock:
        _workers[run_id] = worker
    worker.start()
    return SendHandle(run_id, conversation_id, turn)


def stop(run_id: int) -> None:
    """Stop every stream of this exchange; what arrived is kept (status "cancelled")."""
    with _lock:
        worker = _workers.get(run_id)
    if worker is not None:
        worker.stop()


def is_active(run_id: int) -> bool:
    with _lock:
        return run_id in _workers


def wait(run_id: int, timeout_s: float = 60.0) -> bool:
    """Block until the exchange's streams are done (CLI and tests); False on timeout."""
    with _lock:
        worker = _workers.get(run_id)
    return True if worker is None else worker.done.wait(timeout_s)


def resend(run_id: int) -> SendHandle:
    """Send a stored exchange again, as a new conversation with the same settings."""
    return send(reopen(run_id))


def exchange_id(value: str) -> int:
    """The run id that a Playground address names (?exchange=12), or why it names none."""
    text = str(value).strip().lstrip("#")
    if not re.fullmatch(r"[0-9]{1,12}", text):
        raise ValidationError(
            f"The address names exchange “{str(value)[:40]}”, which is not an exchange number."
        )
    return int(text)


def reopen(run_id: int) -> SendRequest:
    """The request of a stored exchange (to fill the form again or send it again)."""
    with session_scope() as session:
        run = session.get(Run, run_id)
        if run is None or run.kind != "playground":
            raise NotFoundError(f"Playground exchange {run_id} not found.")
        config = dict(run.config)
    return SendRequest(
        engines=tuple(
            EngineChoice(e["engine"], e.get("model"), e.get("extra_body"))
            for e in config.get("engines", [])
        ),
        prompt=config.get("prompt", ""),
        system=config.get("system", ""),
        params=params_from_dict(config.get("params") or {}),
        schema=config.get("schema"),
    )


# ---------------------------------------------------------------------------------------
# Reading back
# ---------------------------------------------------------------------------------------


def _mark_interrupted(session: Any, run: Run) -> None:
    """A streaming run with no worker in this process and no recent write: the app restarted."""
    if (
        run.status != RunStatus.RUNNING
        or is_active(run.id)
        or not is_stale(run.heartbeat_at, run.created_at)
    ):
        return
    lifecycle.interrupt(run)
    for row in session.scalars(
        select(Exchange).where(Exchange.run_id == run.id, Exchange.status == "streaming")
    ):
        row.status = "interrupted"


def get_exchange(run_id: int) -> ExchangeView:
    """One exchange with each engine's answer and measurements so far."""
    with session_scope() as session:
        run = session.get(Run, run_id)
        if run is None or run.kind != "playground":
            raise NotFoundError(f"Playground exchange {run_id} not found.")
        _mark_interrupted(session, run)
        rows = session.scalars(
            select(Exchange).where(Exchange.run_id == run_id).order_by(Exchange.id)
        ).all()
        config = dict(run.config)
        conversation_id = config.get("conversation_id", "")
        first_turn = {}
        if config.get("turn", 1) > 1:
            first_turn = {
                r.engine_name: r
                for r in session.scalars(
                    select(Exchange).where(
                        Exchange.conversation_id == conversation_id, Exchange.turn == 1
                    )
                )
            }
        schema = config.get("schema")
        columns = [_column(row, schema, first_turn.get(row.engine_name)) for row in rows]
        return ExchangeView(
            run_id=run.id,
            conversation_id=conversation_id,
            turn=int(config.get("turn", 1)),
            prompt=_text(config.get("prompt")),
            system=_text(config.get("system")),
            status=run.status,
            active=is_active(run.id),
            columns=columns,
            params=config.get("params") or {},
            schema=schema,
            created_at=run.created_at,
        )


def _text(value: Any) -> str:
    """Stored text, "" where it is missing (JSON null must never show as "None")."""
    return "" if value is None else str(value)


def _last_prompt(row: Exchange) -> str:
    return _text((row.messages[-1] or {}).get("content")) if row.messages else ""


def _column(row: Exchange, schema: dict[str, Any] | None, first: Exchange | None) -> Column:
    metrics = row.metrics or {}
    usage = row.usage or {}
    kind = str((row.params or {}).get("kind") or "openai")
    check = None
    if (
        schema is not None
        and row.status in ("finished", "failed", "cancelled", "interrupted")
        and row.answer
    ):
        check = check_answer(row.answer, schema)
    column = Column(
        engine=row.engine_name,
        model=row.model,
        kind=kind,
        status=row.status,
        answer=row.answer or "",
        choices=list(row.choices or []),
        ttft_s=metrics.get("ttft_s"),
        itl_mean_s=metrics.get("itl_mean_s"),
        itl_p90_s=metrics.get("itl_p90_s"),
        tokens_per_s=metrics.get("tokens_per_s"),
        e2e_s=metrics.get("e2e_s"),
        prompt_tokens=token_count(usage.get("prompt_tokens")),
        completion_tokens=token_count(usage.get("completion_tokens")),
        cached_tokens=cached_tokens(usage),
        finish_reason=row.finish_reason,
        error_class=row.error_class,
        error=row.error,
        notes=list(metrics.get("notes") or []),
        schema_check=check,
    )
    if first is not None and first.id != row.id:
        column.first_turn_ttft_s = (first.metrics or {}).get("ttft_s")
        column.first_turn_cached_tokens = cached_tokens(first.usage or {})
    return column


def conversation(conversation_id: str) -> list[Turn]:
    """The turns of a conversation, oldest first, with each engine's answer."""
    with session_scope() as session:
        rows = session.scalars(
            select(Exchange)
            .where(Exchange.conversation_id == conversation_id)
            .order_by(Exchange.turn, Exchange.id)
        ).all()
        turns: dict[int, Turn] = {}
        for row in rows:
            turn = turns.setdefault(row.turn, Turn(row.run_id, row.turn, _last_prompt(row), {}))
            turn.answers[row.engine_name] = row.answer or ""
    return [turns[k] for k in sorted(turns)]


def history(limit: int = 20) -> list[HistoryItem]:
    """The latest playground exchanges, newest first."""
    with session_scope() as session:
        runs = session.scalars(
            select(Run).where(Run.kind == "playground").order_by(Run.id.desc()).limit(limit)
        ).all()
        return [
            HistoryItem(
                run_id=r.id,
                conversation_id=str(r.config.get("conversation_id", "")),
                turn=int(r.config.get("turn", 1)),
                prompt=_text(r.config.get("prompt")),
                engines=[n for n in r.engine_names.split(",") if n],
                status=r.status,
                created_at=r.created_at,
            )
            for r in runs
        ]


def request_code(run_id: int, engine: str) -> tuple[str, str]:
    """(curl, openai-python) for the exact request one column sent."""
    with session_scope() as session:
        row = session.scalars(
            select(Exchange).where(Exchange.run_id == run_id, Exchange.engine_name == engine)
        ).first()
        run = session.get(Run, run_id)
        if row is None or run is None:
            raise NotFoundError(f"No answer of {engine} in exchange {run_id}.")
        snapshot: dict[str, Any] = next((e for e in run.engines if e.get("name") == engine), {})
        messages, stored = list(row.messages), dict(row.params or {})
        model = row.model or ""
    try:
        record = endpoints.get_engine(engine)
        api_key_env = record.api_key_env
    except NotFoundError:
        api_key_env = None
    request = ChatRequest(
        base_url=snapshot.get("base_url") or "http://engine-removed",
        model=model,
        messages=messages,
        params=params_from_dict(stored),
        kind=str(stored.get("kind") or "openai"),
        api_key_env=api_key_env,
        response_schema=stored.get("schema"),
        extra_body=stored.get("extra_body") or None,
    )
    return as_curl(request), as_openai_python(request)
