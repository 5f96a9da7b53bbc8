"""Scenario 1: prefix caching (vLLM automatic prefix caching, SGLang RadixAttention,
llama.cpp's prompt cache).

Step 1 sends one long prompt twice to each engine; step 2 holds a short chat on a long
shared system prompt. Both read the TTFT of each request, the cached prompt tokens the
engine reports in its usage, and the prefix-cache hit rate in its metrics over the step.
Every run starts its prompts with a fresh nonce, so nothing cached earlier can help.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, TypedDict, get_args

from services.core import stored_json, units
from services.core.stored_json import stored
from services.demos import common
from services.demos.base import (
    Conclusion,
    DemoVerdict,
    OptionSpec,
    Scenario,
    StepOutcome,
    StepPlan,
    kind,
)
from services.demos.context import DemoContext, EngineWatch, Sent, words_prompt
from services.demos.readout import (
    BigNumber,
    ChartSpec,
    ChatTurn,
    EngineFigures,
    Series,
    change,
    mean,
    median,
)
from services.demos.summary import StepBlock
from services.engines.endpoints import EngineRecord

#: TTFT must fall at least this much (relative) to count as "faster from the cache".
CACHE_DROP = 0.25
#: A change smaller than this is "no drop": within the run-to-run noise of a shared CPU.
NO_DROP = 0.10
#: At least this share of the prompt reported as cached is a cache hit.
HIT_SHARE = 0.5

QUESTIONS = (
    "In one sentence: what does rule 3 say?",
    "And rule 7?",
    "Which rule mentions item 12?",
    "Summarise rule 1 in five words.",
    "What is rule 20 about?",
    "Name any two rules.",
)


class PrefixOptions(TypedDict):
    prompt_tokens: int
    turns: int
    max_tokens: int


PrefixKind = Literal["cache", "hit_no_gain", "partial", "none", "likely", "unclear", "failed"]


@dataclass(frozen=True)
class PrefixVerdict(DemoVerdict):
    """One engine's repeated prompt (or, without that step, its chat's first and later turns):
    TTFT cold and cached, the cached prompt tokens it reported, and its metrics' hit rate."""

    verdict: PrefixKind = stored(kind(*get_args(PrefixKind)), default="failed")
    cold_ttft_s: float | None = stored(stored_json.number, default=None)
    warm_ttft_s: float | None = stored(stored_json.number, default=None)
    ttft_change: float | None = stored(stored_json.number, default=None)
    cached_tokens: int | None = stored(stored_json.optional_int, default=None)
    prompt_tokens: int | None = stored(stored_json.optional_int, default=None)
    hit_rate: float | None = stored(stored_json.number, default=None)
    later_turns_change: float | None = stored(stored_json.number, default=None)
    error: str | None = stored(stored_json.text, default=None)


def classify(
    cold_ttft: float | None, warm_ttft: float | None, cached: int | None, prompt: int | None
) -> PrefixKind:
    """The cache verdict from one engine's numbers (thresholds above):

    - "cache": most of the prompt came from the cache and TTFT fell >= CACHE_DROP;
    - "hit_no_gain": most of the prompt came from the cache, TTFT did not fall much;
    - "partial": some cached tokens, under HIT_SHARE of the prompt;
    - "none": the engine reports 0 cached tokens (TTFT moves are noise), or, when it
      reports nothing, TTFT fell less than NO_DROP;
    - "likely": no cached-token count reported, TTFT fell >= CACHE_DROP;
    - "unclear": no count reported and a TTFT change between the two thresholds;
    - "failed": no measurement.
    """
    drop = change(cold_ttft, warm_ttft)
    if drop is None:
        return "failed"
    fell = -drop
    if cached is not None and prompt:
        share = cached / prompt
        if share >= HIT_SHARE:
            return "cache" if fell >= CACHE_DROP else "hit_no_gain"
        return "partial" if cached > 0 else "none"
    if fell >= CACHE_DROP:
        return "likely"
    return "none" if fell < NO_DROP else "unclear"


