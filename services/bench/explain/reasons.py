"""Why one engine beat another on one figure, from the engines' own accounts (issue 54).

Guards come first, each a one-line reason and no claims. Then the gap is split into the parts
the engines timed themselves (their means add up: queue + prefill + rest = TTFT; queue +
prefill + decode + rest = E2E), and each part that holds at least `CLAIM_SHARE` of the gap is
named with its numbers, the engine's own source, coverage and share; the rest is said to be
unattributed. A setting is named only as the reason for measured evidence: the engine reported
it (or Shootout launched it with it) *and* the running count reached it. Different models and
different output lengths are confounders: named, never credited. An explanation never changes
a verdict.
"""

from __future__ import annotations

import math
from dataclasses import replace

from services.bench.explain import evidence
from services.bench.explain.claims import (
    cap_clause,
    decode_claim,
    durations,
    figures,
    kv_claim,
    output_confounder,
    prefill_claim,
    queue_claim,
    rest_claim,
    spec_claim,
    width,
)
from services.bench.explain.evidence import Split
from services.bench.explain.records import Claim, Explanation, Side

#: A part of the gap is named when it holds at least this share of it.
CLAIM_SHARE = 0.25
#: Failed requests above this share of a side's requests: its figures cover other work.
FAILED_SHARE = 0.01
#: Batch widths differ when one is this many times the other.
WIDTH_RATIO = 1.25

TIMES = ("ttft_s", "e2e_s", "tpot_s", "itl_s")
RATES = ("output_throughput_tok_s", "request_throughput_rps", "total_token_throughput_tok_s")
_NAMES = {
    "ttft_s": "TTFT",
    "e2e_s": "E2E",
    "tpot_s": "TPOT",
    "itl_s": "ITL",
    "output_throughput_tok_s": "output throughput",
    "request_throughput_rps": "request throughput",
    "total_token_throughput_tok_s": "total token throughput",
}


def _guard(winner: Side, loser: Side, comparable: str | None, noise: str) -> str:
    if comparable:
        return f"Why is not said: the two are not comparable ({comparable})."
    if noise == "within":
        return "Why is not said: the gap is within noise."
    for side in (winner, loser):
        if side.client_bound:
            return (
                f"Why is not said: the generator was client-bound while it measured {side.label}, "
                "so the gap may be the client's."
            )
    if winner.ran_together or loser.ran_together:
        return "Why is not said: the engines ran together on the same machine, each slowing the other."
    for side in (winner, loser):
        if side.restarted:
            return f"Why is not said: {side.label}'s engine restarted during the run."
    for side in (winner, loser):
        results = side.results
        done = results.completed + results.failed
        if results.failed and done and results.failed / done >= FAILED_SHARE:
            return (
                f"Why is not said: {side.label} failed {results.failed} of {done} requests, so the "
                "two figures cover different work."
            )
    if winner.model and loser.model and winner.model != loser.model:
        return (
            f"Why is not said: different models ({winner.model} and {loser.model}); weights and "
            "formats are confounders, not causes."
        )
    return ""


def _not_known(metric: str, winner: Side, loser: Side) -> str:
    missing = [side for side in (loser, winner) if evidence.split_of(side) is None]
    said = []
    for side in missing:
        recorded = "" if evidence.samples(side) else " and its metrics were not recorded"
        how = evidence.hint(side)
        said.append(
            f"{side.label} reports no per-request times{recorded}" + (f" ({how})" if how else "")
        )
    return f"Why is not known: {'; '.join(said)}."


def _part_deltas(metric: str, w: Split, lo: Split) -> dict[str, float]:
    """Each timed part's difference (loser's mean minus winner's): they add up to the gap."""
    parts = {"queue": (lo.queue, w.queue), "prefill": (lo.prefill, w.prefill)}
    if metric == "ttft_s":
        parts["ttft_rest"] = (lo.ttft_rest, w.ttft_rest)
    else:
        parts["decode"] = (lo.decode, w.decode)
        parts["e2e_rest"] = (lo.e2e_rest, w.e2e_rest)
    return {key: (a or 0.0) - (b or 0.0) for key, (a, b) in parts.items()}


def _part_claims(
    deltas: dict[str, float],
    gap: float,
    sides: tuple[Side, Side, Split, Split],
    gap_name: str,
    confounded: bool,
) -> list[Claim]:
    """The parts that hold `CLAIM_SHARE` of the gap, largest first, two at most."""
    winner, loser, w, lo = sides
    claims: list[Claim] = []
    for key, delta in sorted(deltas.items(), key=lambda item: -item[1]):
        share = delta / gap
        if share < CLAIM_SHARE or len(claims) == 2:
            continue
        if key == "decode" and confounded:
            continue  # a longer answer is not a slower decode: named, never credited
        claim: Claim | None
        if key == "queue":
            claim = queue_claim(winner, loser, w, lo, share, gap_name)
        elif key == "prefill":
            claim = prefill_claim(winner, loser, w, lo, share, gap_name)
        elif key == "decode":
            claim = decode_claim(winner, loser, w, lo, share, gap_name)
        else:
            claim = rest_claim(loser, lo, w, key, share, gap_name)
        if claim is not None:
            claims.append(claim)
    return claims


