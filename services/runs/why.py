"""Why each winner won: a comparison's explanations (services/bench/explain), one per verdict
that names a winner (its winner against its runner-up), and one guarded explanation for each
series the comparison named no winner against because it is not comparable. The same list goes
to every surface: the Runs compare page, `runs compare` (`why:` lines, `explanations` in
`--json`), the gate's Markdown and failing JUnit cases, and the HTML report."""

from __future__ import annotations

from dataclasses import replace

from services.bench.explain import Explanation, Side, explain
from services.bench.results import EngineResults
from services.core import stored_json
from services.runs.records import Comparison, Series

#: The figure each explanation is about, in the verdicts' words.
WHY_METRICS = {
    "ttft_s": "TTFT",
    "e2e_s": "E2E",
    "tpot_s": "TPOT",
    "itl_s": "ITL",
    "output_throughput_tok_s": "Output throughput",
    "request_throughput_rps": "Request throughput",
    "total_token_throughput_tok_s": "Total token throughput",
    "all": "All figures",
}


def side_of(series: Series) -> Side:
    """A series as the explanation reads it: its stored results and what its run knew."""
    info = stored_json.mapping(series.engine_info)
    command = info.get("command")
    return Side(
        label=series.label,
        results=series.results or EngineResults(),
        kind=str(info["kind"]) if info.get("kind") else None,
        model=series.fingerprint.model or series.model,
        client_bound=series.client_bound,
        ran_together=series.ran_together,
        reported=stored_json.mapping(info.get("reported")),
        command=[str(word) for word in command] if isinstance(command, list) else [],
    )


def explanations(comparison: Comparison) -> list[Explanation]:
    by_key = {series.key: series for series in comparison.series}
    found: list[Explanation] = []
    for verdict in comparison.verdicts:
        winner = by_key.get(verdict.winner or "")
        loser = by_key.get(verdict.runner_up or "")
        if winner is None or loser is None:
            continue
        said = explain(verdict.metric, side_of(winner), side_of(loser), noise=verdict.noise.status)
        found.append(_compared_anyway(said, comparison))
    if not comparison.comparability.names_winners:
        baseline = comparison.series[comparison.baseline]
        labels = {series.label: series for series in comparison.series}
        for pair in comparison.comparability.verdicts:
            other = labels.get(pair.labels[1])
            if pair.comparable or other is None:
                continue
            reason = ", ".join(d.label.lower() for d in pair.differences)
            found.append(explain("all", side_of(baseline), side_of(other), comparable=reason))
    return found


def grouped(found: list[Explanation]) -> list[tuple[str, str]]:
    """(the figures, the explanation) once per distinct explanation: a guard that holds for every
    figure of a pair (different models, not comparable) is said once, after the figures."""
    figures: dict[tuple[str, str, str], list[str]] = {}
    for item in found:
        if item.text:
            figures.setdefault((item.winner, item.loser, item.text), []).append(
                WHY_METRICS.get(item.metric, item.metric)
            )
    return [(", ".join(names), text) for (_w, _l, text), names in figures.items()]


def _compared_anyway(said: Explanation, comparison: Comparison) -> Explanation:
    """An explanation of a pair compared although not comparable (--allow-incomparable) names
    what differs as a confounder: its claims may be that difference's, not the engines'."""
    report = comparison.comparability
    if report.comparable or not said.claims:
        return said
    labels = {said.winner, said.loser}
    differing = [
        d.label.lower()
        for pair in report.verdicts
        if set(pair.labels) & labels
        for d in pair.differences
    ]
    if not differing:
        return said
    return replace(
        said, confounders=(*said.confounders, f"they differ in {', '.join(differing)}, compared anyway")
    )


def why_lines(found: list[Explanation]) -> list[str]:
    """The explanations as the CLI and the gate write them, one line per distinct one."""
    return [f"{names}: {text}" for names, text in grouped(found)]
