"""The live tally of one exchange, for the presenter's screen: how many participants picked
each answer, how many saw no clear winner, and how many voted. While the exchange is blind it
names each answer by its blind label only (the presenter's screen is on the projector)."""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass

from sqlalchemy import select

from db.models import Exchange, Run, Vote
from db.session import session_scope
from services.core.errors import NotFoundError
from services.playground import votes as playground_votes
from services.runstate.lifecycle import RunKind


@dataclass(frozen=True)
class AnswerCount:
    """One answer of the exchange: its blind label, its engine (None while hidden), its votes."""

    label: str
    engine: str | None
    votes: int


@dataclass(frozen=True)
class ExchangeTally:
    run_id: int
    #: In the exchange's screen order (the blind order when it was sent blind).
    answers: list[AnswerCount]
    #: Participants who saw no clear winner (a tie between every pair).
    no_winner: int
    voters: int
    #: Names hidden: blind and not revealed (the presenter reveals them when they choose).
    hidden: bool
    #: Voters per client address, most first (the addresses themselves are not kept: a keyed
    #: hash each); ballots stored before addresses were kept are left out here.
    per_address: tuple[int, ...] = ()
    #: Ballots without an address (stored before addresses were kept, or cast with none known).
    no_address: int = 0


def exchange_tally(run_id: int, session_id: int | None = None) -> ExchangeTally:
    """The votes on one exchange so far, one count per participant (only those cast in team
    demo session `session_id`, when given)."""
    with session_scope() as session:
        run = session.get(Run, run_id)
        if run is None or run.kind != RunKind.PLAYGROUND:
            raise NotFoundError(f"Playground exchange {run_id} not found.")
        config = run.config or {}
        engines = list(
            dict.fromkeys(
                session.scalars(
                    select(Exchange.engine_name).where(Exchange.run_id == run_id).order_by(Exchange.id)
                )
            )
        )
        query = select(Vote.voter, Vote.winner, Vote.client).where(Vote.run_id == run_id)
        if session_id is not None:
            query = query.where(Vote.session_id == session_id)
        rows = session.execute(query).all()
    blind = bool(config.get("blind"))
    hidden = playground_votes.hidden(blind, bool(config.get("revealed")), seen=False)
    # A ballot is its voter's rows: a winner (named in each of its rows) or ties only.
    ballots: dict[str, set[str]] = defaultdict(set)
    address_of: dict[str, str | None] = {}
    for voter, winner, client in rows:
        ballots[voter].add(winner)
        address_of[voter] = client
    best: dict[str, int] = defaultdict(int)
    no_winner = 0
    for winners in ballots.values():
        named = winners - {playground_votes.TIE}
        if named:
            best[min(named)] += 1
        else:
            no_winner += 1
    order = playground_votes.blind_order(run_id, engines) if blind else engines
    labels = playground_votes.answer_labels(order)
    answers = [
        AnswerCount(labels[engine], None if hidden else engine, best.get(engine, 0)) for engine in order
    ]
    per_address = Counter(client for client in address_of.values() if client is not None)
    return ExchangeTally(
        run_id,
        answers,
        no_winner,
        len(ballots),
        hidden,
        per_address=tuple(sorted(per_address.values(), reverse=True)),
        no_address=sum(1 for client in address_of.values() if client is None),
    )
