"""The blind rule, in one place below the features that ask it.

A Playground exchange sent in blind mode hides which engine wrote which answer until an
operator reveals it (or, for one voter, once that voter has voted or withdrawn a vote). Until
then nothing shown, exported or sent to a follower ties a figure or an answer to an engine:
the run page, compare, the Runs list, verdicts, charts, follower screens, session reports and
the CLI all ask `run_hidden`/`is_hidden`/`hidden_ids` here, and `refuse` where they would
have to name engines to say anything at all.

The answers' order on screen is drawn per exchange from `secrets` when it is sent and stored
with it (Run.config["blind_order"]): nobody can compute it from the exchange's number. An
exchange stored before that keeps the order its voters saw (`random.Random(run_id)`), so its
ballots keep counting under the same labels.
"""

from __future__ import annotations

import random
import secrets
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from sqlalchemy import and_, exists, false, func, not_, or_, select

from db.models import Run, Vote
from db.session import session_scope
from services.core import stored_json
from services.core.errors import ValidationError

if TYPE_CHECKING:
    from sqlalchemy import ColumnElement
    from sqlalchemy.orm import Session

#: Run.config key of the stored screen order (engine names, Answer A first).
ORDER_KEY = "blind_order"
#: Run.config key: voters (hashed) who withdrew their vote on the exchange after seeing its names.
WITHDRAWN = "withdrawn"
#: The blind answers' names, in screen order (6 engines at most).
LABELS = "ABCDEF"
#: What every surface says in place of the engines.
HIDDEN_NOTE = "engines hidden until revealed"
PLAYGROUND = "playground"


def new_order(engines: Iterable[str]) -> list[str]:
    """A fresh screen order for a new blind exchange, from the operating system's randomness."""
    order = list(dict.fromkeys(engines))
    secrets.SystemRandom().shuffle(order)
    return order


def legacy_order(run_id: int, engines: Sequence[str]) -> list[str]:
    """The order of an exchange stored before orders were stored (derived from its number)."""
    order = list(dict.fromkeys(engines))
    random.Random(run_id).shuffle(order)
    return order


def order_of(run_id: int, config: object, engines: Sequence[str]) -> list[str]:
    """The screen order of `engines` in an exchange whose stored config (Run.config, any value
    some version stored) is `config`: the stored order (engines it does not list, after it),
    else the legacy one."""
    names = list(dict.fromkeys(engines))
    stored = stored_json.mapping(config).get(ORDER_KEY)
    if not isinstance(stored, list):
        return legacy_order(run_id, names)
    listed = [str(name) for name in stored if str(name) in names]
    return listed + [name for name in names if name not in listed]


def sent_blind(config: object) -> bool:
    """Whether an exchange's stored config (Run.config) says it was sent blind."""
    return bool(stored_json.mapping(config).get("blind"))


def stored_order(run_id: int, engines: Sequence[str]) -> list[str]:
    """`order_of` with the config read from the database."""
    with session_scope() as session:
        run = session.get(Run, run_id)
        return order_of(run_id, run.config if run is not None else None, engines)


def labels(order: Sequence[str]) -> dict[str, str]:
    """Each engine's name while its exchange is blind ("Answer A", ...), engines in screen order."""
    return {engine: f"Answer {LABELS[i]}" for i, engine in enumerate(order)}


def hidden(blind: bool, revealed: bool, seen: bool) -> bool:
    """The rule: hidden while a blind exchange is neither revealed by an operator nor seen by
    this participant (their vote, or their withdrawn vote)."""
    return blind and not revealed and not seen


def _seen(session: Session, run: Run, participant: str | None) -> bool:
    if participant is None:
        return False
    if participant in (run.config or {}).get(WITHDRAWN, []):
        return True
    return bool(session.scalar(select(exists().where(Vote.run_id == run.id, Vote.voter == participant))))


def run_hidden(session: Session, run: Run | None, participant: str | None = None) -> bool:
    """Whether `run` is a blind exchange whose engines are hidden from `participant` (None: a
    page, report, export or command that knows no participant, which waits for the reveal)."""
    if run is None or run.kind != PLAYGROUND:
        return False
    config = run.config or {}
    return hidden(
        bool(config.get("blind")), bool(config.get("revealed")), _seen(session, run, participant)
    )


def is_hidden(run_id: int, participant: str | None = None) -> bool:
    """`run_hidden` of a stored run, in its own session."""
    with session_scope() as session:
        return run_hidden(session, session.get(Run, run_id), participant)


def hidden_clause() -> ColumnElement[bool]:
    """SQL true for the runs hidden from everyone (blind exchanges no operator revealed)."""
    return and_(
        Run.kind == PLAYGROUND,
        func.coalesce(Run.config["blind"].as_boolean(), false()),
        not_(func.coalesce(Run.config["revealed"].as_boolean(), false())),
    )


def hidden_ids(session: Session, run_ids: Iterable[int]) -> set[int]:
    """Which of `run_ids` are hidden from everyone: one query for a list of runs."""
    ids = list(run_ids)
    if not ids:
        return set()
    return set(session.scalars(select(Run.id).where(Run.id.in_(ids), hidden_clause())))


def votes_shown_clause() -> ColumnElement[bool]:
    """SQL true for the votes a tally across exchanges may count: none of a hidden exchange (a
    pair's wins named by engine beside its live tally by answer would say who wrote what)."""
    return or_(Vote.run_id.is_(None), Vote.run_id.not_in(select(Run.id).where(hidden_clause())))


def refuse(run_ids: Iterable[int], what: str) -> None:
    """Refuse `what` (e.g. "Comparing") when it would name the engines of a hidden exchange."""
    with session_scope() as session:
        found = sorted(hidden_ids(session, run_ids))
    if found:
        numbers = ", ".join(f"#{run_id}" for run_id in found)
        raise ValidationError(
            f"{what} would name the engines of blind exchange {numbers}: they are hidden until an "
            "operator reveals them (others may still be voting on it)."
        )
