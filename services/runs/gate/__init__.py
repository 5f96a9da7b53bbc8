"""A gate for CI: fail a job when a run regressed against a baseline, and only then.

`parse_fail_on` reads the thresholds (`"ttft_p90:+10%,output_tok_s:-5%"`), `evaluate` judges
stored runs (a check fails past its limit beyond noise or with noise unknown, between comparable
runs; nothing completed fails; not comparable, not measured and tool errors have exit codes of
their own; `findings` adds what no threshold asks about: a broken workload, a stall, a jump, a
measurement that cannot be trusted), and `markdown` / `junit` write what a CI job shows. `shootout runs compare` and `shootout bench` call these (commands/gate.py).
"""

from __future__ import annotations

from services.runs.gate.evaluate import (
    EXIT_BAD_ARGUMENTS,
    EXIT_NOT_COMPARABLE,
    EXIT_NOT_MEASURED,
    EXIT_PASS,
    EXIT_REGRESSION,
    EXIT_TOOL_ERROR,
    OUTCOMES,
    Check,
    GateResult,
    GateToolError,
    Pair,
    evaluate,
)
from services.runs.gate.findings import JUMP_FACTOR, Allowed, GateFinding
from services.runs.gate.outputs import TITLES, junit, markdown, plain
from services.runs.gate.rules import EXAMPLE, GateSyntaxError, Threshold, parse_fail_on

__all__ = [
    "EXAMPLE",
    "EXIT_BAD_ARGUMENTS",
    "EXIT_NOT_COMPARABLE",
    "EXIT_NOT_MEASURED",
    "EXIT_PASS",
    "EXIT_REGRESSION",
    "EXIT_TOOL_ERROR",
    "JUMP_FACTOR",
    "OUTCOMES",
    "TITLES",
    "Allowed",
    "Check",
    "GateFinding",
    "GateResult",
    "GateSyntaxError",
    "GateToolError",
    "Pair",
    "Threshold",
    "evaluate",
    "junit",
    "markdown",
    "parse_fail_on",
    "plain",
]
