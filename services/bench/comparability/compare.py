"""Two fingerprints in, one verdict out: "comparable", or exactly what differs.

The one function every place asks (Compare, the HTML report, the CLI gate, the Planner):
`compare_fingerprints`. A field unknown on either side is not a difference and not a match:
it is listed as not checked.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from services.bench.comparability.fingerprint import (
    CACHED_SHARE_POINTS,
    RULES,
    UNKNOWN_BLOCKS,
    Comparability,
    Rule,
    value_text,
)
from services.bench.comparability.weights import speed_rank
from services.core.json_types import JsonOut
from services.engines import get_adapter


@dataclass(frozen=True)
class Difference:
    """One field that differs, with both sides' values as text."""

    field: str
    label: str
    values: tuple[str, str]
    text: str


@dataclass(frozen=True)
class ComparabilityVerdict:
    """One pair of fingerprints (a series against the baseline)."""

    labels: tuple[str, str]
    #: Fields that make the figures measure different things.
    differences: tuple[Difference, ...] = ()
    #: What differs in the engine itself: what the comparison is there to measure.
    engine_changes: tuple[Difference, ...] = ()
    #: Labels of fields one side did not record.
    unchecked: tuple[str, ...] = ()

    @property
    def comparable(self) -> bool:
        return not self.differences

    @property
    def headline(self) -> str:
        pair = f"{self.labels[1]} against {self.labels[0]}"
        if self.comparable:
            return f"{pair}: comparable"
        return f"{pair}: not comparable ({', '.join(d.label.lower() for d in self.differences)})"

    def to_json(self) -> JsonOut:
        return {
            "baseline": self.labels[0],
            "series": self.labels[1],
            "comparable": self.comparable,
            "differences": [d.text for d in self.differences],
            "engine_changes": [d.text for d in self.engine_changes],
            "unchecked": list(self.unchecked),
        }


def _same(rule: Rule, a: Any, b: Any) -> bool:
    if rule.name == "warmup_requests":
        # Two and five warm-up requests both keep the cold start out; none keeps it in.
        return (a == 0) == (b == 0)
    if rule.name == "cached_share" and isinstance(a, float) and isinstance(b, float):
        return abs(a - b) <= CACHED_SHARE_POINTS + 1e-9
    if rule.name in ("model", "hardware"):
        return str(a).strip().lower() == str(b).strip().lower()
    if isinstance(a, float) and isinstance(b, float):
        largest = max(abs(a), abs(b))
        return largest == 0 or abs(a - b) / largest <= rule.tolerance
    return bool(a == b)


#: The rules a cache difference falls under.
CACHE_RULES = frozenset({"prefix_cache", "cached_share"})


def _filled_within(a: Comparability, b: Comparability) -> bool:
    """Both caches started without the workload in them (known, on both sides), and the
    workload is the same where the fingerprint can tell (it blocks otherwise, by its own rule)."""
    return a.cache_warm_at_start is False and b.cache_warm_at_start is False


def _settings_difference(
    a: dict[str, str], b: dict[str, str], volatile: frozenset[str] = frozenset()
) -> str | None:
    # What explains a speed difference first (the weights' dtype before a sampler default).
    changed = (k for k in set(a) | set(b) if a.get(k) != b.get(k) and k not in volatile)
    keys = sorted(changed, key=lambda k: (speed_rank(k), k))
    if not keys:
        return None
    shown = ", ".join(f"{k}: {a.get(k, '-')} vs {b.get(k, '-')}" for k in keys[:5])
    more = f" and {len(keys) - 5} more" if len(keys) > 5 else ""
    return f"{len(keys)} differ ({shown}{more})"


