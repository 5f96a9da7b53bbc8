"""Scenario 2: continuous batching.

Each engine alone (so they do not share the cores) gets waves of 1, 2, 4, 8, 16
simultaneous requests. Per wave: output throughput (all tokens / the wave's wall time)
and the mean per-request latency. An engine that batches decodes many sequences per
step, so throughput climbs with concurrency until it saturates; one that cannot (one
slot) serves requests one after another: throughput stays flat and latency piles up.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, TypedDict, get_args

from services.core import stored_json, units
from services.core.stored_json import stored
from services.demos import common
from services.demos.base import Conclusion, OptionSpec, Scenario, StepOutcome, StepPlan, kind
from services.demos.context import DemoContext
from services.demos.readout import BigNumber, StepData, WaveFigures
from services.demos.summary import StepBlock
from services.engines.endpoints import EngineRecord

#: Requests decoding at once (measured on our clocks) from which an engine is batching.
BATCHED = 1.5
#: Peak throughput at least this many times the first level's: batching pays.
PAYS = 1.5
#: Below this gain: no throughput gain to speak of.
NO_GAIN = 1.2
#: Saturation: the smallest concurrency that reaches this share of the peak throughput.
SATURATED_SHARE = 0.9

PROMPTS = (
    "Write two sentences about the sea.",
    "Write two sentences about a fox.",
    "Write two sentences about the sky.",
    "Write two sentences about an oak tree.",
)


class BatchingOptions(TypedDict):
    levels: list[int]
    max_tokens: int


BatchingKind = Literal["serial", "pays", "batched_no_gain", "little", "failed"]


@dataclass(frozen=True)
class BatchingVerdict(common.WavesVerdict):
    """One engine's ramp: whether it batched, and what batching bought."""

    verdict: BatchingKind = stored(kind(*get_args(BatchingKind)), default="failed")
    gain: float | None = stored(stored_json.number, default=None)
    parallel_peak: float | None = stored(stored_json.number, default=None)
    first_tok_s: float | None = stored(stored_json.number, default=None)
    peak_concurrency: int | None = stored(stored_json.optional_int, default=None)
    peak_tok_s: float | None = stored(stored_json.number, default=None)
    saturation_concurrency: int | None = stored(stored_json.optional_int, default=None)


def ramp_verdict(levels: list[WaveFigures]) -> BatchingVerdict:
    """From [{"concurrency", "throughput_tok_s", "e2e_mean_s", "parallel", ...}] to the verdict.

    Whether the engine batches at all comes from `parallel` (requests decoding at once, on
    our clocks: robust to a busy machine); how much it paid from the throughput gain
    (peak / first level). "serial": never more than BATCHED at once; "pays": batched and
    gain >= PAYS; "batched_no_gain": batched, gain < NO_GAIN; "little" in between."""
    measured = [(lv, tok_s) for lv in levels if (tok_s := lv.get("throughput_tok_s"))]
    if not measured:
        return BatchingVerdict(
            verdict="failed", error=next((lv["error"] for lv in levels if lv.get("error")), None)
        )
    first, first_tok_s = measured[0]
    peak, peak_tok_s = max(measured, key=lambda m: m[1])
    gain = peak_tok_s / first_tok_s
    saturation = next(
        lv["concurrency"] for lv, tok_s in measured if tok_s >= SATURATED_SHARE * peak_tok_s
    )
    last = measured[-1][0]
    parallel = max((lv.get("parallel") or 1.0) for lv, _ in measured)
    first_e2e, last_e2e = first.get("e2e_mean_s"), last.get("e2e_mean_s")
    latency_growth = (last_e2e / first_e2e) if first_e2e and last_e2e else None
    verdict: BatchingKind
    if parallel < BATCHED:
        verdict = "serial"
    elif gain >= PAYS:
        verdict = "pays"
    elif gain < NO_GAIN:
        verdict = "batched_no_gain"
    else:
        verdict = "little"
    return BatchingVerdict(
        verdict=verdict,
        gain=gain,
        parallel_peak=parallel,
        first_concurrency=first["concurrency"],
        first_tok_s=first_tok_s,
        peak_concurrency=peak["concurrency"],
        peak_tok_s=peak_tok_s,
        saturation_concurrency=saturation,
        last_concurrency=last["concurrency"],
        first_e2e_s=first_e2e,
        last_e2e_s=last_e2e,
        latency_growth=latency_growth,
    )


