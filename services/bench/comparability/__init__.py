"""Comparability: whether two runs' figures may be compared, and if not, exactly why.

Every engine of every run gets a fingerprint (`Comparability`): lengths asked and served,
whether fixed output lengths were honoured, warm-up, loop and level, the prefix cache's state,
sampling, who counted tokens, how the client timed, whether TTFT includes reasoning,
hardware, and the engine's version and settings. A benchmark stores its engines' fingerprints
in its summary when it finishes; an import stores what its file says; older runs read what
their config and summary still tell, the rest unknown. `compare_fingerprints` is the one
judgement, read by Compare, the HTML report, the CLI gate and the Planner.

Parts: `fingerprint` (the record and its rules), `build` (from what a run stored),
`imported` (from another tool's file), `compare` (the verdict and a comparison's report),
`weights` (the model's format and dtype, and which settings explain speed).
"""

from __future__ import annotations

from services.bench.comparability.build import (
    SUMMARY_KEY,
    fingerprints_to_store,
    run_fingerprint,
    stored_fingerprints,
)
from services.bench.comparability.compare import (
    ComparabilityReport,
    ComparabilityVerdict,
    Difference,
    compare_fingerprints,
    report_of,
)
from services.bench.comparability.fingerprint import RULES, Comparability, Rule
from services.bench.comparability.imported import fingerprints_of_import

__all__ = [
    "RULES",
    "SUMMARY_KEY",
    "Comparability",
    "ComparabilityReport",
    "ComparabilityVerdict",
    "Difference",
    "Rule",
    "compare_fingerprints",
    "fingerprints_of_import",
    "fingerprints_to_store",
    "report_of",
    "run_fingerprint",
    "stored_fingerprints",
]
