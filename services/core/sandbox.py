"""Work on viewer- or engine-written input that can take without bound (the `regex` package
compiling a schema's pattern grew a server from 208 MB to 985 MB; checking an answer against a
2.8 KB schema took 2^40 steps), run in a child process under a budget of time and memory,
never in the caller's own process.

A child is `python -m services.core.sandbox MEMORY MODULE`: it imports MODULE, then caps its own
address space at what it uses plus MEMORY bytes (RLIMIT_AS: an allocation past it fails, the
job answers "over its memory budget" and the child exits) and, before each job, its CPU time
(RLIMIT_CPU: a backstop that ends a child whose parent vanished mid-job). It reads one job a
line on stdin (`{"job": function, "args": [...]}`, a function of MODULE) and writes one answer
a line on stdout. `call` waits for the answer for the budget's seconds at most, then kills the
child: its caller learns `OverBudget` and goes on. A child that finished in time is kept for
the next job (a start costs about 0.3 s on two busy cores); a process keeps at most
MAX_CHILDREN per module and budget, so a burst of checks waits rather than forks.
"""

from __future__ import annotations

import importlib
import json
import os
import resource
import select
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, BinaryIO

from services.core.config import PROJECT_ROOT

#: How long a child may take to import its module and say it is ready (not part of any
#: budget: a cold start on two busy cores takes seconds).
START_TIMEOUT_S = 60.0
#: Children per (module, memory) kept in one process: more callers at once wait for one.
MAX_CHILDREN = 2
#: The longest answer line a child may write (its answers are verdicts, not data).
MAX_ANSWER_BYTES = 1 << 20
#: What a child keeps of its parent's environment: the rest (database URL, keys) is not its.
_ENVIRONMENT = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "HOME", "TMPDIR")


@dataclass(frozen=True)
class Budget:
    """The most one job may take: wall-clock seconds from its start, and memory beyond what
    the child holds once its module is imported."""

    seconds: float
    memory_mb: int

    def words(self) -> str:
        return f"{self.seconds:g} s and {self.memory_mb} MiB"


class OverBudget(Exception):
    """The job took its whole budget ("time") or asked for more memory ("memory"): the child
    was ended and nothing of the job came back."""

    def __init__(self, resource_name: str, budget: Budget) -> None:
        super().__init__(f"over its {resource_name} budget ({budget.words()})")
        self.resource_name = resource_name
        self.budget = budget


class SandboxError(Exception):
    """The child could not run the job: it did not start, or the job raised (the message)."""


# ---------------------------------------------------------------------------------------
# The parent's side
# ---------------------------------------------------------------------------------------


class _Child:
    def __init__(self, module: str, budget: Budget) -> None:
        env = {k: os.environ[k] for k in _ENVIRONMENT if k in os.environ}
        env["PYTHONPATH"] = str(PROJECT_ROOT)
        try:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "services.core.sandbox", str(budget.memory_mb << 20), module],
                cwd=PROJECT_ROOT,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                env=env,
            )
        except OSError as error:  # no process to be had (out of pids or memory)
            raise SandboxError(f"the checking process could not start: {error}") from None
        self.buffer = b""
        #: It ends after its last answer (it grew past half its budget: caches of past jobs).
        self.retired = False
        try:
            ready = self._line(time.monotonic() + START_TIMEOUT_S)
        except (TimeoutError, EOFError, SandboxError):
            ready = None
        if ready != {"ready": True}:
            self.kill()
            raise SandboxError("the checking process did not start")

    def _line(self, deadline: float) -> Any:
        """The child's next line, read without blocking past `deadline`."""
        assert self.process.stdout is not None
        fd = self.process.stdout.fileno()
        # poll, not select: a server holding a thousand sockets has descriptors past select's 1024.
        poller = select.poll()
        poller.register(fd, select.POLLIN)
        while b"\n" not in self.buffer:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError
            if not poller.poll(max(1, int(remaining * 1000))):
                continue
            chunk = os.read(fd, 65536)
            if not chunk:
                raise EOFError
            self.buffer += chunk
            if len(self.buffer) > MAX_ANSWER_BYTES:
                raise SandboxError("the checking process answered too much")
        line, _, self.buffer = self.buffer.partition(b"\n")
        try:
            return json.loads(line)
        except ValueError:
            raise SandboxError("the checking process answered what is not JSON") from None

    def run(self, function: str, args: list[Any], budget: Budget) -> Any:
        assert self.process.stdin is not None
        self.process.stdin.write(
            json.dumps({"job": function, "args": args, "seconds": budget.seconds}).encode()
        )
        self.process.stdin.write(b"\n")
        self.process.stdin.flush()
        # The budget starts once the job is handed over (sending a long answer takes its own time).
        try:
            answer = self._line(time.monotonic() + budget.seconds)
        except TimeoutError:
            raise OverBudget("time", budget) from None
        except EOFError:
            # Killed by the kernel: its CPU backstop, or an allocation the limit let through
            # and the kernel could not back.
            raise OverBudget("memory", budget) from None
        if "over" in answer:
            raise OverBudget(str(answer["over"]), budget)
        if "error" in answer:
            raise SandboxError(str(answer["error"]))
        self.retired = bool(answer.get("retired"))
        return answer["result"]

    def kill(self) -> None:
        self.process.kill()
        self.process.wait()
        for pipe in (self.process.stdin, self.process.stdout):
            if pipe is not None:
                pipe.close()


