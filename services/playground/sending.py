"""Sending an exchange: validate, store the run and one Exchange row per engine, hand the
streams to a worker; and reopening or resending a stored one."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import TYPE_CHECKING, cast

from sqlalchemy import select

from db.models import Exchange, Run
from db.session import session_scope
from services.client import ChatRequest, build_body
from services.core import ids
from services.core.errors import NotFoundError, ValidationError
from services.core.json_types import ForeignJson, JsonOut
from services.engines import SamplingParams, endpoints
from services.playground import pool, worker
from services.playground.checks import validate
from services.playground.params import engine_params, messages_for, params_dict, params_from_dict
from services.playground.reading import last_prompt
from services.playground.records import EngineChoice, PlaygroundConfig, SendHandle, SendRequest
from services.playground.worker import Stream
from services.runstate import blind
from services.runstate.lifecycle import RunKind, RunStatus
from services.team import limits, owners

if TYPE_CHECKING:
    from services.engines.endpoints import EngineRecord
    from services.team.access import Viewer


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
        history.setdefault(row.engine_name, []).append((last_prompt(row), row.answer or ""))
    return last, history


def send(request: SendRequest, viewer: Viewer | None = None, *, isolated: bool = False) -> SendHandle:
    """Store the exchange and start streaming it to every chosen engine in the background:
    in the warm worker process when `isolated` (the page: timestamps taken away from the
    Streamlit server's GIL, services/playground/pool.py), else in a thread of this process. Refused past the server's or
    this viewer's limit of exchanges streaming at once."""
    validate(request)
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
    streams: list[Stream] = []
    with limits.admitted("playground", viewer) as requested_by, session_scope() as session:
        run = Run(
            kind=RunKind.PLAYGROUND,
            requested_by=requested_by,
            name=request.prompt.strip().splitlines()[0][:120],
            status=RunStatus.RUNNING,
            config={
                "conversation_id": conversation_id,
                "turn": turn,
                "prompt": request.prompt,
                "system": request.system,
                "params": params_dict(request.params),
                "schema": request.schema,
                "blind": request.blind,
                # Drawn per exchange from `secrets` and stored: every view reads this order.
                **({blind.ORDER_KEY: blind.new_order(records)} if request.blind else {}),
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
            params, notes = engine_params(record, request.params)
            messages = messages_for(request.system, history.get(choice.engine, []), request.prompt)
            model = choice.model or record.model or ""
            chat = _chat_request(record, model, messages, params, request.schema, choice.extra_body)
            limits.check_body(build_body(chat))  # as sent: extra_body cannot lift n or max_tokens
            exchange = Exchange(
                run_id=run.id,
                conversation_id=conversation_id,
                turn=turn,
                engine_name=record.name,
                model=model,
                messages=messages,
                status="streaming",
                params={
                    **params_dict(params),
                    "schema": request.schema,
                    "extra_body": choice.extra_body,
                    "kind": record.kind,
                },
                request=chat.to_json(),
                metrics={"notes": notes},
            )
            session.add(exchange)
            session.flush()
            streams.append(Stream(exchange.id, record.name, chat, notes))
        run_id = run.id
    if isolated:
        pool.hand_over(run_id)
    else:
        worker.start(run_id, streams)
    return SendHandle(run_id, conversation_id, turn)


def _chat_request(
    record: EngineRecord,
    model: str,
    messages: list[ForeignJson],
    params: SamplingParams,
    schema: ForeignJson | None,
    extra_body: JsonOut | None,
) -> ChatRequest:
    return ChatRequest(
        base_url=record.base_url,
        model=model,
        messages=messages,
        params=params,
        kind=record.kind,
        api_key_env=record.api_key_env,
        response_schema=schema,
        extra_body=extra_body or None,
        read_timeout_s=120.0,
        total_timeout_s=600.0,
        max_response_bytes=limits.answer_bytes(),
    )


def streams_for(run_id: int) -> list[Stream]:
    """The streams of a stored exchange, as `send` built them (a worker process starts here)."""
    with session_scope() as session:
        rows = session.scalars(
            select(Exchange)
            .where(Exchange.run_id == run_id, Exchange.status == "streaming")
            .order_by(Exchange.id)
        ).all()
        return [
            Stream(
                row.id,
                row.engine_name,
                ChatRequest.from_json(row.request),
                list((row.metrics or {}).get("notes") or []),
            )
            for row in rows
            # Stored before requests were (migration 0008): long finished streaming.
            if row.request
        ]


def resend(run_id: int, viewer: Viewer | None = None, *, isolated: bool = False) -> SendHandle:
    """Send a stored exchange again, as a new conversation with the same settings: admitted
    and owned as a Send by `viewer` (None: the CLI on the server)."""
    return send(reopen(run_id), viewer, isolated=isolated)


def stop(run_id: int, viewer: Viewer | None = None) -> None:
    """Stop every stream of this exchange, keeping what arrived: its sender's or an operator's
    (NotOwner for another viewer); `viewer` None: the CLI on the server."""
    owners.require_control(run_id, viewer, "stop it")
    worker.stop(run_id)


def exchange_id(value: str) -> int:
    """The run id that a Playground address names (?exchange=12), or why it names none."""
    try:
        return ids.parse_id(value, "exchange")
    except ValidationError:
        raise ValidationError(
            f"The address names exchange “{str(value)[:40]}”, which is not an exchange number."
        ) from None


def reopen(run_id: int) -> SendRequest:
    """The request of a stored exchange (to fill the form again or send it again)."""
    with session_scope() as session:
        run = session.get(Run, run_id)
        if run is None or run.kind != RunKind.PLAYGROUND:
            raise NotFoundError(f"Playground exchange {run_id} not found.")
        # The one boundary: Run.config as `send` stored it.
        config = cast(PlaygroundConfig, dict(run.config))
    return SendRequest(
        engines=tuple(
            EngineChoice(e["engine"], e.get("model"), e.get("extra_body"))
            for e in config.get("engines", [])
        ),
        prompt=config.get("prompt", ""),
        system=config.get("system", ""),
        params=params_from_dict(config.get("params") or {}),
        schema=config.get("schema"),
        blind=bool(config.get("blind")),
    )
