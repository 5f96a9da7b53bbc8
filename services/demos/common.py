"""The pieces every scenario's steps are written with: warm an engine up, measure engine after
engine (or wave after wave) while the page plots each result, read a batch of requests, and the
shared words, numbers and series of a step's outcome and conclusion."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TypeVar

from services.client import ERROR_CLASSES, ChatRequest
from services.core import stored_json, units
from services.core.stored_json import stored
from services.demos.base import DemoVerdict, StepOutcome, engine_data, join_sentences
from services.demos.context import DemoContext, Sent
from services.demos.readout import (
    BigNumber,
    ChartSpec,
    EngineFigures,
    Series,
    StepData,
    WaveFigures,
    XValue,
    mean,
)
from services.demos.summary import StepBlock
from services.engines.endpoints import EngineRecord

T = TypeVar("T")
V = TypeVar("V", bound=DemoVerdict)


@dataclass(frozen=True)
class WavesVerdict(DemoVerdict):
    """What every verdict over waves of parallel requests holds: the mean request latency at
    the first and the highest level, and the engine's error when nothing was measured."""

    first_concurrency: int | None = stored(stored_json.optional_int, default=None)
    last_concurrency: int | None = stored(stored_json.optional_int, default=None)
    first_e2e_s: float | None = stored(stored_json.number, default=None)
    last_e2e_s: float | None = stored(stored_json.number, default=None)
    latency_growth: float | None = stored(stored_json.number, default=None)
    error: str | None = stored(stored_json.text, default=None)


def warm_up(ctx: DemoContext, engine: EngineRecord, max_tokens: int = 2) -> None:
    """A tiny request first: an engine's first request after a pause can be slow for reasons
    that have nothing to do with what the step measures."""
    request = ctx.chat_request(engine, [{"role": "user", "content": "Hi"}], max_tokens=max_tokens)
    ctx.send(engine, [request], concurrency=1, labels={"phase": "warm-up"}, warmup=True)


def fresh_requests(
    ctx: DemoContext, engine: EngineRecord, prompts: Sequence[str], count: int, max_tokens: int
) -> list[ChatRequest]:
    """`count` requests through `prompts` in turn, each behind a fresh nonce (no cache can help)
    and answered with exactly `max_tokens` tokens."""
    return [
        ctx.chat_request(
            engine,
            [{"role": "user", "content": f"({ctx.fresh_nonce()}) {prompts[i % len(prompts)]}"}],
            max_tokens=max_tokens,
            ignore_eos=True,
        )
        for i in range(count)
    ]


def each_engine(
    ctx: DemoContext,
    measure: Callable[[EngineRecord], T],
    outcome: Callable[[dict[str, T]], StepOutcome],
) -> StepOutcome:
    """Measure the step's engines one after another; after each, publish the outcome so far."""
    results: dict[str, T] = {}
    shown = StepOutcome()
    for engine in ctx.engines:
        results[engine.name] = measure(engine)
        shown = outcome(results)
        ctx.publish(shown)
    return shown


def each_wave(
    ctx: DemoContext,
    concurrencies: Iterable[int],
    measure: Callable[[int], WaveFigures],
    outcome: Callable[[list[WaveFigures]], StepOutcome],
) -> StepOutcome:
    """One wave per concurrency level; after each, publish the outcome of the waves so far."""
    levels: list[WaveFigures] = []
    shown = StepOutcome()
    for concurrency in concurrencies:
        levels.append({"concurrency": concurrency, **measure(concurrency)})
        shown = outcome(levels)
        ctx.publish(shown)
    return shown


