"""The gate's noise verdict for one check: is a candidate's change beyond what repeating the
baseline's setup would give?

In order, the first that has what it needs:

1. **Stored repeats of the baseline's setup** when the candidate is one more run of it: the
   other repeats (the candidate's own run left out) give a 95% prediction interval for one more
   run; the candidate's figure outside it is beyond noise.
2. **Repeats of both setups** (two setups, each run at least twice): a Welch t-test
   (services/runs/verdicts.py).
3. **Within one run**, for a latency statistic: a bootstrap of the two runs' requests
   (services/runs/verdicts.py).
4. **Within one run**, for a rate (throughput, goodput, cost per token, energy per token): a
   bootstrap over each run's requests of its rate, tokens (or requests; for goodput those that
   met the run's SLOs) over the time they took, scaled to the run's stored figure; cost and
   joules per token move as the inverse of the output rate (a price or a power spread over
   those tokens). A closed loop's resampled requests are replayed through its slots (each to
   the first free one), so the time is the replay's end: the last wave, slots idle while the
   slowest requests finish, moves a short run's rate by several percent from run to run, and
   the requests' summed time alone cannot show it (20 served pairs of 40 requests at
   concurrency 8 raised 4 false alarms that way). Other loads use the requests' summed time.
   A run's tail requests (an E2E beyond services.bench.stats.tail_limit_s: a stall) keep their
   place in every draw, and only its other requests are resampled: one request in 50 that
   stalls for 30 s holds the run's end, and a bootstrap that left it out of a third of its
   draws (as resampling 50 of 50 does) put the healthy rate inside the interval, so a -93%
   throughput read "within noise". The stall itself is the gate's stall finding
   (services/runs/gate/findings.py); the rate is judged on the noise of the other requests.

Failed requests are counted, not sampled: their check has no noise allowance. Within-run
intervals say nothing of run-to-run drift: their words say so.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from services.bench.stats import tail_limit_s
from services.core.measure import percentile
from services.runs.gate.rules import REQUEST_NAMES, Threshold
from services.runs.records import (
    BOOTSTRAP_MAX_SAMPLES,
    BOOTSTRAP_RESAMPLES,
    MIN_BOOTSTRAP_SAMPLES,
    NoiseCheck,
    Series,
    format_value,
)
from services.runs.verdicts import noise_between

#: Rate metrics: which per-request weight they count over the requests' time ("output": output
#: tokens, "total": input and output tokens, "requests": one per request), and whether the
#: figure moves with that rate (+1) or against it (-1: per-token cost and energy).
RATE_WEIGHTS: dict[str, tuple[str, int]] = {
    "output_throughput_tok_s": ("output", 1),
    "total_token_throughput_tok_s": ("total", 1),
    "request_throughput_rps": ("requests", 1),
    # Goodput counts the requests that met the run's SLOs (services.bench.stats.within_slo).
    "goodput_rps": ("good requests", 1),
    "usd_per_1m_output": ("output", -1),
    "usd_per_1m_total": ("total", -1),
    "usd_per_1m_output_goodput": ("good output", -1),
    "j_per_output_token": ("output", -1),
    "output_tokens_per_j": ("output", 1),
}
#: What a within-run interval cannot say, in the words of every check it judged.
DRIFT_UNMEASURED = "run-to-run drift not measured: keep repeats or stored baselines"


def t_quantile_95(degrees: int) -> float:
    """The two-sided 95% Student t quantile: a prediction interval of n repeats is this times
    their spread times sqrt(1 + 1/n), for any number of repeats (a table that ended at 30
    degrees fell to the normal's 1.96 without sqrt(1 + 1/n) past it: 5.5% narrower at 31)."""
    # Imported here: scipy.stats costs half a second to import, and only stored repeats need it.
    from scipy import stats as scipy_stats

    return float(scipy_stats.t.ppf(0.975, degrees))


def _key(threshold: Threshold) -> str:
    return f"{threshold.metric}.{threshold.stat}" if threshold.stat else threshold.metric


def _other_repeats(threshold: Threshold, baseline: Series, candidate_run: int) -> list[float]:
    """The baseline setup's stored values of this figure, the candidate's own run left out."""
    key = _key(threshold)
    values = baseline.repeat_values.get(key, [])
    runs = baseline.repeat_value_runs.get(key, [])
    if len(runs) != len(values):
        return []
    return [v for v, run in zip(values, runs, strict=True) if run != candidate_run]


def _from_repeats(threshold: Threshold, others: list[float], value: float) -> NoiseCheck:
    metric = threshold.metric
    n = len(others)
    mean, sd = float(np.mean(others)), float(np.std(others, ddof=1))
    half = t_quantile_95(n - 1) * sd * (1 + 1 / n) ** 0.5
    low, high = mean - half, mean + half
    beyond = not (low <= value <= high)
    words = "beyond" if beyond else "within"
    return NoiseCheck(
        "beyond" if beyond else "within",
        "repeats",
        f"{words} run-to-run noise: {n} other stored runs of this setup range "
        f"{format_value(metric, min(others))} to {format_value(metric, max(others))} (95% "
        f"prediction interval {format_value(metric, low)} to {format_value(metric, high)})",
    )


def _weights(records: np.ndarray, weight: str) -> np.ndarray:
    """Each request's share of the rate: columns are its time, output tokens, input tokens
    and whether it met the run's SLOs (services/runs/series.py)."""
    if weight == "output":
        return records[:, 1]
    if weight == "total":
        return records[:, 1] + records[:, 2]
    if weight == "good requests":
        return records[:, 3]
    if weight == "good output":
        return records[:, 1] * records[:, 3]
    return np.ones(records.shape[0])


def _rate_draws(
    series: Series, value: float, weight: str, power: int, rng: np.random.Generator
) -> np.ndarray | None:
    """Bootstrap draws of the series' figure: its stored value times how its per-request rate
    moves when its requests are resampled."""
    records = series.request_rates
    if records is None or records.shape[0] < MIN_BOOTSTRAP_SAMPLES or series.multi_step:
        return None
    tail = tail_requests(records[:, 0])
    if records.shape[0] > BOOTSTRAP_MAX_SAMPLES:
        if tail.any():
            # A sample of a large run keeps its tail requests, in the run's order.
            others = rng.choice(np.flatnonzero(~tail), BOOTSTRAP_MAX_SAMPLES - tail.sum(), replace=False)
            records = records[np.sort(np.concatenate([np.flatnonzero(tail), others]))]
        else:
            records = records[rng.choice(records.shape[0], BOOTSTRAP_MAX_SAMPLES, replace=False)]
        tail = tail_requests(records[:, 0])
    weights, times = _weights(records, weight), records[:, 0]
    if weights.sum() <= 0 or times.sum() <= 0:
        return None
    index = _draw_index(tail, rng)
    slots = _replay_slots(series, records.shape[0])
    if slots:
        # The run's own requests in their own order give the figure the draws move from: a
        # run whose slowest request came last ends late, and its draws mostly end sooner.
        spans = _closed_loop_spans(times[index], slots)
        own = weights.sum() / _closed_loop_spans(times[np.newaxis, :], slots)[0]
    else:
        spans = times[index].sum(axis=1)
        own = weights.sum() / times.sum()
    drawn = weights[index].sum(axis=1) / spans
    return np.asarray(value * (drawn / own) ** power)


def tail_requests(e2e: np.ndarray) -> np.ndarray:
    """Which requests are tail events (services.bench.stats.tail_limit_s of the run's own E2E
    p90), as a mask; none in a run too small to have a p90 worth the name."""
    if e2e.size < MIN_BOOTSTRAP_SAMPLES:
        return np.zeros(e2e.size, dtype=bool)
    return np.asarray(e2e > tail_limit_s(percentile(e2e, 90)))


def _draw_index(tail: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Each draw's requests (rows of indices): the run's others resampled, its tail requests
    kept where they were, once each (the module's docstring says why)."""
    size = tail.size
    if not tail.any():
        return rng.integers(0, size, size=(BOOTSTRAP_RESAMPLES, size))
    others = np.flatnonzero(~tail)
    index = others[rng.integers(0, others.size, size=(BOOTSTRAP_RESAMPLES, size))]
    kept = np.flatnonzero(tail)
    index[:, kept] = kept
    return index


def _replay_slots(series: Series, sampled: int) -> int | None:
    """The slots that replay `sampled` requests in as many waves as the run had (a sample of a
    large run keeps its waves, not its slots); None when the loop was not closed or every
    request had a slot of its own."""
    slots = series.closed_loop_slots
    if slots is None:
        return None
    served = max(series.completed or 0, sampled)
    scaled = max(1, round(slots * sampled / served))
    return scaled if scaled < sampled else None


def _closed_loop_spans(times: np.ndarray, slots: int) -> np.ndarray:
    """Each row's end when its requests, in order, each take the first free of `slots`."""
    rows = np.arange(times.shape[0])
    free_at = np.zeros((times.shape[0], slots))
    for column in times.T:
        first = free_at.argmin(axis=1)
        free_at[rows, first] += column
    return np.asarray(free_at.max(axis=1))


def within_run_rate(
    threshold: Threshold, baseline: Series, candidate: Series, base: float, cand: float
) -> NoiseCheck | None:
    """The within-run interval of a rate's difference (candidate minus baseline); None when a
    side has too few request records (an import, a sweep, a dead run)."""
    if threshold.metric not in RATE_WEIGHTS:
        return None
    weight, power = RATE_WEIGHTS[threshold.metric]
    rng = np.random.default_rng(20261205)
    a = _rate_draws(baseline, base, weight, power, rng)
    b = _rate_draws(candidate, cand, weight, power, rng)
    if a is None or b is None:
        return None
    differences = b - a
    low, high = percentile(differences, 2.5), percentile(differences, 97.5)
    beyond = low > 0 or high < 0
    words = "beyond" if beyond else "within"
    metric = threshold.metric
    kept = [
        f"{s.label}'s {count} tail request{'s' if count > 1 else ''}"
        for s in (baseline, candidate)
        if s.request_rates is not None and (count := int(tail_requests(s.request_rates[:, 0]).sum()))
    ]
    held = f"; {' and '.join(kept)} kept in every draw" if kept else ""
    return NoiseCheck(
        "beyond" if beyond else "within",
        "bootstrap",
        f"{words} the run's own noise (95% bootstrap interval over the requests, {candidate.label} "
        f"minus {baseline.label}: {format_value(metric, low)} to {format_value(metric, high)}"
        f"{held}); {DRIFT_UNMEASURED}",
    )


def gate_noise(
    threshold: Threshold,
    baseline: Series,
    candidate: Series,
    base: float | None,
    cand: float | None,
) -> NoiseCheck:
    """The noise verdict for one check of one pair (see the module's order)."""
    if threshold.metric in REQUEST_NAMES:
        return NoiseCheck("unknown", "none", "failed requests are counted, not sampled: no noise")
    if cand is not None and candidate.run_id in baseline.repeat_run_ids:
        others = _other_repeats(threshold, baseline, candidate.run_id)
        if len(others) >= 2:
            return _from_repeats(threshold, others, cand)
    # A candidate of the baseline's own setup (with too few other repeats) is judged on its
    # requests: the comparison's repeat verdict would hold the candidate's change as noise.
    if candidate.run_id in baseline.repeat_run_ids:
        candidate = replace(candidate, repeat_run_ids=(), repeat_values={})
        baseline = replace(baseline, repeat_run_ids=(), repeat_values={})
    noise = noise_between(threshold.metric, threshold.stat, candidate, baseline)
    if noise.status != "unknown" or base is None or cand is None:
        return noise
    return within_run_rate(threshold, baseline, candidate, base, cand) or noise
