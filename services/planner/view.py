"""What the Planner page shows and does, as plain functions: the plan's figures as metric cards,
its tables ready to draw, the choices of the "Which engine?" form, the launch options from the
launch form, the stored runs offered against the plan's bound, and adding a model or GPU of
one's own from what the forms hold. No Streamlit here. Text meant for markdown escapes every
untrusted piece (model names, run labels) with services.core.safe_text."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import cast, get_args

import pandas as pd
from sqlalchemy.exc import SQLAlchemyError

from services.core import cost, units
from services.core.errors import ShootoutError, ValidationError
from services.core.safe_text import md_line
from services.planner import (
    catalog,
    engines_reference,
    importers,
    launch,
    list_presets,
    plan_to_dict,
    runs,
)
from services.planner.catalog import delete_custom
from services.planner.charts import decode_ceiling_figure, memory_bar_figure, roofline_figure
from services.planner.launch import (
    LaunchOptions,
    launch_engines,
    options_for_plan,
    register_launched_engine,
)
from services.planner.measured import NO_RUNS, MeasuredKind, measured_by_kind
from services.planner.plan import PlanRequest, PlanResult, gpu_rows, make_plan, model_rows
from services.planner.specs import GB, GIB, GpuSpec, ModelSpec

#: What the page reads: this module's own, and what it passes on from the feature's others.
__all__ = [
    "FIT_WARNING_START",
    "HARDWARE",
    "MODEL_FORMATS",
    "OPERATIONS",
    "PREFIX_SHARING",
    "RANKING_NOTE",
    "TRAFFIC",
    "Decision",
    "LaunchForm",
    "LaunchOptions",
    "MeasuredAgainstBound",
    "Metric",
    "PlanRequest",
    "PlanResult",
    "RankingCard",
    "RunOffer",
    "add_gpu",
    "add_model",
    "constraints",
    "cost_floor",
    "decision",
    "decode_ceiling_figure",
    "delete_custom",
    "feature_matrix",
    "feature_sources",
    "gpu_table",
    "launch_command",
    "launch_engines",
    "list_presets",
    "make_plan",
    "measure_number",
    "measure_run",
    "memory_bar_figure",
    "model_table",
    "options_for_plan",
    "plan_metrics",
    "plan_notices",
    "plan_to_dict",
    "ranking_cards",
    "rate",
    "register_launched_engine",
    "removable",
    "roofline_figure",
    "run_offer",
    "stored_runs",
    "suggested_engine_name",
]

HARDWARE: tuple[str, ...] = get_args(engines_reference.Hardware)
TRAFFIC: tuple[str, ...] = get_args(engines_reference.Traffic)
PREFIX_SHARING: tuple[str, ...] = get_args(engines_reference.PrefixSharing)
OPERATIONS: tuple[str, ...] = get_args(engines_reference.Operations)
MODEL_FORMATS = {"hf": "Hugging Face checkpoint", "gguf": "GGUF"}


def rate(tok_s: float) -> str:
    """Tokens/s short enough for a quarter-width metric: 12,345,678 would be cut to "12,345,6…"."""
    return f"{tok_s / 1e6:,.1f}M tok/s" if tok_s >= 1e6 else f"{tok_s:,.0f} tok/s"


@dataclass(frozen=True)
class Metric:
    """One st.metric card: its delta (when there is one) is a second fact, not a change."""

    label: str
    value: str
    delta: str | None = None
    help: str | None = None


FIT_WARNING_START = "Does not fit:"


def plan_notices(plan: PlanResult) -> tuple[str | None, list[str]]:
    """What the page says before the figures: a plan that does not fit, first and as an error
    (a plan where not one sequence fits still headlined "Decode bound 295 tok/s"), then the
    plan's other warnings."""
    others = [w for w in plan.warnings if not w.startswith(FIT_WARNING_START)]
    fit, request = plan.fit, plan.request
    if fit.fits:
        return None, others
    budget = (
        f"needs {fit.needed_per_gpu / GIB:,.1f} GiB per GPU, "
        f"{fit.usable_per_gpu / GIB:,.1f} GiB usable at {request.mem_util:.0%}"
    )
    if fit.max_sequences == 0:
        headline = (
            f"{FIT_WARNING_START} not one sequence of {request.context:,} tokens fits ({budget}). "
            "The charts' ceilings below are for hardware that could hold it."
        )
    else:
        headline = (
            f"{FIT_WARNING_START} only {fit.max_sequences:,} of the {request.batch:,} sequences "
            f"fit at {request.context:,} tokens ({budget})."
        )
    return headline, others


