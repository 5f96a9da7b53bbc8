"""Where an engine's time went over a run: its own queue, prefill and decode beside the rest
of TTFT and E2E (services.core.measure.time_split defines them per request), as the summary's
`time_split` block; and that rest as evidence for the generator's self-check.

The block's means add up: over the requests the engine timed, mean queue + mean prefill +
mean decode + mean E2E rest = mean E2E (the chart stacks them), except where a rest was clamped
at 0 (`clamped`: the engine counted more time than the client saw; `clamp_note` says so beside
every split shown). Percentiles do not add up and are there to read one part at a time.

An engine that times no queue but declares one (`EngineAdapter.untimed_queue`: llama.cpp's wait
for a free slot) has it read on the client's clock (`engine_queue`) before the block is built,
so that wait is its queue, never "network, HTTP, front end, client".
"""

from __future__ import annotations

import bisect
from collections.abc import Mapping, Sequence
from dataclasses import Field, replace
from typing import Any, ClassVar, Protocol, TypeVar

from services.bench.blocks import GeneratorBlock, LagFigures
from services.bench.results import SPLIT_PARTS, EngineMetrics, EngineResults, TimeSplitBlock
from services.core import units
from services.core.measure import EngineTimes, clamp_note
from services.engines import get_adapter

__all__ = ["SPLIT_PARTS"]  # the parts of a split, defined with its block (services/bench/results.py)
#: The parts every table of a split shows, with their names: the Benchmarks page, the Runs
#: page's run and comparison, and the HTML reports read this one list.
PART_TITLES = {
    "queue_s": "queue (engine)",
    "prefill_s": "prefill (engine)",
    "decode_s": "decode (engine)",
    "ttft_rest_s": "rest of TTFT",
    "e2e_rest_s": "rest of E2E",
}
#: The self-check needs this many requests the engine timed before it reads their rest.
MIN_TIMED_REQUESTS = 20
#: Above this p99 of the E2E rest, the time outside the engine's clock is evidence that the
#: figures are not the engine's alone (the client's loop, its host or the network added it).
#: Measured on loopback, one request at a time on a 2-core host busy with other work: vLLM's
#: rest (its front end's tokenizing and detokenizing included) p50 9.4 ms, p99 20.0 ms; the
#: limit leaves room for a front end busier under load (benchmarks/engine_times_rest.py).
REST_P99_LIMIT_S = 0.050


#: How a split of a router's worker's times names its parts (`via` "router"): the parts are
#: the worker's, and the router's own time is in the rest.
VIA_ROUTER = "the worker's times (the router passes them on; its own time is in the rest)"


def part_title(key: str, via: str = "") -> str:
    """A part's name in a split's table: "(engine)" for the engine's own, "(worker)" for a
    router's worker's, whose rest holds the router's own time."""
    title = PART_TITLES[key]
    if via != "router":
        return title
    if key == "e2e_rest_s":
        return "rest of E2E (the router's own time among it)"
    if key == "ttft_rest_s":
        return "rest of TTFT (the router's own time among it)"
    return title.replace("(engine)", "(worker)")


def not_reported(label: str) -> str:
    """What a split says for an engine that timed nothing (or not that part)."""
    return f"not reported by {label}"


def part_note(block: TimeSplitBlock, key: str, label: str) -> str | None:
    """Why one part of an engine's stored block has no figure, in words: its engine reported
    no time, or not that part (TGI's prefill apart from decode; llama.cpp's queue in a run stored
    before its slot wait was read, `engine_queue`). None when
    the part has a figure, or when the block says nothing (a run stored before engines' times
    were read, or an import): no one can say whether the engine reported it."""
    if not block.requests:
        return None
    if not block.reported or not block.has(key):
        return not_reported(label)
    return None


#: The rests of a split: never shown below 0.
REST_PARTS = ("ttft_rest_s", "e2e_rest_s")


