"""Explain the winner: why one engine beat another on a figure, from the engines' own accounts
(their per-request times and metrics, stored with the run). One pure function of stored data,
`explain`, read by every surface that names a winner: Compare, `runs compare`, the gate, the
reports. See docs/measuring.md, "Why one engine beat another"."""

from services.bench.explain.claims import exceeds_gap
from services.bench.explain.reasons import explain
from services.bench.explain.records import Claim, Explanation, Side

__all__ = ["Claim", "Explanation", "Side", "exceeds_gap", "explain"]