def verdict_sentence(name: str, v: BatchingVerdict) -> str:
    if v.verdict == "failed":
        return common.not_measured(name, v.error)
    latency = ""
    if v.latency_growth is not None:
        latency = (
            f"; mean latency went from {units.duration(v.first_e2e_s)} at {common.whole(v.first_concurrency)} "
            f"to {units.duration(v.last_e2e_s)} at {common.whole(v.last_concurrency)} "
            f"(×{v.latency_growth:.1f})"
        )
    at_once = common.fixed(v.parallel_peak, 1)
    if v.verdict == "serial":
        return (
            f"{name}: served one request at a time (at most {at_once} decoding at once): throughput "
            f"stayed near {units.rate(v.first_tok_s)} (×{common.fixed(v.gain, 2)}) while requests "
            f"queued{latency}."
        )
    if v.verdict == "pays":
        saturation, last = v.saturation_concurrency, v.last_concurrency
        tail = (
            f"; it saturates from {saturation} parallel requests on, where more only add latency"
            if saturation is not None and last is not None and saturation < last
            else "; it had not saturated at the highest level"
        )
        return (
            f"{name}: batching pays: up to {at_once} requests decoded at once, and throughput rose "
            f"×{common.fixed(v.gain, 1)}, from {units.rate(v.first_tok_s)} with {common.whole(v.first_concurrency)} "
            f"request to {units.rate(v.peak_tok_s)} at {common.whole(v.peak_concurrency)}{tail}{latency}."
        )
    if v.verdict == "batched_no_gain":
        return (
            f"{name}: decoded up to {at_once} requests at once, yet throughput did not rise "
            f"(×{common.fixed(v.gain, 2)}, best {units.rate(v.peak_tok_s)}): here the machine's cores, "
            f"not the engine's batching, were the limit{latency}."
        )
    return (
        f"{name}: up to {at_once} requests decoded at once, a little gain (×{common.fixed(v.gain, 1)}, "
        f"peak {units.rate(v.peak_tok_s)} at {common.whole(v.peak_concurrency)}){latency}."
    )


