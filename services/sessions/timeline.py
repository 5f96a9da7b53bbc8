"""A session's timeline in words: what was shown, in order, with the runs' own names."""

from __future__ import annotations

import pandas as pd
from sqlalchemy import select

from db.models import Run, SessionEvent
from db.session import session_scope
from services.sessions.records import Shown, TimelineEntry
from services.sessions.store import list_sessions

KIND_WORDS = {
    "benchmark": "Benchmark run",
    "tune": "Tuning run",
    "demo": "Demo",
    "parity": "Parity run",
    "playground": "Playground exchange",
}


def _run_words(run_id: int, runs: dict[int, tuple[str, str]]) -> str:
    kind, name = runs.get(run_id, ("", ""))
    what = KIND_WORDS.get(kind, "Run")
    return f"{what} #{run_id}" + (f" ({name})" if name else "") if kind else f"Run #{run_id} (deleted)"


def label(shown: Shown, runs: dict[int, tuple[str, str]]) -> str:
    """One timeline entry in words."""
    if shown.kind == "note":
        return "Note: " + shown.text
    if shown.kind == "planner":
        inputs = dict(shown.inputs)
        return f"Planner: {inputs.get('model', '?')} on {inputs.get('gpu', '?')}"
    if shown.kind == "compare":
        return "Compare of runs " + ", ".join(f"#{i}" for i in shown.run_ids)
    if shown.run_id is None:
        return shown.kind
    words = _run_words(shown.run_id, runs)
    if shown.kind == "demo_step" and shown.step is not None:
        words += f", step {shown.step + 1}"
    return words


def timeline(session_id: int) -> list[TimelineEntry]:
    with session_scope() as db:
        events = list(
            db.scalars(
                select(SessionEvent)
                .where(SessionEvent.session_id == session_id)
                .order_by(SessionEvent.seq)
            )
        )
        shown = [(event, Shown.from_json(event.ref)) for event in events]
        ids = {i for _, s in shown if s is not None for i in s.run_ids}
        runs = {
            run_id: (kind, name)
            for run_id, kind, name in db.execute(
                select(Run.id, Run.kind, Run.name).where(Run.id.in_(ids))
            )
        }
    return [
        TimelineEntry(seq=event.seq, at=event.at, shown=s, label=label(s, runs))
        for event, s in shown
        if s is not None
    ]


def describe(shown: Shown) -> str:
    """One thing shown in words, with its run's kind and name."""
    with session_scope() as db:
        runs = {
            run_id: (kind, name)
            for run_id, kind, name in db.execute(
                select(Run.id, Run.kind, Run.name).where(Run.id.in_(shown.run_ids))
            )
        }
    return label(shown, runs)


def sessions_table(limit: int = 50) -> pd.DataFrame | None:
    """The newest sessions for the Runs page, each with the address of its record; None if none."""
    listed = list_sessions(limit)
    if not listed:
        return None
    return pd.DataFrame(
        {
            "Session": [f"/session?session={s.id}" for s in listed],
            "Title": [s.title or "untitled" for s in listed],
            "Code": [s.join_code for s in listed],
            "Started (UTC)": [s.started_at.strftime("%Y-%m-%d %H:%M") for s in listed],
            "Status": ["live" if s.ended_at is None else "ended" for s in listed],
            "Things shown": [s.events for s in listed],
            "Joined": [s.participants for s in listed],
        }
    )
