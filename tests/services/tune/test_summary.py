"""The tuning run's summary as one typed record: what analyse stores reads back unchanged,
and what is missing or odd reads as empty."""

from __future__ import annotations

import json
from typing import Any

from services.tune import view as views
from services.tune.summary import TuneSummary

STORED: dict[str, Any] = {
    "configs": [
        {"label": "a", "status": "finished", "metrics": {"output_throughput_tok_s": 40.0}},
        {"label": "b", "status": "failed", "reason": "did not start", "metrics": None},
    ],
    "engines": {"a": {"output_throughput_tok_s": 40.0}, "b": {"not_run": True}},
    "pareto": {"ttft_s": ["a"], "itl_s": []},
    "best": {
        "label": "a",
        "reason": "a: highest output tokens/s",
        "settings": {"ctx": "2048"},
        "launch": {"plain": "llama-server -c 2048", "docker": "docker run x"},
    },
    "kind": "llamacpp",
    "load": "closed loop, concurrency 2",
    "workload": "chat",
    "slo": None,
    "conclusion_headline": "a: highest output tokens/s",
}


def test_a_stored_tune_summary_reads_and_is_written_back_unchanged() -> None:
    summary = TuneSummary.from_json(STORED)
    assert [c["label"] for c in summary.configs] == ["a", "b"]
    assert summary.best_label == "a" and summary.on_front() == {"a"}
    assert summary.launch["plain"] == "llama-server -c 2048" and summary.slo is None
    assert summary.to_json() == STORED


def test_the_stored_json_is_written_back_byte_for_byte() -> None:
    """Issue 57: the cheapest configuration is a typed field now (it travelled in `extra`): a
    summary with it, one from before prices without it, and keys this version does not know
    are all written back as stored, in the same order."""
    cheapest = {"label": "a", "reason": "a: the cheapest", "launch": {"plain": "p", "docker": "d"}}
    for stored in (
        STORED,
        {**STORED, "cheapest": cheapest},
        {**STORED, "cheapest": cheapest, "later": [1]},
    ):
        assert json.dumps(TuneSummary.from_json(stored).to_json()) == json.dumps(stored)
    assert TuneSummary.from_json({**STORED, "cheapest": cheapest}).cheapest == cheapest
    assert TuneSummary.from_json({**STORED, "cheapest": "odd"}).cheapest == {}


def test_a_missing_or_odd_tune_summary_reads_as_empty() -> None:
    for stored in (None, {}, {"configs": "x", "best": [], "pareto": {"ttft_s": "a"}}):
        summary = TuneSummary.from_json(stored)
        assert summary.configs == [] and summary.best_label is None and summary.on_front() == set()
        assert views.winner(stored).label is None and views.config_table(stored).empty


def test_the_views_read_the_typed_summary_and_the_stored_json_alike() -> None:
    typed = views.config_table(TuneSummary.from_json(STORED))
    assert typed.equals(views.config_table(STORED))
    assert list(typed["best"]) == ["★", ""] and list(typed["on front"]) == ["yes", ""]
    assert views.winner(STORED).docker == "docker run x"


def test_the_winner_says_one_run_each_does_not_measure_noise() -> None:
    """Issue 36: Tune's verdict had no caveat that each configuration ran once."""
    stored = {
        **STORED,
        "configs": [
            {"label": "a", "status": "finished", "metrics": {"output_throughput_tok_s": 41.0}},
            {"label": "c", "status": "finished", "metrics": {"output_throughput_tok_s": 40.0}},
            {"label": "b", "status": "failed", "reason": "did not start", "metrics": None},
        ],
    }
    caveat = views.winner(stored).caveat or ""
    assert caveat.startswith("Each configuration ran once, so run-to-run noise is not measured")
    assert "The top two by output tokens/s (a, c) are 2% apart." in caveat
    assert views.winner({**STORED, "best": {}}).caveat is None  # no winner, nothing to qualify


def test_each_configuration_shows_its_cost_and_the_cheapest_is_named() -> None:
    """Issue 33: cost per 1M output tokens per configuration, "not priced" without a price, and
    the cheapest meeting the SLOs with its launch command; a run from before prices has none."""
    from services.core import cost

    def metrics(tok_s: float) -> dict[str, Any]:
        block = {"output_throughput_tok_s": tok_s, "completed": 8}
        return {**block, cost.SUMMARY_KEY: cost.cost_of_block(3.6, block).to_json()}

    stored = {
        **STORED,
        "configs": [
            {"label": "a", "status": "finished", "metrics": metrics(40.0)},
            {"label": "c", "status": "finished", "metrics": {"output_throughput_tok_s": 9.0}},
        ],
        "cheapest": {
            "label": "a",
            "reason": "a: the cheapest of the 1 configurations (no SLOs set), $25.00 per 1M output tokens.",
            "launch": {"plain": "llama-server -np 1", "docker": "docker run y"},
        },
    }
    stored["configs"][0]["metrics"]["energy"] = {
        "measured": True,
        "joules": 64.0,
        "j_per_output_token": 0.128,
    }
    stored["configs"][1]["metrics"]["energy"] = {"measured": False, "reason": "no counter"}
    table = views.config_table(stored)
    assert list(table[views.COST_COLUMN]) == ["$25.00", "not priced"]
    assert list(table[views.ENERGY_COLUMN]) == ["0.128 J", "not measured here: no counter"]
    assert list(table["cheapest"]) == ["$", ""]
    found = views.cheapest(stored)
    assert (found.label, found.plain) == ("a", "llama-server -np 1")
    assert TuneSummary.from_json(stored).to_json() == stored
    old = views.cheapest(STORED)
    assert old.label is None and "not priced" in old.reason


def test_the_cost_frontier_spans_the_priced_configurations() -> None:
    from services.core import cost

    def metrics(tok_s: float, tpot: float, price: float | None) -> dict[str, Any]:
        block = {"output_throughput_tok_s": tok_s, "completed": 8, "tpot_s": {"p50": tpot}}
        return {**block, cost.SUMMARY_KEY: cost.cost_of_block(price, block).to_json()}

    stored = {
        **STORED,
        "configs": [
            {"label": "np=1", "status": "finished", "metrics": metrics(40.0, 0.01, 3.6)},
            {"label": "np=4", "status": "finished", "metrics": metrics(120.0, 0.03, 3.6)},
        ],
    }
    figure = views.cost_frontier_figure(stored)
    assert figure is not None and [t.name for t in figure.data] == ["np=1", "np=4", "frontier"]
    assert views.cost_frontier_figure(STORED) is None  # not priced: no chart, not a $0 one
