"""What the gate writes for a CI job: a Markdown summary (a job's summary page) and JUnit XML
(one test case per check, one for comparability and one for completed requests per engine, one
per finding, so a CI's test view lists them; what changed between the runs as the suite's
properties). Every check or finding that fails the gate is a JUnit failure; only an optional
check whose figure is missing is skipped. Names come from imported files too: control characters
are dropped from text and Markdown, and XML-illegal ones replaced in the JUnit."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

from services.core.safe_text import md_line
from services.runs.gate.evaluate import (
    EXIT_BAD_ARGUMENTS,
    EXIT_NOT_COMPARABLE,
    EXIT_NOT_MEASURED,
    EXIT_PASS,
    EXIT_REGRESSION,
    EXIT_TOOL_ERROR,
    GateResult,
)

_ICON = {
    "pass": "✅",
    "fail": "❌",
    "within noise": "〰️",
    "noise unknown": "❔",
    "not measured": "❓",
    "skipped": "—",
    "not judged": "⛔",
}
_FINDING_ICON = {"fail": "❌", "allowed": "⚠️", "note": "ℹ️"}
#: The Markdown title of each exit code.
TITLES: dict[int, str] = {
    EXIT_PASS: "✅ pass",
    EXIT_REGRESSION: "❌ regression",
    EXIT_BAD_ARGUMENTS: "⚠️ bad arguments",
    EXIT_NOT_COMPARABLE: "⛔ not comparable",
    EXIT_NOT_MEASURED: "❓ not measured",
    EXIT_TOOL_ERROR: "⚠️ tool error",
}
#: C0 controls (a terminal escape starts with one), DEL and C1 controls, newlines included.
_CONTROLS = re.compile("[\x00-\x1f\x7f-\x9f]")
#: What XML 1.0 cannot hold at all (tab, newline and carriage return it can).
_XML_ILLEGAL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff\ud800-\udfff]")


def plain(text: str) -> str:
    """One line of text for a terminal or a Markdown cell: control characters dropped (an
    imported name's terminal escapes, newlines)."""
    return _CONTROLS.sub("", text)


def _xml_text(text: str | None) -> str | None:
    return None if text is None else _XML_ILLEGAL.sub("\ufffd", text)


def _cell(text: str) -> str:
    """Untrusted text (engine and run names, imported labels) as one line of Markdown, a table
    cell included: control characters (newlines among them) as spaces, then the pages' one
    escaper (safe_text.md_line), so that it can neither break the table nor format, link or
    load anything."""
    return md_line(_CONTROLS.sub(" ", text))


def markdown(result: GateResult) -> str:
    """The gate's result as GitHub-flavoured Markdown."""
    title = TITLES[result.exit_code]
    runs = ", ".join(f"#{run_id}" for run_id in result.run_ids)
    lines = [
        f"## Shootout gate: {title}",
        "",
        f"Runs {runs}; baseline #{result.run_ids[0]}. Checks: "
        + ", ".join(f"`{t.text}`" for t in result.thresholds)
        + ". A check fails past its limit when beyond noise or when its noise is unknown "
        "(unless allowed); a figure not measured fails unless the check is optional (`?`); a "
        "finding (a stall, a jump, a broken workload, figures that cannot be trusted) fails "
        "unless its flag passes it.",
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
    if result.findings:
        lines += ["", "### Findings", ""]
        lines += [
            f"- {_FINDING_ICON[f.status]} **{f.kind}** ({_cell(f.engine)}, {f.status}): {_cell(f.text)}"
            for f in result.findings
        ]
        lines.append("")
    for text in result.nothing_completed:
        lines.append(f"- **{_cell(text)}**: the gate fails whatever the flags.")
    lines += [f"- {_cell(note)}" for note in result.not_repeats]
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
    why = [check for check in result.checks if check.explanation is not None and check.explanation.text]
    if why:
        # Why each failed check's candidate lost, from the engines' own accounts: never a verdict.
        lines += ["", "### Why", ""]
        lines += [
            f"- {_cell(check.engine)} `{check.threshold.text}`: {_cell(check.explanation.text)}"
            for check in why
            if check.explanation is not None
        ]
    return "\n".join(lines) + "\n"


def _failure(case: ET.Element, message: str, kind: str, text: str) -> None:
    failure = ET.SubElement(case, "failure", message=message, type=kind)
    failure.text = text


def junit(result: GateResult) -> str:
    """The gate's result as JUnit XML: a suite with a case per check, and per engine one for
    comparability and one for completed requests. Every case that fails the gate is a
    `<failure>` (CI pages show skipped cases green): only optional checks are ever skipped."""
    suites = ET.Element("testsuites", name="shootout-gate")
    suite = ET.SubElement(suites, "testsuite", name="shootout-gate")
    changes = [
        (f"changed {d.label} ({pair.candidate.label} against {pair.baseline.label})", d.text)
        for pair in result.pairs
        for d in pair.verdict.engine_changes
    ]
    if changes:
        # What the comparison measures (another model, engine version, weights): a CI page that
        # shows only the JUnit still says what changed.
        properties = ET.SubElement(suite, "properties")
        for name, value in changes:
            ET.SubElement(properties, "property", name=name, value=value)
    cases = failures = skipped = 0
    for pair in result.pairs:
        cases += 2
        classname = f"shootout.gate.{pair.engine}"
        case = ET.SubElement(suite, "testcase", classname=classname, name="comparability")
        if not pair.verdict.comparable:
            differences = "\n".join(d.text for d in pair.verdict.differences)
            if result.override:
                ET.SubElement(case, "system-out").text = (
                    "Not comparable, judged anyway (--allow-incomparable):\n" + differences
                )
            else:
                failures += 1
                _failure(case, pair.verdict.headline, "not comparable", differences)
        case = ET.SubElement(suite, "testcase", classname=classname, name="requests completed")
        if pair.nothing_completed:
            failures += 1
            words = "; ".join(pair.nothing_completed)
            _failure(case, words, "nothing completed", words)
    for found in result.findings:
        cases += 1
        case = ET.SubElement(
            suite, "testcase", classname=f"shootout.gate.{found.engine}", name=found.kind
        )
        ET.SubElement(case, "system-out").text = f"{found.side}: {found.text}"
        if found.failed:
            failures += 1
            _failure(case, found.text, found.kind, found.text)
    for check in result.checks:
        cases += 1
        case = ET.SubElement(
            suite, "testcase", classname=f"shootout.gate.{check.engine}", name=check.threshold.text
        )
        ET.SubElement(case, "system-out").text = f"{check.text}\n{check.noise.detail}"
        if check.failed:
            failures += 1
            kind = "regression" if check.status == "fail" else check.status
            why = check.explanation.text if check.explanation is not None else ""
            _failure(case, check.text, kind, check.noise.detail + (f"\nWhy: {why}" if why else ""))
        elif check.status == "skipped":
            skipped += 1
            ET.SubElement(case, "skipped", message=check.text)
    suite.set("tests", str(cases))
    suite.set("failures", str(failures))
    suite.set("errors", "0")
    suite.set("skipped", str(skipped))
    suites.set("tests", str(cases))
    suites.set("failures", str(failures))
    for element in suites.iter():
        element.text = _xml_text(element.text)
        for key, value in element.attrib.items():
            element.set(key, _xml_text(value) or "")
    return ET.tostring(suites, encoding="unicode", xml_declaration=True) + "\n"
