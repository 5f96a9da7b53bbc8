"""What qualifies a run's figures, built once from what was stored (Run.config, Run.summary).

A throughput or a TTFT read without its load, its warm-up, the generator's self-check and the
engines' notes ("llama.cpp ignores min_tokens") is a different claim (issue 36): every place
that shows or exports a run's figures (the Runs page, the HTML report, the Benchmarks page)
takes its caveats from `run_caveats`, so they say the same everywhere. Plain text out: each
caller escapes for its medium (markdown, HTML).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from services.bench import selfcheck
from services.bench.comparability import run_fingerprint
from services.bench.comparability.build import requested_input_tokens
from services.bench.summary import BenchSummary
from services.core import stored_json
from services.core.json_types import JsonOut

#: Where the two prefix-cache figures come from. They disagree by design (different counters,
#: different requests), so neither is shown without its source.
ENGINE_HIT_SOURCE = "engine counters, warm-up included"
USAGE_HIT_SOURCE = "usage cached_tokens / prompt tokens, measured requests"
#: Why the served input length exceeds the one asked for.
SERVED_INPUT_SOURCE = "as served: the engine's prompt_tokens, chat template included"


@dataclass(frozen=True)
class Caveats:
    """A run's caveats in three groups: how it was measured, the generator's self-check, and
    the notes; every line plain text."""

    #: How the figures were measured: load, requests, warm-up, engines' order, workload.
    load: list[str] = field(default_factory=list)
    #: The generator's self-check (BenchSummary.run_check), its state None for a
    #: run without one (an import).
    self_check: selfcheck.RunCheck = field(default_factory=lambda: selfcheck.RunCheck(None))
    #: What the engines did not do as asked, what a sweep reported, where data came from.
    notes: list[str] = field(default_factory=list)

    @property
    def client_bound(self) -> bool:
        return self.self_check.client_bound

    @property
    def verdict(self) -> str | None:
        """The self-check's verdict when it qualifies the figures (client-bound, or could not
        check), shown as a warning; None when the generator kept up or did not check."""
        if self.self_check.state in (selfcheck.CLIENT_BOUND, selfcheck.UNCHECKED):
            return self.self_check.title
        return None

    @property
    def generator(self) -> list[str]:
        """The self-check in lines: "kept up" when it did, what the verdict means for the
        figures and what to do, then each engine's (each sweep step's) evidence."""
        check = self.self_check
        kept_up = [check.title] if check.state == selfcheck.KEPT_UP else []
        return [*kept_up, *check.advice_lines, *check.evidence_lines]

    @property
    def lines(self) -> list[str]:
        """Every caveat in one list (plain text), as a report writes them: the warning first."""
        verdict = [self.verdict] if self.verdict else []
        return [*verdict, *self.load, *self.generator, *self.notes]

    def __bool__(self) -> bool:
        return bool(self.load or self.self_check.state or self.notes)


def _count(value: Any) -> int | None:
    number = stored_json.number(value)
    return int(number) if number is not None else None


@dataclass(frozen=True)
class _Config:
    """What the caveats read of a run's stored config (any kind, any version), read once."""

    #: The config whole, for the comparability readers that take a stored config.
    stored: object
    warmup_requests: int | None = None
    import_tool: str | None = None
    import_file: str | None = None


def _config(stored: object) -> _Config:
    data = stored_json.mapping(stored)
    imported = stored_json.mapping(data.get("import"))
    return _Config(
        data,
        warmup_requests=_count(stored_json.mapping(data.get("load")).get("warmup_requests")),
        import_tool=stored_json.nonempty_text(imported.get("tool")),
        import_file=stored_json.nonempty_text(imported.get("file")),
    )


