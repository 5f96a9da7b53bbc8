"""Blind votes of the Playground: which answer each participant preferred before knowing who
wrote it.

A vote picks the best of all N answers of one exchange (or says none is better), so every
engine of a 3-to-6 engine exchange can win. It is stored as the pairs it decides (the winner
against each other engine, or a tie between every pair), so the per-pair tally reads the same
for exchanges of two engines or six.

Every participant votes once per exchange, keyed by a hashed identity
(services/votes/participants.py), so a room votes on one exchange. A second vote by the same
participant is refused rather than replacing the first: once a participant has voted, the names
show on their screen, so a second vote would not be blind. The database refuses it too (a
unique constraint), so two clicks racing each other still count once.

Only an exchange sent in blind mode takes votes, and only while its engines are hidden from
that participant: the names show to a participant once they vote, and to everyone once an
operator reveals them (which ends the vote). Pages and exports that know no participant show
the names only after the reveal. A participant (or an operator) may withdraw the latest vote
on the server; the names stay shown to its voter, who takes no new vote on that exchange.
"""

from __future__ import annotations

import secrets
from collections import Counter
from dataclasses import dataclass
from itertools import combinations
from typing import TYPE_CHECKING

from sqlalchemy import delete, exists, func, select, update
from sqlalchemy.exc import IntegrityError

from db.models import Exchange, Run, Vote
from db.session import session_scope
from services.core.config import get_settings
from services.core.errors import NotFoundError, ValidationError
from services.runstate import blind
from services.runstate.lifecycle import RunKind
from services.team.access import PermissionDenied

if TYPE_CHECKING:
    from sqlalchemy.orm import Session

    from services.team.access import Viewer

TIE = "tie"
#: The blind answers' names, in column order (6 engines at most).
LABELS = blind.LABELS
#: Run.config key: voters (hashed) who withdrew their vote on the exchange after seeing its names.
WITHDRAWN = blind.WITHDRAWN


@dataclass
class PairTally:
    engine_a: str
    engine_b: str
    wins_a: int
    wins_b: int
    ties: int


@dataclass(frozen=True)
class BlindVote:
    """One participant's vote on one exchange: the best answer's engine, None when none was."""

    winner: str | None


def blind_order(run_id: int, engines: list[str]) -> list[str]:
    """The exchange's screen order in blind mode: the one stored with it (services/runstate/blind.py)."""
    return blind.stored_order(run_id, engines)


def answer_labels(order: list[str]) -> dict[str, str]:
    """Each engine's name while its exchange is blind ("Answer A", ...) for engines in screen
    order (`blind_order`): every page labels alike."""
    return blind.labels(order)


def hidden(blind_sent: bool, revealed: bool, seen: bool) -> bool:
    """The one rule of who wrote what (services/runstate/blind.py)."""
    return blind.hidden(blind_sent, revealed, seen)


def _pair(a: str, b: str) -> tuple[str, str]:
    # Name order: the unique constraint then sees any two ballots of a voter share a pair.
    return (a, b) if a <= b else (b, a)


def _has_ballot(session: Session, run_id: int, participant: str) -> bool:
    return bool(session.scalar(select(exists().where(Vote.run_id == run_id, Vote.voter == participant))))


def engines_hidden(run_id: int, participant: str | None = None) -> bool:
    """Whether a stored run is a blind exchange whose engines are still hidden from this
    participant (None: a page or export that knows no participant, which waits for the reveal)."""
    return blind.is_hidden(run_id, participant)


def vote(
    run_id: int,
    engine_a: str,
    engine_b: str,
    winner: str,
    participant: str | None = None,
    session_id: int | None = None,
) -> None:
    """Store one pair's vote of one exchange ("tie" allowed). Without a participant the vote is
    a ballot of its own (the pairwise API predates participants); with one, a second vote on the
    same pair is refused."""
    if engine_a == engine_b:
        raise ValidationError("Vote between two different answers.")
    if winner not in (engine_a, engine_b, TIE):
        raise ValidationError("The winner must be one of the two engines, or a tie.")
    first, second = _pair(engine_a, engine_b)
    voter = participant or f"pair:{secrets.token_hex(16)}"
    try:
        with session_scope() as session:
            if session.get(Run, run_id) is None:
                raise NotFoundError(f"Exchange {run_id} not found.")
            session.add(
                Vote(
                    run_id=run_id,
                    engine_a=first,
                    engine_b=second,
                    winner=winner,
                    voter=voter,
                    session_id=session_id,
                )
            )
    except IntegrityError as error:
        raise ValidationError(
            f"This participant already voted on that pair of exchange {run_id}."
        ) from error


