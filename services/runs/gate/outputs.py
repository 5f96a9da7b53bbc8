"""What the gate writes for a CI job: a Markdown summary (a job's summary page) and JUnit XML
(one test case per check, and one for comparability, so a CI's test view lists them)."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from services.runs.gate.evaluate import EXIT_NOT_COMPARABLE, GateResult

_ICON = {
    "pass": "✅",
    "fail": "❌",
    "within noise": "〰️",
    "noise unknown": "❔",
    "not measured": "—",
    "not judged": "⛔",
}


def _cell(text: str) -> str:
    """A table cell: untrusted names (engines, runs) must not break the table or link."""
    for raw, safe in (("<", "&lt;"), ("|", "\\|"), ("\n", " "), ("[", "\\["), ("]", "\\]")):
        text = text.replace(raw, safe)
    return text


def markdown(result: GateResult) -> str:
    """The gate's result as GitHub-flavoured Markdown."""
    title = {0: "✅ pass", 1: "❌ regression", EXIT_NOT_COMPARABLE: "⛔ not comparable"}[
        result.exit_code
    ]
    runs = ", ".join(f"#{run_id}" for run_id in result.run_ids)
    lines = [
        f"## Shootout gate: {title}",
        "",
        f"Runs {runs}; baseline #{result.run_ids[0]}. Checks: "
        + ", ".join(f"`{t.text}`" for t in result.thresholds)
        + ". A check fails only beyond its limit, beyond noise, and between comparable runs.",
        "",
        _cell(result.message),
        "",
    ]
    lines += ["### Comparability", ""]
    for pair in result.pairs:
        verdict = pair.verdict
        lines.append(f"- {_cell(verdict.headline)}")
        lines += [f"  - {_cell(d.text)}" for d in verdict.differences]
        lines += [f"  - {_cell(d.text)} (what is compared)" for d in verdict.engine_changes]
        if verdict.unchecked:
            lines.append(f"  - not recorded on one side: {_cell(', '.join(verdict.unchecked))}")
    if result.override and not result.comparable:
        lines.append("- **Override:** judged although not comparable (`--allow-incomparable`).")
    if result.unpaired:
        lines.append(f"- Not paired with the other run: {_cell(', '.join(result.unpaired))}")
    lines += [
        "",
        "### Checks",
        "",
        "| | Engine | Check | Baseline | Candidate | Change | Noise |",
        "|---|---|---|---|---|---|---|",
    ]
    for check in result.checks:
        lines.append(
            f"| {_ICON[check.status]} {check.status} | {_cell(check.engine)} | `{check.threshold.text}` "
            f"| {check.value_text(check.baseline_value)} | {check.value_text(check.candidate_value)} "
            f"| {check.change_text} | {_cell(check.noise.detail)} |"
        )
    return "\n".join(lines) + "\n"


def junit(result: GateResult) -> str:
    """The gate's result as JUnit XML: a suite with a case per check and one for comparability."""
    suites = ET.Element("testsuites", name="shootout-gate")
    suite = ET.SubElement(suites, "testsuite", name="shootout-gate")
    cases = 0
    failures = 0
    for pair in result.pairs:
        cases += 1
        case = ET.SubElement(
            suite, "testcase", classname=f"shootout.gate.{pair.engine}", name="comparability"
        )
        if not pair.verdict.comparable:
            differences = "\n".join(d.text for d in pair.verdict.differences)
            if result.override:
                ET.SubElement(case, "system-out").text = (
                    "Not comparable, judged anyway (--allow-incomparable):\n" + differences
                )
            else:
                failures += 1
                failure = ET.SubElement(
                    case, "failure", message=pair.verdict.headline, type="not comparable"
                )
                failure.text = differences
    for check in result.checks:
        cases += 1
        case = ET.SubElement(
            suite, "testcase", classname=f"shootout.gate.{check.engine}", name=check.threshold.text
        )
        ET.SubElement(case, "system-out").text = f"{check.text}\n{check.noise.detail}"
        if check.failed:
            failures += 1
            failure = ET.SubElement(case, "failure", message=check.text, type="regression")
            failure.text = check.noise.detail
    suite.set("tests", str(cases))
    suite.set("failures", str(failures))
    suite.set("errors", "0")
    suites.set("tests", str(cases))
    suites.set("failures", str(failures))
    return ET.tostring(suites, encoding="unicode", xml_declaration=True) + "\n"
