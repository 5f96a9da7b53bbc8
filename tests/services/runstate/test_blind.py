"""The blind rule's shuffle (issue 45): a fresh order per exchange from `secrets`, stored with
it, read by every view; one stored before keeps the order its voters saw."""

from __future__ import annotations

from db.models import Exchange, Run
from db.session import session_scope
from services.playground import live_tally, votes
from services.runstate import blind


def _exchange(engines: list[str], order: list[str] | None) -> int:
    config: dict[str, object] = {"turn": 1, "prompt": "p", "blind": True}
    if order is not None:
        config[blind.ORDER_KEY] = order
    with session_scope() as session:
        run = Run(kind="playground", status="finished", engine_names=",".join(engines), config=config)
        session.add(run)
        session.flush()
        for name in engines:
            session.add(Exchange(run_id=run.id, conversation_id="c", engine_name=name, answer=name))
        return run.id


def test_the_order_is_unpredictable_from_the_exchange_number() -> None:
    """Over 200 exchanges of two engines the fresh order agrees with `random.Random(run_id)`'s
    about half the time (a derived order would agree always)."""
    engines = ["first", "second"]
    agree = sum(blind.new_order(engines) == blind.legacy_order(run_id, engines) for run_id in range(200))
    assert 60 <= agree <= 140  # 50% expected; the bounds are 5.6 standard deviations out


def test_the_first_chosen_engine_is_answer_a_about_half_the_time() -> None:
    # 2,000 draws, so the 40-60% bound is 9 standard deviations out (200 would fail 1 run in 250).
    first = sum(
        blind.new_order(["chosen-first", "chosen-second"])[0] == "chosen-first" for _ in range(2000)
    )
    assert 800 <= first <= 1200


def test_every_view_reads_the_stored_order_and_old_exchanges_keep_theirs(db_url: str) -> None:
    engines = ["e1", "e2", "e3"]
    stored = ["e3", "e1", "e2"]
    run_id = _exchange(engines, stored)
    assert votes.blind_order(run_id, engines) == stored
    assert [a.label for a in live_tally.exchange_tally(run_id).answers] == [
        "Answer A",
        "Answer B",
        "Answer C",
    ]
    # The stored answer is its engine's name: the tally's Answer A is the stored first.
    assert blind.labels(votes.blind_order(run_id, engines))["e3"] == "Answer A"
    # Stored before orders were stored: the order its voters saw, so their ballots keep counting.
    legacy = _exchange(engines, None)
    assert votes.blind_order(legacy, engines) == blind.legacy_order(legacy, engines)
    # An engine the stored order does not list comes after it, never lost.
    assert blind.order_of(1, {blind.ORDER_KEY: ["b"]}, ["a", "b"]) == ["b", "a"]
