"""Parity runs: the same prompts, greedily, to 2-6 engines, stored like every other run.

A parity run is a `Run(kind="parity")`:

- `config`: {"engines": [{"label", "name"}], "reference": label, "source", "tasks": [...],
  "max_tokens", "seed", "top_logprobs", "temperature": 0};
- one `RequestResult` per engine and prompt: E2E time, prompt and completion tokens (the
  engine's usage), and `extra={"task_id", "text", "tokens": [[token, logprob, {top}]] or None,
  "score"}`;
- `summary` (written at the end, services/parity/views.build_summary, one typed record:
  services/parity/summary.ParitySummary): per engine its task score,
  its output rate and its parity figures against the reference.

Requests are chat completions without streaming (the log-probabilities arrive whole with the
answer), one at a time, one engine after another, as benchmarks do by default: engines on
shared hardware are compared at the same load. The same engine may appear twice (its label
gets "#2"): an engine against itself shows whether it is deterministic.

It runs in a worker process (`python -m services.runstate.worker parity RUN_ID`); `cancel_parity` sets
the status to "cancelled" and the worker stops before its next request, keeping what it stored.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Callable, Sequence
from contextlib import nullcontext
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Self, cast

from sqlalchemy import update

from db.models import RequestResult, Run
from db.session import session_scope
from services.client import ChatRequest, build_body, build_headers, chat_url, run_blocking, run_chat
from services.core import http
from services.core.errors import NotFoundError, ShootoutError, ValidationError
from services.core.json_types import JsonOut
from services.core.measure import token_count
from services.core.processes import launch_run_worker
from services.engines import SamplingParams, endpoints, get_adapter
from services.parity.metrics import parse_answer
from services.parity.records import AnswerRow, ParityConfig
from services.parity.results import build_summary
from services.parity.tasks import DEFAULT_SEED, TASK_SET_SIZE, TASK_SET_VERSION, Task, score, task_set
from services.runstate import lifecycle
from services.runstate.lifecycle import HEARTBEAT_INTERVAL_S, RunKind, RunStatus, request_cancel
from services.team import limits, owners

if TYPE_CHECKING:
    from services.team.access import Viewer

RUN_KIND = RunKind.PARITY
MIN_ENGINES, MAX_ENGINES = 2, 6
DEFAULT_MAX_TOKENS = 48
DEFAULT_TOP_LOGPROBS = 5
MAX_TOP_LOGPROBS = 20
#: A 135M model on two CPU cores answers 48 tokens in seconds; a remote 70B queue may take minutes.
REQUEST_DEADLINE_S = 300.0
RESPONSE_MAX_BYTES = 8 * 1024 * 1024


def _utcnow() -> datetime:
    return datetime.now(UTC)


def engine_labels(names: Sequence[str]) -> list[str]:
    """A label per chosen engine: its name, with "#2", "#3" for repeats of the same engine."""
    seen: dict[str, int] = {}
    labels = []
    for name in names:
        seen[name] = seen.get(name, 0) + 1
        labels.append(name if seen[name] == 1 else f"{name}#{seen[name]}")
    return labels


def _snapshot(record: endpoints.EngineRecord, label: str) -> JsonOut:
    data: JsonOut = dataclasses.asdict(record)
    data.pop("id", None)
    return {**data, "name": label, "engine": record.name}


def start_parity(
    engine_names: Sequence[str],
    *,
    reference: str | None = None,
    tasks: Sequence[Task] | None = None,
    source: str | None = None,
    max_tokens: int = DEFAULT_MAX_TOKENS,
    seed: int = 0,
    top_logprobs: int = DEFAULT_TOP_LOGPROBS,
    name: str = "",
    background: bool = True,
    viewer: Viewer | None = None,
    on_progress: Callable[[float, str], None] | None = None,
) -> int:
    """Store a new parity run and run it: in a worker process (the page) or here (the CLI).
    Returns the run id. Bad input raises a ValidationError before anything is stored."""
    names = [n.strip() for n in engine_names if n and n.strip()]
    if not MIN_ENGINES <= len(names) <= MAX_ENGINES:
        raise ValidationError(
            f"A parity run compares {MIN_ENGINES} to {MAX_ENGINES} engines (got {len(names)}); "
            "name an engine twice to test it against itself."
        )
    records = []
    for engine_name in names:
        try:
            records.append(endpoints.get_engine(engine_name))
        except NotFoundError:
            raise ValidationError(f"No engine named {engine_name!r} is registered.") from None
    labels = engine_labels(names)
    reference = (reference or labels[0]).strip()
    if reference not in labels:
        raise ValidationError(
            f"The reference {reference!r} is not one of the engines compared ({', '.join(labels)})."
        )
    chosen = list(tasks) if tasks is not None else task_set(TASK_SET_SIZE, DEFAULT_SEED)
    if not chosen:
        raise ValidationError("The prompt set is empty.")
    if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1:
        raise ValidationError(f"max_tokens must be a positive integer (got {max_tokens!r}).")
    if not 0 <= top_logprobs <= MAX_TOP_LOGPROBS:
        raise ValidationError(
            f"top_logprobs must be 0 to {MAX_TOP_LOGPROBS} (the OpenAI API's range); got {top_logprobs}."
        )
    limits.check_body({"max_tokens": max(t.max_tokens or max_tokens for t in chosen)})
    for task in chosen:
        limits.check_prompt(task.prompt_text)
    config: ParityConfig = {
        "engines": [{"label": label, "name": record.name} for label, record in zip(labels, records)],
        "reference": reference,
        "source": source or f"task set {TASK_SET_VERSION} (seed {DEFAULT_SEED}, {len(chosen)} prompts)",
        "tasks": [t.to_dict() for t in chosen],
        "max_tokens": max_tokens,
        "seed": seed,
        "top_logprobs": top_logprobs,
        "temperature": 0.0,
    }
    models = sorted({r.model for r in records if r.model})
    with (
        limits.admitted("parity", viewer) if background else nullcontext() as requested_by,
        session_scope() as session,
    ):
        run = Run(
            kind=RUN_KIND,
            requested_by=requested_by,
            name=name or f"parity: {' vs '.join(labels)}",
            status=RunStatus.PENDING,
            config=config,
            summary={},
            engines=[_snapshot(r, label) for r, label in zip(records, labels)],
            engine_names=",".join(labels),
            model=models[0] if len(models) == 1 else None,
            workload=f"parity:{config['source']}"[:100],
            progress=0.0,
            tags=["parity"],
        )
        session.add(run)
        session.flush()
        run_id = run.id
    if background:
        pid = launch_run_worker(RunKind.PARITY, run_id)
        with session_scope() as session:
            session.execute(
                update(Run).where(Run.id == run_id, Run.worker_pid.is_(None)).values(worker_pid=pid)
            )
        return run_id
    stop = threading.Event()
    try:
        execute_parity(run_id, should_stop=stop.is_set, on_progress=on_progress)
    except KeyboardInterrupt:
        cancel_parity(run_id)
        raise
    return run_id


def cancel_parity(run_id: int, viewer: Viewer | None = None) -> bool:
    """Ask a pending or running parity run to stop; False when it had ended already. Only its
    owner or an operator (NotOwner); `viewer` None: the CLI on the server."""
    owners.require_control(run_id, viewer, "cancel it")
    return request_cancel(run_id, RUN_KIND, "parity run")


# ---------------------------------------------------------------- one request


def _classify(status: int, message: str) -> str:
    lowered = message.lower()
    if status == 400 and ("context" in lowered or "too long" in lowered or "exceed" in lowered):
        return "context_exceeded"
    if status == 400 and "logprob" in lowered:
        return "logprobs_refused"
    return "http_status"


def _error_text(reply: http.Reply) -> str:
    try:
        body = reply.json()
    except ShootoutError:
        return reply.text[:500]
    if isinstance(body, dict):
        error = body.get("error", body)
        if isinstance(error, dict):
            return str(error.get("message") or error)[:500]
        return str(error)[:500]
    return str(body)[:500]


def send_one(
    record: endpoints.EngineRecord,
    task: Task,
    *,
    max_tokens: int,
    seed: int,
    top_logprobs: int,
    with_logprobs: bool = True,
) -> AnswerRow:
    """One greedy chat completion with log-probabilities; a plain dict for a RequestResult row.
    Never raises for the engine's failures: they come back as ok=False with a class and a message."""
    adapter = get_adapter(record.kind)
    request = ChatRequest(
        base_url=record.base_url,
        model=record.model or "default",
        messages=list(task.messages),
        params=SamplingParams(temperature=0.0, max_tokens=task.max_tokens or max_tokens, seed=seed),
        kind=record.kind,
        api_key_env=record.api_key_env,
        include_usage=False,
    )
    row: AnswerRow = {
        "ok": False,
        "e2e_s": None,
        "input_tokens": None,
        "output_tokens": None,
        "finish_reason": None,
        "error_class": None,
        "error": None,
        "extra": {"task_id": task.id, "text": "", "tokens": None, "score": None},
    }
    if adapter.wire != "openai":
        return _streamed(request, task, row)
    try:
        body = build_body(request)
        headers = build_headers(request)
        url = chat_url(record.base_url)
    except (KeyError, ValueError) as error:
        row.update({"error_class": "config", "error": str(error).strip("'\"")})
        return row
    body["stream"] = False
    if with_logprobs and adapter.reports_logprobs:
        body["logprobs"] = True
        if top_logprobs and adapter.reports_top_logprobs:
            body["top_logprobs"] = top_logprobs
    headers["accept"] = "application/json"
    started = time.perf_counter()
    try:
        reply = http.fetch(
            "POST",
            url,
            json=body,
            headers=headers,
            deadline_s=REQUEST_DEADLINE_S,
            max_bytes=RESPONSE_MAX_BYTES,
        )
    except http.HttpError as error:
        row.update({"error_class": error.reason, "error": str(error)})
        return row
    row["e2e_s"] = time.perf_counter() - started
    if not reply.ok:
        message = _error_text(reply)
        error_class = _classify(reply.status, message)
        if error_class == "logprobs_refused" and with_logprobs:
            # An engine that refuses the field still answers without it: the texts are compared.
            return send_one(
                record,
                task,
                max_tokens=max_tokens,
                seed=seed,
                top_logprobs=top_logprobs,
                with_logprobs=False,
            )
        prefix = {"context_exceeded": f"The prompt is longer than {record.name}'s context"}.get(
            error_class, f"HTTP {reply.status}"
        )
        row.update({"error_class": error_class, "error": f"{prefix}: {message}"})
        return row
    try:
        payload = reply.json()
        choice = payload["choices"][0]
        chat_message = choice.get("message") or {}
    except (ShootoutError, KeyError, IndexError, TypeError, AttributeError):
        row.update(
            {
                "error_class": "invalid_json",
                "error": "The engine's answer is not an OpenAI chat completion.",
            }
        )
        return row
    usage = payload.get("usage") if isinstance(payload.get("usage"), dict) else {}
    answer = parse_answer(
        chat_message.get("content") if isinstance(chat_message, dict) else None,
        choice.get("logprobs"),
        usage,
    )
    row.update(
        {
            "ok": True,
            "input_tokens": token_count(usage.get("prompt_tokens")),
            "output_tokens": answer.completion_tokens,
            "finish_reason": choice.get("finish_reason")
            if isinstance(choice.get("finish_reason"), str)
            else None,
        }
    )
    row["extra"].update(
        {
            "text": answer.text,
            "tokens": [[t.token, t.logprob, dict(t.top)] for t in answer.tokens]
            if answer.tokens is not None
            else None,
            "score": score(task, answer.text),
        }
    )
    return row


