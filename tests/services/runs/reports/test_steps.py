"""Issue 33: each step's cost and energy in the HTML reports and the steps CSV; a step without a
price says "not priced" and one without an energy counter says why, never 0."""

from __future__ import annotations

import csv
import io
from typing import Any

import pytest

from services.core import cost
from services.core.errors import ValidationError
from services.planner.steps import CSV_COLUMNS, NOT_RECORDED, step_rows
from services.runs import display, reports
from tests.services.runs.test_runs import engine_summary, make_run

MEASURED = {
    "measured": True,
    "joules": 640.0,
    "method": "energy counter",
    "source": "NVML",
    "devices": ["GPU 0"],
    "scope": "GPU 0, used by this engine alone",
    "duration_s": 10.0,
    "engines": ["vllm"],
    "j_per_output_token": 0.128,
    "output_tokens_per_j": 7.8125,
}
UNMEASURED = {"measured": False, "reason": "no NVIDIA GPU here"}


def block(*, price: float | None, energy: dict[str, Any] | None) -> dict[str, Any]:
    found = {**engine_summary(0.1, 0.02, 1.0, 500.0), "total_token_throughput_tok_s": 1000.0}
    found[cost.SUMMARY_KEY] = cost.cost_of_block(price, found).to_json()
    if energy is not None:
        found["energy"] = energy
    return found


def test_the_run_report_says_each_steps_cost_and_energy(db_url: str) -> None:
    run_id = make_run(
        engines={
            "vllm": block(price=3.6, energy=MEASURED),
            "tgi": block(price=None, energy=UNMEASURED),
        }
    )
    page = reports.export_run(run_id, "html").data.decode("utf-8")
    section = page.split("<h2>Cost and energy per step</h2>", 1)[1].split("<h2>", 1)[0]
    # 3.6 $/h at 500 output tok/s: 3.6e6 / (500 * 3600) = $2.00 per 1M output tokens.
    assert "<td>$2.00</td>" in section
    assert "<td>0.128</td>" in section and "<td>7.812</td>" in section
    assert "energy counter, NVML" in section
    assert "not priced" in section
    assert "not measured here: no NVIDIA GPU here" in section
    assert "<td>0</td>" not in section and "$0.00" not in section


def test_a_run_from_before_energy_says_so(db_url: str) -> None:
    run_id = make_run(engines={"vllm": block(price=None, energy=None)})
    page = reports.export_run(run_id, "html").data.decode("utf-8")
    assert NOT_RECORDED in page


def test_the_compare_report_holds_the_compare_pages_cost_and_energy_rows(db_url: str) -> None:
    a = make_run(name="A", engines={"vllm": block(price=3.6, energy=MEASURED)})
    b = make_run(name="B", engines={"vllm": block(price=None, energy=UNMEASURED)})
    view = display.comparison_view([a, b])
    page = reports.export_comparison([a, b]).data.decode("utf-8")
    shown = {str(label) for label in view.table["Metric"]}
    for label in (
        "Cost per 1M output tokens",
        "Cost per 1M total tokens",
        "Energy per output token",
        "Output tokens per joule",
    ):
        assert label in shown
        assert f"<td>{label}</td>" in page
    assert "<td>not priced</td>" in page
    # How each run's energy was measured, or why not, is beside the table.
    assert f"<h2>Cost and energy per step of #{a}</h2>" in page
    assert "energy counter, NVML" in page
    assert "not measured here: no NVIDIA GPU here" in page


def test_the_steps_csv_has_raw_figures_and_says_why_one_is_missing(db_url: str) -> None:
    sweep = [
        {"engine": "vllm", "step": 0, "concurrency": 1, **block(price=3.6, energy=MEASURED)},
        {"engine": "vllm", "step": 1, "concurrency": 4, **block(price=3.6, energy=UNMEASURED)},
    ]
    run_id = make_run(engines={"vllm": block(price=3.6, energy=MEASURED)}, summary={"sweep": sweep})
    exported = reports.export_run(run_id, "steps")
    assert exported.filename == f"shootout-run-{run_id}-steps.csv"
    assert exported.mime == "text/csv"
    rows = list(csv.DictReader(io.StringIO(exported.data.decode("utf-8"))))
    assert tuple(rows[0]) == CSV_COLUMNS
    first, second = rows
    assert first["step"] == "concurrency 1" and second["step"] == "concurrency 4"
    assert first["cost"] == "priced" and float(first["usd_per_1m_output"]) == pytest.approx(2.0)
    assert float(first["usd_per_1m_total"]) == pytest.approx(1.0)
    assert first["energy"] == "measured"
    assert float(first["j_per_output_token"]) == pytest.approx(0.128)
    assert float(first["output_tokens_per_j"]) == pytest.approx(7.8125)
    assert first["energy_method"] == "energy counter" and first["energy_source"] == "NVML"
    assert second["energy"] == "not measured here: no NVIDIA GPU here"
    assert second["energy_j"] == "" and second["j_per_output_token"] == ""


def test_an_unpriced_step_is_not_priced_in_the_csv_never_zero(db_url: str) -> None:
    run_id = make_run(engines={"tgi": block(price=None, energy=None)})
    (row,) = csv.DictReader(io.StringIO(reports.export_run(run_id, "steps").data.decode()))
    assert row["cost"] == "not priced"
    assert row["usd_per_hour"] == row["usd_per_1m_output"] == ""
    assert row["energy"] == NOT_RECORDED


def test_a_run_kind_without_steps_is_refused_with_a_message(db_url: str) -> None:
    run_id = make_run(kind="playground", engines={})
    with pytest.raises(ValidationError, match="only benchmark, import and tune runs"):
        reports.export_run(run_id, "steps")


def test_a_tune_runs_steps_are_its_configurations() -> None:
    summary = {
        "configs": [
            {"label": "a", "metrics": block(price=2.0, energy=MEASURED), "sweep": []},
            {"label": "b", "metrics": None, "sweep": []},
            {
                "label": "c",
                "sweep": [{"level": 2, **block(price=None, energy=UNMEASURED)}],
            },
        ]
    }
    rows = step_rows("tune", summary)
    assert [(r.engine, r.step) for r in rows] == [("a", ""), ("c", "level 2")]
    assert rows[0].energy is not None and rows[0].energy.j_per_output_token == 0.128
    assert not rows[1].cost.priced


def test_unknown_export_format_names_the_known_ones(db_url: str) -> None:
    run_id = make_run(engines={"vllm": block(price=None, energy=None)})
    with pytest.raises(ValidationError, match="csv, json, html, steps"):
        reports.export_run(run_id, "xlsx")
