"""Scenario 5: KV-cache pressure.

Each sequence in flight holds its KV cache (every layer's keys and values for every
token). Long prompts times many parallel requests fill the cache; then the engine makes
new requests wait, or preempts running ones (frees their cache and recomputes them
later). Per engine, waves of parallel long-prompt requests while its metrics are read
every quarter second: peak KV usage, peak waiting requests and preemptions, against
the waves' latency.
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
from services.demos.context import DemoContext, words_prompt
from services.demos.readout import BigNumber, StepData, WaveFigures
from services.demos.summary import StepBlock
from services.engines.endpoints import EngineRecord

WATCH_INTERVAL_S = 0.25
#: KV usage at or above this is "near full".
NEAR_FULL = 0.8


class KvOptions(TypedDict):
    levels: list[int]
    prompt_tokens: int
    max_tokens: int


KvKind = Literal[
    "preempted", "queued_full", "queued_not_kv", "queued", "near_full", "no_pressure", "failed"
]


@dataclass(frozen=True)
class KvVerdict(common.WavesVerdict):
    """One engine under KV-cache pressure: its metrics' peaks over the waves (or why a metric
    was not there) and what they add up to."""

    verdict: KvKind = stored(kind(*get_args(KvKind)), default="failed")
    kv_peak: float | None = stored(stored_json.number, default=None)
    kv_reason: str | None = stored(stored_json.text, default=None)
    waiting_peak: float | None = stored(stored_json.number, default=None)
    waiting_reason: str | None = stored(stored_json.text, default=None)
    preemptions: int | None = stored(stored_json.optional_int, default=None)
    preemptions_reason: str | None = stored(stored_json.text, default=None)
    first_queue_concurrency: int | None = stored(stored_json.optional_int, default=None)
    requests_to_fill: int | None = stored(stored_json.optional_int, default=None)


def engine_verdict(levels: list[WaveFigures]) -> KvVerdict:
    """From the waves' figures to the pressure verdict:

    - "preempted": any preemption;
    - "queued_full": requests waited and KV usage reached NEAR_FULL (the cache was the limit);
    - "queued_not_kv": requests waited with KV usage below NEAR_FULL (the limit was elsewhere);
    - "queued": requests waited, KV usage not reported (the cause is not visible);
    - "near_full": KV usage >= NEAR_FULL without waiting or preemption;
    - "no_pressure" otherwise; "failed" without a measured wave."""
    measured = [lv for lv in levels if lv.get("e2e_mean_s") is not None]
    if not measured:
        return KvVerdict(
            verdict="failed",
            error=next((lv.get("error") for lv in levels if lv.get("error")), None),
        )
    kv_peak = max((v for lv in measured if (v := lv.get("kv_peak")) is not None), default=None)
    waiting_peak = max((v for lv in measured if (v := lv.get("waiting_peak")) is not None), default=None)
    preempted = [value for lv in measured if (value := lv.get("preemptions")) is not None]
    first, last = measured[0], measured[-1]
    preemptions = round(sum(preempted)) if preempted else None
    # KV share of one request at the highest level: how many such requests would fill the cache.
    per_request = (last_kv / last["concurrency"]) if (last_kv := last.get("kv_peak")) else None
    first_e2e, last_e2e = first.get("e2e_mean_s"), last.get("e2e_mean_s")
    verdict: KvKind
    if (preemptions or 0) > 0:
        verdict = "preempted"
    elif (waiting_peak or 0) >= 1:
        if kv_peak is None:
            verdict = "queued"
        else:
            verdict = "queued_full" if kv_peak >= NEAR_FULL else "queued_not_kv"
    elif kv_peak is not None and kv_peak >= NEAR_FULL:
        verdict = "near_full"
    else:
        verdict = "no_pressure"

    def reason(key: Literal["kv_reason", "waiting_reason", "preemptions_reason"]) -> str | None:
        return next((lv.get(key) for lv in measured if lv.get(key)), None)

    return KvVerdict(
        verdict=verdict,
        kv_peak=kv_peak,
        kv_reason=reason("kv_reason"),
        waiting_peak=waiting_peak,
        waiting_reason=reason("waiting_reason"),
        preemptions=preemptions,
        preemptions_reason=reason("preemptions_reason"),
        first_queue_concurrency=next(
            (lv["concurrency"] for lv in measured if (lv.get("waiting_peak") or 0) >= 1), None
        ),
        first_concurrency=first["concurrency"],
        last_concurrency=last["concurrency"],
        first_e2e_s=first_e2e,
        last_e2e_s=last_e2e,
        # Both measured: `measured` holds the waves with a mean latency.
        latency_growth=last_e2e / first_e2e if first_e2e and last_e2e is not None else None,
        requests_to_fill=int(1 / per_request) if per_request else None,
    )


def _waited(v: KvVerdict) -> str | None:
    """What the queue did, in words (None when nothing about it is known)."""
    if v.waiting_peak is None:
        return f"waiting requests {v.waiting_reason}" if v.waiting_reason else None
    if v.waiting_peak < 1:
        return "no request waited"
    waited = f"from {common.whole(v.first_queue_concurrency)} parallel requests on, up to {v.waiting_peak:.0f} waited"
    if v.verdict == "queued_not_kv":
        waited += (
            " although the cache was far from full: the queue came from another limit (batch slots or "
            "the per-step token budget)"
        )
    elif v.verdict == "queued":
        waited += " (without KV usage, whether the cache caused it is not visible)"
    return waited


def verdict_sentence(name: str, v: KvVerdict) -> str:
    if v.verdict == "failed":
        return common.not_measured(name, v.error)
    parts = []
    if v.kv_peak is not None:
        kv = f"KV-cache usage peaked at {units.share(v.kv_peak)}"
        if v.requests_to_fill and v.kv_peak < NEAR_FULL:
            kv += f" (about {v.requests_to_fill} such requests would fill it)"
        parts.append(kv)
    else:
        parts.append(f"KV-cache usage {v.kv_reason or 'not reported'}")
    if v.verdict == "preempted":
        parts.append(
            f"it preempted {common.whole(v.preemptions)} request(s): their cache was freed and recomputed later"
        )
    waited = _waited(v)
    if waited:
        parts.append(waited)
    if v.preemptions is not None and v.verdict != "preempted":
        parts.append("no preemption")
    elif v.preemptions is None and v.preemptions_reason:
        parts.append(f"preemptions {v.preemptions_reason}")
    latency = (
        f"mean latency {units.duration(v.first_e2e_s)} at {common.whole(v.first_concurrency)} to "
        f"{units.duration(v.last_e2e_s)} "
        f"at {common.whole(v.last_concurrency)}"
    )
    if v.latency_growth:
        latency += f" (×{v.latency_growth:.1f})"
    return f"{name}: " + "; ".join(parts) + f"; {latency}."


class KvCachePressure(Scenario[KvOptions]):
    name = "kv-pressure"
    title = "KV-cache pressure"
    mechanism = "PagedAttention block manager · admission queue · preemption (recompute)"
    explanation = (
        "Every request in flight keeps its KV cache: the keys and values of every layer for every token "
        "of its prompt and answer. Long prompts times many parallel requests fill it. Then the engine must "
        "choose: make new requests wait in a queue, or preempt running ones (free their cache and recompute "
        "it later). Either way latency grows. We send each engine waves of parallel long-prompt requests and "
        "read its metrics four times a second: KV usage, waiting requests and preemptions."
    )
    default_engines = ("vllm-cpu", "llamacpp-4slot")
    duration_hint = "about 1½ minutes on the local CPU engines"
    verdict_record = KvVerdict
    options = (
        OptionSpec("levels", "Parallel requests per wave", [1, 4, 8], "int_list", "", 1, 1024),
        OptionSpec(
            "prompt_tokens",
            "Prompt length (tokens, about)",
            600,
            "int",
            "Each request gets its own prompt, so no prefix is shared.",
            50,
            100_000,
        ),
        OptionSpec("max_tokens", "Answer tokens", 16, "int", "", 1, 4096),
    )

    def plan(self, engines: Sequence[EngineRecord], options: KvOptions) -> list[StepPlan]:
        levels = ", ".join(str(c) for c in options["levels"])
        return [
            StepPlan(
                f"pressure:{engine.name}",
                f"Filling {engine.name}'s KV cache",
                f"Waves of {levels} parallel requests with their own ~{options['prompt_tokens']}-token prompts, "
                f"{options['max_tokens']} answer tokens each, to {engine.name} alone.",
                functools.partial(self._pressure, engine=engine, options=options),
            )
            for engine in engines
        ]

    def _pressure(self, ctx: DemoContext, engine: EngineRecord, options: KvOptions) -> StepOutcome:
        def wave(concurrency: int) -> WaveFigures:
            requests = [
                ctx.chat_request(
                    engine,
                    [
                        {
                            "role": "system",
                            "content": words_prompt(options["prompt_tokens"], ctx.fresh_nonce()),
                        },
                        {"role": "user", "content": "Which rule is the longest?"},
                    ],
                    max_tokens=options["max_tokens"],
                    ignore_eos=True,
                )
                for _ in range(concurrency)
            ]
            with ctx.watch(engine, interval_s=WATCH_INTERVAL_S) as watch:
                sent = ctx.send(
                    engine, requests, concurrency=concurrency, labels={"concurrency": concurrency}
                )
            preemptions = watch.count("preemptions_per_s")
            return {
                **common.wave_figures(sent),
                "kv_peak": watch.peak("kv_cache_usage"),
                "kv_reason": watch.reason("kv_cache_usage"),
                "waiting_peak": watch.peak("requests_waiting"),
                "waiting_reason": watch.reason("requests_waiting"),
                "running_peak": watch.peak("requests_running"),
                "preemptions": round(preemptions, 1) if preemptions is not None else None,
                "preemptions_reason": watch.reason("preemptions_per_s"),
                "metrics_error": watch.error,
            }

        return common.each_wave(
            ctx, options["levels"], wave, lambda levels: self._outcome(ctx, engine.name, levels)
        )

    def _outcome(self, ctx: DemoContext, name: str, levels: list[WaveFigures]) -> StepOutcome:
        verdict = engine_verdict(levels)

        def label(lv: WaveFigures) -> str:
            bits = [f"{lv['concurrency']} parallel"]
            if lv.get("kv_peak") is not None:
                bits.append(f"KV {units.share(lv['kv_peak'])}")
            if lv.get("waiting_peak") is not None:
                bits.append(f"{lv['waiting_peak']:.0f} waiting")
            if lv.get("preemptions"):
                bits.append(f"{lv['preemptions']:.0f} preempted")
            return " · ".join(bits)

        chart = common.waves_chart(
            ctx,
            "pressure:",
            name,
            levels,
            lambda lv: (lv["concurrency"], lv.get("e2e_mean_s"), label(lv)),
            title="Latency as parallel long prompts fill the KV cache (labels: the engine's metrics)",
            x_title="parallel requests",
            y_title="mean request latency (s)",
            x_category=True,
        )
        numbers = []
        if verdict.verdict != "failed":
            numbers = [
                BigNumber(
                    f"{name} · KV peak",
                    units.share(verdict.kv_peak) if verdict.kv_peak is not None else "not reported",
                    verdict.kv_peak,
                ),
                BigNumber(
                    f"{name} · waiting",
                    f"{verdict.waiting_peak:.0f}"
                    if verdict.waiting_peak is not None
                    else "not reported",
                    verdict.waiting_peak,
                ),
                BigNumber(
                    f"{name} · preempted",
                    f"{verdict.preemptions}" if verdict.preemptions is not None else "not reported",
                    verdict.preemptions,
                ),
                common.latency_number(name, verdict),
            ]
        errors = [f"{name} at {lv['concurrency']}: {lv['error']}" for lv in levels if lv.get("error")]
        errors += [
            f"{name} metrics: {lv['metrics_error']}" for lv in levels[-1:] if lv.get("metrics_error")
        ]
        data: StepData = {"engine": name, "levels": levels, "verdict": verdict.to_json()}
        return StepOutcome(numbers, chart, verdict_sentence(name, verdict), data, errors)

    def conclude(
        self, steps: Sequence[StepBlock], engines: Sequence[str], options: KvOptions
    ) -> Conclusion:
        verdicts = common.stored_verdicts(steps, engines, "pressure:", KvVerdict)
        lines = [verdict_sentence(n, v) for n, v in verdicts.items()]
        kinds = {v.verdict for v in verdicts.values()}
        top = max(options["levels"])
        if "preempted" in kinds:
            who = [n for n, v in verdicts.items() if v.verdict == "preempted"]
            headline = f"The KV cache ran out: {', '.join(who)} preempted running requests to make room."
        elif "queued_full" in kinds:
            who = [n for n, v in verdicts.items() if v.verdict == "queued_full"]
            headline = f"The KV cache filled on {', '.join(who)}: new requests waited for room, and latency grew with the queue."
        elif "near_full" in kinds:
            headline = "The KV cache came close to full, without queueing or preemption yet."
        else:
            fill = [v.requests_to_fill for v in verdicts.values() if v.requests_to_fill]
            headline = (
                f"Up to {top} parallel requests of about {options['prompt_tokens']} tokens did not fill the "
                "KV cache"
                + (f" (about {min(fill)} such requests would)" if fill else "")
                + "; requests waited or slowed for other reasons. Raise the prompt length or the parallel "
                "requests to reach the cache's limit."
            )
        return Conclusion(headline, lines, verdicts)