class _Pool:
    def __init__(self) -> None:
        self.lock = threading.Condition()
        self.idle: dict[tuple[str, int], list[_Child]] = {}
        self.busy: dict[tuple[str, int], int] = {}

    @contextmanager
    def child(self, module: str, budget: Budget) -> Iterator[_Child]:
        key = (module, budget.memory_mb)
        with self.lock:
            self.lock.wait_for(lambda: self.idle.get(key) or self.busy.get(key, 0) < MAX_CHILDREN)
            self.busy[key] = self.busy.get(key, 0) + 1
            idle = self.idle.get(key)
            child = idle.pop() if idle else None
        kept = False
        try:
            if child is not None and child.process.poll() is not None:
                child.kill()  # ended while idle (killed from outside): its pipes are closed here
                child = None
            if child is None:
                child = _Child(module, budget)
            yield child
            kept = True
        finally:
            with self.lock:
                self.busy[key] -= 1
                if kept and child is not None and not child.retired and child.process.poll() is None:
                    self.idle.setdefault(key, []).append(child)
                self.lock.notify()
            if child is not None and (not kept or child.retired):
                child.kill()


_pool = _Pool()


def call(function: str, *args: Any, budget: Budget) -> Any:
    """`function` ("package.module.name") called with `args` (JSON values) in a child process,
    its answer (a JSON value) back within `budget`; else OverBudget, or SandboxError when the
    child could not run it."""
    module, _, name = function.rpartition(".")
    for attempt in (1, 2):
        with _pool.child(module, budget) as child:
            try:
                return child.run(name, list(args), budget)
            except OSError as error:  # the pipe: a kept child that died while idle, killed from outside
                child.kill()
                if attempt == 2:
                    raise SandboxError(f"the checking process failed: {error}") from None
    raise AssertionError("unreachable")


# ---------------------------------------------------------------------------------------
# The child's side
# ---------------------------------------------------------------------------------------


def _address_space() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")


def _lower(limit: int, which: int, hard_too: bool) -> None:
    _soft, hard = resource.getrlimit(which)
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    resource.setrlimit(which, (limit, limit if hard_too else hard))


#: The child's answers: stdout as it was given (anything a job prints goes to stderr).
_answers: BinaryIO | None = None


def _reply(value: Any) -> None:
    assert _answers is not None
    _answers.write(json.dumps(value).encode() + b"\n")
    _answers.flush()


def serve(memory_bytes: int, module_name: str) -> int:
    """The child: take jobs from stdin until it closes."""
    global _answers
    # A line a job (or a library) prints must not be read as its answer.
    _answers = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    module = importlib.import_module(module_name)
    start = _address_space()
    # Lowered for good (hard limit too): nothing a job runs can raise it again.
    _lower(start + memory_bytes, resource.RLIMIT_AS, hard_too=True)
    _reply({"ready": True})
    for line in sys.stdin.buffer:
        request = json.loads(line)
        usage = resource.getrusage(resource.RUSAGE_SELF)
        used = usage.ru_utime + usage.ru_stime
        _lower(int(used + float(request["seconds"])) + 2, resource.RLIMIT_CPU, hard_too=False)
        try:
            result = getattr(module, request["job"])(*request["args"])
        except MemoryError:
            _reply({"over": "memory"})
            return 1  # what a failed allocation left behind is not worth trusting
        except Exception as error:  # noqa: BLE001 - told to the parent, which decides
            _reply({"error": f"{type(error).__name__}: {error}"[:500]})
            continue
        # What past jobs left (a validator per schema, compiled patterns) must not eat the
        # next one's budget: past half of it, this child ends and the next job gets a fresh one.
        retired = _address_space() > start + memory_bytes // 2
        _reply({"result": result, "retired": retired})
        if retired:
            return 0
    return 0


if __name__ == "__main__":
    sys.exit(serve(int(sys.argv[1]), sys.argv[2]))
