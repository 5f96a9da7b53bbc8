"""The ranking from stored votes: a ballot per participant and exchange, old votes included,
only one team demo session's when asked, and a new vote is seen at once."""

from __future__ import annotations

from services.playground import votes
from services.votes.participants import participant_key
from services.votes.ranking import engine_ranking
from tests.services.playground.test_votes import reveal_all, stored_exchange


def test_the_ranking_counts_every_participants_ballot(db_url: str) -> None:
    assert engine_ranking().scores == []
    first = stored_exchange(["a", "b", "c"])
    for who, winner in (("p1", "a"), ("p2", "a"), ("p3", "b"), ("p4", "tie")):
        votes.vote_best(first, winner, participant=participant_key(browser=who), session_id=3)
    assert engine_ranking().ballots == 0  # hidden exchange: none of its votes named by engine yet
    reveal_all()
    found = engine_ranking()
    assert found.ballots == 4 and found.scores[0].engine == "a"
    assert [(p.engine_a, p.engine_b, p.wins_a, p.wins_b, p.ties) for p in found.pairs] == [
        ("a", "b", 2, 1, 1),
        ("a", "c", 2, 0, 1),
        ("b", "c", 1, 0, 1),
    ]
    second = stored_exchange(["c", "d"])
    votes.vote_best(second, "d", participant=participant_key(browser="p1"))
    reveal_all()
    assert engine_ranking().ballots == 5  # not the ranking kept from before this vote
    assert [s.engine for s in engine_ranking(session_id=3).scores] == ["a", "b", "c"]
    assert engine_ranking(session_id=99).scores == []