def plan_metrics(plan: PlanResult) -> tuple[list[Metric], list[Metric]]:
    """The plan's two rows of four cards: memory and fit, then the speed bounds (no number for
    a plan where not one sequence fits: nothing runs there)."""
    fit, decode = plan.fit, plan.decode
    runs_nothing = not fit.fits and fit.max_sequences == 0
    # GiB first, as the memory bar, the fit warning and the GPU table use; GB beside it.
    memory = [
        Metric(
            "KV cache per token",
            f"{plan.kv_bytes_per_token:,.0f} B",
            help=f"{plan.model.layers} layers × {plan.model.attention_kind} × {plan.kv.label}",
        ),
        Metric(
            "KV cache for the batch",
            f"{plan.kv_total_bytes / GIB:,.1f} GiB",
            f"{plan.kv_total_bytes / GB:,.1f} GB",
        ),
        Metric(
            "Weights",
            f"{plan.weights.total / GIB:,.1f} GiB",
            f"{plan.weights.total / GB:,.1f} GB · {plan.weights.bits_per_weight:.2f} bits/weight",
        ),
        Metric(
            "Fits?", "yes" if fit.fits else "no", f"max {fit.max_sequences:,} sequences at this context"
        ),
    ]
    speed = [
        Metric(
            "Decode bound",
            "—" if runs_nothing else rate(decode.bound_tok_s),
            "not one sequence fits"
            if runs_nothing
            else f"{decode.per_sequence_tok_s:,.1f} tok/s per sequence",
        ),
        # "memory bandwidth" does not fit a quarter-width metric; "bandwidth" says the same.
        Metric(
            "Decode limited by",
            decode.limited_by.replace("memory ", ""),
            f"intensity {decode.arithmetic_intensity:,.0f} FLOP/B "
            f"(ridge {plan.roofline.ridge_point:,.0f})",
        ),
        Metric(
            "Compute-bound from batch",
            f"{plan.crossover_batch:,}" if plan.crossover_batch else "never",
            help="Long contexts keep decode bandwidth-bound: every sequence adds its own KV bytes.",
        ),
        Metric(
            "Prefill bound",
            "—" if runs_nothing else rate(plan.prefill.bound_tok_s),
            "not one sequence fits"
            if runs_nothing
            else f"TTFT ≥ {units.duration(plan.prefill.ttft_lower_bound_s)}",
        ),
    ]
    return memory, speed


def cost_floor(plan: PlanResult, gpu_usd_per_hour: str) -> Metric:
    """What a million output tokens cost at the decode bound, at the user's own price per
    GPU-hour (there is no default price: a silent one would read as a quote). A floor: engines
    reach a fraction of the bound, and the real cost is higher by the same factor. Raises
    ValidationError for a price that does not read (services/core/cost.py says why)."""
    price = cost.parse_usd_per_hour(gpu_usd_per_hour)
    label = "Cost floor per 1M output tokens"
    if price is None:
        return Metric(label, cost.NOT_PRICED, help="Give your price per GPU-hour above.")
    gpus = plan.request.tp
    runs_nothing = not plan.fit.fits and plan.fit.max_sequences == 0
    floor = None if runs_nothing else cost.usd_per_million(price * gpus, plan.decode.bound_tok_s)
    return Metric(
        label,
        units.usd(floor),
        f"at the decode bound, {gpus} GPU(s) at ${price:g}/GPU-hour",
        help="A floor: real engines reach a fraction of the decode bound, so they cost more per "
        "token by the same factor. A benchmark with the engine's price gives the measured cost.",
    )


def feature_matrix() -> pd.DataFrame:
    """Engines as columns, features as rows."""
    return pd.DataFrame(engines_reference.feature_matrix()).T


def feature_sources() -> pd.DataFrame:
    return pd.DataFrame(engines_reference.feature_rows())


def model_table() -> pd.DataFrame:
    return pd.DataFrame(model_rows())


