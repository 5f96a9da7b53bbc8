"""Blind votes: each participant picks the best of all N answers of an exchange, stored as the
pairs it decides, once per participant and exchange (a second vote is refused, even when two
race), and refused in words when it names no answer of that exchange; only a blind exchange
still hidden from that participant takes one, an operator may reveal it to everyone, and a vote
can be undone by its voter until the next vote."""

from __future__ import annotations

import threading

import pytest

from services.core.errors import NotFoundError, ValidationError
from services.playground import live_tally, votes
from services.team.access import PermissionDenied, Viewer
from services.votes.participants import participant_key

OPERATOR = Viewer(role="operator", identity="ip:127.0.0.1")
ALICE = Viewer(role="viewer", identity="alice@example.org")
BOB = Viewer(role="viewer", identity="bob@example.org")
P_ALICE = participant_key(oidc_identity=ALICE.identity)
P_BOB = participant_key(oidc_identity=BOB.identity)
P_CAROL = participant_key(browser="carol-browser")
P_OPERATOR = participant_key(browser="presenter-browser")


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


def reveal_all() -> None:
    """Reveal every stored exchange: a tally or ranking by engine counts revealed ones only."""
    from sqlalchemy import select

    from db.models import Run
    from db.session import session_scope

    with session_scope() as session:
        ids = list(session.scalars(select(Run.id).where(Run.kind == "playground")))
    for run_id in ids:
        votes.reveal(run_id, OPERATOR)


def test_the_best_of_three_beats_each_other_engine_once(db_url: str) -> None:
    run_id = stored_exchange(["a", "b", "c"])
    assert votes.blind_vote(run_id, P_ALICE) is None
    assert votes.vote_best(run_id, "c", participant=P_ALICE) == votes.BlindVote("c")
    assert votes.blind_vote(run_id, P_ALICE) == votes.BlindVote("c")
    assert votes.blind_vote(run_id, P_BOB) is None and votes.blind_vote(run_id, None) is None
    # Pairs in name order: any two ballots of one voter on one exchange share a pair.
    assert sorted(votes.votes_for(run_id)) == [("a", "c", "c"), ("b", "c", "c")]
    # Issue 45: the tally by engine counts no vote of a hidden exchange (beside its live tally
    # by answer it would say who wrote what).
    assert votes.tally() == []
    votes.reveal(run_id, OPERATOR)
    assert [(t.engine_a, t.engine_b, t.wins_a, t.wins_b, t.ties) for t in votes.tally()] == [
        ("a", "c", 0, 1, 0),
        ("b", "c", 0, 1, 0),
    ]


def test_no_clear_winner_is_a_tie_for_every_pair(db_url: str) -> None:
    run_id = stored_exchange(["a", "b", "c", "d"])
    assert votes.vote_best(run_id, votes.TIE, participant=P_ALICE) == votes.BlindVote(None)
    assert votes.blind_vote(run_id, P_ALICE) == votes.BlindVote(None)
    reveal_all()
    tally = votes.tally()
    assert len(tally) == 6 and all(t.ties == 1 and t.wins_a == t.wins_b == 0 for t in tally)


def test_bad_votes_are_refused_in_words(db_url: str) -> None:
    run_id = stored_exchange(["a", "b"])
    with pytest.raises(ValidationError, match="did not answer"):
        votes.vote_best(run_id, "z", participant=P_ALICE)
    with pytest.raises(NotFoundError, match="not found"):
        votes.vote_best(run_id + 100, "a", participant=P_ALICE)
    with pytest.raises(ValidationError, match="at least two answers"):
        votes.vote_best(stored_exchange(["solo"]), "solo", participant=P_ALICE)
    with pytest.raises(ValidationError, match="who casts it"):
        participant_key()


def test_three_participants_count_once_each_and_a_second_vote_is_refused(db_url: str) -> None:
    """The room: every participant votes once; a participant's second vote, for the same
    answer or another, is refused (their first counts) since the names showed after it."""
    run_id = stored_exchange(["a", "b", "c"])
    votes.vote_best(run_id, "a", participant=P_ALICE, session_id=7)
    votes.vote_best(run_id, "b", participant=P_BOB, session_id=7)
    # Names show to those who voted only: Carol still sees the exchange blind.
    assert not votes.engines_hidden(run_id, P_ALICE)
    assert votes.engines_hidden(run_id, P_CAROL) and votes.engines_hidden(run_id)
    votes.vote_best(run_id, votes.TIE, participant=P_CAROL)
    for again in ("a", "c", votes.TIE):
        with pytest.raises(ValidationError, match="already voted"):
            votes.vote_best(run_id, again, participant=P_ALICE)
    found = live_tally.exchange_tally(run_id)
    assert found.voters == 3 and found.no_winner == 1 and found.hidden
    order = votes.blind_order(run_id, ["a", "b", "c"])
    labels = votes.answer_labels(order)
    assert [(x.label, x.engine, x.votes) for x in found.answers] == [
        (labels[e], None, {"a": 1, "b": 1, "c": 0}[e]) for e in order
    ]
    # Only the votes of team demo session 7.
    assert live_tally.exchange_tally(run_id, session_id=7).voters == 2
    votes.reveal(run_id, OPERATOR)
    revealed = live_tally.exchange_tally(run_id)
    assert not revealed.hidden and [x.engine for x in revealed.answers] == order
    assert [(t.wins_a, t.wins_b, t.ties) for t in votes.tally()] == [(1, 1, 1), (1, 0, 1), (1, 0, 1)]