def _streamed(request: ChatRequest, task: Task, row: AnswerRow) -> AnswerRow:
    """A kind with a wire format of its own (Triton's `generate_stream`: a chat completion URL
    is a 404 there) answers through the streaming client the Playground and benchmarks use:
    its text is compared, and it reports no log-probabilities (its adapter says so)."""
    result = run_blocking(run_chat(request))
    row["e2e_s"] = result.e2e_s
    if not result.ok:
        row.update(
            {"error_class": result.error_class or "error", "error": result.error or "the request failed"}
        )
        return row
    row.update(
        {
            "ok": True,
            "input_tokens": result.prompt_tokens,
            "output_tokens": result.output_tokens,
            "finish_reason": result.finish_reason,
        }
    )
    row["extra"].update({"text": result.text, "tokens": None, "score": score(task, result.text)})
    return row


# ---------------------------------------------------------------- the worker's loop


def execute_parity(
    run_id: int,
    *,
    should_stop: Callable[[], bool] = lambda: False,
    on_progress: Callable[[float, str], None] | None = None,
) -> None:
    """Send every prompt to every engine, store each answer as it arrives, write the summary."""
    if not lifecycle.claim(run_id, clear_error=True):
        return
    with session_scope() as session:
        run = session.get(Run, run_id)
        assert run is not None
        # The one boundary: Run.config as start_parity stored it.
        config = cast(ParityConfig, dict(run.config))
    tasks = [Task.from_dict(t) for t in config["tasks"]]
    stopped = False
    failure: str | None = None
    try:
        with Heartbeat(run_id):
            _send_all(run_id, config, tasks, should_stop, on_progress)
    except _Stopped:
        stopped = True
    except Exception as error:  # noqa: BLE001  (the run must end with a status and a message)
        failure = f"{type(error).__name__}: {error}"
    summary = build_summary(run_id)
    errors = summary.any_failed
    status = (
        RunStatus.FAILED
        if failure
        else RunStatus.CANCELLED
        if stopped or lifecycle.status_of(run_id) == RunStatus.CANCELLED
        else RunStatus.FINISHED_WITH_ERRORS
        if errors
        else RunStatus.FINISHED
    )
    lifecycle.finish(run_id, status, summary=summary.to_json(), error=failure)


