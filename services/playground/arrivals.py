"""The Playground's first minutes (issue 58): which engines answer now, and which local engines
are still coming, each with its phase and an estimate, so that a newcomer who opens the app
while `./run.sh` installs sees where things stand and gets the first two engines that answer
picked for them, without a reload.

An engine "answers" when it is a local engine whose health check passes, or one registered by
hand (a remote server is taken at its word: the Playground sends to it and shows its error).
A local engine whose process runs but does not answer yet (vLLM compiling its model) is coming,
not ready: picking it would send the first prompt into a connection refused."""

from __future__ import annotations

import time
from dataclasses import dataclass

from services import local_engines
from services.engines.endpoints import EngineRecord
from services.local_engines import progress
from services.local_engines.state import read_state, state_key


@dataclass(frozen=True)
class Arrival:
    """One local engine not answering yet, in words."""

    engine_id: str
    label: str
    #: "installing" (queued too), "starting" or "failed".
    state: str
    #: Its phase and times: "installing: build, 2 min 10 s of about 4 min 30 s".
    detail: str


@dataclass(frozen=True)
class WaitingRoom:
    #: Registered engines that answer now, by name, in the registry's order.
    ready: tuple[str, ...]
    coming: tuple[Arrival, ...]
    failed: tuple[Arrival, ...]

    @property
    def waiting(self) -> bool:
        """Fewer than two engines answer and another is on its way."""
        return len(self.ready) < 2 and bool(self.coming)


def waiting_room(engines: list[EngineRecord]) -> WaitingRoom:
    """Where the engines stand now: one health check per local engine whose process runs (a
    2 s deadline each), the install records read from disk."""
    statuses = {s.id: s for s in local_engines.status()}
    started = {key: entry.get("started") for key, entry in read_state().items()}
    ready = tuple(
        e.name
        for e in engines
        if e.local_id is None or (e.local_id in statuses and statuses[e.local_id].healthy)
    )
    coming: list[Arrival] = []
    failed: list[Arrival] = []
    for spec in local_engines.specs():
        found = statuses.get(spec.id)
        if found is None or found.healthy:
            continue
        if found.status == "installing":
            coming.append(Arrival(spec.id, spec.label, "installing", found.message))
        elif found.status == "starting":
            since = started.get(state_key(spec))
            detail = _starting(spec.backend, since if isinstance(since, (int, float)) else None)
            coming.append(Arrival(spec.id, spec.label, "starting", detail))
        elif found.status == "failed":
            failed.append(Arrival(spec.id, spec.label, "failed", found.message))
    return WaitingRoom(ready, tuple(coming), tuple(failed))


def _starting(backend: str, since: float | None) -> str:
    typical = local_engines.get_backend(backend).typical_start_s
    about = f"; it usually takes about {progress.minutes(typical)} here" if typical else ""
    if since is None:
        return f"starting{about}"
    return f"starting for {progress.minutes(time.time() - since)}{about}"
