"""The Runs page's ranking: the Bradley-Terry table, each pair's votes and win rate, and what
they say."""

from __future__ import annotations

import pandas as pd

from services.playground import votes
from services.runs.ranking import ranking_view
from services.votes.participants import participant_key
from tests.services.playground.test_votes import reveal_all, stored_exchange


def test_no_votes_no_ranking(db_url: str) -> None:
    assert ranking_view() is None


def test_the_table_and_the_matrix_of_votes_per_pair(db_url: str) -> None:
    """a beats b 2-1, b beats c 2-1, a beats c 4-1: strengths 4:2:1 (see test_bradley_terry)."""
    voter = iter(range(100))
    for engines, winners in ((["a", "b"], "aab"), (["b", "c"], "bbc"), (["a", "c"], "aaaac")):
        for winner in winners:
            run_id = stored_exchange(engines)
            votes.vote_best(run_id, winner, participant=participant_key(browser=str(next(voter))))
    reveal_all()
    shown = ranking_view()
    assert shown is not None
    assert list(shown.table.columns) == ["Engine", "Score", "CI low", "CI high", "Votes"]
    assert shown.table[["Engine", "Score", "Votes"]].values.tolist() == [
        ["a", 1120.4, 8],
        ["b", 1000.0, 6],
        ["c", 879.6, 8],
    ]
    assert (shown.table["CI low"] < shown.table["Score"]).all()
    assert (shown.table["Score"] < shown.table["CI high"]).all()
    # Issue 56: each pair's win rate with its 95% Wilson interval, not counts alone.
    expected = pd.DataFrame(
        {
            "Pair": ["a vs b", "a vs c", "b vs c"],
            "Votes": [3, 5, 3],
            "Wins": ["2–1", "4–1", "2–1"],
            "Ties": [0, 0, 0],
            "First's win rate": ["67%", "80%", "67%"],
            "95% interval": ["21–94%", "38–96%", "21–94%"],
        }
    )
    pd.testing.assert_frame_equal(shown.pairs, expected)
    assert "11 ballots" in shown.caption and "half a win" in shown.caption and shown.notes == []


def test_pieces_and_clean_sweeps_are_said(db_url: str) -> None:
    for who, (engines, winner) in enumerate(((["a", "b"], "a"), (["c", "d"], "tie"))):
        votes.vote_best(stored_exchange(engines), winner, participant=participant_key(browser=str(who)))
    reveal_all()
    shown = ranking_view()
    assert shown is not None and "Group" in shown.table.columns
    assert shown.table["Group"].tolist() == [1, 1, 2, 2]
    assert any("separate groups" in n for n in shown.notes)
    assert any("a never lost" in n for n in shown.notes)


def test_a_tie_is_half_a_win_in_a_pairs_rate(db_url: str) -> None:
    voter = iter(range(100))
    for winner in ("a", "tie", "b", "a"):
        votes.vote_best(
            stored_exchange(["a", "b"]), winner, participant=participant_key(browser=str(next(voter)))
        )
    reveal_all()
    shown = ranking_view()
    assert shown is not None
    row = shown.pairs.iloc[0]
    assert (row["Pair"], row["Votes"], row["Wins"], row["Ties"]) == ("a vs b", 4, "2–1", 1)
    assert row["First's win rate"] == "62%" and row["95% interval"] == "22–91%"
