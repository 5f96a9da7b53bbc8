"""The Bradley-Terry ranking on exact fixtures: a three-engine case checkable by hand, ties as
half wins, a comparison graph in pieces, an engine that won every vote (finite, and said), and
bootstrap intervals that repeat exactly for the same votes."""

from __future__ import annotations

import math

import pytest

from services.votes.bradley_terry import ELO_BASE, Comparison, rank

ELO = 400.0 / math.log(10.0)


def ballots(engine_a: str, engine_b: str, wins_a: int, wins_b: int, ties: int = 0) -> list[Comparison]:
    """One ballot per comparison, named after its pair and number."""
    winners = [engine_a] * wins_a + [engine_b] * wins_b + ["tie"] * ties
    return [Comparison(f"{engine_a}{engine_b}{i}", engine_a, engine_b, w) for i, w in enumerate(winners)]


def test_three_engines_with_strengths_4_2_1_score_as_by_hand() -> None:
    """Observed shares equal the model's for strengths 4:2:1 (a beats b 2 of 3 = 4/6, b beats c
    2 of 3 = 2/3, a beats c 4 of 5 = 4/5), so the likelihood peaks exactly there: each score is
    1000 + 400 log10(p / geometric mean), the geometric mean being 2: 1120.41, 1000, 879.59."""
    found = rank(ballots("a", "b", 2, 1) + ballots("b", "c", 2, 1) + ballots("a", "c", 4, 1))
    assert [s.engine for s in found.scores] == ["a", "b", "c"]
    assert [s.score for s in found.scores] == pytest.approx(
        [ELO_BASE + 400 * math.log10(2), ELO_BASE, ELO_BASE - 400 * math.log10(2)], abs=1e-6
    )
    assert [round(s.score, 2) for s in found.scores] == [1120.41, 1000.0, 879.59]
    assert [s.votes for s in found.scores] == [8, 6, 8]
    assert [(p.engine_a, p.engine_b, p.wins_a, p.wins_b, p.ties, p.votes) for p in found.pairs] == [
        ("a", "b", 2, 1, 0, 3),
        ("a", "c", 4, 1, 0, 5),
        ("b", "c", 2, 1, 0, 3),
    ]
    assert found.connected and not found.regularised and not found.notes and found.ballots == 11
    for score in found.scores:
        assert score.ci_low is not None and score.ci_high is not None
        assert score.ci_low < score.score < score.ci_high
    # The same votes, the same seed: the same intervals to the last digit.
    again = rank(ballots("a", "b", 2, 1) + ballots("b", "c", 2, 1) + ballots("a", "c", 4, 1))
    assert [(s.ci_low, s.ci_high) for s in again.scores] == [(s.ci_low, s.ci_high) for s in found.scores]


def test_a_tie_is_half_a_win_for_each_side() -> None:
    # a: 1 win + half a tie = 1.5 of 2; b: 0.5 of 2; odds 3:1, so the gap is 400 log10 3.
    found = rank(ballots("a", "b", 1, 0, ties=1))
    assert not found.regularised
    a, b = found.scores
    assert a.score - b.score == pytest.approx(400 * math.log10(3), abs=1e-6)
    assert a.score + b.score == pytest.approx(2 * ELO_BASE, abs=1e-9)


def test_a_comparison_graph_in_pieces_says_so_and_centres_each_group() -> None:
    found = rank(ballots("a", "b", 2, 1) + ballots("c", "d", 1, 1))
    assert not found.connected and found.groups == [["a", "b"], ["c", "d"]]
    assert [(s.engine, s.group) for s in found.scores] == [("a", 0), ("b", 0), ("c", 1), ("d", 1)]
    assert [s.score for s in found.scores] == pytest.approx(
        [ELO_BASE + 200 * math.log10(2), ELO_BASE - 200 * math.log10(2), ELO_BASE, ELO_BASE], abs=1e-6
    )
    assert any("2 separate groups (a, b; c, d)" in note for note in found.notes)


def test_an_engine_that_won_every_vote_stays_finite_and_is_said_to() -> None:
    """The plain estimate is infinite; one virtual tie per compared pair makes a 3.5 : 0.5
    record of 4, odds 7:1, a gap of 400 log10 7 = 338.04."""
    found = rank(ballots("a", "b", 3, 0))
    a, b = found.scores
    assert found.regularised and math.isfinite(a.score) and math.isfinite(b.score)
    assert a.score - b.score == pytest.approx(400 * math.log10(7), abs=1e-6)
    [note] = found.notes
    assert "a never lost" in note and "b never won" in note and "virtual tie" in note
    # Every resample is the same three wins: the interval is the point.
    assert a.ci_low == pytest.approx(a.score) and a.ci_high == pytest.approx(a.score)


def test_a_chain_of_clean_wins_is_unbounded_too() -> None:
    """a always beats b, b always beats c (and a beats c): b won and lost, yet no finite
    maximum exists; the same virtual ties keep the order a > b > c."""
    found = rank(ballots("a", "b", 2, 0) + ballots("b", "c", 2, 0) + ballots("a", "c", 1, 0))
    assert found.regularised and [s.engine for s in found.scores] == ["a", "b", "c"]
    assert all(math.isfinite(s.score) for s in found.scores)


def test_no_votes_rank_nothing_and_a_bad_comparison_is_refused() -> None:
    empty = rank([])
    assert empty.scores == [] and empty.pairs == [] and empty.connected
    with pytest.raises(ValueError, match="two engines"):
        rank([Comparison("x", "a", "a", "a")])
    with pytest.raises(ValueError, match="two engines"):
        rank([Comparison("x", "a", "b", "c")])