def verdict_sentence(name: str, v: PrefixVerdict) -> str:
    cold, warm = v.cold_ttft_s, v.warm_ttft_s
    pct = units.percent(change(cold, warm))
    cached, prompt = v.cached_tokens, v.prompt_tokens
    tokens = (
        f"{cached} of {prompt} prompt tokens came from its cache"
        if cached is not None and prompt
        else ""
    )
    verdict = v.verdict
    if verdict == "failed":
        return common.not_measured(name, v.error)
    if verdict == "cache":
        text = (
            f"{name}: TTFT fell from {units.duration(cold)} to {units.duration(warm)} ({pct}) on the "
            f"repeated prompt; {tokens}."
        )
    elif verdict == "hit_no_gain":
        text = (
            f"{name}: {tokens}, yet TTFT barely moved ({units.duration(cold)} to "
            f"{units.duration(warm)}, {pct}): "
            "prefill was not what its TTFT was made of."
        )
    elif verdict == "partial":
        text = f"{name}: only {tokens}; TTFT {units.duration(cold)} to {units.duration(warm)} ({pct})."
    elif verdict == "likely":
        text = (
            f"{name}: TTFT fell from {units.duration(cold)} to {units.duration(warm)} ({pct}), a cache "
            "by the look of it (it reports no cached-token count)."
        )
    elif verdict == "unclear":
        text = (
            f"{name}: TTFT moved {pct} ({units.duration(cold)} to {units.duration(warm)}) and it "
            "reports no cached-token count: "
            "too small a change to call."
        )
    else:  # none
        if cached is not None and -(change(cold, warm) or 0) >= NO_DROP:
            text = (
                f"{name} (no cache): 0 cached tokens; its TTFT moved {pct} ({units.duration(cold)} to "
                f"{units.duration(warm)}) "
                "without any cache hit: run-to-run noise, not a cache."
            )
        else:
            text = (
                f"{name} (no cache): no drop ({pct}, {units.duration(cold)} to {units.duration(warm)})."
            )
    hit_rate = v.hit_rate
    if hit_rate is not None:
        text += (
            f" Its metrics counted a {units.percent(hit_rate, signed=False)} prefix-cache hit rate over "
            "both requests."
        )
    turns = v.later_turns_change
    if turns is not None:
        text += f" In the chat, later turns' TTFT was {units.percent(turns)} against the first."
    return text


