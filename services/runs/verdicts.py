"""One verdict per metric: which series wins, by how much, and whether it is beyond noise."""

from __future__ import annotations

from typing import Literal

import numpy as np

from services.core import units
from services.core.measure import percentile
from services.runs.records import (
    BOOTSTRAP_MAX_SAMPLES,
    BOOTSTRAP_RESAMPLES,
    EQUAL_TOLERANCE,
    LATENCY_METRICS,
    MIN_BOOTSTRAP_SAMPLES,
    NOISE_P_VALUE,
    THROUGHPUT_METRICS,
    NoiseCheck,
    Series,
    Verdict,
    format_value,
)

_STAT_QUANTILE = {"p50": 50.0, "p90": 90.0, "p95": 95.0, "p99": 99.0}


def _statistic(resamples: np.ndarray, stat: str) -> np.ndarray:
    """The statistic of each row of a matrix of bootstrap resamples."""
    if stat == "mean":
        return np.mean(resamples, axis=1)
    return percentile(resamples, _STAT_QUANTILE[stat], axis=1)


def _bootstrap_difference(a: np.ndarray, b: np.ndarray, stat: str) -> tuple[float, float]:
    """95% bootstrap interval of stat(a) - stat(b). Large samples are subsampled first,
    which only widens the interval (a conservative call)."""
    rng = np.random.default_rng(20261130)
    if a.size > BOOTSTRAP_MAX_SAMPLES:
        a = rng.choice(a, BOOTSTRAP_MAX_SAMPLES, replace=False)
    if b.size > BOOTSTRAP_MAX_SAMPLES:
        b = rng.choice(b, BOOTSTRAP_MAX_SAMPLES, replace=False)
    resampled_a = _statistic(a[rng.integers(0, a.size, size=(BOOTSTRAP_RESAMPLES, a.size))], stat)
    resampled_b = _statistic(b[rng.integers(0, b.size, size=(BOOTSTRAP_RESAMPLES, b.size))], stat)
    differences = resampled_a - resampled_b
    return percentile(differences, 2.5), percentile(differences, 97.5)


def _noise(metric: str, stat: str | None, winner: Series, other: Series) -> NoiseCheck:
    key = f"{metric}.{stat}" if stat else metric
    if winner.repeat_run_ids and winner.run_id in other.repeat_run_ids and winner.engine == other.engine:
        spread = winner.repeat_values.get(key, [])
        detail = f"#{winner.run_id} and #{other.run_id} are repeats of one configuration"
        if len(spread) >= 2:
            detail += f" ({len(spread)} runs range {format_value(metric, min(spread))} to {format_value(metric, max(spread))})"
        return NoiseCheck("within", "repeats", detail + ": the difference is run-to-run noise.")
    a, b = winner.repeat_values.get(key, []), other.repeat_values.get(key, [])
    if len(a) >= 2 and len(b) >= 2:
        if np.var(a) == 0 and np.var(b) == 0:
            beyond = np.mean(a) != np.mean(b)
            p_text = "no spread within either set"
        else:
            # Imported here: scipy.stats costs half a second to import, and only this needs it.
            from scipy import stats as scipy_stats

            p_value = float(scipy_stats.ttest_ind(a, b, equal_var=False).pvalue)
            beyond = p_value < NOISE_P_VALUE
            p_text = f"Welch t-test p = {p_value:.3g}"
        status: Literal["beyond", "within"] = "beyond" if beyond else "within"
        return NoiseCheck(
            status,
            "repeats",
            f"{status} run-to-run noise ({len(a)} and {len(b)} repeated runs, {p_text})",
        )
    a_sample, b_sample = winner.samples.get(metric), other.samples.get(metric)
    if (
        stat in ("mean", *_STAT_QUANTILE)
        and not winner.multi_step
        and not other.multi_step
        and a_sample is not None
        and b_sample is not None
        and a_sample.size >= MIN_BOOTSTRAP_SAMPLES
        and b_sample.size >= MIN_BOOTSTRAP_SAMPLES
    ):
        low, high = _bootstrap_difference(a_sample, b_sample, stat)
        beyond = low > 0 or high < 0
        interval = (
            f"95% bootstrap interval of {winner.label} minus {other.label}: "
            f"{format_value(metric, low)} to {format_value(metric, high)}"
        )
        words = "beyond" if beyond else "within"
        return NoiseCheck(
            "beyond" if beyond else "within",
            "bootstrap",
            f"{words} within-run sampling noise ({interval}); no repeated runs, so run-to-run noise is unknown",
        )
    return NoiseCheck("unknown", "none", "noise unknown: no repeated runs of both setups")


