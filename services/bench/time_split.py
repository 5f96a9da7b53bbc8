"""Where an engine's time went over a run: its own queue, prefill and decode beside the rest
of TTFT and E2E (services.core.measure.time_split defines them per request), as the summary's
`time_split` block; and that rest as evidence for the generator's self-check.

The block's means add up: over the requests the engine timed, mean queue + mean prefill +
mean decode + mean E2E rest = mean E2E (the chart stacks them), except where a rest was clamped
at 0 (`clamped`: the engine counted more time than the client saw; `clamp_note` says so beside
every split shown). Percentiles do not add up and are there to read one part at a time.
"""

from __future__ import annotations

from typing import Any

from services.core.measure import clamp_note

#: The parts of a split the block describes (seconds).
SPLIT_PARTS = ("queue_s", "prefill_s", "decode_s", "engine_s", "ttft_rest_s", "e2e_rest_s")
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


def part_note(block: dict[str, Any], key: str, label: str) -> str | None:
    """Why one part of an engine's stored block has no figure, in words: its engine reported
    no time, or not that part (llama.cpp's queue, TGI's prefill apart from decode). None when
    the part has a figure, or when the block says nothing (a run stored before engines' times
    were read, or an import): no one can say whether the engine reported it."""
    if not block.get("requests"):
        return None
    if not block.get("reported") or not block.get(key):
        return not_reported(label)
    return None


#: The rests of a split: never shown below 0.
REST_PARTS = ("ttft_rest_s", "e2e_rest_s")


def block_clamp_note(block: dict[str, Any]) -> str:
    """Why a stored block's rest reads 0 somewhere, in words ("" when it adds up): from its
    `clamped` count, or, for a run stored before rests were clamped, from its rests' minimum."""
    clamped = block.get("clamped")
    if isinstance(clamped, dict) and clamped.get("max_s"):
        return clamp_note(float(clamped["max_s"]), int(clamped.get("requests") or 0) or None)
    lowest = min(
        (
            float(value)
            for key in REST_PARTS
            for value in ((block.get(key) or {}).get("min"),)
            if isinstance(value, (int, float))
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


def rest_evidence(block: dict[str, Any]) -> str | None:
    """The rest of an engine's block as evidence, with its figure and whose it likely is, when
    large. Only for an engine that times its queue: one that does not (llama.cpp) leaves the
    wait for a free slot in the rest, and that wait is the engine's, not the client's."""
    split = block.get("time_split") or {}
    rest = split.get("e2e_rest_s") or {}
    p50, p99 = rest.get("p50"), rest.get("p99")
    if (
        split.get("reported", 0) < MIN_TIMED_REQUESTS
        or not split.get("queue_reported")
        or p99 is None
        or p99 <= REST_P99_LIMIT_S
    ):
        return None
    generator = block.get("generator") or {}
    lag_p99 = (generator.get("loop_lag_ms") or {}).get("p99")
    if generator.get("client_bound"):
        whose = f"part of it the generator's own delay (see its evidence), the rest {FRONT_END}"
    elif lag_p99 is not None:
        whose = f"likely {FRONT_END}, not the generator (its own delay was {lag_p99:.2f} ms at p99)"
    else:
        whose = f"likely {FRONT_END}"
    return (
        f"{REST_PREFIX} p99 {p99 * 1000:.1f} ms > {REST_P99_LIMIT_S * 1000:g} ms (p50 "
        f"{(p50 or 0.0) * 1000:.1f} ms over {split['reported']} requests the engine timed): {whose}"
    )


def add_rest_evidence(block: dict[str, Any]) -> None:
    """Keep the rest's evidence in the block's self-check (`generator["rest_evidence"]`), shown
    beside the verdict; it never makes the verdict: only the generator's own evidence (loop lag,
    late share, send lateness, CPU) says client-bound. A block without a self-check is left as
    it is."""
    generator = block.get("generator")
    evidence = rest_evidence(block)
    if not generator or evidence is None:
        return
    generator["rest_evidence"] = evidence
