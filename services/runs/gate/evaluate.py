"""The gate's judgement: each threshold on each engine of a candidate run against the baseline.

A check fails when its change passes its threshold and is beyond the noise verdict
(services/runs/gate/noise.py), or when its noise is unknown (unless `--allow-unknown-noise`),
between comparable setups. A figure missing on either side is "not measured", which fails the
gate with an exit code of its own unless the check is optional. A run where nothing completed
fails whatever the flags. Not comparable is its own outcome (exit 3), unless the user compares
anyway, which the outputs then say. Beside the checks, the gate's findings
(services/runs/gate/findings.py: a broken workload, a stall, a jump, figures that cannot be
trusted) fail it unless their flag passes them; a broken workload, nothing does.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Literal

from services.bench.comparability import ComparabilityVerdict, compare_fingerprints
from services.bench.explain import Explanation, explain
from services.bench.explain.reasons import RATES, TIMES
from services.core.errors import ShootoutError, ValidationError
from services.runs.comparison import compare_runs
from services.runs.gate.findings import Allowed, GateFinding, changed_side, pair_findings, summaries_of
from services.runs.gate.noise import DRIFT_UNMEASURED, gate_noise
from services.runs.gate.rules import REQUEST_NAMES, Threshold, with_default_checks
from services.runs.records import Comparison, NoiseCheck, Series, format_value
from services.runs.why import side_of

EXIT_PASS = 0
EXIT_REGRESSION = 1
EXIT_BAD_ARGUMENTS = 2
EXIT_NOT_COMPARABLE = 3
EXIT_NOT_MEASURED = 4
EXIT_TOOL_ERROR = 5
#: Each exit code in words: the closing line, the Markdown title, `--json`'s outcome.
OUTCOMES: dict[int, str] = {
    EXIT_PASS: "pass",
    EXIT_REGRESSION: "regression",
    EXIT_BAD_ARGUMENTS: "bad arguments",
    EXIT_NOT_COMPARABLE: "not comparable",
    EXIT_NOT_MEASURED: "not measured",
    EXIT_TOOL_ERROR: "tool error",
}

CheckStatus = Literal[
    "pass", "fail", "within noise", "noise unknown", "not measured", "skipped", "not judged"
]
#: The order the closing line counts them in, and its words for each.
_COUNTED: tuple[tuple[CheckStatus, str], ...] = (
    ("fail", "failed"),
    ("not measured", "not measured"),
    ("not judged", "not judged"),
    ("within noise", "within noise"),
    ("noise unknown", "past the limit with noise unknown (allowed)"),
    ("pass", "passed"),
    ("skipped", "skipped (optional, not measured)"),
)

#: A finding's status in the closing line.
_FINDING_WORDS = {"fail": "failed", "allowed": "allowed", "note": "noted"}


class GateToolError(ShootoutError):
    """The gate could not judge: a missing run, an unreadable baseline. Its own exit code."""

    exit_code = EXIT_TOOL_ERROR


@dataclass(frozen=True)
class Check:
    threshold: Threshold
    engine: str
    baseline: str
    candidate: str
    baseline_value: float | None
    candidate_value: float | None
    change_pct: float | None
    noise: NoiseCheck
    status: CheckStatus
    #: Why the candidate lost on this figure, for a regression only (services/runs/why.py):
    #: said beside the failure, never part of its verdict.
    explanation: Explanation | None = None

    @property
    def failed(self) -> bool:
        """Whether this check fails the gate: a regression, a required figure not measured, a
        check not judged because the runs are not comparable."""
        return self.status in ("fail", "not measured", "not judged")

    def value_text(self, value: float | None) -> str:
        if self.threshold.points:
            return "—" if value is None else f"{value:.1f}%"
        return format_value(self.threshold.metric, value)

    @property
    def change_text(self) -> str:
        if self.change_pct is None:
            return "—"
        return f"{self.change_pct:+.1f}{'pp' if self.threshold.points else '%'}"

    @property
    def text(self) -> str:
        """One line: the check, its figures and why it passed or failed."""
        figures = (
            f"{self.value_text(self.baseline_value)} -> {self.value_text(self.candidate_value)} "
            f"({self.change_text}, limit {self.threshold.limit_text})"
        )
        if self.status == "fail" and self.threshold.points:
            why = "more failed requests than the limit allows"
        elif self.status == "fail" and self.noise.status == "unknown":
            why = "past the limit, noise unknown (--allow-unknown-noise passes it)"
        else:
            why = {
                "pass": "within the limit",
                "fail": f"regression beyond the limit and beyond {self.noise_judged}"
                + (f"; {DRIFT_UNMEASURED}" if self.noise.method == "bootstrap" else ""),
                "within noise": f"past the limit but within {self.noise_judged}",
                "noise unknown": "past the limit, noise unknown: allowed by --allow-unknown-noise",
                "not measured": "not measured on both sides: fails (mark the check optional "
                "with a trailing ? to skip it)",
                "skipped": "not measured on both sides: skipped (optional check)",
                "not judged": "not judged: the runs are not comparable",
            }[self.status]
        default = " (default check)" if self.threshold.implicit else ""
        return f"{self.engine} {self.threshold.name}{default}: {figures}: {why}"

    @property
    def noise_judged(self) -> str:
        """Which noise judged the change, in words (a regression judged within the run adds
        that run-to-run drift was not measured)."""
        if self.noise.method == "repeats":
            return "run-to-run noise (stored repeats)"
        if self.noise.method == "bootstrap":
            return "the run's own noise"
        return "noise"


def _nothing_completed(series: Series) -> str | None:
    """Words for a series whose measured requests all failed (or that has none); None otherwise."""
    if series.completed is None or series.completed > 0:
        return None
    failed = series.failed or 0
    return f"{series.label}: nothing completed (0 of {failed} requests; {failed} failed)"


@dataclass(frozen=True)
class Pair:
    baseline: Series
    candidate: Series
    verdict: ComparabilityVerdict

    @property
    def engine(self) -> str:
        same = self.baseline.engine == self.candidate.engine
        return self.candidate.engine if same else f"{self.baseline.engine} -> {self.candidate.engine}"

    @property
    def nothing_completed(self) -> list[str]:
        """Each side of the pair on which nothing completed, in words."""
        return [text for s in (self.baseline, self.candidate) if (text := _nothing_completed(s))]


@dataclass(frozen=True)
class GateResult:
    thresholds: tuple[Threshold, ...]
    pairs: tuple[Pair, ...]
    checks: tuple[Check, ...]
    override: bool
    allow_unknown_noise: bool
    #: Series of either run with no partner in the other (engines only one side measured).
    unpaired: tuple[str, ...] = ()
    run_ids: tuple[int, ...] = field(default=())
    #: Candidates that look like repeats of the baseline and are not: what differs.
    not_repeats: tuple[str, ...] = ()
    #: What the gate found beside its checks (services/runs/gate/findings.py).
    findings: tuple[GateFinding, ...] = ()

    @property
    def comparable(self) -> bool:
        return all(pair.verdict.comparable for pair in self.pairs)

    def _failing(self, kind: str, side: str | None = None) -> list[GateFinding]:
        return [
            f for f in self.findings if f.failed and f.kind == kind and (side is None or f.side == side)
        ]

    @property
    def broken(self) -> list[GateFinding]:
        """Candidates that broke the workload: they fail whatever the flags."""
        return self._failing("broken workload", "candidate")

    @property
    def broken_baselines(self) -> list[GateFinding]:
        """Baselines that broke the workload: nothing is comparable with them, whatever the flags."""
        return self._failing("broken workload", "baseline")

    @property
    def untrusted(self) -> list[GateFinding]:
        return self._failing("untrusted")

    @property
    def failed_findings(self) -> list[GateFinding]:
        """The findings that fail the gate as a regression would (a stall, a jump)."""
        return [
            f for f in self.findings if f.failed and f.kind in ("stall", "jump", "identical answers")
        ]

    @property
    def nothing_completed(self) -> list[str]:
        return list(dict.fromkeys(text for pair in self.pairs for text in pair.nothing_completed))

    @property
    def failed_checks(self) -> list[Check]:
        return [check for check in self.checks if check.failed]

    @property
    def exit_code(self) -> int:
        if self.nothing_completed or self.broken:
            return EXIT_REGRESSION  # whatever the flags, --allow-incomparable included
        if self.broken_baselines or (not self.comparable and not self.override):
            return EXIT_NOT_COMPARABLE
        # A stall is judged beyond the generator's own longest delay: a busy host makes none.
        if self._failing("stall"):
            return EXIT_REGRESSION
        # A client-bound (or shared) measurement's regressions may be the host's: not measured.
        if self.untrusted:
            return EXIT_NOT_MEASURED
        if any(check.status == "fail" for check in self.checks) or self.failed_findings:
            return EXIT_REGRESSION
        if any(check.status == "not measured" for check in self.checks):
            return EXIT_NOT_MEASURED
        return EXIT_PASS

    @property
    def outcome(self) -> str:
        return OUTCOMES[self.exit_code]

    @property
    def counts(self) -> str:
        """What happened to the checks (and the findings): "2 failed, 1 within noise, 1 not
        measured; findings: stall (failed)"."""
        parts = []
        for status, words in _COUNTED:
            count = sum(1 for check in self.checks if check.status == status)
            if count:
                parts.append(f"{count} {words}")
        found = [f"{f.kind} ({_FINDING_WORDS[f.status]})" for f in self.findings]
        findings = f"; findings: {', '.join(dict.fromkeys(found))}" if found else ""
        return (", ".join(parts) or "no checks") + findings

    @property
    def message(self) -> str:
        """The one line the CLI ends with."""
        code = self.exit_code
        if self.nothing_completed or self.broken:
            said = [*self.nothing_completed, *(f.text for f in self.broken)]
            return f"regression: {'; '.join(said)}; checks: {self.counts} (exit {code})"
        if code == EXIT_NOT_COMPARABLE:
            return self._not_comparable(code)
        if code == EXIT_NOT_MEASURED and self.untrusted:
            which = ", ".join(dict.fromkeys(f.brief or f.text for f in self.untrusted))
            return (
                f"not measured: the figures cannot be trusted ({which}: the evidence is in the "
                f"findings); "
                f"checks: {self.counts} (exit {code}). Measure where the load generator keeps up, "
                "one engine at a time, or pass --allow-untrusted to judge anyway."
            )
        overridden = (
            " (compared although not comparable: --allow-incomparable)"
            if (self.override and not self.comparable)
            else ""
        )
        return f"{OUTCOMES[code]}: {self.counts}{overridden} (exit {code})"

    def _not_comparable(self, code: int) -> str:
        """Not comparable: which side changed what, and what passes it (or that nothing does)."""
        parts = [f.text for f in self.broken_baselines]
        by_side: dict[str, list[str]] = {}
        for pair in self.pairs:
            for d in pair.verdict.differences:
                side = changed_side(d, pair.baseline.fingerprint, pair.candidate.fingerprint)
                label = pair.candidate.label if side == "candidate" else pair.baseline.label
                whose = f"the {side} {label} changed" if side else "the runs differ in"
                by_side.setdefault(whose, []).append(d.label.lower())
        parts += [f"{whose} {', '.join(dict.fromkeys(labels))}" for whose, labels in by_side.items()]
        if self.broken_baselines:
            advice = "Choose another baseline: --allow-incomparable does not judge a broken one."
        elif any(whose.endswith(" changed") for whose in by_side):
            advice = (
                "The changed side's answers or counts differ from the workload asked: fix that "
                "engine, or pass --allow-incomparable to judge anyway."
            )
        else:
            advice = "Fix the setup, or pass --allow-incomparable to judge anyway."
        return (
            f"not comparable: {'; '.join(parts)}; no check was judged ({self.counts}; "
            f"exit {code}). {advice}"
        )


