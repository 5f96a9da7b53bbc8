"""Reading stored demos back, live or replayed, from the database alone: one demo's view,
the list of stored demos, the `shootout demo --json` document, and waiting for the end."""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Any

from sqlalchemy import func, select

from db.models import RequestResult, Run
from db.session import session_scope
from services.core.errors import NotFoundError, ShootoutError
from services.core.json_types import JsonOut
from services.demos.base import DemoVerdict, Scenario
from services.demos.records import DemoListItem, DemoView, demo_config, step_view
from services.demos.registry import get_scenario
from services.demos.summary import DemoSummary
from services.runstate.lifecycle import ACTIVE_STATUSES, RunKind, is_stale
from services.runstate.run_kinds import interrupt_run, notice_gone_workers


def _interrupt_if_stale(run_id: int) -> None:
    """A demo left "running" by a process that died shows as interrupted, never forever running."""
    notice_gone_workers(RunKind.DEMO)  # a killed worker this server started: at once
    with session_scope() as session:
        run = session.get(Run, run_id)
        if (
            run is None
            or run.status not in ACTIVE_STATUSES
            or not is_stale(run.heartbeat_at, run.created_at)
        ):
            return
        interrupt_run(run)
        run.summary = replace(DemoSummary.from_json(run.summary), awaiting=None).to_json()


def demo_view(run_id: int) -> DemoView:
    """Everything the page draws for one demo, from the database alone (live or replay)."""
    _interrupt_if_stale(run_id)
    with session_scope() as session:
        run = session.get(Run, run_id)
        if run is None or run.kind != RunKind.DEMO:
            raise NotFoundError(f"No demo run #{run_id}.")
        requests = session.scalar(
            select(func.count()).select_from(RequestResult).where(RequestResult.run_id == run_id)
        )
        config = demo_config(run.config)
        summary = DemoSummary.from_json(run.summary)
        name = str(config.get("scenario") or run.name)
        try:
            scenario: Scenario[Any] | None = get_scenario(name)
        except NotFoundError:
            scenario = None
        # A scenario no longer known still shows its verdicts, as stored.
        record = scenario.verdict_record if scenario else DemoVerdict
        control = config.get("control") or {}
        return DemoView(
            run_id=run.id,
            scenario=name,
            title=summary.title or (scenario.title if scenario else name),
            mechanism=scenario.mechanism if scenario else "",
            explanation=scenario.explanation if scenario else "",
            status=run.status,
            progress=float(run.progress or 0.0),
            engines=[n for n in (run.engine_names or "").split(",") if n],
            options=dict(config.get("options") or {}),
            steps=[step_view(i, s) for i, s in enumerate(summary.steps)],
            conclusion=summary.conclusion,
            conclusion_headline=summary.conclusion_headline,
            conclusion_lines=list(summary.conclusion_lines or []),
            verdicts={n: record.from_json(v) for n, v in (summary.verdicts or {}).items()},
            skipped_engines=dict(summary.skipped_engines or {}),
            awaiting=summary.awaiting if run.status in ("pending", "running") else None,
            paused=bool(control.get("pause")),
            error=run.error,
            created_at=run.created_at,
            finished_at=run.finished_at,
            request_count=int(requests or 0),
        )


def list_demos(limit: int = 50) -> list[DemoListItem]:
    """Stored demos, newest first (to replay one without its engines)."""
    with session_scope() as session:
        rows = session.execute(
            select(Run.id, Run.name, Run.status, Run.engine_names, Run.created_at, Run.summary)
            .where(Run.kind == RunKind.DEMO, Run.archived.is_(False))
            .order_by(Run.created_at.desc(), Run.id.desc())
            .limit(limit)
        ).all()
    items = []
    for run_id, name, status, engine_names, created_at, summary in rows:
        stored = DemoSummary.from_json(summary)
        items.append(
            DemoListItem(
                run_id=run_id,
                scenario=name,
                title=stored.title or name,
                status=status,
                engines=[n for n in (engine_names or "").split(",") if n],
                created_at=created_at,
                conclusion=stored.conclusion,
            )
        )
    return items


def demo_result(run_id: int) -> JsonOut:
    """The JSON `shootout demo --json` prints (format in docs/cli-formats.md)."""
    return demo_json(demo_view(run_id))


def demo_json(view: DemoView) -> JsonOut:
    """A demo's view as `shootout demo --json` prints it."""
    return {
        "run_id": view.run_id,
        "scenario": view.scenario,
        "title": view.title,
        "status": view.status,
        "engines": view.engines,
        "skipped_engines": view.skipped_engines,
        "options": view.options,
        "conclusion": view.conclusion,
        "verdicts": {name: verdict.to_json() for name, verdict in view.verdicts.items()},
        "error": view.error,
        "requests": view.request_count,
        "steps": [
            {
                "key": step.key,
                "title": step.title,
                "status": step.status,
                "finding": step.finding,
                "numbers": [{"label": n.label, "value": n.value, "text": n.text} for n in step.numbers],
                "data": step.data,
                "errors": step.errors,
            }
            for step in view.steps
        ],
    }


def wait_until_done(run_id: int, timeout_s: float = 600.0) -> DemoView:
    """Block until the demo ends (tests and scripts)."""
    deadline = time.monotonic() + timeout_s
    while True:
        view = demo_view(run_id)
        if not view.live:
            return view
        if time.monotonic() > deadline:
            raise ShootoutError(f"Demo #{run_id} did not finish within {timeout_s:.0f} s.")
        time.sleep(0.2)
