"""The Ray hub's budget and hand-out rules, on the plain class (no cluster)."""

from __future__ import annotations

import itertools
import pickle

from services.bench.ray_pool.hub import Hub, pack
from services.bench.workloads import WorkloadSpec, iter_conversations


def test_the_hub_claims_first_turns_as_it_hands_them_out() -> None:
    # Hub is a plain class (Ray wraps it in an actor): its budget logic needs no cluster.
    # Items travel through it pickled, with their turn indices beside them (pack).
    conversations = list(
        itertools.islice(iter_conversations(WorkloadSpec(input_len=4, output_len=4)), 5)
    )

    def ids(blobs: list) -> list:
        return [None if blob is None else pickle.loads(blob)[1].id for blob in blobs]

    hub = Hub(backlog=100, requests=3)
    hub.put_many([pack((0.1 * i, c)) for i, c in enumerate(conversations)], timeout=0)
    first, _ = hub.take(worker=0, most=2, timeout=0)
    rest, _ = hub.take(worker=1, most=10, timeout=0)
    # The first three of the sequence, then the end: none later than the budget allows.
    assert ids(first) == [c.id for c in conversations[:2]]
    assert ids(rest) == [conversations[2].id, None]
    assert hub.take(worker=0, most=10, timeout=0)[0] == [None] and hub.exhausted()
    hub.give_back()  # a claimed conversation never sent (stopped): the next one may go
    assert ids(hub.take(worker=0, most=1, timeout=0)[0]) == [conversations[3].id]
    # Worker 1 is lost before reporting: what it held comes back, pickled, for failing.
    ((turn_index, blob),) = hub.lost(worker=1)
    assert turn_index == conversations[2].turns[0].index
    assert pickle.loads(blob)[1].id == conversations[2].id

    # Far from the budget's end a take hands a whole batch; near it only the slots waiting.
    near = Hub(backlog=100, requests=10, reserve=4)
    near.put_many([pack((0.0, c)) for c in conversations * 2], timeout=0)
    # Beside each take, whether the end is that near (a worker stops asking ahead there).
    far, near_end = near.take(worker=0, most=8, timeout=0, fewest=2)
    assert len(far) == 8 and not near_end
    close, near_end = near.take(worker=0, most=8, timeout=0, fewest=1)
    assert len(close) == 1 and near_end
    assert near.take(worker=0, most=8, timeout=0, fewest=0) == ([], True)  # a prefetch there

    unbounded = Hub(backlog=100, requests=None)
    unbounded.put_many([pack((0.0, c)) for c in conversations], timeout=0)
    assert len(unbounded.take(worker=0, most=10, timeout=0)[0]) == 5


def test_a_spent_budget_answers_the_end_at_once() -> None:
    """Once the budget is spent and nothing is queued, a take says so without waiting out its
    timeout: every slot of a worker asks once at the end (0.2 s each was 13 s per worker)."""
    import time

    hub = Hub(backlog=100, requests=0)
    started = time.perf_counter()
    assert hub.take(worker=0, most=16, timeout=5.0) == ([None], True)
    assert time.perf_counter() - started < 1.0


def test_a_full_backlog_takes_a_list_whole_once_there_is_room() -> None:
    """Each hub call costs about a millisecond of CPU: a list offered to a full backlog waits
    for room for all of it (up to a quarter of the backlog) rather than going in a few at a
    time as takes free places."""
    import threading
    import time

    conversations = list(
        itertools.islice(iter_conversations(WorkloadSpec(input_len=4, output_len=4)), 12)
    )
    hub = Hub(backlog=8, requests=None)
    assert hub.put_many([pack((0.0, c)) for c in conversations[:8]], timeout=0) == 8
    accepted: list[int] = []
    putter = threading.Thread(
        target=lambda: accepted.append(
            hub.put_many([pack((0.0, c)) for c in conversations[8:]], timeout=5.0)
        )
    )
    putter.start()
    hub.take(worker=0, most=1, timeout=0)  # one place free: not yet room for the list of 2
    time.sleep(0.2)
    assert not accepted
    hub.take(worker=0, most=1, timeout=0)
    putter.join(timeout=5)
    assert accepted == [2]


def test_the_hub_draws_a_closed_loops_conversations_as_they_are_taken() -> None:
    """A closed loop's conversations are drawn in the hub, in the sequence's order, and only
    as many as the takes ask for: the coordinator hands nothing over (a hub call costs about
    a millisecond of CPU on each side)."""
    from services.bench.pool.plan import ClosedLoopConversations
    from services.bench.workloads import PromptText

    workload = WorkloadSpec(input_len=4, output_len=4)
    conversations = ClosedLoopConversations(workload, "salt", PromptText(), requests=5)
    expected = [c.id for c in conversations.draw()]
    assert len(expected) == 5  # no more conversations than the budget's requests

    def ids(blobs: list) -> list:
        return [None if blob is None else pickle.loads(blob).id for blob in blobs]

    hub = Hub(backlog=100, requests=5, conversations=conversations)
    first, _ = hub.take(worker=0, most=2, timeout=0)
    assert ids(first) == expected[:2] and len(hub.work) == 0  # drawn as taken, none ahead
    rest, _ = hub.take(worker=1, most=10, timeout=0)
    assert ids(rest) == expected[2:5]
    assert hub.take(worker=0, most=10, timeout=0)[0] == [None] and hub.exhausted()
    # A worker lost before reporting: what it held comes back for failing, as with put items.
    lost = hub.lost(worker=1)
    assert [pickle.loads(blob).id for _, blob in lost] == expected[2:5]

    # With no budget (a duration-bound run) the sequence is endless: each take gets its fill.
    endless = Hub(
        backlog=100,
        requests=None,
        conversations=ClosedLoopConversations(workload, "", PromptText(), None),
    )
    assert len(endless.take(worker=0, most=64, timeout=0)[0]) == 64


def test_what_a_lost_worker_sent_before_dying_and_lands_late_is_not_counted_twice() -> None:
    """A node killed right after its worker reported a request: the report can reach the hub
    after the coordinator failed that worker's requests as lost (seen over a real cluster:
    request 10 both completed and lost, 16 records for a budget of 15)."""
    conversations = list(
        itertools.islice(iter_conversations(WorkloadSpec(input_len=4, output_len=4)), 2)
    )
    hub = Hub(backlog=100, requests=2)
    hub.put_many([pack((0.0, c)) for c in conversations], timeout=0)
    hub.take(worker=0, most=1, timeout=0)
    hub.take(worker=1, most=1, timeout=0)
    index = conversations[1].turns[0].index
    assert [turn for turn, _ in hub.lost(worker=1)] == [index]
    hub.put_result(("records", 1, ([index], 1, b"late")))  # sent before the node went
    hub.put_result(("records", 0, ([conversations[0].turns[0].index], 1, b"on time")))
    assert [message[1] for message in hub.drain()] == [0]
    assert hub.counts() == {0: 1}