def _value(series: Series, threshold: Threshold) -> float | None:
    """The check's figure of one series; failed requests in per cent of the measured ones."""
    if threshold.metric in REQUEST_NAMES:
        if series.completed is None or series.failed is None:
            return None
        total = series.completed + series.failed
        if total <= 0:
            return None
        share = series.failed / total if threshold.metric == "error_rate" else series.completed / total
        return share * 100
    if threshold.stat is None:
        return series.rates.get(threshold.metric)
    return series.stats.get(threshold.metric, {}).get(threshold.stat)


def _check(threshold: Threshold, pair: Pair, allow_unknown_noise: bool, judged: bool) -> Check:
    base, cand = _value(pair.baseline, threshold), _value(pair.candidate, threshold)
    if threshold.points:
        change = cand - base if base is not None and cand is not None else None
    else:
        change = (cand - base) / base * 100 if base and cand is not None else None
    noise = gate_noise(threshold, pair.baseline, pair.candidate, base, cand)
    status: CheckStatus
    if change is None:
        status = "skipped" if threshold.optional else "not measured"
    elif not judged:
        status = "not judged"
    elif not threshold.breached(change):
        status = "pass"
    elif threshold.points or noise.status == "beyond":
        status = "fail"
    elif noise.status == "within":
        status = "within noise"
    else:
        status = "noise unknown" if allow_unknown_noise else "fail"
    return Check(
        threshold=threshold,
        engine=pair.engine,
        baseline=pair.baseline.label,
        candidate=pair.candidate.label,
        baseline_value=base,
        candidate_value=cand,
        change_pct=change,
        noise=noise,
        status=status,
    )


