"""Blind votes of the Playground: which answer a viewer preferred before knowing who wrote it.

A vote picks the best of all N answers of one exchange (or says none is better), so every
engine of a 3-to-6 engine exchange can win. It is stored as the pairs it decides (the winner
against each other engine, or a tie between every pair), so the per-pair tally reads the same
for exchanges of two engines or six. One vote per exchange: once cast, the names show, and a
second vote would no longer be blind.

Only an exchange sent in blind mode takes a vote, and only while its engines are hidden: an
operator may reveal them without a vote, and the voter (or an operator) may withdraw a vote
until the next vote on the server is cast. A withdrawn vote leaves the exchange revealed, since
its names were seen: a new vote on it would not be blind.
"""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import dataclass
from itertools import combinations
from typing import TYPE_CHECKING

from sqlalchemy import delete, func, select

from db.models import Exchange, Run, Vote
from db.session import session_scope
from services.access import PermissionDenied
from services.errors import NotFoundError, ValidationError

if TYPE_CHECKING:
    from sqlalchemy.orm import Session

    from services.access import Viewer

TIE = "tie"
#: The blind answers' names, in column order (6 engines at most).
LABELS = "ABCDEF"


@dataclass
class PairTally:
    engine_a: str
    engine_b: str
    wins_a: int
    wins_b: int
    ties: int


@dataclass(frozen=True)
class BlindVote:
    """The vote cast on one exchange: the best answer's engine, or None when none was better."""

    winner: str | None


def blind_order(run_id: int, engines: list[str]) -> list[str]:
    """The shuffled column order of blind mode (the same on every rerun of one exchange)."""
    order = list(engines)
    random.Random(run_id).shuffle(order)
    return order


def answer_labels(order: list[str]) -> dict[str, str]:
    """Each engine's name while its exchange is blind ("Answer A", ...) for engines in screen
    order (`blind_order` of the order the exchange stored its answers): every page labels alike."""
    return {engine: f"Answer {LABELS[i]}" for i, engine in enumerate(order)}


def hidden(blind: bool, revealed: bool, voted: bool) -> bool:
    """The one rule of who wrote what: hidden while a blind exchange has neither a vote nor an
    operator's reveal, on every page and export, for every viewer."""
    return blind and not revealed and not voted


def engines_hidden(run_id: int) -> bool:
    """Whether a stored run is a blind exchange whose engines are still hidden."""
    with session_scope() as session:
        run = session.get(Run, run_id)
        if run is None or run.kind != "playground":
            return False
        config = run.config or {}
        return hidden(
            bool(config.get("blind")), bool(config.get("revealed")), _has_vote(session, run_id)
        )


def vote(run_id: int, engine_a: str, engine_b: str, winner: str) -> None:
    """Store a blind vote between two engines' answers of one exchange ("tie" allowed)."""
    if engine_a == engine_b:
        raise ValidationError("Vote between two different answers.")
    if winner not in (engine_a, engine_b, TIE):
        raise ValidationError("The winner must be one of the two engines, or a tie.")
    with session_scope() as session:
        if session.get(Run, run_id) is None:
            raise NotFoundError(f"Exchange {run_id} not found.")
        session.add(Vote(run_id=run_id, engine_a=engine_a, engine_b=engine_b, winner=winner))


def _blind_exchange(session: Session, run_id: int) -> Run:
    run = session.get(Run, run_id)
    if run is None or run.kind != "playground":
        raise NotFoundError(f"Playground exchange {run_id} not found.")
    return run


def _has_vote(session: Session, run_id: int) -> bool:
    return bool(session.scalar(select(func.count()).select_from(Vote).where(Vote.run_id == run_id)))


def _set_config(run: Run, **changes: object) -> None:
    # A new dict: the JSON column does not see changes made inside the stored one.
    run.config = {**dict(run.config or {}), **changes}