def gpu_table() -> pd.DataFrame:
    return pd.DataFrame(gpu_rows())


def _one_of(value: str, choices: tuple[str, ...], what: str) -> str:
    if value not in choices:
        raise ValidationError(f"Unknown {what} {value!r}; known: {', '.join(choices)}.")
    return value


def constraints(
    hardware: str,
    gpus: int,
    traffic: str,
    prefix_sharing: str,
    structured_output: bool,
    operations: str,
    model_format: str,
) -> engines_reference.Constraints:
    """The "Which engine?" form's answers as the constraints rank_engines takes."""
    return engines_reference.Constraints(
        hardware=cast(engines_reference.Hardware, _one_of(hardware, HARDWARE, "hardware")),
        gpus=int(gpus),
        traffic=cast(engines_reference.Traffic, _one_of(traffic, TRAFFIC, "traffic")),
        prefix_sharing=cast(
            engines_reference.PrefixSharing, _one_of(prefix_sharing, PREFIX_SHARING, "prefix sharing")
        ),
        structured_output=structured_output,
        operations=cast(engines_reference.Operations, _one_of(operations, OPERATIONS, "operations")),
        model_format=cast(
            engines_reference.ModelFormat, _one_of(model_format, tuple(MODEL_FORMATS), "model format")
        ),
    )


#: What the ranking is, and where a measured winner comes from: the decision helper scores the
#: engines' reference data and names no measured winner; Compare does, and only between runs
#: whose setups are comparable (services.bench.comparability).
RANKING_NOTE = (
    "Ranked from the engines' reference data, not from measurements; the line under each "
    "engine is what your stored runs of its kind measured (cost per 1M output tokens at the "
    "price each run stored, energy per output token), whatever model or GPU they ran. For a "
    "measured winner, "
    "benchmark the candidates and compare the runs on the Runs page: it names one only when "
    "the runs are comparable (same lengths served, fixed output honoured, prefix cache, load, "
    "token counter, timing) and lists what differs otherwise."
)


@dataclass(frozen=True)
class RankingCard:
    """One ranked engine as markdown: its place, name and score, then its reasons as a list,
    then what the stored runs measured of its kind (cost and energy; "" when not asked)."""

    title: str
    reasons: str
    measured: str = ""


def ranking_cards(
    constraints: engines_reference.Constraints,
    measured: dict[str, MeasuredKind] | None = None,
) -> list[RankingCard]:
    """The engines best-first for the "Which engine?" answers (names and reasons are ours);
    with `measured`, each card also says its kind's cheapest stored step meeting the SLOs."""
    cards = []
    for ranking in engines_reference.rank_engines(constraints):
        verdict = f"score {ranking.score:+d}" if ranking.supported else "not an option"
        place = f"{ranking.place_label}. " if ranking.place else ""
        reasons = "\n".join(f"- {reason}" for reason in ranking.reasons) or "- no rule applies"
        line = ""
        if measured is not None:
            line = measured[ranking.kind].line if ranking.kind in measured else NO_RUNS
        cards.append(
            RankingCard(title=f"**{place}{ranking.label}** — {verdict}", reasons=reasons, measured=line)
        )
    return cards


@dataclass(frozen=True)
class Decision:
    """The "Which engine?" answer: the ranked cards, each with its kind's measured cost and
    energy, and the cheapest stored step meeting its SLOs across kinds (markdown)."""

    cards: list[RankingCard]
    cheapest: str


def decision(constraints: engines_reference.Constraints) -> Decision:
    """The ranking with what the stored runs measured; an unreadable run database is said in
    the cheapest line and leaves the ranking whole."""
    try:
        measured = measured_by_kind()
    except SQLAlchemyError as error:
        line = md_line(f"Stored runs cannot be read, so no measured cost or energy: {error}")
        return Decision(ranking_cards(constraints), line)
    labels = engines_reference.tables().engines
    best = [(m.cheapest, labels.get(kind, kind)) for kind, m in measured.items() if m.cheapest]
    if best:
        step, label = min(best, key=lambda pair: (pair[0].usd_per_1m or 0.0, pair[0].run_id))
        cheapest = md_line(
            f"Cheapest measured meeting its SLOs: {label} ({step.where}), "
            f"{units.usd(step.usd_per_1m, missing=cost.NOT_PRICED)} per 1M {step.counted}. Runs of "
            "other models or GPUs are not comparable: check each line's run."
        )
    elif measured:
        cheapest = md_line(
            "No stored step both has a price and met its SLOs: cost per 1M tokens is "
            f"{cost.NOT_PRICED} or over the SLOs for every engine kind measured."
        )
    else:
        cheapest = md_line(
            "No finished benchmark or tuning run is stored: benchmark the candidates with a "
            "price per hour to see what a million tokens cost each."
        )
    return Decision(ranking_cards(constraints, measured), cheapest)