class PrefixCaching(Scenario[PrefixOptions]):
    name = "prefix-cache"
    title = "Prefix caching"
    mechanism = "vLLM automatic prefix caching · SGLang RadixAttention · llama.cpp prompt cache"
    explanation = (
        "Before the first token, an engine must read the whole prompt (prefill); that is most of the "
        "time to first token (TTFT) for a long prompt. An engine with a prefix cache keeps the KV cache "
        "of prompts it has seen and reuses it when a new prompt starts the same way: a repeated system "
        "prompt or the earlier turns of a chat. We send each engine a long prompt twice, then hold a short "
        "chat on a long system prompt, and compare the TTFT of cold and cached requests. vLLM caches in "
        "whole blocks (128 tokens on CPU), so prompts shorter than a block never hit."
    )
    default_engines = ("vllm-cpu", "sglang-cpu", "llamacpp-4slot", "llamacpp-1slot")
    duration_hint = "about 1 minute on the local CPU engines"
    verdict_record = PrefixVerdict
    options = (
        OptionSpec(
            "prompt_tokens",
            "Shared prompt length (tokens, about)",
            600,
            "int",
            "Longer than vLLM's 128-token block; the longer, the bigger the saving.",
            150,
            6000,
        ),
        OptionSpec(
            "turns", "Chat turns", 3, "int", "Turns of the chat in step 2 (the first one is cold).", 2, 6
        ),
        OptionSpec(
            "max_tokens", "Answer tokens", 8, "int", "Kept short: this demo is about the prompt.", 1, 256
        ),
    )

    def plan(self, engines: Sequence[EngineRecord], options: PrefixOptions) -> list[StepPlan]:
        return [
            StepPlan(
                "repeat",
                "The same long prompt, twice",
                f"Each engine gets a new prompt of about {options['prompt_tokens']} tokens (cold: nothing cached), "
                "then exactly the same prompt again. With a prefix cache, the second prefill is mostly skipped.",
                lambda ctx: self._repeat(ctx, options),
            ),
            StepPlan(
                "chat",
                f"A {options['turns']}-turn chat on a long system prompt",
                "Each turn resends the system prompt and the conversation so far, plus one new question: "
                "everything but the new question can come from the cache.",
                lambda ctx: self._chat(ctx, options),
            ),
        ]

    # -- step 1 --

    def _repeat(self, ctx: DemoContext, options: PrefixOptions) -> StepOutcome:
        def measure(engine: EngineRecord) -> EngineFigures:
            common.warm_up(ctx, engine, max_tokens=1)
            system = words_prompt(options["prompt_tokens"], ctx.fresh_nonce())
            messages = [{"role": "system", "content": system}, {"role": "user", "content": QUESTIONS[0]}]
            with ctx.watch(engine, interval_s=None) as watch:
                cold = ctx.send(
                    engine,
                    [ctx.chat_request(engine, messages, max_tokens=options["max_tokens"])],
                    concurrency=1,
                    labels={"phase": "cold", "turn": 1},
                )
                warm = ctx.send(
                    engine,
                    [ctx.chat_request(engine, messages, max_tokens=options["max_tokens"])],
                    concurrency=1,
                    labels={"phase": "cached", "turn": 2},
                )
            return self._engine_figures(cold[0], warm[0], watch)

        return common.each_engine(ctx, measure, self._repeat_outcome)

    @staticmethod
    def _engine_figures(cold: Sent, warm: Sent, watch: EngineWatch) -> EngineFigures:
        error = common.first_error([cold, warm])
        figures: EngineFigures = {
            "cold_ttft_s": cold.result.ttft_s if cold.ok else None,
            "warm_ttft_s": warm.result.ttft_s if warm.ok else None,
            "prompt_tokens": warm.result.prompt_tokens if warm.ok else None,
            "cold_cached_tokens": cold.result.cached_tokens if cold.ok else None,
            "cached_tokens": warm.result.cached_tokens if warm.ok else None,
            "hit_rate": watch.final("prefix_cache_hit_rate"),
            "hit_rate_reason": watch.reason("prefix_cache_hit_rate"),
            "error": error,
        }
        figures["verdict"] = classify(
            figures["cold_ttft_s"],
            figures["warm_ttft_s"],
            figures["cached_tokens"],
            figures["prompt_tokens"],
        )
        return figures

    @staticmethod
    def _repeat_outcome(results: dict[str, EngineFigures]) -> StepOutcome:
        chart = ChartSpec(
            title="Time to first token: cold prompt, then the same prompt again",
            x_title="engine",
            y_title="TTFT (s)",
            kind="bar",
            series=[
                common.engine_series(
                    "cold (1st request)", results, lambda v: v.get("cold_ttft_s"), units.duration
                ),
                common.engine_series(
                    "repeated (2nd request)", results, lambda v: v.get("warm_ttft_s"), units.duration
                ),
            ],
        )
        numbers = []
        for name, v in results.items():
            cached = v.get("cached_tokens")
            detail = (
                f"; {cached} of {v.get('prompt_tokens')} prompt tokens cached"
                if cached is not None
                else ""
            )
            numbers.append(
                BigNumber(
                    f"{name} · repeat",
                    units.duration(v["warm_ttft_s"]),
                    v["warm_ttft_s"],
                    units.percent(change(v["cold_ttft_s"], v["warm_ttft_s"])),
                    "inverse",
                    help=f"TTFT of the second, identical request (the change: against the first){detail}",
                )
            )
        return common.engines_outcome(
            numbers, chart, results, lambda name, v: verdict_sentence(name, PrefixVerdict.from_json(v))
        )

    # -- step 2 --

    def _chat(self, ctx: DemoContext, options: PrefixOptions) -> StepOutcome:
        def measure(engine: EngineRecord) -> EngineFigures:
            system = words_prompt(options["prompt_tokens"], ctx.fresh_nonce())
            messages = [{"role": "system", "content": system}]
            turns: list[ChatTurn] = []
            error = None
            with ctx.watch(engine, interval_s=None) as watch:
                for turn in range(options["turns"]):
                    messages.append({"role": "user", "content": QUESTIONS[turn % len(QUESTIONS)]})
                    sent = ctx.send(
                        engine,
                        [ctx.chat_request(engine, list(messages), max_tokens=options["max_tokens"])],
                        concurrency=1,
                        labels={"phase": "chat", "turn": turn + 1},
                    )[0]
                    r = sent.result
                    turns.append(
                        {
                            "turn": turn + 1,
                            "ttft_s": r.ttft_s if sent.ok else None,
                            "prompt_tokens": r.prompt_tokens,
                            "cached_tokens": r.cached_tokens,
                        }
                    )
                    if not sent.ok:
                        error = common.first_error([sent])
                        break
                    messages.append({"role": "assistant", "content": r.text})
            first = turns[0]["ttft_s"] if turns else None
            later = mean(t["ttft_s"] for t in turns[1:])
            return {
                "turns": turns,
                "first_ttft_s": first,
                "later_ttft_s": later,
                "later_turns_change": change(first, later),
                "hit_rate": watch.final("prefix_cache_hit_rate"),
                "hit_rate_reason": watch.reason("prefix_cache_hit_rate"),
                "error": error,
            }

        return common.each_engine(ctx, measure, self._chat_outcome)

    @staticmethod
    def _chat_outcome(results: dict[str, EngineFigures]) -> StepOutcome:
        series = []
        for name, v in results.items():
            turns = v["turns"]
            series.append(
                Series(
                    name,
                    [f"turn {t['turn']}" for t in turns],
                    [t["ttft_s"] for t in turns],
                    [units.duration(t["ttft_s"]) for t in turns],
                )
            )
        chart = ChartSpec(
            title="TTFT per chat turn",
            x_title="",
            y_title="TTFT (s)",
            kind="line",
            series=series,
            x_category=True,
        )
        numbers = [
            BigNumber(
                f"{name} · later turns",
                units.duration(v["later_ttft_s"]),
                v["later_ttft_s"],
                units.percent(v["later_turns_change"]),
                "inverse",
                help="mean TTFT of turns 2 onwards, against turn 1",
            )
            for name, v in results.items()
        ]
        return common.engines_outcome(
            numbers,
            chart,
            results,
            lambda name, v: (
                f"{name}: first turn {units.duration(v['first_ttft_s'])}, later turns "
                f"{units.duration(v['later_ttft_s'])} ({units.percent(v['later_turns_change'])})."
            ),
            lambda v: v.get("later_ttft_s"),
        )

    # -- conclusion --

    def conclude(
        self, steps: Sequence[StepBlock], engines: Sequence[str], options: PrefixOptions
    ) -> Conclusion:
        repeat, chat = common.step_engines(steps, "repeat"), common.step_engines(steps, "chat")
        verdicts: dict[str, PrefixVerdict] = {}
        lines = []
        for name in engines:
            figures, c = repeat.get(name) or {}, chat.get(name) or {}
            if not figures and not c:
                continue
            v = PrefixVerdict.from_json(figures) if figures else _from_chat(c)
            later = c.get("later_turns_change")
            verdicts[name] = v = PrefixVerdict(
                verdict=v.verdict,
                cold_ttft_s=v.cold_ttft_s,
                warm_ttft_s=v.warm_ttft_s,
                ttft_change=change(v.cold_ttft_s, v.warm_ttft_s),
                cached_tokens=v.cached_tokens,
                prompt_tokens=v.prompt_tokens,
                hit_rate=v.hit_rate,
                later_turns_change=later if later is not None else v.later_turns_change,
                error=v.error,
            )
            lines.append(verdict_sentence(name, v))
        cached = [n for n, v in verdicts.items() if v.verdict in ("cache", "likely")]
        if cached:
            best = min(cached, key=lambda n: verdicts[n].ttft_change or 0)
            lead = (
                f"Prefix caching cut the time to first token of a repeated prompt by "
                f"{units.percent(-(verdicts[best].ttft_change or 0), signed=False)} on {best}."
            )
        else:
            lead = "No engine in this run served a repeated prompt faster from a cache."
        return Conclusion(lead, lines, verdicts)


def _from_chat(chat: EngineFigures) -> PrefixVerdict:
    """An engine whose step 1 did not run, judged from its chat's first and later turns."""
    cached = _whole(median(t.get("cached_tokens") for t in chat.get("turns", [])[1:]))
    prompt = _whole(median(t.get("prompt_tokens") for t in chat.get("turns", [])[1:]))
    cold, warm = chat.get("first_ttft_s"), chat.get("later_ttft_s")
    return PrefixVerdict(
        verdict=classify(cold, warm, cached, prompt),
        cold_ttft_s=cold,
        warm_ttft_s=warm,
        cached_tokens=cached,
        prompt_tokens=prompt,
        hit_rate=chat.get("hit_rate"),
        error=chat.get("error"),
    )


def _whole(value: float | None) -> int | None:
    return None if value is None else int(value)
