"""Reading exchanges back: one exchange's columns with their measurements, a
conversation's turns, the history list, and the code of the request a column sent.
A streaming run that lost its worker to a restart is marked interrupted here."""

from __future__ import annotations

from typing import Any, cast

from sqlalchemy import select

from db.models import Exchange, Run
from db.session import session_scope
from services.client import ChatRequest, as_curl, as_openai_python
from services.core import stored_json
from services.core.errors import NotFoundError
from services.core.json_schema import SchemaCheck
from services.core.json_types import ForeignJson
from services.core.measure import EngineTimes, cached_tokens, time_split, token_count
from services.engines import endpoints
from services.playground.params import params_from_dict
from services.playground.records import (
    Column,
    ExchangeMetrics,
    ExchangeParams,
    ExchangeView,
    HistoryItem,
    PlaygroundConfig,
    Turn,
)
from services.playground.worker import running_here, streaming
from services.runstate import blind
from services.runstate.lifecycle import RunKind, RunStatus, is_stale
from services.runstate.run_kinds import interrupt_run
from services.runstate.stored import StoredEngine, engine_named


def _mark_interrupted(session: Any, run: Run) -> None:
    """A streaming run with no worker in this process and no recent write: its worker (a
    thread of an app that restarted, or a worker process) is gone."""
    if (
        run.status != RunStatus.RUNNING
        or running_here(run.id)
        or not is_stale(run.heartbeat_at, run.created_at)
    ):
        return
    interrupt_run(run)


def get_exchange(run_id: int) -> ExchangeView:
    """One exchange with each engine's answer and measurements so far."""
    with session_scope() as session:
        run = session.get(Run, run_id)
        if run is None or run.kind != RunKind.PLAYGROUND:
            raise NotFoundError(f"Playground exchange {run_id} not found.")
        _mark_interrupted(session, run)
        rows = session.scalars(
            select(Exchange).where(Exchange.run_id == run_id).order_by(Exchange.id)
        ).all()
        config = _config(run)
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
            # The page keeps polling until the answers are final.
            active=streaming(run.id, run.status, run.worker_pid),
            columns=columns,
            params=config.get("params") or {},
            schema=schema,
            created_at=run.created_at,
            blind=bool(config.get("blind")),
            revealed=bool(config.get("revealed")),
        )


def _config(run: Run) -> PlaygroundConfig:
    # The one boundary: Run.config as services/playground/sending.py stored it.
    return cast(PlaygroundConfig, dict(run.config))


def _text(value: Any) -> str:
    """Stored text, "" where it is missing (JSON null must never show as "None")."""
    return "" if value is None else str(value)


def last_prompt(row: Exchange) -> str:
    return _text((row.messages[-1] or {}).get("content")) if row.messages else ""


def _column(row: Exchange, schema: ForeignJson | None, first: Exchange | None) -> Column:
    # The one boundary: Exchange.metrics as services/playground/worker.py wrote it.
    metrics = cast(ExchangeMetrics, row.metrics or {})
    usage = row.usage or {}
    kind = str((row.params or {}).get("kind") or "openai")
    # The worker checked the answer once when it ended (never again per render or poll).
    check = SchemaCheck.from_json(metrics.get("schema_check")) if schema is not None else None
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
        ttfat_s=stored_json.number(metrics.get("ttfat_s")),
        reasoning_tokens=token_count(metrics.get("reasoning_tokens")),
        reasoning_tokens_source=stored_json.text(metrics.get("reasoning_tokens_source")),
        answer_tokens=token_count(metrics.get("answer_tokens")),
        reasoning_tok_s=stored_json.number(metrics.get("reasoning_tok_s")),
        answer_tok_s=stored_json.number(metrics.get("answer_tok_s")),
        ttft_includes_reasoning=metrics.get("ttft_includes_reasoning") is True,
        thinking=_text(metrics.get("thinking")),
        finish_reason=row.finish_reason,
        error_class=row.error_class,
        error=row.error,
        notes=list(metrics.get("notes") or []),
        schema_check=check,
    )
    column.engine_times = EngineTimes.from_json(metrics.get("engine_times"))
    column.time_split = time_split(column.ttft_s, column.e2e_s, column.engine_times)
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
            turn = turns.setdefault(row.turn, Turn(row.run_id, row.turn, last_prompt(row), {}))
            turn.answers[row.engine_name] = row.answer or ""
    return [turns[k] for k in sorted(turns)]


def history(limit: int = 20, participant: str | None = None) -> list[HistoryItem]:
    """The latest playground exchanges, newest first. A blind one still hidden from
    `participant` (None: from everyone until its reveal) lists no engine: which engines took
    part narrows down who wrote what, and the Runs list does not say it either (issue 56)."""
    with session_scope() as session:
        runs = session.scalars(
            select(Run).where(Run.kind == RunKind.PLAYGROUND).order_by(Run.id.desc()).limit(limit)
        ).all()
        blinds = blind.hidden_ids(session, [r.id for r in runs])
        hidden = {r.id for r in runs if r.id in blinds and blind.run_hidden(session, r, participant)}
        return [
            HistoryItem(
                run_id=r.id,
                conversation_id=str(r.config.get("conversation_id", "")),
                turn=int(r.config.get("turn", 1)),
                prompt=_text(r.config.get("prompt")),
                engines=[] if r.id in hidden else [n for n in r.engine_names.split(",") if n],
                status=r.status,
                created_at=r.created_at,
                engines_hidden=r.id in hidden,
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
        snapshot = engine_named(run.engines, engine) or StoredEngine()
        # The one boundary: Exchange.params as services/playground/sending.py stored them.
        messages, stored = list(row.messages), cast(ExchangeParams, dict(row.params or {}))
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