def block_clamp_note(block: TimeSplitBlock) -> str:
    """Why a stored block's rest reads 0 somewhere, in words ("" when it adds up): from its
    `clamped` count, or, for a run stored before rests were clamped, from its rests' minimum."""
    clamped = block.clamped
    if clamped is not None and clamped.max_s:
        return clamp_note(clamped.max_s, clamped.requests or None)
    lowest = min(
        (
            value
            for key in REST_PARTS
            if (part := block.part(key)) is not None and (value := part.min) is not None
        ),
        default=0.0,
    )
    return clamp_note(-lowest) if lowest < 0 else ""


def shown(key: str, value: Any) -> Any:
    """A stored part's figure as shown: a rest never below 0 (the note says why)."""
    if key in REST_PARTS and isinstance(value, (int, float)):
        return max(0.0, float(value))
    return value


#: How the rest's evidence begins, in the generator block and in runs stored before it stopped
#: deciding the verdict (they listed it among the client-bound evidence).
REST_PREFIX = "time outside the engine's own clock"
#: Whose the rest most likely is when the generator kept up: on loopback there is no network to
#: speak of, so it is the engine's front end (vLLM tokenizes, applies the chat template and
#: detokenizes outside its queue and decode: a mean rest of 942 ms at concurrency 2 on 2 busy
#: cores) or its HTTP server.
FRONT_END = "the engine's front end (tokenizing, detokenizing, its HTTP server) or the network"


def rest_evidence(split: TimeSplitBlock, generator: GeneratorBlock | None) -> str | None:
    """The rest of an engine's split as evidence, with its figure and whose it likely is, when
    large (`generator`: the load's self-check, weighed). Only for an engine whose queue is known,
    timed or read (llama.cpp's slot wait, `engine_queue`): one whose queue is neither leaves that
    wait in the rest, and it is the engine's, not the client's."""
    rest = split.e2e_rest_s
    p50, p99 = (rest.p50, rest.p99) if rest is not None else (None, None)
    if (
        split.timed < MIN_TIMED_REQUESTS
        or not split.queue_reported
        or p99 is None
        or p99 <= REST_P99_LIMIT_S
    ):
        return None
    check = generator or GeneratorBlock()
    lag_p99 = (check.get("loop_lag_ms") or LagFigures()).get("p99")
    if check.get("client_bound"):
        whose = f"part of it the generator's own delay (see its evidence), the rest {FRONT_END}"
    elif lag_p99 is not None:
        delay = units.duration_ms(lag_p99)
        whose = f"likely {FRONT_END}, not the generator (its own delay was {delay} at p99)"
    else:
        whose = f"likely {FRONT_END}"
    return (
        f"{REST_PREFIX} p99 {units.duration(p99)} > {REST_P99_LIMIT_S * 1000:g} ms (p50 "
        f"{units.duration(p50 or 0.0)} over {split.timed} requests the engine timed): {whose}"
    )


def add_rest_evidence(generator: GeneratorBlock | None, split: TimeSplitBlock) -> None:
    """Keep the rest's evidence of a load's split in its self-check (`generator["rest_evidence"]`),
    shown beside the verdict; it never makes the verdict: only the generator's own evidence (loop
    lag, late share, send lateness, CPU) says client-bound. A load without a self-check is left
    as it is."""
    evidence = rest_evidence(split, generator)
    if not generator or evidence is None:
        return
    generator["rest_evidence"] = evidence


#: How much later than a request's prefill began (on the client's clock) the end of the request
#: whose slot it took may read: both are the client's timestamps, each late by its own loop's
#: delay. A wrong match costs at most the request's own gap before prefill (see `engine_queue`).
SLOT_MATCH_S = REST_P99_LIMIT_S


class TimedRequest(Protocol):
    """What `engine_queue` reads of a request (services.bench.stats.RequestRecord is one): a
    dataclass, which it copies with the queue read."""

    __dataclass_fields__: ClassVar[dict[str, Field[Any]]]
    engine: str
    step: int | None
    ok: bool
    start_s: float | None
    ttft_s: float | None
    e2e_s: float | None
    engine_times: EngineTimes | None


