"""Issue 43: J per output token counts what the energy window holds. The window spans the
warm-up (and connecting ahead), so the warm-up's output tokens count too, and the figure says
which tokens it divided by, in the table, the CLI line and the stored block."""

from __future__ import annotations

import pytest

from services.bench.arrivals import LoadSpec
from services.bench.jobs.summarize import build_summary
from services.bench.results import EngineResults
from services.bench.runner import Benchmark, ListSink
from services.bench.spec import BenchSpec, EngineTarget
from services.bench.view.tables import energy_columns, energy_line
from services.bench.workloads import WorkloadSpec
from services.client import run_blocking
from services.telemetry.energy.records import EnergyResult
from tests.support.scripted_server import ScriptedServer


class OneCounter:
    """A stand-in energy meter: 2 J between a window's start and end."""

    def begin(self, engines: list[str]) -> tuple[str, ...]:
        return tuple(engines)

    def end(self, engines: tuple[str, ...]) -> dict[str, EnergyResult]:
        return {
            e: EnergyResult(joules=2.0, method="energy counter", source="fake", engines=engines)
            for e in engines
        }


def energy_spec(scripted_server: ScriptedServer, together: bool, warmup_requests: int = 0) -> BenchSpec:
    """Engines "a" and "b" on the scripted server, 4 requests of 5 tokens each, one after
    another or together: what the energy tests measure a window over."""
    targets = tuple(
        EngineTarget(name=n, base_url=scripted_server.base_url, model=scripted_server.model(tokens=5))
        for n in ("a", "b")
    )
    return BenchSpec(
        engines=targets,
        workload=WorkloadSpec(input_len=8, output_len=5),
        load=LoadSpec(concurrency=2, requests=4, warmup_requests=warmup_requests),
        calibrate_prompts=False,
        record_engine_metrics=False,
        parallel_engines=together,
    ).validate()


@pytest.mark.parametrize("together", [False, True])
def test_the_warm_ups_tokens_count_since_its_energy_is_in_the_window(
    scripted_server: ScriptedServer, together: bool
) -> None:
    spec = energy_spec(scripted_server, together, warmup_requests=2)
    sink = ListSink()
    outcome = run_blocking(Benchmark(spec, sink=sink, energy=OneCounter()).run())
    summary = build_summary(spec, sink.records, outcome)
    engines = 2 if together else 1
    for name in ("a", "b"):
        block = summary["engines"][name]
        assert block["output_tokens"] == 20 and block["warmup"] == 2
        energy = block["energy"]
        # 4 measured requests and 2 warm-ups of 5 tokens each, per engine in the window.
        assert energy["output_tokens"] == 30 * engines and energy["warmup_output_tokens"] == 10 * engines
        assert energy["j_per_output_token"] == pytest.approx(2.0 / (30 * engines))
        line = energy_line(EngineResults.from_json(block))
        assert line is not None
        assert f"over {30 * engines} output tokens, the warm-up's {10 * engines} included" in line
        columns = energy_columns(EngineResults.from_json(block))
        assert "the window spans the warm-up" in columns["energy measured by"]


def test_a_stored_block_keeps_which_tokens_it_counted() -> None:
    result = EnergyResult(
        joules=30.0,
        method="energy counter",
        source="NVML",
        j_per_output_token=0.1,
        output_tokens_per_j=10.0,
        output_tokens=300,
        warmup_output_tokens=0,
    )
    back = EnergyResult.from_json(result.to_json())
    assert back == result
    assert back is not None and back.tokens_counted == "over 300 output tokens"
    assert "0.1 J/output token over 300 output tokens" in back.label
    # A run stored before it said: no words, the figure as stored.
    old = {"measured": True, "joules": 30.0, "j_per_output_token": 0.1}
    assert EnergyResult.from_json(old).tokens_counted == ""  # type: ignore[union-attr]