def _split_explanation(metric: str, winner: Side, loser: Side) -> Explanation:
    """TTFT or E2E: the gap over the parts each engine timed."""
    gap_name = _NAMES[metric]
    w, lo = evidence.split_of(winner), evidence.split_of(loser)
    if w is None or lo is None:
        return Explanation(
            metric, winner.label, loser.label, "not_known", reason=_not_known(metric, winner, loser)
        )
    if w.run_mean != lo.run_mean:
        timed, counted = (loser, winner) if w.run_mean else (winner, loser)
        return Explanation(
            metric,
            winner.label,
            loser.label,
            "not_known",
            reason=(
                f"Why is not known: {timed.label}'s engine timed each request and {counted.label}'s "
                "only counted its run's totals; the two accounts are not set part by part "
                "against each other."
            ),
        )
    confounder = output_confounder(winner, loser) if metric == "e2e_s" else ""
    deltas = _part_deltas(metric, w, lo)
    gap = sum(deltas.values())
    said = Explanation(metric, winner.label, loser.label, "not_explained", gap=gap)
    if gap <= 0:
        return replace(
            said,
            reason=(
                f"Not explained: over the requests the engines timed, {loser.label}'s mean "
                f"{gap_name} is not longer, so no part of it can be named."
            ),
        )
    claims = _part_claims(deltas, gap, (winner, loser, w, lo), gap_name, bool(confounder))
    confounders = (confounder,) if confounder else ()
    if not claims:
        reason = f"Not explained: no part the engines timed holds {CLAIM_SHARE:.0%} of the mean {gap_name} gap"
        return replace(
            said, reason=reason + (f"; {confounder}." if confounder else "."), confounders=confounders
        )
    attributed = sum(c.share or 0.0 for c in claims)
    return replace(
        said,
        status="explained",
        claims=tuple(claims),
        unattributed=max(0.0, 1.0 - attributed),
        confounders=confounders,
        offsets=_offsets(deltas, gap, winner),
    )


#: A part's name in an offset's words.
_PART_WORDS = {
    "queue": "queue",
    "prefill": "prefill",
    "decode": "decode",
    "ttft_rest": "time outside its engine's clock",
    "e2e_rest": "time outside its engine's clock",
}


def _offsets(deltas: dict[str, float], gap: float, winner: Side) -> tuple[str, ...]:
    """The parts where the winner was the slower, each large enough (`CLAIM_SHARE` of the gap) to
    say: they make the named parts look larger than the gap."""
    said = []
    for key, delta in sorted(deltas.items(), key=lambda item: item[1]):
        if delta < 0 and -delta >= CLAIM_SHARE * gap:
            (longer,) = durations(-delta)
            said.append(f"{winner.label}'s {_PART_WORDS[key]} took {longer} longer")
    return tuple(said)


def _per_token_explanation(metric: str, winner: Side, loser: Side) -> Explanation:
    """TPOT or ITL: each token's wait, set against how many requests shared each step."""
    name = _NAMES[metric]
    figure_w, figure_l = winner.results.latency(metric), loser.results.latency(metric)
    mean_w = figure_w.mean if figure_w else None
    mean_l = figure_l.mean if figure_l else None
    if mean_w is None or mean_l is None:
        return Explanation(
            metric,
            winner.label,
            loser.label,
            "not_known",
            reason=f"Why is not known: no {name} on one side.",
        )
    claims: list[Claim] = []
    width_w, _ = width(winner)
    width_l, source_l = width(loser)
    if width_w and width_l and width_l / width_w >= WIDTH_RATIO:
        mw, ml = durations(mean_w, mean_l)
        wide_l, wide_w = figures(width_l, width_w)
        claims.append(
            Claim(
                cause="batch_width",
                sentence=(
                    f"Batch width: {loser.label} decoded {wide_l} requests at once on average "
                    f"against {wide_w} ({source_l}), and each of its tokens waited on the "
                    f"wider batch: {name} {ml} against {mw}."
                ),
                share=None,
                metric=source_l,
                coverage=f"{evidence.samples(loser)} samples" if evidence.samples(loser) else "the run",
                evidence={"loser_width": width_l, "winner_width": width_w},
            )
        )
    for found in (kv_claim(loser, winner), spec_claim(winner, loser)):
        if found is not None and len(claims) < 2:
            claims.append(found)
    if not claims:
        widths = (
            " at {} against {} requests running".format(*figures(width_l, width_w))
            if width_w and width_l
            else ""
        )
        mw, ml = durations(mean_w, mean_l)
        return Explanation(
            metric,
            winner.label,
            loser.label,
            "not_explained",
            gap=mean_l - mean_w,
            reason=(
                f"Not explained: {loser.label} decoded each token slower ({name} {ml} against "
                f"{mw}{widths}) with no wider batch, preemption or draft model to account for it."
            ),
        )
    return Explanation(
        metric, winner.label, loser.label, "explained", gap=mean_l - mean_w, claims=tuple(claims)
    )


