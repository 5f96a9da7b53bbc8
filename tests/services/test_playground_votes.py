"""Blind votes: the best of all N answers of an exchange, stored as the pairs it decides,
once per exchange, and refused in words when it names no answer of that exchange; only a blind
exchange still hidden takes one, an operator may reveal it, and a vote can be undone by its
voter until the next vote."""

from __future__ import annotations

import pytest

from services import playground_votes as votes
from services.access import PermissionDenied, Viewer
from services.errors import NotFoundError, ValidationError

OPERATOR = Viewer(role="operator", identity="ip:127.0.0.1")
ALICE = Viewer(role="viewer", identity="alice@example.org")
BOB = Viewer(role="viewer", identity="bob@example.org")


def stored_exchange(engines: list[str], blind: bool = True) -> int:
    from db.models import Exchange, Run
    from db.session import session_scope

    with session_scope() as session:
        run = Run(
            kind="playground",
            status="finished",
            engine_names=",".join(engines),
            config={"conversation_id": "c", "turn": 1, "prompt": "p", "blind": blind},
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


def test_only_a_hidden_blind_exchange_takes_a_vote(db_url: str) -> None:
    with pytest.raises(ValidationError, match="not sent in blind mode"):
        votes.vote_best(stored_exchange(["a", "b"], blind=False), "a")
    run_id = stored_exchange(["a", "b"])
    with pytest.raises(PermissionDenied, match="Only an operator"):
        votes.reveal(run_id, ALICE)
    votes.reveal(run_id, OPERATOR)
    with pytest.raises(ValidationError, match="were revealed"):
        votes.vote_best(run_id, "a")
    assert votes.votes_for(run_id) == []


def test_a_vote_is_undone_by_its_voter_until_the_next_vote(db_url: str) -> None:
    first, second = stored_exchange(["a", "b", "c"]), stored_exchange(["a", "b"])
    votes.vote_best(first, "b", ALICE)
    assert votes.may_undo(first, ALICE) and votes.may_undo(first, OPERATOR)
    assert not votes.may_undo(first, BOB)
    with pytest.raises(PermissionDenied, match="who cast this vote"):
        votes.undo_vote(first, BOB)
    votes.undo_vote(first, ALICE)
    assert votes.votes_for(first) == [] and votes.tally() == []
    # Its names were seen: no new vote on it, and nothing left to undo.
    with pytest.raises(ValidationError, match="were revealed"):
        votes.vote_best(first, "a", ALICE)
    with pytest.raises(ValidationError, match="no vote to withdraw"):
        votes.undo_vote(first, ALICE)
    third = stored_exchange(["a", "b"])
    votes.vote_best(second, "a", ALICE)
    votes.vote_best(third, "b", BOB)  # the next vote on the server
    assert not votes.may_undo(second, ALICE) and not votes.may_undo(second, OPERATOR)
    with pytest.raises(ValidationError, match="later vote"):
        votes.undo_vote(second, ALICE)
    assert len(votes.votes_for(second)) == 1


def test_the_runs_view_and_exports_keep_a_blind_exchange_blind_until_its_vote(db_url: str) -> None:
    """Issue 36: the exchange's own address stayed blind, but /runs?run=N and its exports said
    which engine wrote which answer before anyone voted."""
    from services import exports, reports

    engines = ["east-engine", "west-engine", "north-engine"]
    run_id = stored_exchange(engines)
    table = reports.run_view(run_id).exchanges
    assert table is not None
    shown = table.drop(columns=["Answer"]).to_string()  # each stored answer is its engine's name
    assert not any(name in shown for name in engines), shown
    order = votes.blind_order(run_id, engines)
    assert list(table["Engine"]) == ["Answer A", "Answer B", "Answer C"]
    # Each blind name labels the same answer as in the Playground (the stored answer is the name).
    assert list(table["Answer"]) == order
    assert set(table["TTFT"]) == {"hidden until the vote"}
    assert set(table["Engine's own times"]) == {"hidden until the vote"}  # "not reported by vLLM" tells
    for fmt in ("json", "csv", "html"):
        with pytest.raises(ValidationError, match="blind until its vote"):
            reports.export_run(run_id, fmt)
    votes.vote_best(run_id, engines[0])
    table = reports.run_view(run_id).exchanges
    assert table is not None and sorted(table["Engine"]) == sorted(engines)
    assert b"east-engine" in reports.export_run(run_id, "json").data
    # A revealed one and one never blind show their names.
    revealed = stored_exchange(engines)
    votes.reveal(revealed, OPERATOR)
    assert not votes.engines_hidden(revealed)
    assert exports.stream_run(stored_exchange(engines, blind=False), "csv").filename
