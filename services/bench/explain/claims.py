"""The claims an explanation makes, each from one part of the evidence (services/bench/explain/
evidence.py): queueing, prefill (the prefix cache or a slower one), decode, time outside the
engine's clock, KV pressure, speculative decoding; and the batch setting behind a queue or a
narrow batch, named only when the engine's running count reached it."""

from __future__ import annotations

from itertools import combinations

from services.bench.explain import evidence
from services.bench.explain.evidence import Split
from services.bench.explain.records import Claim, Side
from services.core import units

#: A prefix cache is a cause when the winner's hit rate exceeds the loser's by this much.
HIT_RATE_MARGIN = 0.20
#: Output tokens per request differing by more than this share: different answers, not speed.
OUTPUT_LENGTH_TOLERANCE = 0.10


#: A part within this share past the whole gap is the whole gap: the other parts' few
#: milliseconds of jitter went the other way, which "more than the whole" would overstate.
WHOLE_SLACK = 0.02


def exceeds_gap(share: float | None) -> bool:
    """A part clearly larger than the whole gap (the winner's own part was longer elsewhere)."""
    return share is not None and share > 1 + WHOLE_SLACK


def share_text(share: float, gap: str) -> str:
    """A part's share of the gap; a part larger than the whole gap says so instead of "247%"."""
    if exceeds_gap(share):
        return f"more than the whole mean {gap} gap"
    return f"{min(share, 1.0):.0%} of the mean {gap} gap"


#: Decimals a pair of durations may add so that two that differ read differently.
MORE_DECIMALS = 2


def durations(*seconds: float | None) -> list[str]:
    """Durations side by side in one unit ("none" for no time at all): the one formatter of the
    durations an explanation sets against each other. Two that differ but would read alike
    ("ITL 2.0 ms against 2.0 ms" for 2.00 and 2.04 ms) get more decimals, `MORE_DECIMALS` at
    most; a gap too small even for those reads as it would without them."""
    unit = units.duration_unit(seconds)
    tries = (
        ["none" if s == 0 else units.duration(s, unit, more_decimals=more) for s in seconds]
        for more in range(MORE_DECIMALS + 1)
    )
    plain = next(tries)
    if not _alike(seconds, plain):
        return plain
    return next((said for said in tries if not _alike(seconds, said)), plain)


def figures(*values: float, decimals: int = 1, percent: bool = False) -> list[str]:
    """Plain figures side by side (batch widths, tokens per request, hit rates), by the same
    rule as `durations`: two that differ but would read alike ("4.0 against 4.0 requests
    running" for 4.02 and 3.98) get more decimals, `MORE_DECIMALS` at most."""

    def said(more: int) -> list[str]:
        places = decimals + more
        return [f"{v:.{places}%}" if percent else f"{v:.{places}f}" for v in values]

    return next(
        (out for more in range(MORE_DECIMALS + 1) if not _alike(values, out := said(more))),
        said(0),
    )


def _alike(seconds: tuple[float | None, ...], said: list[str]) -> bool:
    """Two different figures that read the same."""
    figures = [units.number(s) for s in seconds]
    return any(a != b and x == y for (a, x), (b, y) in combinations(zip(figures, said), 2))


def width(side: Side) -> tuple[float | None, str]:
    """Requests running at once on average: the engine's own count, else the client's in flight."""
    running = evidence.engine_metric(side, "requests_running_mean")
    if running is not None:
        return running, evidence.metric_name(side, "requests_running")
    return side.results.concurrency_mean, "requests in flight at the client"


def cap_clause(side: Side) -> str:
    """The setting behind a queue or a narrow batch, only when the evidence matches it."""
    cap = evidence.batch_cap(side)
    running = evidence.engine_metric(side, "requests_running_max")
    if cap is None or running is None or round(running) != cap[0]:
        return ""
    value, setting, where = cap
    return (
        f"; {side.label}'s running count ({evidence.metric_name(side, 'requests_running')}) stayed "
        f"at its {setting} of {value} ({where})"
    )