class ContinuousBatching(Scenario[BatchingOptions]):
    name = "batching"
    title = "Continuous batching"
    mechanism = "continuous (in-flight) batching · llama.cpp parallel slots · vLLM scheduler"
    explanation = (
        "Decoding one token means reading all the model's weights once. A batching engine decodes many "
        "requests in the same step, so it reads the weights once for all of them: more requests at once, "
        "more tokens per second, until the engine runs out of batch slots or compute. An engine that "
        "cannot batch serves one request at a time: its throughput stays flat and requests wait. We "
        "send each engine waves of 1, 2, 4, 8 and 16 simultaneous requests and plot throughput against "
        "per-request latency."
    )
    default_engines = ("llamacpp-1slot", "llamacpp-4slot", "vllm-cpu")
    duration_hint = "about 1½ minutes on the local CPU engines"
    verdict_record = BatchingVerdict
    options = (
        OptionSpec(
            "levels",
            "Concurrency levels",
            [1, 2, 4, 8, 16],
            "int_list",
            "Simultaneous requests per wave.",
            1,
            512,
        ),
        OptionSpec(
            "max_tokens", "Answer tokens", 24, "int", "Every answer has exactly this length.", 4, 1024
        ),
    )

    def plan(self, engines: Sequence[EngineRecord], options: BatchingOptions) -> list[StepPlan]:
        levels = ", ".join(str(c) for c in options["levels"])
        return [
            StepPlan(
                f"ramp:{engine.name}",
                f"Ramp on {engine.name}",
                f"Waves of {levels} simultaneous requests to {engine.name} alone, {options['max_tokens']} "
                "tokens each. Each point: the wave's throughput against its mean request latency.",
                functools.partial(self._ramp, engine=engine, options=options),
            )
            for engine in engines
        ]

    def _ramp(self, ctx: DemoContext, engine: EngineRecord, options: BatchingOptions) -> StepOutcome:
        common.warm_up(ctx, engine)

        def wave(concurrency: int) -> WaveFigures:
            requests = common.fresh_requests(ctx, engine, PROMPTS, concurrency, options["max_tokens"])
            sent = ctx.send(
                engine, requests, concurrency=concurrency, labels={"concurrency": concurrency}
            )
            return common.wave_figures(sent)

        return common.each_wave(
            ctx, options["levels"], wave, lambda levels: self._outcome(ctx, engine.name, levels)
        )

    def _outcome(self, ctx: DemoContext, name: str, levels: list[WaveFigures]) -> StepOutcome:
        verdict = ramp_verdict(levels)
        errors = [f"{name} at {lv['concurrency']}: {lv['error']}" for lv in levels if lv.get("error")]
        data: StepData = {"engine": name, "levels": levels, "verdict": verdict.to_json()}
        chart = common.waves_chart(
            ctx,
            "ramp:",
            name,
            levels,
            lambda lv: (lv.get("e2e_mean_s"), lv.get("throughput_tok_s"), str(lv["concurrency"])),
            title="Throughput against per-request latency (labels: parallel requests)",
            x_title="mean request latency (s)",
            y_title="output throughput (tok/s)",
        )
        numbers = []
        if verdict.verdict != "failed":
            numbers = [
                BigNumber(
                    f"{name} · at {verdict.first_concurrency}",
                    units.rate(verdict.first_tok_s),
                    verdict.first_tok_s,
                    help="output throughput with one request at a time",
                ),
                BigNumber(
                    f"{name} · peak",
                    units.rate(verdict.peak_tok_s),
                    verdict.peak_tok_s,
                    f"×{common.fixed(verdict.gain, 1)}",
                    "normal",
                    help=f"best output throughput, at {verdict.peak_concurrency} parallel requests",
                ),
                common.latency_number(
                    name, verdict, "mean request latency at the highest level, against one request alone"
                ),
            ]
        return StepOutcome(numbers, chart, verdict_sentence(name, verdict), data, errors)

    def conclude(
        self, steps: Sequence[StepBlock], engines: Sequence[str], options: BatchingOptions
    ) -> Conclusion:
        verdicts = common.stored_verdicts(steps, engines, "ramp:", BatchingVerdict)
        lines = [verdict_sentence(name, v) for name, v in verdicts.items()]
        paying, little = (
            common.best(verdicts, lambda v: v.verdict == "pays", lambda v: v.peak_tok_s),
            common.best(verdicts, lambda v: v.verdict == "little", lambda v: v.gain),
        )
        if paying:
            best, v = paying
            headline = (
                f"Batching multiplied throughput ×{common.fixed(v.gain, 1)} on {best} "
                f"({units.rate(v.first_tok_s)} to {units.rate(v.peak_tok_s)})."
            )
        elif little:
            # "No engine gained" above a line that says one gained ×1.5 contradicted itself.
            best, v = little
            headline = (
                f"Parallel requests gained little here: ×{common.fixed(v.gain, 1)} at best, on {best} "
                f"({units.rate(v.first_tok_s)} to {units.rate(v.peak_tok_s)})."
            )
        else:
            headline = "No engine in this run gained throughput from parallel requests."
        return Conclusion(headline, lines, verdicts)
