"""Small pieces several scenarios share: reading a batch of requests, the failure line."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from services.client import ERROR_CLASSES
from services.demos.base import mean
from services.demos.context import Sent


def first_error(sent: Sequence[Sent]) -> str | None:
    """The first failure of a batch in plain words ("connect_refused: ..."), None if all answered."""
    for item in sent:
        if not item.ok:
            r = item.result
            detail = r.error or ERROR_CLASSES.get(r.error_class or "", "failed")
            return f"{r.error_class or 'error'}: {detail}"
    return None


def decode_parallelism(sent: Sequence[Sent]) -> float | None:
    """How many requests were decoding at once, on average over the time any was: the sum
    of the decode phases (first token to last) over the length of their union. 1.0 means
    one after another (a single slot); N means all N together. It comes from our own
    clocks, so it shows batching even when a busy machine blurs the throughput."""
    spans = sorted(
        (s.result.start + (s.result.ttft_s or 0.0), s.result.start + (s.result.e2e_s or 0.0))
        for s in sent
        if s.ok and s.result.e2e_s is not None and s.result.ttft_s is not None
    )
    spans = [(a, b) for a, b in spans if b > a]
    if not spans:
        return None
    total = sum(b - a for a, b in spans)
    union, current_start, current_end = 0.0, spans[0][0], spans[0][1]
    for a, b in spans[1:]:
        if a > current_end:
            union += current_end - current_start
            current_start, current_end = a, b
        else:
            current_end = max(current_end, b)
    union += current_end - current_start
    return total / union if union > 0 else None


def wave_figures(sent: Sequence[Sent]) -> dict[str, Any]:
    """Throughput and latency of requests sent together.

    Output throughput = all answered tokens / the wave's wall time (first send to last
    token). Decode rate = tokens after each first token / (last token - earliest first
    token): the rate of the generating phase, which for one request is (tokens-1)/(E2E-TTFT).
    """
    ok = [s for s in sent if s.ok]
    if not ok:
        return {"ok": 0, "failed": len(sent), "error": first_error(sent)}
    starts = [s.result.start for s in ok]
    ends = [s.result.start + (s.result.e2e_s or 0.0) for s in ok]
    firsts = [s.result.start + (s.result.ttft_s or 0.0) for s in ok]
    tokens = sum(s.result.output_tokens or 0 for s in ok)
    later_tokens = sum(max(0, (s.result.output_tokens or 0) - (len(s.result.choices) or 1)) for s in ok)
    wall = max(ends) - min(starts)
    decode_span = max(ends) - min(firsts)
    return {
        "ok": len(ok),
        "failed": len(sent) - len(ok),
        "error": first_error(sent),
        "output_tokens": tokens,
        "wall_s": wall,
        "throughput_tok_s": tokens / wall if wall > 0 else None,
        "decode_tok_s": later_tokens / decode_span if decode_span > 0 else None,
        "ttft_mean_s": mean(s.result.ttft_s for s in ok),
        "e2e_mean_s": mean(s.result.e2e_s for s in ok),
        "e2e_max_s": max(s.result.e2e_s or 0.0 for s in ok),
        "parallel": decode_parallelism(ok),
    }