def queue_claim(winner: Side, loser: Side, w: Split, lo: Split, share: float, gap: str) -> Claim:
    ql, qw = durations(lo.queue, w.queue)
    waiting = evidence.engine_metric(loser, "requests_waiting_share")
    said_waiting = (
        f", requests waiting in {units.share(waiting)} of {evidence.samples(loser)} samples "
        f"({evidence.metric_name(loser, 'requests_waiting')})"
        if waiting
        else ""
    )
    return Claim(
        cause="queue",
        sentence=(
            f"Queueing: {loser.label}'s requests waited {ql} on average in its own queue against "
            f"{qw} for {winner.label} ({evidence.times_source(loser)}, {lo.coverage}{said_waiting})"
            f"{cap_clause(loser)}, {share_text(share, gap)}."
        ),
        share=share,
        metric=evidence.times_source(loser),
        coverage=lo.coverage,
        evidence={"loser_queue_s": lo.queue, "winner_queue_s": w.queue},
    )


def _computed_prompt(side: Side) -> float | None:
    results = side.results
    prompt = evidence.per_request(side, results.input_tokens)
    cached = evidence.per_request(side, results.cached_tokens) or 0.0
    return prompt - cached if prompt is not None and prompt - cached > 0 else None


def prefill_claim(winner: Side, loser: Side, w: Split, lo: Split, share: float, gap: str) -> Claim:
    pl, pw = durations(lo.prefill, w.prefill)
    hit_w = evidence.engine_metric(winner, "prefix_cache_hit_rate")
    hit_l = evidence.engine_metric(loser, "prefix_cache_hit_rate") or 0.0
    if hit_w is not None and hit_w - hit_l >= HIT_RATE_MARGIN:
        hits = figures(hit_w, hit_l, decimals=0, percent=True)
        return Claim(
            cause="prefix_cache",
            sentence=(
                f"Prefix cache: {winner.label} served {hits[0]} of prompt tokens from its cache "
                f"against {hits[1]} ({evidence.metric_name(winner, 'prefix_cache_hit_rate')}, "
                f"{evidence.samples(winner)} samples), so its prefill took {pw} against {pl} "
                f"({w.coverage}), {share_text(share, gap)}."
            ),
            share=share,
            metric=evidence.metric_name(winner, "prefix_cache_hit_rate"),
            coverage=w.coverage,
            evidence={"winner_hit_rate": hit_w, "loser_hit_rate": hit_l},
        )
    per_token = ""
    tokens_l, tokens_w = _computed_prompt(loser), _computed_prompt(winner)
    if tokens_l and tokens_w and lo.prefill is not None and w.prefill is not None:
        tl, tw = durations(lo.prefill / tokens_l, w.prefill / tokens_w)
        per_token = f"; {tl} against {tw} per computed prompt token"
    return Claim(
        cause="slower_prefill",
        sentence=(
            f"Slower prefill: {loser.label} took {pl} to prefill a request against {pw} for "
            f"{winner.label} ({evidence.times_source(loser)}, {lo.coverage}{per_token}), "
            f"{share_text(share, gap)}."
        ),
        share=share,
        metric=evidence.times_source(loser),
        coverage=lo.coverage,
        evidence={"loser_prefill_s": lo.prefill, "winner_prefill_s": w.prefill},
    )


def decode_claim(winner: Side, loser: Side, w: Split, lo: Split, share: float, gap: str) -> Claim:
    dl, dw = durations(lo.decode, w.decode)
    width_l, _ = width(loser)
    width_w, _ = width(winner)
    widths = (
        " at {} against {} requests running".format(*figures(width_l, width_w))
        if width_l is not None and width_w is not None
        else ""
    )
    return Claim(
        cause="slower_decode",
        sentence=(
            f"Slower decode: {loser.label} took {dl} to decode a request against {dw}{widths} "
            f"({evidence.times_source(loser)}, {lo.coverage}), {share_text(share, gap)}."
        ),
        share=share,
        metric=evidence.times_source(loser),
        coverage=lo.coverage,
        evidence={"loser_decode_s": lo.decode, "winner_decode_s": w.decode},
    )