def _width_claim(winner: Side, loser: Side, ratio: float, name: str) -> Claim | None:
    """The winner ran a wider batch: its share of the throughput ratio (in logs), the trade-off
    when its ITL was higher, and the loser's cap when its running count stayed at it."""
    width_w, source_w = width(winner)
    width_l, _ = width(loser)
    if not width_w or not width_l or width_w / width_l < WIDTH_RATIO:
        return None
    raw = math.log(width_w / width_l) / math.log(ratio) if ratio > 1 else None
    itl_w, itl_l = winner.results.itl_s, loser.results.itl_s
    trade = ""
    if itl_w and itl_l and itl_w.mean is not None and itl_l.mean is not None and itl_w.mean > itl_l.mean:
        a, b = durations(itl_w.mean, itl_l.mean)
        trade = f"; the trade-off: its ITL was higher ({a} against {b})"
    wide_w, wide_l = figures(width_w, width_l)
    portion = ""
    if raw is not None:
        # A batch 3.8x as wide behind a 1.14x ratio: each request ran slower, the batch more than made up.
        whole = f"more than the whole {ratio:.2f}x {name} ratio ({width_w / width_l:.1f}x the width)"
        portion = whole if raw > 1 else f"{raw:.0%} of the {ratio:.2f}x {name} ratio"
    return Claim(
        cause="batch_width",
        sentence=(
            f"Batch width: {winner.label} ran {wide_w} requests at once on average against "
            f"{wide_l} ({source_w}){cap_clause(loser)}, {portion}{trade}."
        ),
        share=raw,
        metric=source_w,
        coverage=f"{evidence.samples(winner)} samples" if evidence.samples(winner) else "the run",
        evidence={"winner_width": width_w, "loser_width": width_l, "ratio": ratio},
    )


def _rate_explanation(metric: str, winner: Side, loser: Side) -> Explanation:
    """A throughput: how many requests each engine ran at once, and what held the loser back."""
    name = _NAMES[metric]
    rate_w = getattr(winner.results, metric)
    rate_l = getattr(loser.results, metric)
    if not rate_w or not rate_l or rate_w <= rate_l:
        reason = f"Why is not known: no {name} to set side by side."
        return Explanation(metric, winner.label, loser.label, "not_known", reason=reason)
    ratio = rate_w / rate_l
    found = [
        _width_claim(winner, loser, ratio, name),
        kv_claim(loser, winner),
        spec_claim(winner, loser),
    ]
    claims = [claim for claim in found if claim is not None][:2]
    said = Explanation(metric, winner.label, loser.label, "not_explained", gap=ratio)
    if not claims:
        return replace(
            said,
            reason=(
                f"Not explained: {winner.label} served {ratio:.2f}x the {name} at about the same "
                "batch width, with no preemption or draft model on either side to account for it."
            ),
        )
    shared = [c.share for c in claims if c.share is not None]
    return replace(
        said,
        status="explained",
        claims=tuple(claims),
        unattributed=max(0.0, 1.0 - sum(shared)) if shared else None,
    )


def explain(
    metric: str, winner: Side, loser: Side, *, comparable: str | None = None, noise: str = "beyond"
) -> Explanation:
    """Why `winner` beat `loser` on `metric` (a latency's or a rate's stored name), or why that
    is not said or not known. `comparable`: the reason the two are not comparable, None when they
    are; `noise`: the verdict's noise check ("beyond", "within", "unknown")."""
    reason = _guard(winner, loser, comparable, noise)
    if reason:
        return Explanation(metric, winner.label, loser.label, "guarded", reason=reason)
    if metric in ("ttft_s", "e2e_s"):
        return _split_explanation(metric, winner, loser)
    if metric in ("tpot_s", "itl_s"):
        return _per_token_explanation(metric, winner, loser)
    if metric in RATES:
        return _rate_explanation(metric, winner, loser)
    return Explanation(
        metric, winner.label, loser.label, "not_known", reason=f"Why is not known for {metric}."
    )
