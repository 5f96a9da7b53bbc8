"""An exchange's vote tally with its uncertainty, for the session report and the run page.

Each engine's win share is the ballots that picked it as best over all ballots (a ballot with no
clear winner counts in the total and as a tie), with a 95% Wilson score interval: honest at the
small counts of a room (ten voters) where the normal approximation is not. With 3 to 6 engines
each pair gets its own: the first engine's share of the ballots that decided between the two
(ties, and ballots won by a third engine, left out), its ties beside it.

While the exchange is hidden every engine is named by its blind label only.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass
from itertools import combinations

import pandas as pd
from sqlalchemy import select

from db.models import Exchange, Run, Vote
from db.session import session_scope
from services.core import units
from services.core.errors import NotFoundError
from services.runstate import blind

#: The normal quantile of a two-sided 95% interval.
Z95 = 1.959963984540054
TIE = "tie"


def wilson(successes: float, n: int, z: float = Z95) -> tuple[float, float] | None:
    """The Wilson score interval of a proportion `successes`/`n` (None when n is 0); a tie
    counted as half a success gives a fractional count."""
    if n <= 0:
        return None
    p = successes / n
    denominator = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denominator
    margin = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denominator
    return max(0.0, centre - margin), min(1.0, centre + margin)


@dataclass(frozen=True)
class EngineShare:
    #: The engine's name, or its blind label while the exchange is hidden.
    name: str
    wins: int
    #: Ballots in all (its share's denominator).
    ballots: int
    share: float | None
    interval: tuple[float, float] | None


@dataclass(frozen=True)
class PairShare:
    first: str
    second: str
    wins_first: int
    wins_second: int
    ties: int
    #: The first engine's share of the ballots that decided between the two, and its interval.
    share_first: float | None
    interval: tuple[float, float] | None


@dataclass(frozen=True)
class VoteTally:
    run_id: int
    voters: int
    #: Ballots with no clear winner (a tie between every pair).
    ties: int
    engines: list[EngineShare]
    #: Per pair, with 3 to 6 engines (with two, the engines' own shares say it all).
    pairs: list[PairShare]
    hidden: bool


def vote_tally(run_id: int, session_id: int | None = None) -> VoteTally:
    """The votes on one exchange (only those cast in team demo session `session_id`, when given),
    one ballot per voter."""
    with session_scope() as session:
        run = session.get(Run, run_id)
        if run is None or run.kind != blind.PLAYGROUND:
            raise NotFoundError(f"Playground exchange {run_id} not found.")
        hidden = blind.run_hidden(session, run)
        engines = list(
            dict.fromkeys(
                session.scalars(
                    select(Exchange.engine_name).where(Exchange.run_id == run_id).order_by(Exchange.id)
                )
            )
        )
        order = (
            blind.order_of(run_id, run.config, engines) if (run.config or {}).get("blind") else engines
        )
        query = select(Vote.voter, Vote.winner).where(Vote.run_id == run_id)
        if session_id is not None:
            query = query.where(Vote.session_id == session_id)
        rows = session.execute(query).all()
    ballots: dict[str, set[str]] = defaultdict(set)
    for voter, winner in rows:
        ballots[voter].add(winner)
    best: dict[str, str | None] = {}
    for voter, winners in ballots.items():
        named = sorted(winners - {TIE})
        best[voter] = named[0] if named else None
    labels = blind.labels(order)
    shown = {engine: labels[engine] if hidden else engine for engine in order}
    voters = len(best)
    shares = []
    for engine in order:
        wins = sum(1 for winner in best.values() if winner == engine)
        shares.append(
            EngineShare(
                shown[engine], wins, voters, wins / voters if voters else None, wilson(wins, voters)
            )
        )
    pairs = []
    if 3 <= len(order) <= 6:
        for first, second in combinations(order, 2):
            wins_first = sum(1 for w in best.values() if w == first)
            wins_second = sum(1 for w in best.values() if w == second)
            decided = wins_first + wins_second
            pairs.append(
                PairShare(
                    shown[first],
                    shown[second],
                    wins_first,
                    wins_second,
                    sum(1 for w in best.values() if w is None),
                    wins_first / decided if decided else None,
                    wilson(wins_first, decided),
                )
            )
    ties = sum(1 for winner in best.values() if winner is None)
    return VoteTally(run_id, voters, ties, shares, pairs, hidden)


def interval_words(interval: tuple[float, float] | None) -> str:
    return "—" if interval is None else f"{interval[0] * 100:.0f}–{interval[1] * 100:.0f}%"


@dataclass(frozen=True)
class TallyTables:
    """A tally as the run page and the session report draw it."""

    engines: pd.DataFrame
    #: Per pair with 3 to 6 engines, else None.
    pairs: pd.DataFrame | None
    caption: str


def tally_tables(tally: VoteTally) -> TallyTables | None:
    """The tally's tables, None before any vote."""
    if not tally.voters:
        return None
    who = "Answer" if tally.hidden else "Engine"
    engines = pd.DataFrame(
        {
            who: [e.name for e in tally.engines],
            "Votes as best": [e.wins for e in tally.engines],
            "Voters": [e.ballots for e in tally.engines],
            "Win share": [units.percent(e.share, signed=False) for e in tally.engines],
            "95% interval": [interval_words(e.interval) for e in tally.engines],
        }
    )
    pairs = None
    if tally.pairs:
        pairs = pd.DataFrame(
            {
                "Pair": [f"{p.first} vs {p.second}" for p in tally.pairs],
                "Wins": [f"{p.wins_first}–{p.wins_second}" for p in tally.pairs],
                "No clear winner": [p.ties for p in tally.pairs],
                "First's share": [units.percent(p.share_first, signed=False) for p in tally.pairs],
                "95% interval": [interval_words(p.interval) for p in tally.pairs],
            }
        )
    voters = f"{tally.voters} voter{'s' if tally.voters != 1 else ''}"
    caption = (
        f"{voters}, one ballot each; {tally.ties} saw no clear winner (a tie). Win share: the "
        "ballots that picked it as best over all ballots, with a 95% Wilson interval"
        + (
            "; per pair, the first's share of the ballots that picked one of the two."
            if pairs is not None
            else "."
        )
    )
    return TallyTables(engines, pairs, caption)