@dataclass(frozen=True)
class LaunchForm:
    """The launch form's fields as the user left them."""

    engine: str
    model: str
    gpus: int
    max_model_len: int
    gpu_memory_utilization: float
    parallel_slots: int
    prefix_caching: bool
    port: int  # 0: the engine's default
    bind_host: str
    served_model_name: str


def launch_command(planned: launch.LaunchOptions, form: LaunchForm) -> launch.LaunchCommand:
    """The command for the plan's options as the form overrides them."""
    return launch.build_launch(
        replace(
            planned,
            engine=form.engine,
            model=form.model,
            gpus=int(form.gpus),
            max_model_len=int(form.max_model_len),
            gpu_memory_utilization=float(form.gpu_memory_utilization),
            prefix_caching=form.prefix_caching,
            parallel_slots=int(form.parallel_slots),
            port=int(form.port) or None,
            bind_host=form.bind_host.strip(),
            served_model_name=form.served_model_name.strip() or None,
        )
    )


def suggested_engine_name(command: launch.LaunchCommand) -> str:
    return f"{command.engine}-{catalog.slugify(command.model_name.split('/')[-1])}"[:100]


def add_model(
    *,
    key: str,
    name: str,
    hf_id: str = "",
    upload_name: str | None = None,
    upload: bytes | None = None,
    gguf_path: str = "",
) -> ModelSpec:
    """Save a model of one's own from an uploaded config.json or GGUF file, or a GGUF path on
    this server (in that order of preference)."""
    key, name = key.strip(), name.strip()
    if upload is not None and upload_name is not None and upload_name.endswith(".json"):
        spec = importers.model_from_config_text(upload, key=key, name=name, hf_id=hf_id.strip() or None)
    elif upload is not None and upload_name is not None:
        spec, _ = importers.model_from_gguf_bytes(upload, upload_name, key=key, name=name)
    elif gguf_path.strip():
        spec, _ = importers.model_from_gguf(gguf_path.strip(), key=key, name=name)
    else:
        raise ValidationError("Upload a config.json or GGUF file, or give a GGUF path.")
    return catalog.save_custom_model(spec)


def add_gpu(
    *,
    key: str,
    name: str,
    memory_gib: float,
    bandwidth_gb_s: float,
    bf16_tflops: float,
    fp8_tflops: float,
) -> GpuSpec:
    """Save a GPU of one's own (FP8 0: it has no FP8 path)."""
    gpu = GpuSpec(
        key=key.strip(),
        name=name.strip() or key.strip(),
        memory_bytes=int(memory_gib * GIB),
        bandwidth_bytes_s=bandwidth_gb_s * 1e9,
        bf16_tflops=bf16_tflops,
        fp8_tflops=fp8_tflops or None,
        source="added by a user",
        custom=True,
    )
    return catalog.save_custom_gpu(gpu)


def removable() -> list[tuple[str, str]]:
    """(kind, key) of every model and GPU a user added."""
    return [("model", k) for k in catalog.custom_models()] + [("gpu", k) for k in catalog.custom_gpus()]


def stored_runs(model: str, gpu: str) -> runs.PlanRuns:
    """The stored runs to measure a plan against; an unreachable run database is a
    ShootoutError that says so (the page shows it and keeps the rest)."""
    try:
        return runs.runs_for_plan(model, gpu)
    except SQLAlchemyError as error:
        raise ShootoutError(f"Cannot read stored runs: {error}") from error


# ------------------------------------------------- "Measured against the limit"


