"""One translation of a benchmark's choices: the page's widgets and `cli.py bench`'s flags
give the same spec for the same choices, with the same defaults."""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path
from typing import Any

import pytest

from commands import bench as bench_command
from services.bench import form
from services.bench import view as views
from services.bench.spec import WORKERS_AUTO, BenchSpec
from services.core.errors import ValidationError
from services.engines.endpoints import add_engine

SCHEMA = '{"type": "object", "properties": {"city": {"type": "string"}}}'

#: (what the page's widgets hold, the same choices as flags). "{schema}" is a file holding SCHEMA.
SAME_CHOICES: list[tuple[str, dict[str, Any], list[str]]] = [
    ("defaults", {}, ["--requests", "100"]),
    (
        "open loop, gamma, capped, by duration, rate sweep",
        {
            "mode": "rate",
            "rate": 3.5,
            "arrival": "gamma",
            "burstiness": 0.5,
            "max_concurrency": 4,
            "bound": "duration",
            "duration_s": 30.0,
            "warmup": 1,
            "slo_ttft_ms": 200.0,
            "slo_tpot_ms": 0.0,
            "sweep": "rate",
            "sweep_values": "1, 2 4",
            "parallel": True,
            "timeout_s": 60.0,
        },
        [
            "--rate",
            "3.5",
            "--arrival",
            "gamma",
            "--burstiness",
            "0.5",
            "--max-concurrency",
            "4",
            "--duration",
            "30",
            "--warmup",
            "1",
            "--slo-ttft-ms",
            "200",
            "--sweep",
            "rate",
            "--sweep-values",
            "1,2,4",
            "--parallel",
            "--timeout",
            "60",
        ],
    ),
    (
        "shared prefixes, SLO search over concurrency, auto workers",
        {
            "workload": "shared_prefix",
            "prefix_groups": 2,
            "prefix_len": 64,
            "input_len": 8,
            "output_len": 16,
            "concurrency": 4,
            "requests": 40,
            "fixed_output": False,
            "sweep": "slo_search",
            "search_over": "concurrency",
            "search_start": 2.0,
            "search_max": 16.0,
            "slo_e2e_ms": 500.0,
            "slo_attainment": 0.95,
            "workers": "auto",
            "seed": 7,
            "name": "  mine ",
        },
        [
            "--workload",
            "shared_prefix",
            "--prefix-groups",
            "2",
            "--prefix-len",
            "64",
            "--input-len",
            "8",
            "--output-len",
            "16",
            "--concurrency",
            "4",
            "--requests",
            "40",
            "--free-output",
            "--slo-search",
            "concurrency",
            "--search-start",
            "2",
            "--search-max",
            "16",
            "--slo-e2e-ms",
            "500",
            "--slo-attainment",
            "0.95",
            "--workers",
            "auto",
            "--seed",
            "7",
            "--name",
            "  mine ",
        ],
    ),
    (
        "trace replay",
        {
            "workload": "trace",
            "trace": "code",
            "length_scale": 0.5,
            "mode": "trace",
            "trace_speed": 2.0,
            "max_concurrency": 0,
            "requests": 20,
        },
        [
            "--trace-replay",
            "--trace",
            "code",
            "--length-scale",
            "0.5",
            "--trace-speed",
            "2",
            "--requests",
            "20",
        ],
    ),
    (
        "structured output, multi-worker, Ray, ramp-up",
        {
            "workload": "structured",
            "schema_text": SCHEMA,
            "workers": "2",
            "ray_address": " 127.0.0.1:6379 ",
            "ramp_up_s": 5.0,
            "length_dist": "uniform",
            "requests": 10,
        },
        [
            "--workload",
            "structured",
            "--schema",
            "{schema}",
            "--workers",
            "2",
            "--ray",
            "127.0.0.1:6379",
            "--ramp-up",
            "5",
            "--length-dist",
            "uniform",
            "--requests",
            "10",
        ],
    ),
    (
        "multi-turn conversations at concurrency 1",
        {"workload": "multi_turn", "turns": 5, "concurrency": 1, "requests": 6, "warmup": 0},
        [
            "--workload",
            "multi_turn",
            "--turns",
            "5",
            "--concurrency",
            "1",
            "--requests",
            "6",
            "--warmup",
            "0",
        ],
    ),
]


def cli_args(flags: list[str]) -> argparse.Namespace:
    root = argparse.ArgumentParser()
    bench_command.register(root.add_subparsers(dest="command"))
    return root.parse_args(["bench", "--engine", "one", *flags])


def page_spec(widgets: dict[str, Any]) -> BenchSpec:
    return views.spec_from_form({"engines": ["one"], **widgets})


