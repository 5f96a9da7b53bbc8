"""Issue 45, who counts as a voter: one vote per login session (or browser) and exchange, an
OIDC subject one voter whatever its sessions, and stuffing with fresh logins from one address
visible in the tally and bounded by SHOOTOUT_VOTES_PER_ADDRESS."""

from __future__ import annotations

import threading

import pytest

from db.models import Vote
from db.session import session_scope
from services.core.errors import ValidationError
from services.playground import live_tally, votes
from services.playground import view as pg_view
from services.votes.participants import address_key, participant_key
from tests.services.playground.test_votes import stored_exchange

ROOM = address_key("10.0.0.7")
HOME = address_key("192.0.2.44")


def _stuff(run_id: int, logins: int) -> list[str]:
    """`logins` fresh password logins from one address each voting "a"; the refusals."""
    refused = []
    for n in range(logins):
        try:
            votes.vote_best(
                run_id, "a", participant=participant_key(login_session=f"fresh-{n}"), client=ROOM
            )
        except ValidationError as error:
            refused.append(str(error))
    return refused


def test_fresh_logins_from_one_address_are_visible_in_the_tally(db_url: str) -> None:
    run_id = stored_exchange(["a", "b"])
    assert _stuff(run_id, 6) == []  # unlimited by default: a room behind one NAT is many people
    votes.vote_best(run_id, "b", participant=participant_key(login_session="home"), client=HOME)
    found = live_tally.exchange_tally(run_id)
    assert found.voters == 7 and found.per_address == (6, 1) and found.no_address == 0
    line = pg_view.live_tally_line(run_id)
    assert line is not None and "from 2 addresses (6, 1 votes)" in line


def test_votes_per_address_bounds_stuffing(db_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SHOOTOUT_VOTES_PER_ADDRESS", "2")
    run_id = stored_exchange(["a", "b"])
    refused = _stuff(run_id, 6)
    assert len(refused) == 4 and all("SHOOTOUT_VOTES_PER_ADDRESS" in r for r in refused)
    # Another address still votes, and so does the same room on the next exchange.
    votes.vote_best(run_id, "b", participant=participant_key(login_session="home"), client=HOME)
    assert live_tally.exchange_tally(run_id).per_address == (2, 1)
    assert _stuff(stored_exchange(["a", "b"]), 2) == []


@pytest.mark.parametrize("voters", [2, 4])
def test_the_cap_holds_when_ballots_from_one_address_arrive_at_once(
    any_db_url: str, monkeypatch: pytest.MonkeyPatch, voters: int
) -> None:
    """The cap is a count then an insert: ballots that all count before any inserts would all
    pass. Each ballot waits after its count until all have counted (or 1.5 s, when the exchange
    is held by the one counting first, as it must be), on SQLite and on PostgreSQL."""
    monkeypatch.setenv("SHOOTOUT_VOTES_PER_ADDRESS", "1")
    run_id = stored_exchange(["a", "b"])
    counted = threading.Barrier(voters, timeout=1.5)
    check = votes._refuse_over_cap

    def count_then_wait(*args: object) -> None:
        check(*args)  # type: ignore[arg-type]
        try:
            counted.wait()
        except threading.BrokenBarrierError:
            pass

    monkeypatch.setattr(votes, "_refuse_over_cap", count_then_wait)
    results: list[str] = []

    def ballot(n: int) -> None:
        try:
            votes.vote_best(
                run_id, "a", participant=participant_key(login_session=f"at-once-{n}"), client=ROOM
            )
            results.append("counted")
        except ValidationError as error:
            results.append(str(error))

    threads = [threading.Thread(target=ballot, args=(n,)) for n in range(voters)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert results.count("counted") == 1, results
    assert all("SHOOTOUT_VOTES_PER_ADDRESS" in r for r in results if r != "counted")
    assert live_tally.exchange_tally(run_id).per_address == (1,)


def test_an_oidc_subject_is_one_voter_across_sessions(db_url: str) -> None:
    run_id = stored_exchange(["a", "b"])
    # Two browsers, two OIDC sessions of one subject: the same voter.
    first = participant_key(oidc_identity="sub-123", login_session="session-1")
    again = participant_key(oidc_identity="sub-123", login_session="session-2")
    assert first == again
    votes.vote_best(run_id, "a", participant=first, client=ROOM)
    with pytest.raises(ValidationError, match="already voted"):
        votes.vote_best(run_id, "b", participant=again, client=HOME)
    # A password login session is a voter of its own (a shared password is a whole room).
    assert participant_key(login_session="session-1") != participant_key(login_session="session-2")


def test_ballots_stored_before_addresses_keep_counting(db_url: str) -> None:
    run_id = stored_exchange(["a", "b"])
    with session_scope() as session:  # as the 0007 migration leaves an older ballot
        session.add(Vote(run_id=run_id, engine_a="a", engine_b="b", winner="a", voter="legacy"))
    votes.vote_best(run_id, "b", participant=participant_key(browser="new"), client=ROOM)
    found = live_tally.exchange_tally(run_id)
    assert found.voters == 2 and found.per_address == (1,) and found.no_address == 1
    assert [a.votes for a in sorted(found.answers, key=lambda a: a.label)] != [0, 0]


def test_loopback_is_one_address_for_the_cap(db_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 56: a reverse proxy on the same host (not in SHOOTOUT_TRUSTED_PROXIES) brings every
    voter from loopback; all of loopback is one address, as the gate's per-client counts have it
    (the served pages in tests/e2e/test_vote_cap.py)."""
    monkeypatch.setenv("SHOOTOUT_VOTES_PER_ADDRESS", "1")
    run_id = stored_exchange(["a", "b"])
    results = []
    for n, address in enumerate(("127.0.0.1", "::1", "127.0.0.2", "::ffff:127.0.0.1")):
        try:
            votes.vote_best(
                run_id,
                "a",
                participant=participant_key(login_session=f"local-{n}"),
                client=address_key(address),
            )
            results.append("counted")
        except ValidationError as error:
            results.append(str(error))
    assert results[0] == "counted" and all("SHOOTOUT_VOTES_PER_ADDRESS" in r for r in results[1:])
    found = live_tally.exchange_tally(run_id)
    assert (found.voters, found.per_address, found.no_address) == (1, (1,), 0)
    line = pg_view.live_tally_line(run_id)
    assert line is not None and line.endswith("from 1 address (1 vote)"), line
    # An address named twice is still one; another host is another.
    assert address_key("::ffff:10.0.0.7") == ROOM != address_key("10.0.0.8")
    assert address_key("2001:db8:1:2::5") == address_key("2001:db8:1:2:ffff::9")
    assert address_key(None) is None and address_key("") is None