def _pairs_of(pairs: list[Pair], checked: list[Threshold]) -> list[Pair]:
    """Each check's pair, in the order the checks were made (every threshold for every pair)."""
    return [pair for pair in pairs for _threshold in checked]


def _explained(check: Check, pair: Pair) -> Check:
    """A regression with why the candidate lost on its figure (the baseline as the winner)."""
    if check.status != "fail" or check.threshold.metric not in EXPLAINED_METRICS:
        return check
    found = explain(
        check.threshold.metric,
        side_of(pair.baseline),
        side_of(pair.candidate),
        noise=check.noise.status,
    )
    return replace(check, explanation=found)


#: The figures an explanation reads (services/bench/explain): latencies and throughputs.
EXPLAINED_METRICS = frozenset({*TIMES, *RATES})


def _pairs(comparison: Comparison, baseline_run: int) -> tuple[list[Pair], list[str]]:
    """Each engine of the baseline run with the same engine of each other run; two runs of
    one engine each pair whatever their names."""
    base = [s for s in comparison.series if s.run_id == baseline_run]
    others = [s for s in comparison.series if s.run_id != baseline_run]
    pairs: list[Pair] = []
    used: set[str] = set()
    for run_id in dict.fromkeys(s.run_id for s in others):
        candidates = [s for s in others if s.run_id == run_id]
        if len(base) == 1 and len(candidates) == 1:
            matched = [(base[0], candidates[0])]
        else:
            by_name = {s.engine: s for s in base}
            matched = [(by_name[s.engine], s) for s in candidates if s.engine in by_name]
        for a, b in matched:
            used.update((a.key, b.key))
            verdict = compare_fingerprints(a.fingerprint, b.fingerprint, (a.label, b.label))
            pairs.append(Pair(a, b, verdict))
    unpaired = [s.label for s in comparison.series if s.key not in used]
    return pairs, unpaired