@dataclass(frozen=True)
class RunOffer:
    """The stored runs offered to measure a plan against: those of the planned model and GPU,
    and (listed only on request) the others, with a markdown notice when none is comparable."""

    comparable: list[runs.RunMatch]
    others: list[runs.RunMatch]
    notice: str | None

    @property
    def others_label(self) -> str:
        """The checkbox that lists the others: engine results and the runs they come from, as
        the list counts them (issue 47: "28 runs" beside 9 runs, one entry per engine)."""
        entries, run_count = len(self.others), len({m.entry.run_id for m in self.others})
        results = "engine result" if entries == 1 else "engine results"
        return (
            f"Also list {entries} {results} from {run_count} run{'s' if run_count != 1 else ''} "
            "of another model or hardware"
        )

    def choices(self, include_others: bool = False) -> dict[str, runs.RunMatch]:
        """Label -> run, the comparable runs first."""
        matches = self.comparable + self.others if include_others else self.comparable
        return {match.entry.label: match for match in matches}


def _plan_names(planned: PlanResult) -> str:
    return f"{md_line(planned.model.name)} on {md_line(planned.gpu.name)}"


def run_offer(planned: PlanResult) -> RunOffer:
    """The stored runs for the plan's model and GPU (a ShootoutError when the database cannot be read)."""
    found = stored_runs(planned.request.model, planned.request.gpu)
    notice = None
    if not found.all:
        notice = "No stored run has an output throughput yet. Run a benchmark, or type a number."
    elif not found.comparable:
        notice = (
            f"No stored run is comparable with this plan: none recorded {_plan_names(planned)}. "
            "Run a benchmark of that model on that GPU, or type a number."
        )
    return RunOffer(comparable=found.comparable, others=found.others, notice=notice)


@dataclass(frozen=True)
class MeasuredAgainstBound:
    """A measured rate against the plan's bound at the batch and context it was measured at."""

    plan: PlanResult
    share: Metric
    achieved_tok_s: float
    warning: str | None = None  # markdown: the run measures a different setup
    caption: str | None = None  # markdown: at which batch and context it was compared


def _against(
    request: PlanRequest, batch: int, context: int, achieved: float
) -> tuple[PlanResult, Metric]:
    plan = make_plan(replace(request, batch=batch, context=context, achieved_tok_s=achieved))
    measured = plan.measured
    if measured is None:  # make_plan measures whenever achieved_tok_s is given
        raise ShootoutError("The plan did not measure the achieved rate.")
    share = Metric(
        "Share of the bound",
        f"{measured.fraction:.1%}",
        f"{measured.achieved_tok_s:,.1f} of {measured.bound_tok_s:,.1f} tok/s ({measured.limited_by})",
    )
    return plan, share


def measure_number(planned: PlanResult, achieved_tok_s: float) -> MeasuredAgainstBound:
    """A typed decode rate against the bound of the plan as it stands."""
    request = planned.request
    plan, share = _against(request, request.batch, request.context, achieved_tok_s)
    return MeasuredAgainstBound(plan=plan, share=share, achieved_tok_s=achieved_tok_s)


def measure_run(planned: PlanResult, match: runs.RunMatch) -> MeasuredAgainstBound:
    """A stored run's throughput against the bound at its own mean concurrency and context, on
    the plan's model, GPU and format; a run of another setup says why its share means little."""
    entry = match.entry
    batch, context = entry.batch, entry.context or planned.request.context
    plan, share = _against(planned.request, batch, context, entry.output_tok_s)
    warning = None
    if not match.comparable:
        warning = (
            "This run is not comparable with the plan ("
            + md_line("; ".join(match.reasons))
            + f"): its share of the {_plan_names(planned)} bound does not measure how close that "
            "setup comes to its limit."
        )
    cautions = entry.fingerprint.cautions
    if cautions:
        # The same traps Compare refuses a winner for make a share of the bound read high.
        warning = (warning + " " if warning else "") + (
            "Its figures overstate what the setup sustains: " + md_line("; ".join(cautions)) + "."
        )
    caption = (
        f"Compared at batch {batch} and context {context:,} (the run's mean concurrency and mean "
        "context), on the model, GPU and format chosen above; its throughput includes prefill time."
    )
    return MeasuredAgainstBound(
        plan=plan, share=share, achieved_tok_s=entry.output_tok_s, warning=warning, caption=caption
    )
