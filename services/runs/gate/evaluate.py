"""The gate's judgement: each threshold on each engine of a candidate run against the baseline.

A check fails only when three things hold: the change passes its threshold, it is beyond the
noise verdict the comparison already computes (repeats, else a bootstrap of the requests), and
the two setups are comparable. Not comparable is its own outcome (exit 3), unless the user
compares anyway, which the outputs then say.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Literal

from services.core.errors import ValidationError
from services.runs.comparability import ComparabilityVerdict, compare_fingerprints
from services.runs.comparison import compare_runs
from services.runs.gate.rules import Threshold
from services.runs.records import Comparison, NoiseCheck, Series, format_value
from services.runs.verdicts import noise_between

EXIT_PASS = 0
EXIT_REGRESSION = 1
EXIT_BAD_ARGUMENTS = 2
EXIT_NOT_COMPARABLE = 3

CheckStatus = Literal["pass", "fail", "within noise", "noise unknown", "not measured", "not judged"]


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

    @property
    def failed(self) -> bool:
        return self.status == "fail"

    def value_text(self, value: float | None) -> str:
        return format_value(self.threshold.metric, value)

    @property
    def change_text(self) -> str:
        return "—" if self.change_pct is None else f"{self.change_pct:+.1f}%"

    @property
    def text(self) -> str:
        """One line: the check, its figures and why it passed or failed."""
        figures = (
            f"{self.value_text(self.baseline_value)} -> {self.value_text(self.candidate_value)} "
            f"({self.change_text}, limit {self.threshold.text.split(':', 1)[1]})"
        )
        why = {
            "pass": "within the limit",
            "fail": "regression beyond the limit and beyond noise",
            "within noise": "past the limit but within noise",
            "noise unknown": "past the limit, noise unknown",
            "not measured": "not measured on both sides",
            "not judged": "not judged: the runs are not comparable",
        }[self.status]
        return f"{self.engine} {self.threshold.name}: {figures}: {why}"


@dataclass(frozen=True)
class Pair:
    baseline: Series
    candidate: Series
    verdict: ComparabilityVerdict

    @property
    def engine(self) -> str:
        same = self.baseline.engine == self.candidate.engine
        return self.candidate.engine if same else f"{self.baseline.engine} -> {self.candidate.engine}"


@dataclass(frozen=True)
class GateResult:
    thresholds: tuple[Threshold, ...]
    pairs: tuple[Pair, ...]
    checks: tuple[Check, ...]
    override: bool
    fail_on_unknown_noise: bool
    #: Series of either run with no partner in the other (engines only one side measured).
    unpaired: tuple[str, ...] = ()
    run_ids: tuple[int, ...] = field(default=())

    @property
    def comparable(self) -> bool:
        return all(pair.verdict.comparable for pair in self.pairs)

    @property
    def failed_checks(self) -> list[Check]:
        return [check for check in self.checks if check.failed]

    @property
    def exit_code(self) -> int:
        if not self.comparable and not self.override:
            return EXIT_NOT_COMPARABLE
        return EXIT_REGRESSION if self.failed_checks else EXIT_PASS

    @property
    def outcome(self) -> str:
        return {
            EXIT_PASS: "pass",
            EXIT_REGRESSION: "regression",
            EXIT_NOT_COMPARABLE: "not comparable",
        }[self.exit_code]

    @property
    def message(self) -> str:
        """The one line the CLI ends with."""
        if self.exit_code == EXIT_NOT_COMPARABLE:
            differing = sorted({d.label.lower() for p in self.pairs for d in p.verdict.differences})
            return (
                "not comparable: the runs differ in " + ", ".join(differing) + "; no check was "
                "judged (exit 3). Fix the setup, or pass --allow-incomparable to judge anyway."
            )
        overridden = (
            " (compared although not comparable: --allow-incomparable)"
            if (self.override and not self.comparable)
            else ""
        )
        if self.failed_checks:
            return (
                f"regression: {len(self.failed_checks)} of {len(self.checks)} checks failed{overridden}"
            )
        return f"pass: {len(self.checks)} checks within their limits or within noise{overridden}"


def _value(series: Series, threshold: Threshold) -> float | None:
    if threshold.stat is None:
        return series.rates.get(threshold.metric)
    return series.stats.get(threshold.metric, {}).get(threshold.stat)


def _noise(threshold: Threshold, pair: Pair) -> NoiseCheck:
    """The comparison's noise verdict for the pair. A candidate run of the baseline's own
    configuration is a repeat to the comparison, whose spread then includes the candidate's
    change itself: calling that change noise would pass every regression, so such a pair is
    judged on its requests alone (the bootstrap), as two runs of different setups are."""
    candidate, baseline = pair.candidate, pair.baseline
    if candidate.run_id in baseline.repeat_run_ids:
        candidate = replace(candidate, repeat_run_ids=(), repeat_values={})
        baseline = replace(baseline, repeat_run_ids=(), repeat_values={})
    return noise_between(threshold.metric, threshold.stat, candidate, baseline)


def _check(threshold: Threshold, pair: Pair, fail_on_unknown_noise: bool, judged: bool) -> Check:
    base, cand = _value(pair.baseline, threshold), _value(pair.candidate, threshold)
    change = (cand - base) / base * 100 if base and cand is not None else None
    noise = _noise(threshold, pair)
    status: CheckStatus
    if change is None:
        status = "not measured"
    elif not judged:
        status = "not judged"
    elif not threshold.breached(change):
        status = "pass"
    elif noise.status == "beyond" or (noise.status == "unknown" and fail_on_unknown_noise):
        status = "fail"
    elif noise.status == "within":
        status = "within noise"
    else:
        status = "noise unknown"
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
    fail_on_unknown_noise: bool = False,
) -> GateResult:
    """The gate for stored runs: `baseline_run` against each of `candidate_runs`."""
    ids = [baseline_run, *(r for r in candidate_runs if r != baseline_run)]
    if len(ids) < 2:
        raise ValidationError("The gate needs a baseline run and at least one other run.")
    comparison = compare_runs(ids, baseline_run, allow_incomparable=allow_incomparable)
    pairs, unpaired = _pairs(comparison, baseline_run)
    if not pairs:
        raise ValidationError(
            "No engine of the compared runs matches one of the baseline's: name them alike, "
            "or compare runs of one engine each."
        )
    checks = tuple(
        _check(
            threshold,
            pair,
            fail_on_unknown_noise,
            judged=pair.verdict.comparable or allow_incomparable,
        )
        for pair in pairs
        for threshold in thresholds
    )
    return GateResult(
        thresholds=tuple(thresholds),
        pairs=tuple(pairs),
        checks=checks,
        override=allow_incomparable,
        fail_on_unknown_noise=fail_on_unknown_noise,
        unpaired=tuple(unpaired),
        run_ids=tuple(ids),
    )
