"""services.bench.caveats: a run's load, warm-up, self-check verdict and engines' notes, built
once from what was stored, and the Runs page's view of them."""

from __future__ import annotations

from typing import Any

from services import runs
from services.bench import jobs, selfcheck
from services.bench.arrivals import LoadSpec
from services.bench.caveats import run_caveats
from services.bench.comparability.build import requested_input_tokens
from services.bench.selfcheck import WorkerCheck, report
from services.bench.spec import BenchSpec, EngineTarget
from services.bench.stats import summarize_engine
from services.bench.workloads import WorkloadSpec
from services.core.safe_text import md_line
from services.runs import view as runs_view
from tests.services.runs.test_runs import engine_summary, make_run

#: What a client-bound check reads as (its evidence names the lag and its limit).
LAG_EVIDENCE = "event-loop lag p99 6.0 ms > 2 ms"


def caveated_config() -> dict[str, Any]:
    """A benchmark's stored spec: concurrency 4, 20 requests, 2 warm-up, 64 tokens asked."""
    return BenchSpec(
        engines=(EngineTarget(name="llamacpp", base_url="http://127.0.0.1:9", kind="llamacpp"),),
        workload=WorkloadSpec(input_len=64, output_len=32),
        load=LoadSpec(concurrency=4, requests=20, warmup_requests=2),
    ).to_dict()


def caveated_summary() -> tuple[dict[str, Any], dict[str, Any]]:
    """(engine block, run-wide keys) of a client-bound llama.cpp run that ignored min_tokens,
    as summarize wrote them; the self-check is selfcheck.report's own."""
    # 50 probes in 0.5 s: a loop that woke every time, each 6 ms late (lag, not starvation).
    check = selfcheck.WorkerCheck(loop_lag_s=[0.006] * 50, cpu_s=0.2, wall_s=0.5)
    generator = selfcheck.report([check], open_loop=False)
    block = {
        **engine_summary(0.05, 0.01, 0.4, 300.0, completed=20),
        "warmup": 2,
        "input_tokens": 95 * 20,
        "cached_tokens": 560,
        "errors_by_class": {},
        "unsupported_options": ["min_tokens"],
        "generator": generator,
        "engine_metrics": {"prefix_cache_hit_rate": 0.314, "kv_cache_usage_max": 0.2},
    }
    wide = {
        "load": "concurrency 4, 20 requests",
        "workload": "synthetic 64/32",
        "engines_run": "one after another",
        "ttft_includes_connect": False,
        "generator": {
            "client_bound": True,
            "flagged": [{"engine": "llamacpp", "step": None, "evidence": [LAG_EVIDENCE]}],
            "checked_loads": 1,
        },
    }
    return block, wide


def caveated_run(name: str = "caveats") -> int:
    block, wide = caveated_summary()
    return make_run(
        name=name,
        engines={"llamacpp": block},
        config=caveated_config(),
        summary=wide,
        workload="synthetic 64/32",
    )


def test_a_runs_caveats_come_from_its_stored_config_and_summary() -> None:
    block, wide = caveated_summary()
    caveats = run_caveats(caveated_config(), {"engines": {"llamacpp": block}, **wide})
    assert caveats.client_bound
    assert caveats.lines[0] == caveats.verdict and "Client-bound" in caveats.lines[0]
    assert caveats.load == [
        "Load: concurrency 4, 20 requests per engine.",
        "Measured requests: llamacpp 20.",
        (
            "Warm-up: 2 request(s) per engine before the measured ones, left out of the figures "
            "(the engines' own counters include them)."
        ),
        "Workload: synthetic 64/32.",
        (
            "Input length: 64 tokens asked per request, before the chat template; token counts "
            "are as served: the engine's prompt_tokens, chat template included, so they read higher."
        ),
        "Engines ran one after another.",
    ]
    advice, evidence = caveats.generator
    assert advice.startswith("TTFT and ITL percentiles may be up to ~6.0 ms too high")
    assert evidence.startswith(f"llamacpp: CLIENT-BOUND ({LAG_EVIDENCE})")
    assert "llamacpp ignores min_tokens (its kind does not take them)." in caveats.notes