Request = TypeVar("Request", bound=TimedRequest)


def engine_queue(
    records: Sequence[Request], kind: str | None, waited: bool | None = None
) -> list[Request]:
    """One load's requests (one engine, one step) with the queue their engine does not time
    but declares (`EngineAdapter.untimed_queue`) read on the client's clock; as they are for any
    other kind. A request that found every slot busy begins its prefill when a slot frees, i.e.
    when another request of the load ends: its queue is from its send to the end of the last
    other request that ended before its prefill began (up to `SLOT_MATCH_S` after, the two
    timestamps' own delays), 0 when none ended in between. Its rest is what is left: the
    network, HTTP and the front end. Where the match is wrong (another slot's request ended by
    chance in the gap) the queue takes at most the request's own gap before prefill, the small
    figure the rest would have held. `waited` is the engine's own word (its waiting metric above
    0 during the load): False (it said none waited) makes every queue 0; None (not read) leaves
    the ends to say."""
    rule = get_adapter(kind).untimed_queue
    if rule is None:
        return list(records)
    ends = sorted(
        (record.start_s + record.e2e_s, index)
        for index, record in enumerate(records)
        if record.start_s is not None and record.e2e_s is not None
    )
    end_times = [end for end, _ in ends]
    source = f"{rule.what} from the client's clock"
    out: list[Request] = []
    for index, record in enumerate(records):
        times = record.engine_times
        if (
            not record.ok
            or times is None
            or times.queue_s is not None
            or times.prefill_s is None
            or record.start_s is None
            or record.ttft_s is None
        ):
            out.append(record)
            continue
        began = record.start_s + max(0.0, record.ttft_s - times.prefill_s)
        wait = 0.0
        if waited is not False:
            at = bisect.bisect_right(end_times, began + SLOT_MATCH_S)
            while at > 0 and ends[at - 1][1] == index:
                at -= 1  # its own end is no slot it waited for
            freed = ends[at - 1][0] if at > 0 else None
            if freed is not None and freed > record.start_s:
                wait = min(freed, began) - record.start_s
        sources = ", ".join(part for part in (times.source, source) if part)
        out.append(replace(record, engine_times=replace(times, queue_s=wait, source=sources)))
    return out


def engine_said_waited(engine_metrics: EngineMetrics | None) -> bool | None:
    """Whether the engine said requests waited in its queue during a load (its waiting metric,
    llama.cpp's requests_deferred, above 0 in a sample); None when its metrics were not read."""
    most = engine_metrics.requests_waiting_max if engine_metrics is not None else None
    return most > 0 if most is not None else None


def loads_waited(
    engines: Mapping[str, EngineResults], sweep: Sequence[EngineResults] = ()
) -> dict[tuple[str, int | None], bool | None]:
    """`engine_said_waited` of each load of a stored summary (its engines' blocks, its sweep's
    rows), keyed as `engine_queues` reads it."""
    waited: dict[tuple[str, int | None], bool | None] = {
        (name, None): engine_said_waited(block.engine_metrics) for name, block in engines.items()
    }
    for row in sweep:
        waited[(str(row.engine), row.step)] = engine_said_waited(row.engine_metrics)
    return waited


def engine_queues(
    records: Sequence[Request],
    kinds: Mapping[str, str],
    waited: Mapping[tuple[str, int | None], bool | None],
) -> list[Request]:
    """`engine_queue` for every load (engine and step) of a run's requests, in their order;
    `kinds` names each engine's kind, `waited` each load's engine's own word."""
    groups: dict[tuple[str, int | None], list[int]] = {}
    for index, record in enumerate(records):
        groups.setdefault((record.engine, record.step), []).append(index)
    out = list(records)
    for key, indices in groups.items():
        done = engine_queue([records[i] for i in indices], kinds.get(key[0]), waited.get(key))
        for index, record in zip(indices, done):
            out[index] = record
    return out