def noise_between(metric: str, stat: str | None, a: Series, b: Series) -> NoiseCheck:
    """Whether the difference of one metric between two series is beyond noise: the check the
    verdicts make between a winner and its runner-up, for any pair (the CLI gate's)."""
    return _noise(metric, stat, a, b)


def _verdict(
    metric: str,
    stat: str | None,
    label: str,
    series: list[Series],
    values: list[float | None],
    higher: bool,
    extra: str = "",
    unit: units.TimeUnit | None = None,
) -> Verdict | None:
    present = [(i, v) for i, v in enumerate(values) if v is not None]
    if len(present) < 2:
        return None
    ranked = sorted(present, key=lambda item: -item[1] if higher else item[1])
    (best_index, best), (next_index, runner) = ranked[0], ranked[1]
    winner, other = series[best_index], series[next_index]
    noise = _noise(metric, stat, winner, other)
    if best == runner or (
        max(abs(best), abs(runner))
        and abs(best - runner) / max(abs(best), abs(runner)) < EQUAL_TOLERANCE
    ):
        text = (
            f"{label}: {winner.label} and {other.label} are level ({format_value(metric, best, unit)})"
        )
        return Verdict(metric, label, text + f"; {noise.detail}.", None, None, 1.0, noise)
    if higher:
        factor = best / runner if runner > 0 else None
        if factor is not None and factor >= 2:
            amount = f"{factor:.1f}× as high as"
        else:
            amount = f"{(best / runner - 1) * 100:.0f}% more than" if runner > 0 else "more than"
        text = (
            f"{label}: {winner.label} is highest, {amount} {other.label} "
            f"({format_value(metric, best)} vs {format_value(metric, runner)})"
        )
    else:
        factor = runner / best if best > 0 else None
        if factor is not None and factor >= 1.5:
            amount = f"{factor:.1f}× faster"
        else:
            amount = f"{(1 - best / runner) * 100:.0f}% faster" if runner > 0 else "faster"
        text = (
            f"{label}: {winner.label} is fastest, {amount} than {other.label} "
            f"({format_value(metric, best, unit)} vs {format_value(metric, runner, unit)}{extra})"
        )
    return Verdict(metric, label, f"{text}; {noise.detail}.", winner.key, other.key, factor, noise)


def verdicts_of(series: list[Series]) -> list[Verdict]:
    verdicts: list[Verdict] = []
    for metric, name in LATENCY_METRICS.items():
        medians = [s.stats.get(metric, {}).get("p50") for s in series]
        tails = [s.stats.get(metric, {}).get("p99") for s in series]
        present = [(i, v) for i, v in enumerate(medians) if v is not None]
        extra = ""
        # One unit for the whole sentence: medians and tails alike.
        unit = units.duration_unit([*medians, *tails])
        if len(present) >= 2:
            ranked = sorted(present, key=lambda item: item[1])
            a, b = ranked[0][0], ranked[1][0]
            if tails[a] is not None and tails[b] is not None:
                low, high = format_value(metric, tails[a], unit), format_value(metric, tails[b], unit)
                extra = f" at the median; p99 {low} vs {high}"
        verdict = _verdict(metric, "p50", f"{name} (median)", series, medians, False, extra, unit)
        if verdict:
            verdicts.append(verdict)
    for metric, (name, _unit) in THROUGHPUT_METRICS.items():
        verdict = _verdict(metric, None, name, series, [s.rates.get(metric) for s in series], True)
        if verdict:
            verdicts.append(verdict)
    return verdicts
