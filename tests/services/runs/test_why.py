"""A comparison of stored runs says why each winner won (issue 54): one explanation per verdict
that names a winner, the same on `runs compare` (`why:` lines, `explanations` in --json), and a
guard where the comparison names no winner."""

from __future__ import annotations

import json
from typing import Any

import pytest
from sqlalchemy import select

from db.models import Run
from db.session import session_scope
from services import runs
from services.runs import display, view, why
from services.runs.reports import html_report
from tests.commands.test_gate import run_cli
from tests.services.runs.test_runs import engine_summary, make_run


def _dist(mean: float) -> dict[str, float]:
    return {"mean": mean, "p50": mean, "p90": mean, "p95": mean, "p99": mean, "min": mean, "max": mean}


def _block(queue: float, running_max: float, completed: int = 100) -> dict[str, Any]:
    prefill, decode, rest = 0.05, 0.5, 0.01
    ttft = queue + prefill + rest
    block = engine_summary(ttft, 0.005, ttft + decode, 400.0, completed=completed)
    block["ttft_s"] = _dist(ttft)
    block["e2e_s"] = _dist(ttft + decode)
    block["output_tokens"] = completed * 100
    block["time_split"] = {
        "requests": completed,
        "reported": completed,
        "source": "metrics",
        "queue_reported": True,
        "queue_s": _dist(queue),
        "prefill_s": _dist(prefill),
        "decode_s": _dist(decode),
        "ttft_rest_s": _dist(rest),
        "e2e_rest_s": _dist(rest),
        "e2e_s": _dist(ttft + decode),
    }
    block["engine_metrics"] = {
        "requests_running_max": running_max,
        "requests_waiting_share": 0.8 if queue else 0.0,
        "samples": 50,
    }
    return block


def _with_kind(run_id: int, kind: str, reported: dict[str, Any]) -> None:
    with session_scope() as session:
        run = session.scalars(select(Run).where(Run.id == run_id)).one()
        run.engines = [{**snapshot, "kind": kind, "reported": reported} for snapshot in run.engines]


def test_runs_compare_says_why_the_one_slot_engine_lost_ttft(
    db_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    four = make_run(engines={"llamacpp-4slot": _block(0.0, 4)}, name="four")
    one = make_run(engines={"llamacpp-1slot": _block(1.2, 1)}, name="one")
    _with_kind(four, "llamacpp", {"/props": {"total_slots": 4}})
    _with_kind(one, "llamacpp", {"/props": {"total_slots": 1}})
    comparison = runs.compare_runs([four, one])
    found = {item.metric: item for item in why.explanations(comparison)}
    ttft = found["ttft_s"]
    assert ttft.status == "explained" and ttft.winner == f"#{four} llamacpp-4slot"
    assert f"Queueing: #{one} llamacpp-1slot's requests waited 1.20 s on average" in ttft.text
    assert "stayed at its --parallel of 1 (reported by the engine)" in ttft.text
    code, out, _ = run_cli(capsys, "runs", "compare", str(four), str(one))
    assert code == 0
    assert f"why: TTFT: Queueing: #{one} llamacpp-1slot's requests waited" in out
    code, out, _ = run_cli(capsys, "runs", "compare", str(four), str(one), "--json")
    assert code == 0
    said = json.loads(out)["explanations"]
    assert [e["claims"][0]["cause"] for e in said if e["metric"] == "ttft_s"] == ["queue"]


def test_a_client_bound_side_is_a_guard_not_a_cause(db_url: str) -> None:
    bound = _block(1.2, 1)
    bound["generator"] = {
        "client_bound": True,
        "checked": True,
        "workers": 1,
        "evidence": ["loop lag p99 900 ms"],
    }
    a = make_run(engines={"a": _block(0.0, 4)})
    b = make_run(engines={"b": bound})
    found = why.explanations(runs.compare_runs([a, b]))
    ttft = next(item for item in found if item.metric == "ttft_s")
    assert ttft.status == "guarded" and "client-bound" in ttft.text and "Queueing" not in ttft.text
    # The same guard over every figure of the pair is said once, after the figures it is about.
    lines = why.why_lines(found)
    assert len(lines) == 1 and lines[0].startswith("TTFT, E2E: Why is not said: the generator was")


def test_the_compare_page_and_the_html_report_show_the_same_why(db_url: str) -> None:
    four = make_run(engines={"llamacpp-4slot": _block(0.0, 4)})
    one = make_run(engines={"llamacpp-1slot": _block(1.2, 1)})
    _with_kind(one, "llamacpp", {"/props": {"total_slots": 1}})
    shown = display.comparison_view([four, one])
    lines = view.why_lines(shown)
    assert f"- **TTFT**: Queueing\\: #{one} llamacpp-1slot's requests waited" in lines
    evidence = view.why_evidence(shown)
    assert list(evidence["Cause"]) == ["queue", "queue"]  # TTFT and E2E, both the queue
    page = html_report.report_html("Compare", [], shown, [])
    assert "<h2>Why</h2>" in page and f"#{one} llamacpp-1slot&#x27;s requests waited" in page


def test_the_gate_says_why_a_failed_check_failed_and_only_for_failed_ones(
    db_url: str, tmp_path, capsys: pytest.CaptureFixture[str]
) -> None:
    base = make_run(engines={"llamacpp": _block(0.0, 4)}, requests={"llamacpp": [0.06] * 30})
    slower = make_run(engines={"llamacpp": _block(1.2, 1)}, requests={"llamacpp": [1.26] * 30})
    _with_kind(slower, "llamacpp", {"/props": {"total_slots": 1}})
    md, xml = tmp_path / "gate.md", tmp_path / "gate.xml"
    code, _, _ = run_cli(
        capsys, "runs", "compare", "--baseline", str(base), str(slower),
        "--fail-on", "ttft_p50:+10%,output_tok_s:-50%", "--summary-md", str(md), "--junit", str(xml),
    )  # fmt: skip
    assert code == 1
    text = md.read_text()
    assert "### Why" in text and f"Queueing\\: #{slower} llamacpp's requests waited" in text
    assert "output_tok_s" not in text.split("### Why")[1]  # a passed check has no why
    assert f"Why: Queueing: #{slower} llamacpp's requests waited" in xml.read_text()


def test_a_pair_compared_anyway_names_what_differs_beside_its_claims(db_url: str) -> None:
    warm = _block(0.0, 4)
    warm.update(input_tokens=10_000, cached_tokens=5_000)
    cold = _block(1.2, 1)
    cold.update(input_tokens=10_000, cached_tokens=0)
    a, b = make_run(engines={"warm": warm}), make_run(engines={"cold": cold})
    assert not why.explanations(runs.compare_runs([a, b]))[0].claims  # refused: a guard
    found = why.explanations(runs.compare_runs([a, b], allow_incomparable=True))
    ttft = next(item for item in found if item.metric == "ttft_s")
    assert "Queueing" in ttft.text and "they differ in prefix cache, compared anyway" in ttft.text