def compare_fingerprints(
    baseline: Comparability, other: Comparability, labels: tuple[str, str] = ("baseline", "other")
) -> ComparabilityVerdict:
    """The verdict for `other` measured against `baseline`."""
    differences: list[Difference] = []
    engine_changes: list[Difference] = []
    unchecked: list[str] = []
    for rule in RULES:
        a, b = getattr(baseline, rule.name), getattr(other, rule.name)
        if rule.name == "engine_settings":
            # A value the engine draws anew at every start is never a difference (issue 56).
            volatile = (
                get_adapter(baseline.engine_kind).volatile_settings
                | get_adapter(other.engine_kind).volatile_settings
            )
            if a and b and (text := _settings_difference(a, b, volatile)):
                engine_changes.append(
                    Difference(
                        rule.name, rule.label, (str(len(a)), str(len(b))), f"{rule.label}: {text}"
                    )
                )
            continue
        if a is None or b is None:
            if rule.name in UNKNOWN_BLOCKS and (a is not None or b is not None):
                # Known on one side only: the unknown side may hide a difference that moves
                # every figure, so it blocks, and says that it is unknown.
                values = (value_text(rule, a), value_text(rule, b))
                differences.append(
                    Difference(
                        rule.name,
                        rule.label,
                        values,
                        f"{rule.label}: {labels[0]} {values[0]}, {labels[1]} {values[1]} "
                        "(unknown on one side, so a difference cannot be ruled out)",
                    )
                )
            elif a is not None or b is not None or rule.blocking:
                unchecked.append(rule.label)
            continue
        if _same(rule, a, b):
            continue
        if rule.name == "cached_share" and any(
            d.field == "prefix_cache" for d in (*differences, *engine_changes)
        ):
            continue  # "cold" against "warm" already says it
        values = (value_text(rule, a), value_text(rule, b))
        text = f"{rule.label}: {labels[0]} {values[0]}, {labels[1]} {values[1]}"
        blocking = rule.blocking
        if rule.name in CACHE_RULES and _filled_within(baseline, other):
            # The same workload, each cache filled by the run's own requests: what the engines'
            # caches did with it is theirs to explain (issue 54), not a reason to refuse.
            blocking = False
            text += " (each cache filled within the measured run: the engines' own difference)"
        item = Difference(rule.name, rule.label, values, text)
        (differences if blocking else engine_changes).append(item)
    return ComparabilityVerdict(
        labels=labels,
        differences=tuple(differences),
        engine_changes=tuple(engine_changes),
        unchecked=tuple(unchecked),
    )


@dataclass(frozen=True)
class ComparabilityReport:
    """A comparison's fingerprints against its baseline: every other series' verdict, and
    whether the user chose to compare anyway (kept visible wherever the comparison goes)."""

    verdicts: tuple[ComparabilityVerdict, ...] = ()
    override: bool = False
    #: Per series key, its fingerprint (for the table of what was measured how).
    fingerprints: dict[str, Comparability] = field(default_factory=dict)

    @property
    def comparable(self) -> bool:
        return all(v.comparable for v in self.verdicts)

    @property
    def names_winners(self) -> bool:
        """Whether verdicts may name a winner: comparable, or compared anyway on request."""
        return self.comparable or self.override

    @property
    def title(self) -> str:
        if self.comparable:
            # The engines differing is what a comparison measures, never "nothing differs"
            # above the list of what does (issue 47).
            engines = any(v.engine_changes for v in self.verdicts)
            if any(v.unchecked for v in self.verdicts):
                if engines:
                    return (
                        "Comparable as far as recorded: the workload and the measurement match; "
                        "the engines differ as listed below (what is compared)."
                    )
                return "Comparable as far as recorded: nothing that both sides recorded differs."
            if engines:
                return (
                    "Comparable: the runs measured the same thing the same way; the engines "
                    "differ as listed below (what is compared)."
                )
            return "Comparable: the runs measured the same thing the same way."
        if self.override:
            return (
                "Not comparable, compared anyway (override): the winners named below measure "
                "different setups."
            )
        return "Not comparable: no winner is named. What differs:"

    @property
    def lines(self) -> list[str]:
        """What differs (per pair), what changed in the engines, and what was not checked;
        plain text, each caller escapes for its medium."""
        out: list[str] = []
        for verdict in self.verdicts:
            if not verdict.comparable:
                out.append(verdict.headline)
                out += [f"  {d.text}" for d in verdict.differences]
        for verdict in self.verdicts:
            out += [f"{verdict.labels[1]}: {d.text} (what is compared)" for d in verdict.engine_changes]
        unchecked = list(dict.fromkeys(label for v in self.verdicts for label in v.unchecked))
        if unchecked:
            out.append(f"Not recorded on one side, so not checked: {', '.join(unchecked)}.")
        return out

    def to_json(self) -> JsonOut:
        return {
            "comparable": self.comparable,
            "override": self.override,
            "verdicts": [v.to_json() for v in self.verdicts],
            "fingerprints": {key: fp.to_json() for key, fp in self.fingerprints.items()},
        }


def report_of(
    fingerprints: Sequence[tuple[str, str, Comparability]], baseline: int, override: bool = False
) -> ComparabilityReport:
    """The report for series (key, label, fingerprint) against the one at `baseline`."""
    if not fingerprints:
        return ComparabilityReport(override=override)
    _key, base_label, base = fingerprints[baseline]
    verdicts = tuple(
        compare_fingerprints(base, fingerprint, (base_label, label))
        for index, (_key, label, fingerprint) in enumerate(fingerprints)
        if index != baseline
    )
    return ComparabilityReport(
        verdicts=verdicts,
        override=override,
        fingerprints={key: fp for key, _label, fp in fingerprints},
    )