def vote_best(run_id: int, winner: str, viewer: Viewer | None = None) -> BlindVote:
    """Store the best answer among all of an exchange's engines (`winner` an engine, or "tie").
    Only a blind exchange whose engines are still hidden takes one."""
    with session_scope() as session:
        run = _blind_exchange(session, run_id)
        engines = list(
            dict.fromkeys(
                session.scalars(
                    select(Exchange.engine_name).where(Exchange.run_id == run_id).order_by(Exchange.id)
                )
            )
        )
        if len(engines) < 2:
            raise ValidationError("A vote needs at least two answers.")
        if winner != TIE and winner not in engines:
            raise ValidationError(f"{winner} did not answer in exchange {run_id}.")
        if _has_vote(session, run_id):
            raise ValidationError(
                f"Exchange {run_id} already has a vote: a second one would not be blind."
            )
        if not run.config.get("blind"):
            raise ValidationError(
                f"Exchange {run_id} was not sent in blind mode: its names were on screen, so a vote "
                "would not be blind."
            )
        if run.config.get("revealed"):
            raise ValidationError(
                f"The engines of exchange {run_id} were revealed: a vote would not be blind."
            )
        if winner == TIE:
            pairs = [(a, b, TIE) for a, b in combinations(engines, 2)]
        else:
            pairs = [(winner, other, winner) for other in engines if other != winner]
        session.add_all(Vote(run_id=run_id, engine_a=a, engine_b=b, winner=w) for a, b, w in pairs)
        _set_config(run, voted_by=viewer.identity if viewer is not None else None)
    return BlindVote(None if winner == TIE else winner)


def _undo_refusal(session: Session, run: Run, viewer: Viewer) -> ValidationError | None:
    """Why `viewer` may not withdraw the vote on `run` now, None when they may."""
    if not _has_vote(session, run.id):
        return ValidationError(f"Exchange {run.id} has no vote to withdraw.")
    latest = session.scalar(select(Vote.run_id).order_by(Vote.id.desc()).limit(1))
    if latest != run.id:
        return ValidationError(
            f"A later vote was cast after the one on exchange {run.id}: it can no longer be withdrawn."
        )
    if not viewer.is_operator and run.config.get("voted_by") != viewer.identity:
        return PermissionDenied("Only the viewer who cast this vote, or an operator, may withdraw it.")
    return None


def may_undo(run_id: int, viewer: Viewer) -> bool:
    """Whether `viewer` may withdraw this exchange's vote: theirs (or they are an operator),
    and no vote cast on the server since."""
    with session_scope() as session:
        return _undo_refusal(session, _blind_exchange(session, run_id), viewer) is None


def undo_vote(run_id: int, viewer: Viewer) -> None:
    """Withdraw the exchange's vote from the tally; the exchange stays revealed."""
    with session_scope() as session:
        run = _blind_exchange(session, run_id)
        refusal = _undo_refusal(session, run, viewer)
        if refusal is not None:
            raise refusal
        session.execute(delete(Vote).where(Vote.run_id == run_id))
        _set_config(run, revealed=True, voted_by=None)


def reveal(run_id: int, viewer: Viewer) -> None:
    """Show a blind exchange's engines without a vote (an operator's call: it ends the vote)."""
    if not viewer.is_operator:
        raise PermissionDenied(
            "Only an operator may reveal the engines of a blind exchange before its vote."
        )
    with session_scope() as session:
        _set_config(_blind_exchange(session, run_id), revealed=True)


def votes_for(run_id: int) -> list[tuple[str, str, str]]:
    with session_scope() as session:
        return [
            (v.engine_a, v.engine_b, v.winner)
            for v in session.scalars(select(Vote).where(Vote.run_id == run_id))
        ]


def blind_vote(run_id: int) -> BlindVote | None:
    """The vote cast on this exchange, None before any."""
    rows = votes_for(run_id)
    if not rows:
        return None
    winners = Counter(winner for _, _, winner in rows if winner != TIE)
    return BlindVote(winners.most_common(1)[0][0] if winners else None)


def tally() -> list[PairTally]:
    """Wins and ties per engine pair over every stored vote (pairs in name order)."""
    with session_scope() as session:
        rows = session.execute(
            select(Vote.engine_a, Vote.engine_b, Vote.winner, func.count()).group_by(
                Vote.engine_a, Vote.engine_b, Vote.winner
            )
        ).all()
    pairs: dict[tuple[str, str], PairTally] = {}
    for engine_a, engine_b, winner, count in rows:
        first, second = sorted((engine_a, engine_b))
        entry = pairs.setdefault((first, second), PairTally(first, second, 0, 0, 0))
        if winner == first:
            entry.wins_a += count
        elif winner == second:
            entry.wins_b += count
        else:
            entry.ties += count
    return [pairs[k] for k in sorted(pairs)]