def evaluate(
    baseline_run: int,
    candidate_runs: Sequence[int],
    thresholds: Sequence[Threshold],
    *,
    allow_incomparable: bool = False,
    allow_unknown_noise: bool = False,
    allowed: Allowed | None = None,
) -> GateResult:
    """The gate for stored runs: `baseline_run` against each of `candidate_runs`. The default
    error check is added unless failed requests are named; the findings are looked for in each
    pair (`allowed`: those their flags pass)."""
    ids = [baseline_run, *(r for r in candidate_runs if r != baseline_run)]
    if len(ids) < 2:
        raise ValidationError("The gate needs a baseline run and at least one other run.")
    try:
        comparison = compare_runs(ids, baseline_run, allow_incomparable=allow_incomparable)
    except ShootoutError as error:  # a missing run, a run with nothing to compare
        raise GateToolError(str(error)) from None
    pairs, unpaired = _pairs(comparison, baseline_run)
    if not pairs:
        raise GateToolError(
            "No engine of the compared runs matches one of the baseline's: name them alike, "
            "or compare runs of one engine each."
        )
    checked = with_default_checks(list(thresholds))
    checks = tuple(
        _check(
            threshold,
            pair,
            allow_unknown_noise,
            # A run where nothing completed fails anyway: its checks say by how much.
            judged=pair.verdict.comparable or allow_incomparable or bool(pair.nothing_completed),
        )
        for pair in pairs
        for threshold in checked
    )
    checks = tuple(
        _explained(check, pair) for check, pair in zip(checks, _pairs_of(pairs, checked), strict=True)
    )
    summaries = summaries_of(ids)
    findings = tuple(
        found
        for pair in pairs
        for found in pair_findings(
            pair.baseline,
            pair.candidate,
            summaries,
            allowed or Allowed(),
            judged=pair.verdict.comparable or allow_incomparable,
            changed=[d.label for d in pair.verdict.engine_changes],
        )
    )
    return GateResult(
        thresholds=tuple(checked),
        pairs=tuple(pairs),
        checks=checks,
        override=allow_incomparable,
        allow_unknown_noise=allow_unknown_noise,
        unpaired=tuple(unpaired),
        run_ids=tuple(ids),
        not_repeats=tuple(comparison.repeat_notes),
        findings=findings,
    )