def rest_claim(loser: Side, lo: Split, w: Split, key: str, share: float, gap: str) -> Claim | None:
    if loser.kind == "llamacpp":
        return None  # its slot wait is its queue (time_split.engine_queue), never "outside"
    rest_l, rest_w = (lo.ttft_rest, w.ttft_rest) if key == "ttft_rest" else (lo.e2e_rest, w.e2e_rest)
    rl, rw = durations(rest_l, rest_w)
    via = " (the router's own time among it)" if loser.results.time_split.via == "router" else ""
    return Claim(
        cause="outside_engine",
        sentence=(
            f"Time outside the engine's own clock: {loser.label}'s {gap} held {rl} beyond its "
            f"engine's times against {rw}{via} (network, HTTP front end, tokenizing; "
            f"{lo.coverage}), {share_text(share, gap)}."
        ),
        share=share,
        metric=evidence.times_source(loser),
        coverage=lo.coverage,
        evidence={"loser_rest_s": rest_l, "winner_rest_s": rest_w},
    )


def output_confounder(winner: Side, loser: Side) -> str:
    out_w = evidence.per_request(winner, winner.results.output_tokens)
    out_l = evidence.per_request(loser, loser.results.output_tokens)
    if out_w and out_l and abs(out_l - out_w) / min(out_l, out_w) > OUTPUT_LENGTH_TOLERANCE:
        said_l, said_w = figures(out_l, out_w, decimals=0)
        return (
            f"{loser.label} answered {said_l} output tokens per request against {said_w}, "
            "and a longer answer takes longer without any slower decoding"
        )
    return ""


def kv_claim(loser: Side, winner: Side) -> Claim | None:
    """KV pressure: the loser preempted and the winner did not (equal preemptions explain nothing;
    a full cache with nothing waiting or preempted is no pressure)."""
    lost = evidence.engine_metric(loser, "preempting_share") or 0.0
    won = evidence.engine_metric(winner, "preempting_share") or 0.0
    if lost <= 0 or won > 0:
        return None
    p90 = evidence.engine_metric(loser, "kv_cache_usage_p90")
    usage = (
        f", its KV cache {p90:.0%} full at p90 ({evidence.metric_name(loser, 'kv_cache_usage')})"
        if p90 is not None
        else ""
    )
    return Claim(
        cause="kv_pressure",
        sentence=(
            f"KV pressure: {loser.label} preempted requests in {units.share(lost)} of "
            f"{evidence.samples(loser)} samples ({evidence.metric_name(loser, 'preemptions_per_s')})"
            f"{usage}; {winner.label} preempted none."
        ),
        share=None,
        metric=evidence.metric_name(loser, "preemptions_per_s"),
        coverage=f"{evidence.samples(loser)} samples",
        evidence={"loser_preempting_share": lost, "loser_kv_p90": p90},
    )


def spec_claim(winner: Side, loser: Side) -> Claim | None:
    accepted = evidence.engine_metric(winner, "spec_decode_acceptance_mean")
    if accepted is None or evidence.engine_metric(loser, "spec_decode_acceptance_mean") is not None:
        return None
    return Claim(
        cause="speculative_decoding",
        sentence=(
            f"Speculative decoding: {winner.label} drafted tokens and accepted {accepted:.0%} of "
            f"them ({evidence.metric_name(winner, 'spec_decode_acceptance')}); {loser.label} did not."
        ),
        share=None,
        metric=evidence.metric_name(winner, "spec_decode_acceptance"),
        coverage=f"{evidence.samples(winner)} samples",
        evidence={"winner_acceptance": accepted},
    )