def test_a_run_too_short_to_check_says_so_and_one_that_kept_up_says_that() -> None:
    short = selfcheck.report(
        [selfcheck.WorkerCheck(loop_lag_s=[0.0002] * 12, wall_s=0.13)], open_loop=False
    )
    caveats = run_caveats({}, {"engines": {"a": {"generator": short}}})
    assert caveats.verdict is not None and caveats.verdict.startswith("Could not check")
    assert not caveats.client_bound and caveats.lines[0] == caveats.verdict
    calm = selfcheck.report(
        [selfcheck.WorkerCheck(loop_lag_s=[0.0002] * 150, wall_s=1.52)], open_loop=False
    )
    kept_up = run_caveats({}, {"engines": {"a": {"generator": calm}}})
    assert kept_up.verdict is None and kept_up.generator[0] == "The load generator kept up."


def test_no_warm_up_is_said_and_an_old_summary_gives_no_caveats() -> None:
    config = caveated_config()
    config["load"]["warmup_requests"] = 0
    assert "Warm-up: none; the first requests' cold start is in the figures." in (
        run_caveats(config, {"engines": {}}).load
    )
    assert not run_caveats(None, None) and not run_caveats({}, {"engines": "odd"}).lines


def test_the_length_asked_is_known_only_where_the_workload_fixes_it() -> None:
    assert requested_input_tokens(caveated_config()) == 64
    shared = {"workload": {"kind": "shared_prefix", "input_len": 16, "prefix_len": 256}}
    assert requested_input_tokens(shared) == 272
    assert requested_input_tokens({"workload": {"kind": "trace", "input_len": 16}}) is None
    assert requested_input_tokens({}) is None


def test_the_run_page_shows_every_caveat_escaped(db_url: str) -> None:
    run_id = caveated_run()
    shown = runs_view.run_page_view(run_id)
    caveats = run_caveats(caveated_config(), runs.get_run(run_id).summary)
    assert shown.caveats.warning == md_line(caveats.verdict)
    check = caveats.self_check
    assert shown.caveats.lines == tuple(
        md_line(line)
        for line in (
            *caveats.load,
            # Issue 47: one line for the verdict, one for the evidence, the prefix once each.
            "Generator self-check: " + " ".join(check.advice_lines),
            "Self-check evidence: " + "; ".join(check.evidence_lines),
            *caveats.notes,
        )
    )
    assert md_line("llamacpp ignores min_tokens (its kind does not take them).") in shown.caveats.lines


def test_a_comparison_shows_each_runs_caveats(db_url: str) -> None:
    """Two compared runs may differ in load or warm-up: each keeps its own caveats, and a run
    that has none (an old summary) gets no empty heading."""
    block = engine_summary(0.1, 0.02, 1.0, 500.0)
    del block["sent"]  # an old summary: nothing said about its load
    caveated, plain = caveated_run(), make_run(engines={"vllm": block})
    assert not run_caveats(runs.get_run(plain).config, runs.get_run(plain).summary)
    shown = runs_view.compare_page_view(f"{caveated},{plain}", None)
    [only] = shown.caveats
    assert only == runs_view.run_page_view(caveated).caveats


def test_a_warm_prefix_cache_and_chunk_counted_tokens_are_caveats() -> None:
    """Issue 32: what makes one run's figures read as more than they are is said with them."""
    warm = {**engine_summary(0.05, 0.01, 0.4, 300.0), "input_tokens": 1000, "cached_tokens": 800}
    chunks = {**engine_summary(0.05, 0.01, 0.4, 300.0), "input_tokens": 0}
    caveats = run_caveats(caveated_config(), {"engines": {"vllm": warm, "tgi": chunks}})
    assert caveats.notes[-2:] == [
        "vllm: warm prefix cache (80% of prompt tokens): prefill was mostly skipped.",
        "tgi: tokens counted from the stream's text chunks, not the engine's usage.",
    ]


def test_a_run_that_kept_up_says_so_once(db_url: str) -> None:
    """Issue 47: the Runs page printed "Generator self-check:" before every sentence, saying
    the generator kept up once per line."""
    targets = tuple(EngineTarget(name, "http://127.0.0.1:9", "vllm", "m") for name in ("a", "b"))
    run_id = jobs.create_run(BenchSpec(engines=targets, workload=WorkloadSpec(output_len=8)))
    calm = report([WorkerCheck(loop_lag_s=[0.0002] * 400, cpu_s=0.02, wall_s=2.0)], open_loop=False)
    engines = {name: {**summarize_engine([]), "generator": calm} for name in ("a", "b")}
    jobs.update_run(run_id, status="finished", summary={"engines": engines})
    lines = runs_view.run_page_view(run_id).caveats.lines
    said = [line for line in lines if line.startswith("Generator self-check")]
    assert len(said) == 1 and said[0].count("kept up") == 1, lines
    assert sum(line.startswith("Self-check evidence") for line in lines) == 1
