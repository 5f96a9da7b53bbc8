"""A gate for CI: fail a job when a run regressed against a baseline, and only then.

`parse_fail_on` reads the thresholds (`"ttft_p90:+10%,output_tok_s:-5%"`), `evaluate` judges
stored runs (a check fails only past its limit, beyond the comparison's noise verdict and
between comparable runs; not comparable is its own exit code), and `markdown` / `junit` write
what a CI job shows. `cli.py runs compare` and `cli.py bench` call these (commands/gate.py).
"""

from __future__ import annotations

from services.runs.gate.evaluate import (
    EXIT_BAD_ARGUMENTS,
    EXIT_NOT_COMPARABLE,
    EXIT_PASS,
    EXIT_REGRESSION,
    Check,
    GateResult,
    Pair,
    evaluate,
)
from services.runs.gate.outputs import junit, markdown
from services.runs.gate.rules import EXAMPLE, GateSyntaxError, Threshold, parse_fail_on

__all__ = [
    "EXAMPLE",
    "EXIT_BAD_ARGUMENTS",
    "EXIT_NOT_COMPARABLE",
    "EXIT_PASS",
    "EXIT_REGRESSION",
    "Check",
    "GateResult",
    "GateSyntaxError",
    "Pair",
    "Threshold",
    "evaluate",
    "junit",
    "markdown",
    "parse_fail_on",
]
