"""Issue 33: the decision helper carries cost and energy: per engine kind, the cheapest stored
step meeting its run's SLOs ($ per 1M output tokens at goodput) and its joules per output
token, and "not priced" where no step had a price."""

from __future__ import annotations

from typing import Any

from db.models import Run
from db.session import session_scope
from services.core import cost
from services.planner import view
from services.planner.measured import NO_RUNS, measured_by_kind
from tests.services.runs.test_runs import engine_summary, make_run
from tests.support.markdown import as_read

SLO = {"slo": {"ttft_ms": 500, "attainment": 0.9}}


def step(
    tok_s: float,
    price: float | None,
    *,
    attainment: float = 1.0,
    j_per_token: float | None = None,
) -> dict[str, Any]:
    block = {
        **engine_summary(0.1, 0.02, 1.0, tok_s),
        "total_token_throughput_tok_s": tok_s * 2,
        "goodput_output_tok_s": tok_s * attainment,
        "slo_attainment": attainment,
    }
    block[cost.SUMMARY_KEY] = cost.cost_of_block(price, block).to_json()
    if j_per_token is not None:
        block["energy"] = {
            "measured": True,
            "joules": 100.0,
            "method": "energy counter",
            "j_per_output_token": j_per_token,
            "output_tokens_per_j": 1 / j_per_token,
        }
    return block


def of_kind(run_id: int, kinds: dict[str, str]) -> int:
    with session_scope() as session:
        run = session.get(Run, run_id)
        assert run is not None
        run.engines = [{**s, "kind": kinds.get(s["name"], s["kind"])} for s in run.engines]
    return run_id


def test_each_kind_names_its_cheapest_step_meeting_the_slos_with_its_energy(db_url: str) -> None:
    # 3.6 $/h: $2.00 per 1M output tokens at 500 tok/s; at goodput 0.95 x that rate.
    of_kind(
        make_run(
            config=SLO,
            engines={
                "vllm": step(500.0, 3.6, j_per_token=0.25),
                "llama": step(1000.0, 3.6, attainment=0.5),  # cheapest, but misses the SLO
            },
        ),
        {"llama": "llamacpp"},
    )
    make_run(config=SLO, engines={"vllm-b": step(250.0, 3.6, j_per_token=0.5)})
    measured = measured_by_kind()
    assert set(measured) == {"vllm", "llamacpp"}
    cheapest = measured["vllm"].cheapest
    assert cheapest is not None and cheapest.engine == "vllm"
    assert cheapest.usd_per_1m is not None and round(cheapest.usd_per_1m, 2) == 2.0
    line = as_read(measured["vllm"].line)
    assert "cheapest meeting its SLOs" in line
    assert "$2.00 per 1M output tokens at goodput" in line
    assert "0.25 J per output token" in line
    assert measured["llamacpp"].cheapest is None
    assert "none of the 1 stored steps met its SLOs at a price" in as_read(measured["llamacpp"].line)


def test_a_kind_without_a_price_says_not_priced_never_zero(db_url: str) -> None:
    make_run(config=SLO, engines={"vllm": step(500.0, None, j_per_token=0.3)})
    line = as_read(measured_by_kind()["vllm"].line)
    assert "not priced" in line and "$0" not in line
    assert "Lowest energy: 0.3 J per output token" in line


def test_the_decision_puts_the_measured_lines_under_the_ranking(db_url: str) -> None:
    constraints = view.constraints("cpu", 1, "interactive", "some", False, "standard", "gguf")
    empty = view.decision(constraints)
    assert "No finished benchmark or tuning run is stored" in as_read(empty.cheapest)
    assert all(card.measured == NO_RUNS for card in empty.cards)
    of_kind(make_run(config=SLO, engines={"llama": step(500.0, 3.6)}), {"llama": "llamacpp"})
    decided = view.decision(constraints)
    assert as_read(decided.cheapest).startswith("Cheapest measured meeting its SLOs: llama.cpp")
    llamacpp = next(card for card in decided.cards if "llama.cpp" in card.title)
    assert as_read(llamacpp.measured).startswith("Measured: cheapest meeting its SLOs #")
    others = [card for card in decided.cards if "llama.cpp" not in card.title]
    assert all(card.measured == NO_RUNS for card in others)
    # The ranking alone (no stored runs asked) is unchanged.
    assert all(card.measured == "" for card in view.ranking_cards(constraints))
