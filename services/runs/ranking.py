"""The Runs page's ranking of engines from blind votes: the Bradley-Terry table and the
matrix of votes per engine pair (services/votes/ranking.py computes them)."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from services.votes import bradley_terry
from services.votes.ranking import engine_ranking


@dataclass(frozen=True)
class RankingView:
    #: Engine, group (when the votes fall in several), score, CI low, CI high, votes.
    table: pd.DataFrame
    #: Votes (wins, losses and ties) per engine pair, engines in the table's order.
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
    order = [s.engine for s in found.scores]
    counts = {(p.engine_a, p.engine_b): p.votes for p in found.pairs}
    pairs = pd.DataFrame(
        [[pd.NA if a == b else counts.get((a, b), counts.get((b, a), 0)) for b in order] for a in order],
        index=pd.Index(order, name="Engine"),
        columns=order,
        dtype="Int64",
    )
    level = round(bradley_terry.LEVEL * 100)
    caption = (
        f"Bradley-Terry scores on the Elo scale (1000 is the average engine; +120 is twice as "
        f"likely to be preferred), ties counted as half a win each. {level}% intervals: "
        f"{found.resamples} bootstrap resamples of the {found.ballots} ballots (seed {found.seed}). "
        "Votes: the pairs an engine's ballots decided (a best-of-three ballot decides two). "
        + places_words(found)
    )
    return RankingView(table, pairs, caption, list(found.notes))