def waves_chart(
    ctx: DemoContext,
    prefix: str,
    name: str,
    levels: list[WaveFigures],
    point: Callable[[WaveFigures], tuple[XValue, float | None, str]],
    *,
    title: str,
    x_title: str,
    y_title: str,
    x_category: bool = False,
) -> ChartSpec:
    """One line chart for the whole scenario, growing by one curve per step: the waves of the
    other engines' finished steps (keys `prefix` + engine), then this engine's; `point` gives
    a wave's x, y and label."""
    curves = [
        (s["data"]["engine"], s["data"]["levels"])
        for s in ctx.steps
        if s.get("key", "").startswith(prefix)
        and s.get("status") == "finished"
        and s.get("data", {}).get("engine") not in (None, name)
    ]
    series = []
    for engine, curve in [*curves, (name, levels)]:
        points = [point(lv) for lv in curve]
        series.append(
            Series(engine, [p[0] for p in points], [p[1] for p in points], [p[2] for p in points])
        )
    return ChartSpec(title, x_title, y_title, kind="line", series=series, x_category=x_category)


def step_engines(steps: Sequence[StepBlock], key: str) -> dict[str, EngineFigures]:
    """The per-engine figures of the stored step with this key ({} when it did not run)."""
    return engine_data(steps, key).get("engines") or {}


def stored_verdicts(
    steps: Sequence[StepBlock], engines: Sequence[str], prefix: str, record: type[V]
) -> dict[str, V]:
    """Each engine's verdict, stored by its own step (key `prefix` + engine); engines whose step
    did not run are left out, one whose step stored no verdict "failed"."""
    verdicts = {}
    for name in engines:
        data = engine_data(steps, f"{prefix}{name}")
        if data:
            verdicts[name] = record.from_json(data.get("verdict") or {"verdict": "failed"})
    return verdicts


def paired_verdicts(
    steps: Sequence[StepBlock],
    engines: Sequence[str],
    keys: tuple[str, str],
    judge: Callable[[EngineFigures | None, EngineFigures | None], T],
) -> dict[str, T]:
    """Each engine's verdict from its figures in two steps (before and after the change the
    scenario shows), for the engines either step measured."""
    first, second = step_engines(steps, keys[0]), step_engines(steps, keys[1])
    return {
        name: judge(first.get(name), second.get(name))
        for name in engines
        if name in first or name in second
    }


def engine_series(
    label: str,
    results: Mapping[str, EngineFigures],
    figure: Callable[[EngineFigures], float | None],
    fmt: Callable[[float | None], str],
    names: Sequence[str] | None = None,
) -> Series:
    """A series over the engines (bars or points per engine): each one's `figure` (None for an
    engine without figures), labelled by `fmt`."""
    names = list(results) if names is None else list(names)
    values = [figure(results.get(name) or {}) for name in names]
    return Series(label, names, values, [fmt(value) for value in values])


def latency_number(name: str, verdict: WavesVerdict, help: str | None = None) -> BigNumber:
    """Mean request latency at the highest level, with its growth against the first level."""
    growth = verdict.latency_growth
    return BigNumber(
        f"{name} · latency at {verdict.last_concurrency}",
        units.duration(verdict.last_e2e_s),
        verdict.last_e2e_s,
        f"×{growth:.1f}" if growth else None,
        "inverse",
        help=help,
    )


def engines_outcome(
    numbers: list[BigNumber],
    chart: ChartSpec,
    results: dict[str, EngineFigures],
    sentence: Callable[[str, EngineFigures], str],
    measured: Callable[[EngineFigures], float | None] | None = None,
    data: StepData | None = None,
) -> StepOutcome:
    """The outcome of a step that measured each engine: one sentence per engine for the finding
    ("not measured" for an engine without its `measured` figure), `data` beside the engines'
    figures, and every engine's error."""
    finding = join_sentences(
        not_measured(name, v.get("error")) if measured and measured(v) is None else sentence(name, v)
        for name, v in results.items()
    )
    full: StepData = {**(data or {}), "engines": results}
    return StepOutcome(numbers, chart, finding, full, engine_errors(results))


def best(
    verdicts: dict[str, V], chosen: Callable[[V], bool], key: Callable[[V], float | None]
) -> tuple[str, V] | None:
    """The engine with the highest `key` among the `chosen` verdicts (None if none)."""
    found = [name for name, v in verdicts.items() if chosen(v)]
    if not found:
        return None
    name = max(found, key=lambda n: key(verdicts[n]) or 0.0)
    return name, verdicts[name]


