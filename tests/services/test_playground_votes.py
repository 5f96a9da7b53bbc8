"""Blind votes: the best of all N answers of an exchange, stored as the pairs it decides,
once per exchange, and refused in words when it names no answer of that exchange."""

from __future__ import annotations

import pytest

from services import playground_votes as votes
from services.errors import NotFoundError, ValidationError


def stored_exchange(engines: list[str]) -> int:
    from db.models import Exchange, Run
    from db.session import session_scope

    with session_scope() as session:
        run = Run(
            kind="playground",
            status="finished",
            engine_names=",".join(engines),
            config={"conversation_id": "c", "turn": 1, "prompt": "p"},
        )
        session.add(run)
        session.flush()
        for name in engines:
            session.add(
                Exchange(
                    run_id=run.id, conversation_id="c", engine_name=name, answer=name, status="finished"
                )
            )
        return run.id


def test_the_best_of_three_beats_each_other_engine_once(db_url: str) -> None:
    run_id = stored_exchange(["a", "b", "c"])
    assert votes.blind_vote(run_id) is None
    assert votes.vote_best(run_id, "c") == votes.BlindVote("c")
    assert votes.blind_vote(run_id) == votes.BlindVote("c")
    assert sorted(votes.votes_for(run_id)) == [("c", "a", "c"), ("c", "b", "c")]
    assert [(t.engine_a, t.engine_b, t.wins_a, t.wins_b, t.ties) for t in votes.tally()] == [
        ("a", "c", 0, 1, 0),
        ("b", "c", 0, 1, 0),
    ]


def test_no_clear_winner_is_a_tie_for_every_pair(db_url: str) -> None:
    run_id = stored_exchange(["a", "b", "c", "d"])
    assert votes.vote_best(run_id, votes.TIE) == votes.BlindVote(None)
    assert votes.blind_vote(run_id) == votes.BlindVote(None)
    tally = votes.tally()
    assert len(tally) == 6 and all(t.ties == 1 and t.wins_a == t.wins_b == 0 for t in tally)


def test_bad_votes_are_refused_in_words(db_url: str) -> None:
    run_id = stored_exchange(["a", "b"])
    with pytest.raises(ValidationError, match="did not answer"):
        votes.vote_best(run_id, "z")
    with pytest.raises(NotFoundError, match="not found"):
        votes.vote_best(run_id + 100, "a")
    with pytest.raises(ValidationError, match="at least two answers"):
        votes.vote_best(stored_exchange(["solo"]), "solo")
    votes.vote_best(run_id, "a")
    with pytest.raises(ValidationError, match="already has a vote"):
        votes.vote_best(run_id, "b")
    assert len(votes.votes_for(run_id)) == 1
