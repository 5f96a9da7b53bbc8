"""Run history and run comparison: what a team measured, and what changed.

History: every stored run (benchmark, playground, recording, demo, import), filtered by
kind, engine, model, workload, date and tag, a page at a time (the database does the
filtering and counting; at most one page of runs is ever loaded). Notes, tags, archive
and delete.

Comparison: 1 to N runs become *series*, one per (run, engine) pair, because one
benchmark run may measure several engines. For each latency metric (TTFT, TPOT, ITL,
end-to-end) and each statistic, the table gives every series' value, its difference from
the baseline series and the per cent change, marked better or worse. One verdict line per
metric says which series wins and by how much, and whether the difference is beyond noise:

* with repeated runs (other runs of the same configuration on the same engine version),
  a Welch t-test on the per-run values says whether the gap is beyond run-to-run noise;
* without repeats but with per-request samples, a bootstrap confidence interval of the
  difference says whether it is beyond within-run sampling noise (run-to-run noise unknown);
* otherwise the noise is unknown, and the line says so.

Statistics are taken from the run's stored summary (what the benchmark or the imported
tool reported) and computed from the per-request rows only where the summary lacks them.
All times are in seconds.

Before any winner is named, each series' fingerprint (services.bench.comparability: lengths asked and
served, fixed output honoured, warm-up, load, prefix cache, sampling, token counter, timing,
reasoning, hardware, engine) is judged against the baseline's: setups that differ get the list
of what differs and no verdicts, unless the caller compares anyway (`allow_incomparable`).

The package's parts: `records` (the typed records, metric names, how a value reads),
`history` (the filtered list), `detail` (one run; notes, tags, archive, delete), `series`
(loading a compared run's engines), `verdicts` (winner and noise per metric),
`comparison` (compare_runs) and `gate`
(the CI gate: thresholds, exit codes, Markdown and JUnit), `reports` (a run's exports and
HTML reports). `view` shapes them for the Runs page. `reports` and `view` import this package,
so they are imported by their own names, not re-exported here.
"""

from __future__ import annotations

from services.runs.comparison import compare_runs, comparison_of_run
from services.runs.detail import (
    archive_runs,
    delete_run,
    get_run,
    may_change,
    set_archived,
    update_run,
)
from services.runs.history import filter_options, headline, list_runs
from services.runs.records import (
    LATENCY_METRICS,
    QUALITY_METRICS,
    RUN_KINDS,
    RUN_SORTS,
    STATS,
    THROUGHPUT_METRICS,
    Comparison,
    DeleteResult,
    FilterOptions,
    MetricRow,
    NoiseCheck,
    RunDetail,
    RunFilter,
    RunListItem,
    RunPage,
    RunSort,
    Series,
    SettingRow,
    Verdict,
    format_value,
    parse_run_ids,
)

# The name this function had when the package was one module (tests/services/bench imports it).
_headline = headline

__all__ = [
    "LATENCY_METRICS",
    "QUALITY_METRICS",
    "RUN_KINDS",
    "RUN_SORTS",
    "STATS",
    "THROUGHPUT_METRICS",
    "Comparison",
    "DeleteResult",
    "FilterOptions",
    "MetricRow",
    "NoiseCheck",
    "RunDetail",
    "RunFilter",
    "RunListItem",
    "RunPage",
    "RunSort",
    "Series",
    "SettingRow",
    "Verdict",
    "archive_runs",
    "compare_runs",
    "comparison_of_run",
    "delete_run",
    "filter_options",
    "format_value",
    "get_run",
    "headline",
    "list_runs",
    "may_change",
    "parse_run_ids",
    "set_archived",
    "update_run",
]
