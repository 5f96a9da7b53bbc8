"""The Pareto front and the winner under SLOs, on exact fixtures."""

from __future__ import annotations

from services.bench.results import EngineResults
from services.bench.stats import SloSpec
from services.tune.pareto import Point, best_configuration, pareto_front, points_of


def _config(
    label: str,
    tok_s: float,
    ttft_p90: float,
    itl_p90: float,
    goodput: float | None = None,
    attainment: float | None = None,
    completed: int = 8,
) -> dict:
    return {
        "label": label,
        "status": "finished",
        "sweep": [],
        "metrics": {
            "completed": completed,
            "output_throughput_tok_s": tok_s,
            "goodput_rps": goodput,
            "slo_attainment": attainment,
            "ttft_s": {"p90": ttft_p90},
            "itl_s": {"p90": itl_p90},
        },
    }


FIXTURE = [
    _config("np=1", 40.0, 0.30, 0.010, goodput=2.0, attainment=1.0),
    _config("np=2", 60.0, 0.50, 0.020, goodput=3.0, attainment=0.95),
    _config("np=4", 55.0, 0.80, 0.030, goodput=1.0, attainment=0.5),  # dominated by np=2 on TTFT
    _config("np=8", 90.0, 1.20, 0.015, goodput=0.5, attainment=0.25),
    {"label": "bad", "status": "failed_to_start", "sweep": [], "metrics": None},
]


def test_front_keeps_exactly_the_undominated_points_by_latency() -> None:
    front = pareto_front(points_of(FIXTURE, "ttft_s"))
    assert [p.label for p in front] == ["np=1", "np=2", "np=8"]
    itl_front = pareto_front(points_of(FIXTURE, "itl_s"))
    # np=2 (60 tok/s at 20 ms) is beaten by np=8 (90 tok/s at 15 ms) on ITL.
    assert [p.label for p in itl_front] == ["np=1", "np=8"]


def test_equal_points_are_both_on_the_front_and_a_tie_on_one_axis_dominates() -> None:
    points = [
        Point("a", "a", 10, 1),
        Point("b", "b", 10, 1),
        Point("c", "c", 10, 2),
        Point("d", "d", 5, 1),
    ]
    assert [p.label for p in pareto_front(points)] == ["a", "b"]


def test_sweep_levels_are_points_of_their_own() -> None:
    config = {
        "label": "np=2",
        "metrics": {"completed": 1},
        "sweep": [
            {"level": 1.0, "completed": 4, "output_throughput_tok_s": 20.0, "ttft_s": {"p90": 0.2}},
            {"level": 4.0, "completed": 4, "output_throughput_tok_s": 50.0, "ttft_s": {"p90": 0.9}},
            {"level": 8.0, "completed": 0, "output_throughput_tok_s": 0.0, "ttft_s": {"p90": None}},
        ],
    }
    assert [(p.label, p.throughput, p.latency) for p in points_of([config], "ttft_s")] == [
        ("np=2 @ 1", 20.0, 0.2),
        ("np=2 @ 4", 50.0, 0.9),
    ]


def test_best_is_the_highest_goodput_among_those_meeting_the_slos() -> None:
    choice = best_configuration(FIXTURE, SloSpec(ttft_ms=600, attainment=0.9))
    assert choice.label == "np=2"
    assert choice.reason == (
        "np=2: the highest goodput (3 req/s) of the 2 configurations meeting TTFT <= 600 ms; "
        "next np=1 at 2."
    )


def test_without_slos_the_best_is_the_highest_throughput() -> None:
    choice = best_configuration(FIXTURE, SloSpec())
    assert choice.label == "np=8"
    assert choice.reason.startswith("np=8: the highest output throughput (90 tok/s) of 4 configurations")


def test_none_meeting_the_slos_names_the_closest() -> None:
    choice = best_configuration(FIXTURE[2:], SloSpec(ttft_ms=100, attainment=0.9))
    assert choice.label is None
    assert choice.reason == (
        "No configuration met the SLOs (TTFT <= 100 ms, 90% of requests); the closest was np=4 with 50%."
    )


def _priced(config: dict, price: float | None, goodput_tok_s: float | None) -> dict:
    from services.core import cost

    metrics = {**config["metrics"], "goodput_output_tok_s": goodput_tok_s}
    metrics["total_token_throughput_tok_s"] = metrics["output_throughput_tok_s"] * 2
    return {
        **config,
        "metrics": {**metrics, cost.SUMMARY_KEY: cost.cost_of_block(price, metrics).to_json()},
    }


def test_the_cheapest_meeting_the_slos_is_the_lowest_cost_at_goodput() -> None:
    """Issue 33: at one price, the cheapest per token that counts; it need not be the best by
    goodput in req/s (np=1 serves fewer requests within the SLO but more of their tokens)."""
    from services.tune.pareto import cheapest_configuration

    slo = SloSpec(ttft_ms=600, attainment=0.9)
    priced = [
        _priced(FIXTURE[0], 3.6, 40.0),  # $25 per 1M tokens within the SLO
        _priced(FIXTURE[1], 3.6, 20.0),  # $50
        _priced(FIXTURE[3], 3.6, 90.0),  # cheapest of all, but misses the SLO
    ]
    choice = cheapest_configuration(priced, slo)
    assert choice.label == "np=1"
    assert choice.reason == (
        "np=1: the cheapest of the 2 configurations meeting TTFT <= 600 ms, "
        "$25.00 per 1M output tokens at goodput."
    )
    assert best_configuration(priced, slo).label == "np=2"
    unslo = cheapest_configuration(priced, SloSpec())
    assert unslo.label == "np=8" and "$11.11 per 1M output tokens." in unslo.reason


def test_without_a_price_there_is_no_cheapest_and_it_says_not_priced() -> None:
    from services.tune.pareto import cheapest_configuration

    unpriced = [_priced(FIXTURE[0], None, 40.0)]
    choice = cheapest_configuration(unpriced, SloSpec(ttft_ms=600))
    assert choice.label is None and "not priced" in choice.reason
    assert cheapest_configuration(FIXTURE[:1], SloSpec()).label is None  # a run stored before prices
    none_met = cheapest_configuration([_priced(FIXTURE[3], 1.0, 1.0)], SloSpec(ttft_ms=100))
    assert none_met.label is None and "No configuration met the SLOs" in none_met.reason


def test_the_cheapest_says_its_energy_where_measured_and_why_not_elsewhere() -> None:
    """Issue 33: the cheapest configuration carries its joules per output token beside its cost."""
    from services.tune.pareto import cheapest_configuration, energy_figure

    measured = {"measured": True, "joules": 64.0, "j_per_output_token": 0.128}
    config = _priced(FIXTURE[0], 3.6, 40.0)
    config["metrics"]["energy"] = measured
    choice = cheapest_configuration([config], SloSpec(ttft_ms=600))
    assert choice.reason.endswith("$25.00 per 1M output tokens at goodput; 0.128 J per output token.")
    config["metrics"]["energy"] = {"measured": False, "reason": "no NVIDIA GPU here"}
    choice = cheapest_configuration([config], SloSpec(ttft_ms=600))
    assert choice.reason.endswith("; energy not measured here: no NVIDIA GPU here.")
    assert energy_figure(EngineResults()) == (None, "")  # a run from before energy: nothing, never 0 J
