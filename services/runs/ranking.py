"""The Runs page's ranking of engines from blind votes: the Bradley-Terry table and the
votes and win rate of each engine pair with its interval (services/votes/ranking.py computes them)."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from services.core import units
from services.votes import bradley_terry
from services.votes.ranking import engine_ranking
from services.votes.tally import interval_words, wilson

PAIR_COLUMNS = ("Pair", "Votes", "Wins", "Ties", "First's win rate", "95% interval")


@dataclass(frozen=True)
class RankingView:
    #: Engine, group (when the votes fall in several), score, CI low, CI high, votes.
    table: pd.DataFrame
    #: Per engine pair, in the table's order: votes, wins, ties, the first's win rate and its
    #: 95% interval.
    pairs: pd.DataFrame
    caption: str
    notes: list[str]


def places_words(found: bradley_terry.Ranking) -> str:
    """How many votes back each place ("Place 1: a, on 8 votes; ..."), within each group when the
    votes fall in several."""
    parts = []
    for group in sorted({s.group for s in found.scores}):
        ranked = [s for s in found.scores if s.group == group]
        prefix = f"group {group + 1}, " if not found.connected else ""
        parts += [
            f"{prefix}place {place}: {s.engine}, on {s.votes} vote{'s' if s.votes != 1 else ''}"
            for place, s in enumerate(ranked, start=1)
        ]
    return "Places: " + "; ".join(parts) + "."


def pair_table(found: bradley_terry.Ranking) -> pd.DataFrame:
    """One row per pair of engines that met, in the ranking's order: its votes, wins and ties,
    and the first engine's win rate with its 95% Wilson interval (a tie counts as half a win,
    as in the fit), so that 2-1 is read as the guess it is (21-94%)."""
    place = {s.engine: index for index, s in enumerate(found.scores)}
    rows = []
    for pair in sorted(found.pairs, key=lambda p: sorted((place[p.engine_a], place[p.engine_b]))):
        first_is_a = place[pair.engine_a] <= place[pair.engine_b]
        first, second = (pair.engine_a, pair.engine_b) if first_is_a else (pair.engine_b, pair.engine_a)
        wins, losses = (pair.wins_a, pair.wins_b) if first_is_a else (pair.wins_b, pair.wins_a)
        points = wins + pair.ties / 2
        rows.append(
            {
                "Pair": f"{first} vs {second}",
                "Votes": pair.votes,
                "Wins": f"{wins}–{losses}",
                "Ties": pair.ties,
                "First's win rate": units.percent(
                    points / pair.votes if pair.votes else None, signed=False
                ),
                "95% interval": interval_words(wilson(points, pair.votes)),
            }
        )
    return pd.DataFrame(rows, columns=PAIR_COLUMNS)


def ranking_view(session_id: int | None = None) -> RankingView | None:
    """The ranking as the page shows it; None before any vote."""
    found = engine_ranking(session_id)
    if not found.scores:
        return None
    table = pd.DataFrame(
        {
            "Engine": [s.engine for s in found.scores],
            "Group": [s.group + 1 for s in found.scores],
            "Score": [round(s.score, 1) for s in found.scores],
            "CI low": [None if s.ci_low is None else round(s.ci_low, 1) for s in found.scores],
            "CI high": [None if s.ci_high is None else round(s.ci_high, 1) for s in found.scores],
            "Votes": [s.votes for s in found.scores],
        }
    )
    if found.connected:
        table = table.drop(columns=["Group"])
    pairs = pair_table(found)
    level = round(bradley_terry.LEVEL * 100)
    caption = (
        f"Bradley-Terry scores on the Elo scale (1000 is the average engine; +120 is twice as "
        f"likely to be preferred), ties counted as half a win each. {level}% intervals: "
        f"{found.resamples} bootstrap resamples of the {found.ballots} ballots (seed {found.seed}). "
        "Votes: the pairs an engine's ballots decided (a best-of-three ballot decides two). "
        "Per pair, the first engine's win rate (a tie half a win) with a 95% Wilson interval. "
        + places_words(found)
    )
    return RankingView(table, pairs, caption, list(found.notes))