def _blind_exchange(session: Session, run_id: int) -> Run:
    run = session.get(Run, run_id)
    if run is None or run.kind != RunKind.PLAYGROUND:
        raise NotFoundError(f"Playground exchange {run_id} not found.")
    return run


def _set_config(run: Run, **changes: object) -> None:
    # A new dict: the JSON column does not see changes made inside the stored one.
    run.config = {**dict(run.config or {}), **changes}


def _already(run_id: int) -> ValidationError:
    return ValidationError(
        f"You already voted on exchange {run_id}: its names are on your screen, so a second vote "
        "would not be blind. Your first vote counts."
    )


def _lock_exchange(session: Session, run_id: int) -> None:
    """Hold the exchange's row until this transaction ends, so two ballots on one exchange are
    counted and stored one after the other: SHOOTOUT_VOTES_PER_ADDRESS is a count then an
    insert, and two at once both saw room for one. PostgreSQL locks the row (SELECT ... FOR
    UPDATE); SQLite has no row locks and ignores FOR UPDATE, so a write to the row takes the
    database's write lock first (the others wait on the busy timeout), before the count reads."""
    if session.get_bind().dialect.name == "sqlite":
        session.execute(
            update(Run)
            .where(Run.id == run_id)
            .values(id=Run.id)
            .execution_options(synchronize_session=False)
        )
    else:
        session.execute(select(Run.id).where(Run.id == run_id).with_for_update())


def _refuse_over_cap(session: Session, run_id: int, client: str | None) -> None:
    """SHOOTOUT_VOTES_PER_ADDRESS: at most that many voters from one client address on one
    exchange (unset: no cap, as a room behind one NAT is many people)."""
    cap = get_settings().votes_per_address
    if cap is None or client is None:
        return
    used = session.scalar(
        select(func.count(func.distinct(Vote.voter))).where(Vote.run_id == run_id, Vote.client == client)
    )
    if int(used or 0) >= cap:
        raise ValidationError(
            f"Exchange {run_id} already has {cap} vote{'s' if cap != 1 else ''} from your network "
            "address, as many as this server takes from one address (SHOOTOUT_VOTES_PER_ADDRESS)."
        )


def vote_best(
    run_id: int,
    winner: str,
    *,
    participant: str,
    session_id: int | None = None,
    client: str | None = None,
) -> BlindVote:
    """Store `participant`'s best answer among all of an exchange's engines (`winner` an engine,
    or "tie"), in team demo session `session_id` if any, from client address key `client`
    (services/votes/participants.address_key). Only a blind exchange still hidden from this
    participant takes it; a second vote by the same participant is refused, and one over
    SHOOTOUT_VOTES_PER_ADDRESS from one address."""
    try:
        with session_scope() as session:
            _lock_exchange(session, run_id)
            run = _blind_exchange(session, run_id)
            engines = list(
                dict.fromkeys(
                    session.scalars(
                        select(Exchange.engine_name)
                        .where(Exchange.run_id == run_id)
                        .order_by(Exchange.id)
                    )
                )
            )
            if len(engines) < 2:
                raise ValidationError("A vote needs at least two answers.")
            if winner != TIE and winner not in engines:
                raise ValidationError(f"{winner} did not answer in exchange {run_id}.")
            if _has_ballot(session, run_id, participant):
                raise _already(run_id)
            if participant in (run.config or {}).get(WITHDRAWN, []):
                raise ValidationError(
                    f"You withdrew your vote on exchange {run_id} after its names showed: a new "
                    "vote would not be blind."
                )
            if not run.config.get("blind"):
                raise ValidationError(
                    f"Exchange {run_id} was not sent in blind mode: its names were on screen, so a "
                    "vote would not be blind."
                )
            if run.config.get("revealed"):
                raise ValidationError(
                    f"The engines of exchange {run_id} were revealed: a vote would not be blind."
                )
            _refuse_over_cap(session, run_id, client)
            if winner == TIE:
                pairs = [(a, b, TIE) for a, b in combinations(engines, 2)]
            else:
                pairs = [(winner, other, winner) for other in engines if other != winner]
            session.add_all(
                Vote(
                    run_id=run_id,
                    engine_a=_pair(a, b)[0],
                    engine_b=_pair(a, b)[1],
                    winner=w,
                    voter=participant,
                    session_id=session_id,
                    client=client,
                )
                for a, b, w in pairs
            )
    except IntegrityError as error:  # the same participant's other click got there first
        raise _already(run_id) from error
    return BlindVote(None if winner == TIE else winner)