def test_a_second_vote_racing_the_first_counts_once(db_url: str) -> None:
    run_id = stored_exchange(["a", "b", "c"])
    errors: list[Exception] = []
    start = threading.Barrier(4)

    def cast(winner: str) -> None:
        start.wait()
        try:
            votes.vote_best(run_id, winner, participant=P_ALICE)
        except ValidationError as error:
            errors.append(error)

    threads = [threading.Thread(target=cast, args=(w,)) for w in ("a", "b", "c", votes.TIE)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(errors) == 3 and all("already voted" in str(e) for e in errors)
    assert live_tally.exchange_tally(run_id).voters == 1


def test_only_a_hidden_blind_exchange_takes_a_vote(db_url: str) -> None:
    with pytest.raises(ValidationError, match="not sent in blind mode"):
        votes.vote_best(stored_exchange(["a", "b"], blind=False), "a", participant=P_ALICE)
    run_id = stored_exchange(["a", "b"])
    with pytest.raises(PermissionDenied, match="Only an operator"):
        votes.reveal(run_id, ALICE)
    votes.reveal(run_id, OPERATOR)
    with pytest.raises(ValidationError, match="were revealed"):
        votes.vote_best(run_id, "a", participant=P_ALICE)
    assert votes.votes_for(run_id) == []


def test_a_vote_is_undone_by_its_voter_until_the_next_vote(db_url: str) -> None:
    first, second = stored_exchange(["a", "b", "c"]), stored_exchange(["a", "b"])
    votes.vote_best(first, "b", participant=P_ALICE)
    assert votes.may_undo(first, ALICE, P_ALICE) and votes.may_undo(first, OPERATOR, P_OPERATOR)
    assert not votes.may_undo(first, BOB, P_BOB)
    with pytest.raises(PermissionDenied, match="who cast a vote"):
        votes.undo_vote(first, BOB, P_BOB)
    votes.undo_vote(first, ALICE, P_ALICE)
    assert votes.votes_for(first) == [] and votes.tally() == []
    # Alice saw its names: they stay shown to her, and she takes no new vote on it; the room does.
    assert not votes.engines_hidden(first, P_ALICE) and votes.engines_hidden(first, P_BOB)
    with pytest.raises(ValidationError, match="withdrew"):
        votes.vote_best(first, "a", participant=P_ALICE)
    with pytest.raises(ValidationError, match="no vote to withdraw"):
        votes.undo_vote(first, ALICE, P_ALICE)
    votes.vote_best(first, "a", participant=P_BOB)
    third = stored_exchange(["a", "b"])
    votes.vote_best(second, "a", participant=P_ALICE)
    votes.vote_best(third, "b", participant=P_BOB)  # the next vote on the server
    assert not votes.may_undo(second, ALICE, P_ALICE) and not votes.may_undo(second, OPERATOR)
    with pytest.raises(ValidationError, match="later vote"):
        votes.undo_vote(second, ALICE, P_ALICE)
    assert len(votes.votes_for(second)) == 1
    # An operator withdraws the latest vote on the server, whoever cast it.
    votes.undo_vote(third, OPERATOR)
    assert votes.votes_for(third) == []


def test_the_runs_view_and_exports_keep_a_blind_exchange_blind_until_revealed(db_url: str) -> None:
    """Issue 36: the exchange's own address stayed blind, but /runs?run=N and its exports said
    which engine wrote which answer before anyone voted. With a room voting (issue 34) one
    participant's vote no longer shows the names to readers who are no participant: the
    presenter's reveal does."""
    from services.runs import display, reports
    from services.runs.reports import streamed as exports

    engines = ["east-engine", "west-engine", "north-engine"]
    run_id = stored_exchange(engines)

    def shows_names() -> bool:
        table = display.run_view(run_id).exchanges
        assert table is not None
        text = "Text" if "Text" in table.columns else "Answer"
        return any(name in table.drop(columns=[text]).to_string() for name in engines)

    table = display.run_view(run_id).exchanges
    assert table is not None
    assert not shows_names()  # each stored answer is its engine's name
    order = votes.blind_order(run_id, engines)
    assert list(table["Answer"]) == ["Answer A", "Answer B", "Answer C"]
    # Each blind name labels the same answer as in the Playground (the stored answer is the name).
    assert list(table["Text"]) == order
    # Issue 45: nothing that names a kind ("not reported by vLLM" did) and no per-engine column;
    # issue 56: no answer's timing or token count either until the reveal.
    assert list(table.columns) == ["Turn", "Answer", "Status", "Text", "Error"]
    for fmt in ("json", "csv", "html"):
        with pytest.raises(ValidationError, match="blind until an operator reveals"):
            reports.export_run(run_id, fmt)
    votes.vote_best(run_id, engines[0], participant=P_ALICE)
    assert not shows_names()
    votes.reveal(run_id, OPERATOR)
    assert shows_names()
    assert b"east-engine" in reports.export_run(run_id, "json").data
    # A revealed one and one never blind show their names.
    revealed = stored_exchange(engines)
    votes.reveal(revealed, OPERATOR)
    assert not votes.engines_hidden(revealed)
    assert exports.stream_run(stored_exchange(engines, blind=False), "csv").filename