@pytest.mark.parametrize(
    ("widgets", "flags"), [case[1:] for case in SAME_CHOICES], ids=[case[0] for case in SAME_CHOICES]
)
def test_the_page_and_the_cli_give_the_same_spec(
    db_url: str, tmp_path: Path, widgets: dict[str, Any], flags: list[str]
) -> None:
    add_engine("one", "http://127.0.0.1:9", kind="vllm", model="m")
    schema_file = tmp_path / "schema.json"
    schema_file.write_text(SCHEMA, encoding="utf-8")
    flags = [str(schema_file) if flag == "{schema}" else flag for flag in flags]
    from_page = page_spec(widgets)
    from_cli = bench_command.build_spec(cli_args(flags))
    assert from_page == from_cli
    assert from_page.to_dict() == from_cli.to_dict()  # what is stored, too


def test_the_defaults_are_the_forms(db_url: str) -> None:
    add_engine("one", "http://127.0.0.1:9", kind="vllm", model="m")
    spec = page_spec({})
    default = form.BenchForm()
    assert (spec.load.mode, spec.load.concurrency, spec.load.requests) == (
        "concurrency",
        default.concurrency,
        default.requests,
    )
    assert spec.load.warmup_requests == default.warmup == 2
    assert spec.load.burstiness == 1.0  # Poisson: the gamma shape only counts for gamma arrivals
    args = vars(cli_args(["--requests", "100"]))
    flag_to_field = {
        "warmup": "warmup",
        "ramp_up": "ramp_up_s",
        "timeout": "timeout_s",
        "input_len": "input_len",
        "output_len": "output_len",
        "burstiness": "burstiness",
        "percentiles": "percentiles",
        "workers": "workers",
        "search_max": "search_max",
        "slo_attainment": "slo_attainment",
        "workload": "workload",
    }
    for flag, name in flag_to_field.items():
        assert args[flag] == getattr(default, name), flag


@pytest.mark.parametrize(
    ("widgets", "flags", "message"),
    [
        ({"sweep": "slo_search"}, ["--requests", "100", "--slo-search", "rate"], "at least one SLO"),
        (
            {"mode": "trace"},
            ["--requests", "100", "--trace-replay", "--workload", "long_prompt"],
            "Trace replay",
        ),
        (
            {"percentiles": (150.0,)},
            ["--requests", "100", "--percentiles", "150"],
            "is not between 0 and 100",
        ),
    ],
)
def test_bad_choices_fail_alike(
    db_url: str, widgets: dict[str, Any], flags: list[str], message: str
) -> None:
    add_engine("one", "http://127.0.0.1:9", kind="vllm", model="m")
    with pytest.raises(ValidationError, match=message):
        page_spec(widgets)
    with pytest.raises(ValidationError, match=message):
        bench_command.build_spec(cli_args(flags))


def test_a_timeout_no_clock_takes_is_refused_by_both(db_url: str) -> None:
    """The page's spec refuses a timeout of 0 or less; the flag's type refuses it first, naming
    the flag (issue 56: a bare float let nan and inf reach the clocks)."""
    add_engine("one", "http://127.0.0.1:9", kind="vllm", model="m")
    with pytest.raises(ValidationError, match="timeout must be above 0"):
        page_spec({"timeout_s": -1.0})
    for value in ("-1", "nan", "inf", "1e308"):
        with pytest.raises(SystemExit):
            cli_args(["--requests", "100", "--timeout", value])


def test_widget_values_are_read_and_checked() -> None:
    chosen = form.from_widgets(
        {
            "engines": ["a"],
            "workers": " Auto ",
            "sweep_values": "1;2 4",
            "slo_e2e_ms": 0,
            "duration_s": 5,
        }
    )
    assert chosen.workers == WORKERS_AUTO and chosen.sweep_values == (1.0, 2.0, 4.0)
    assert chosen.slo_e2e_ms is None and chosen.duration_s is None  # bound by requests
    timed = form.from_widgets({"bound": "duration"})
    assert (timed.requests, timed.duration_s) == (None, form.SUGGESTED_DURATION_S)
    assert isinstance(form.from_widgets({"timeout_s": 30}).timeout_s, float)
    with pytest.raises(ValidationError, match="Workers: a number"):
        form.from_widgets({"workers": "lots"})
    with pytest.raises(ValidationError, match="Sweep levels must be numbers"):
        form.from_widgets({"sweep_values": "1, two"})
    with pytest.raises(TypeError, match="not fields of BenchForm"):
        form.from_widgets({"concurency": 3})
    assert dataclasses.replace(form.BenchForm(), engines=("a",)) == form.from_widgets({"engines": ["a"]})