def _undo_target(session: Session, run: Run, viewer: Viewer, participant: str | None) -> str:
    """Whose vote on `run` the caller may withdraw now (their own; an operator the latest),
    or the reason they may not."""
    voters = set(session.scalars(select(Vote.voter).where(Vote.run_id == run.id)))
    if not voters:
        raise ValidationError(f"Exchange {run.id} has no vote to withdraw.")
    own = participant is not None and participant in voters
    if not own and not viewer.is_operator:
        raise PermissionDenied("Only the participant who cast a vote, or an operator, may withdraw it.")
    latest = session.execute(select(Vote.run_id, Vote.voter).order_by(Vote.id.desc()).limit(1)).one()
    target = participant if own else latest.voter
    if latest.run_id != run.id or latest.voter != target:
        raise ValidationError(
            f"A later vote was cast after the one on exchange {run.id}: it can no longer be withdrawn."
        )
    return str(target)


def may_undo(run_id: int, viewer: Viewer, participant: str | None = None) -> bool:
    """Whether the caller may withdraw a vote on this exchange: their own (or, an operator, the
    latest), and no vote cast on the server since."""
    with session_scope() as session:
        try:
            _undo_target(session, _blind_exchange(session, run_id), viewer, participant)
        except ValidationError:
            return False
        return True


def undo_vote(run_id: int, viewer: Viewer, participant: str | None = None) -> None:
    """Withdraw a vote from the tally (see `may_undo`). Its voter saw the names: they stay shown
    to them, and that voter takes no new vote on this exchange; the rest of the room votes on."""
    with session_scope() as session:
        run = _blind_exchange(session, run_id)
        target = _undo_target(session, run, viewer, participant)
        session.execute(delete(Vote).where(Vote.run_id == run_id, Vote.voter == target))
        withdrawn = list((run.config or {}).get(WITHDRAWN, []))
        _set_config(run, **{WITHDRAWN: [*withdrawn, target]})


def reveal(run_id: int, viewer: Viewer) -> None:
    """Show a blind exchange's engines to everyone (an operator's call: it ends the vote)."""
    if not viewer.is_operator:
        raise PermissionDenied(
            "Only an operator may reveal the engines of a blind exchange before its vote."
        )
    with session_scope() as session:
        _set_config(_blind_exchange(session, run_id), revealed=True)


def votes_for(run_id: int) -> list[tuple[str, str, str]]:
    """Every stored pair of the exchange's votes: (engine, engine, winner), pairs in name order."""
    with session_scope() as session:
        return [
            (v.engine_a, v.engine_b, v.winner)
            for v in session.scalars(select(Vote).where(Vote.run_id == run_id).order_by(Vote.id))
        ]


def blind_vote(run_id: int, participant: str | None) -> BlindVote | None:
    """`participant`'s vote on this exchange, None before theirs (or with no participant)."""
    if participant is None:
        return None
    with session_scope() as session:
        winners = list(
            session.scalars(select(Vote.winner).where(Vote.run_id == run_id, Vote.voter == participant))
        )
    if not winners:
        return None
    decided = Counter(winner for winner in winners if winner != TIE)
    return BlindVote(decided.most_common(1)[0][0] if decided else None)


def tally() -> list[PairTally]:
    """Wins and ties per engine pair over every stored vote of an exchange no longer hidden
    (pairs in name order)."""
    with session_scope() as session:
        rows = session.execute(
            select(Vote.engine_a, Vote.engine_b, Vote.winner, func.count())
            .where(blind.votes_shown_clause())
            .group_by(Vote.engine_a, Vote.engine_b, Vote.winner)
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
