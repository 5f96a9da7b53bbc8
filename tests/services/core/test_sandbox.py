"""Issue 56: a job on someone else's text runs in a child process under a budget of time and
memory: past it the child is ended and the caller told, within the budget, and it goes on.

The jobs below are this module's functions: the child imports this module to run them."""

from __future__ import annotations

import os
import signal
import threading
import time

import pytest

from services.core import sandbox
from services.core.sandbox import Budget, OverBudget, SandboxError

BUDGET = Budget(seconds=1.0, memory_mb=64)
HERE = __name__


def spin() -> None:
    while True:
        pass


def allocate(megabytes: int) -> int:
    return len(bytearray(megabytes << 20))


def echo(value: object) -> object:
    return value


def environment(name: str) -> str | None:
    return os.environ.get(name)


def pid() -> int:
    return os.getpid()


def noisy() -> str:
    print("a line a library printed")
    return "the answer"


def fail() -> None:
    raise ValueError("a job's own error")


def test_a_job_answers_and_its_child_serves_the_next() -> None:
    assert sandbox.call(f"{HERE}.echo", {"a": [1, "b"]}, budget=BUDGET) == {"a": [1, "b"]}
    first = sandbox.call(f"{HERE}.pid", budget=BUDGET)
    assert sandbox.call(f"{HERE}.pid", budget=BUDGET) == first != os.getpid()
    assert sandbox.call(f"{HERE}.noisy", budget=BUDGET) == "the answer"


def test_a_job_past_its_time_is_killed_within_the_budget() -> None:
    child = sandbox.call(f"{HERE}.pid", budget=BUDGET)
    started = time.monotonic()
    with pytest.raises(OverBudget, match="over its time budget") as over:
        sandbox.call(f"{HERE}.spin", budget=BUDGET)
    assert time.monotonic() - started < BUDGET.seconds + 2
    assert over.value.resource_name == "time"
    with pytest.raises(ProcessLookupError):
        os.kill(child, 0)  # killed and reaped, not left spinning
    assert sandbox.call(f"{HERE}.echo", 1, budget=BUDGET) == 1  # a fresh child


def test_a_job_past_its_memory_is_ended_and_this_process_does_not_grow() -> None:
    with open("/proc/self/statm") as statm:
        before = int(statm.read().split()[1])
    with pytest.raises(OverBudget, match="over its memory budget"):
        sandbox.call(f"{HERE}.allocate", 1024, budget=BUDGET)
    with open("/proc/self/statm") as statm:
        assert (int(statm.read().split()[1]) - before) * 4096 < 50 << 20
    assert sandbox.call(f"{HERE}.allocate", 16, budget=BUDGET) == 16 << 20


def test_a_job_that_raises_is_one_line_and_a_child_killed_while_idle_is_replaced() -> None:
    with pytest.raises(SandboxError, match="ValueError: a job's own error"):
        sandbox.call(f"{HERE}.fail", budget=BUDGET)
    idle = sandbox.call(f"{HERE}.pid", budget=BUDGET)
    os.kill(idle, signal.SIGKILL)
    time.sleep(0.2)
    assert sandbox.call(f"{HERE}.pid", budget=BUDGET) != idle


def test_the_child_gets_none_of_the_parents_secrets(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SHOOTOUT_DATABASE_URL", "postgresql://user:secret@db/shootout")
    fresh = Budget(seconds=1.0, memory_mb=65)  # a budget of its own: a child started now
    assert sandbox.call(f"{HERE}.environment", "SHOOTOUT_DATABASE_URL", budget=fresh) is None


def test_more_callers_at_once_than_children_wait_their_turn_and_each_is_told() -> None:
    results: list[object] = []

    def one() -> None:
        try:
            sandbox.call(f"{HERE}.spin", budget=Budget(seconds=0.5, memory_mb=66))
        except OverBudget as over:
            results.append(over.resource_name)

    threads = [threading.Thread(target=one) for _ in range(sandbox.MAX_CHILDREN + 2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert results == ["time"] * len(threads)


def test_a_child_that_cannot_start_is_one_line() -> None:
    with pytest.raises(SandboxError, match="did not start"):
        sandbox.call("tests.services.core.no_such_module.job", budget=BUDGET)