class _Stopped(Exception):
    pass


def _send_all(
    run_id: int,
    config: ParityConfig,
    tasks: list[Task],
    should_stop: Callable[[], bool],
    on_progress: Callable[[float, str], None] | None,
) -> None:
    total = len(tasks) * len(config["engines"])
    done = 0
    for engine in config["engines"]:
        try:
            record: endpoints.EngineRecord | None = endpoints.get_engine(engine["name"])
        except NotFoundError:
            record = None
        for index, task in enumerate(tasks):
            if should_stop() or lifecycle.status_of(run_id) == RunStatus.CANCELLED:
                raise _Stopped
            if record is None:
                row: AnswerRow = {
                    "ok": False,
                    "error_class": "config",
                    "error": f"The engine {engine['name']!r} was removed.",
                    "extra": {"task_id": task.id, "text": "", "tokens": None, "score": None},
                }
            else:
                row = send_one(
                    record,
                    task,
                    max_tokens=config["max_tokens"],
                    seed=config["seed"],
                    top_logprobs=config["top_logprobs"],
                )
            done += 1
            with session_scope() as session:
                session.add(
                    RequestResult(run_id=run_id, engine_name=engine["label"], index=index, **row)
                )
                session.execute(update(Run).where(Run.id == run_id).values(progress=done / total))
            if on_progress is not None:
                on_progress(done / total, f"{engine['label']}: {done}/{total}")


class Heartbeat:
    """Beats every HEARTBEAT_INTERVAL_S from a thread: one request may take up to
    REQUEST_DEADLINE_S, and a run waiting on a slow engine must not look stale."""

    def __init__(self, run_id: int) -> None:
        self.run_id = run_id
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name=f"parity-beat-{run_id}", daemon=True)

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def _loop(self) -> None:
        while not self._stop.wait(HEARTBEAT_INTERVAL_S):
            lifecycle.beat(self.run_id, only_running=True)

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join(timeout=HEARTBEAT_INTERVAL_S + 1)