def fixed(value: float | None, digits: int) -> str:
    """A ratio or a count of requests with `digits` decimals ("4.0", the 1.5 of "×1.5");
    a figure a stored verdict lacks reads as missing."""
    return units.MISSING if value is None else f"{value:.{digits}f}"


def whole(value: int | None) -> str:
    """A count of requests, answers or sequences as a sentence says it ("16"); missing when a
    stored verdict lacks it."""
    return units.MISSING if value is None else str(value)


def not_measured(name: str, error: str | None) -> str:
    return f"{name}: not measured ({error or 'no answer'})."


def engine_errors(results: Mapping[str, EngineFigures]) -> list[str]:
    """One line per engine whose figures carry an error."""
    return [f"{name}: {v['error']}" for name, v in results.items() if v.get("error")]


def first_error(sent: Sequence[Sent]) -> str | None:
    """The first failure of a batch in plain words ("connect_refused: ..."), None if all answered."""
    for item in sent:
        if not item.ok:
            r = item.result
            detail = r.error or ERROR_CLASSES.get(r.error_class or "", "failed")
            return f"{r.error_class or 'error'}: {detail}"
    return None


def decode_parallelism(sent: Sequence[Sent]) -> float | None:
    """How many requests were decoding at once, on average over the time any was: the sum
    of the decode phases (first token to last) over the length of their union. 1.0 means
    one after another (a single slot); N means all N together. It comes from our own
    clocks, so it shows batching even when a busy machine blurs the throughput."""
    spans = sorted(
        (s.result.start + (s.result.ttft_s or 0.0), s.result.start + (s.result.e2e_s or 0.0))
        for s in sent
        if s.ok and s.result.e2e_s is not None and s.result.ttft_s is not None
    )
    spans = [(a, b) for a, b in spans if b > a]
    if not spans:
        return None
    total = sum(b - a for a, b in spans)
    union, current_start, current_end = 0.0, spans[0][0], spans[0][1]
    for a, b in spans[1:]:
        if a > current_end:
            union += current_end - current_start
            current_start, current_end = a, b
        else:
            current_end = max(current_end, b)
    union += current_end - current_start
    return total / union if union > 0 else None


def wave_figures(sent: Sequence[Sent]) -> WaveFigures:
    """Throughput and latency of requests sent together.

    Output throughput = all answered tokens / the wave's wall time (first send to last
    token). Decode rate = tokens after each first token / (last token - earliest first
    token): the rate of the generating phase, which for one request is (tokens-1)/(E2E-TTFT).
    """
    ok = [s for s in sent if s.ok]
    if not ok:
        return {"ok": 0, "failed": len(sent), "error": first_error(sent)}
    starts = [s.result.start for s in ok]
    ends = [s.result.start + (s.result.e2e_s or 0.0) for s in ok]
    firsts = [s.result.start + (s.result.ttft_s or 0.0) for s in ok]
    tokens = sum(s.result.output_tokens or 0 for s in ok)
    later_tokens = sum(max(0, (s.result.output_tokens or 0) - (len(s.result.choices) or 1)) for s in ok)
    wall = max(ends) - min(starts)
    decode_span = max(ends) - min(firsts)
    return {
        "ok": len(ok),
        "failed": len(sent) - len(ok),
        "error": first_error(sent),
        "output_tokens": tokens,
        "wall_s": wall,
        "throughput_tok_s": tokens / wall if wall > 0 else None,
        "decode_tok_s": later_tokens / decode_span if decode_span > 0 else None,
        "ttft_mean_s": mean(s.result.ttft_s for s in ok),
        "e2e_mean_s": mean(s.result.e2e_s for s in ok),
        "e2e_max_s": max(s.result.e2e_s or 0.0 for s in ok),
        "parallel": decode_parallelism(ok),
    }