def _load_lines(config: _Config, results: BenchSummary) -> list[str]:
    lines: list[str] = []
    load = results.load
    if results.sweep and load:
        # The stored load is the sweep's base: say the levels that actually ran.
        dimension = results.sweep_dimension
        levels = list(
            dict.fromkeys(
                f"{level:g}"
                for row in results.sweep
                if (level := row.concurrency if dimension == "concurrency" else row.rate) is not None
            )
        )
        load = f"{dimension} {', '.join(levels)}; {load.split(', ', 1)[-1]} per step"
    if load:
        lines.append(f"Load: {load} per engine.")
    ran = results.engines_that_ran()
    # A sweep's blocks hold their reported step only: its load line says the bound per step.
    measured = [
        f"{name} {sent}"
        for name, block in ran.items()
        if not results.sweep and (sent := block.sent) is not None
    ]
    if measured:
        lines.append(f"Measured requests: {', '.join(measured)}.")
    warmup = config.warmup_requests
    if warmup is None:
        counts = [c for block in ran.values() if (c := block.warmup) is not None]
        warmup = max(counts) if counts else None
    if warmup:
        lines.append(
            f"Warm-up: {warmup} request(s) per engine before the measured ones, left out of the "
            "figures (the engines' own counters include them)."
        )
    elif warmup == 0:
        lines.append("Warm-up: none; the first requests' cold start is in the figures.")
    if results.workload:
        lines.append(f"Workload: {results.workload}.")
    asked = requested_input_tokens(config.stored)
    if asked is not None:
        lines.append(
            f"Input length: {asked} tokens asked per request, before the chat template; token "
            f"counts are {SERVED_INPUT_SOURCE}, so they read higher."
        )
    if results.engines_run:
        lines.append(f"Engines ran {results.engines_run}.")
    if results.ttft_includes_connect:
        lines.append("TTFT includes opening the connection (connections were not opened ahead).")
    if results.slo:
        lines.append(f"SLOs: {results.slo}.")
    return lines


def _engine_notes(results: BenchSummary) -> list[str]:
    notes = []
    for name, block in results.engines.items():
        if block.not_run:
            notes.append(f"{name} did not run: the run ended before its turn.")
        if block.honoured_output_len is False:
            # The count alone: why they were short (an end-of-sequence token, a stop string, a
            # lying counter) is not known here; the findings below say what was seen.
            notes.append(
                f"{name} did not honour the fixed output length: {block.short_output_requests} "
                "answers were shorter than asked."
            )
        unsupported = block.unsupported_options or []
        if unsupported:
            notes.append(f"{name} ignores {', '.join(unsupported)} (its kind does not take them).")
    labels = results.step_labels()
    for finding in results.findings():
        where = (
            f" (at {labels.get(finding.step, f'step {finding.step}')})"
            if finding.step is not None
            else ""
        )
        notes.append(f"{'Finding' if finding.failing else 'Warning'}: {finding.message}{where}.")
    if results.sweep:
        reported = [
            f"{name} at {labels.get(step, f'step {step}')}"
            for name, block in results.engines.items()
            if (step := block.from_step) is not None
        ]
        how = "the SLO search's answer" if results.slo_search else "highest request throughput"
        if reported:
            notes.append(
                f"The tables show one step per engine ({how}): {', '.join(reported)}; "
                "the charts show every step."
            )
    for name, reason in results.stopped_early.items():
        notes.append(f"{name}: the sweep stopped early: {reason}.")
    for name, found in results.slo_search.items():
        best = found.get("best")
        if best is None:
            notes.append(
                f"{name}: even the lowest {found.get('dimension')} missed the SLOs ({found.get('slo')})."
            )
        else:
            more = " (the search maximum: it may go higher)" if found.get("reached_maximum") else ""
            share = stored_json.number(found.get("required_attainment"))
            notes.append(
                f"{name}: highest {found.get('dimension')} meeting the SLOs ({found.get('slo')}"
                + (f", {share:.0%} of requests" if share is not None else "")
                + f"): {best:g}{more}."
            )
    calibration = results.prompt_calibration
    if calibration.get("method") == "tokenize":
        notes.append(
            f"Prompt lengths checked against {calibration.get('engine')}'s tokenizer "
            f"({calibration.get('words_kept')} of {calibration.get('words_checked')} words are one token)."
        )
    if results.data_attribution:
        notes.append(results.data_attribution)
    return notes


def _import_note(config: _Config) -> list[str]:
    tool, source = config.import_tool, config.import_file
    if not tool:
        return []
    return [f"Imported from {tool}" + (f" ({source})" if source else "") + ": measured by that tool."]


def _fingerprint_notes(config: _Config, results: BenchSummary) -> list[str]:
    """The comparability traps of each engine's own figures (services.bench.comparability) that
    the notes above do not already say (a short output length is said there)."""
    notes = []
    for name in results.engines_that_ran():
        fingerprint = run_fingerprint(config.stored, results.to_json(), [], name)
        for caution in fingerprint.cautions:
            if not caution.startswith("fixed output length"):
                notes.append(f"{name}: {caution}.")
    return notes


def run_caveats(config: object, summary: BenchSummary | JsonOut | None) -> Caveats:
    """A run's caveats from its stored config and summary (any kind; empty where nothing is
    said, never raising on an old or odd summary)."""
    stored = _config(config)
    results = BenchSummary.from_json(summary)
    return Caveats(
        load=_load_lines(stored, results),
        self_check=results.run_check(),
        notes=[*_import_note(stored), *_engine_notes(results), *_fingerprint_notes(stored, results)],
    )
