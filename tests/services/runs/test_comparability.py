"""Comparability: each trap the issue names is caught, unknown is never "the same", a finished
benchmark stores its fingerprints, imports say what their files say, and Compare refuses to
name a winner across setups that differ unless told to (and then says so)."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from services import importers, runs
from services.bench import jobs
from services.bench.arrivals import LoadSpec
from services.bench.comparability import (
    Comparability,
    compare_fingerprints,
    run_fingerprint,
    stored_fingerprints,
)
from services.bench.spec import BenchSpec, EngineTarget
from services.bench.stats import RequestRecord, cache_warm_at_start
from services.bench.workloads import WorkloadSpec
from services.runs import reports
from tests.services.runs.test_runs import engine_summary, make_run


def bench_config(**load: Any) -> dict[str, Any]:
    """A stored benchmark spec (Run.config) of 100 requests at concurrency 4, 128/128 fixed."""
    spec = BenchSpec(
        engines=(EngineTarget(name="vllm", base_url="http://127.0.0.1:8000"),),
        workload=WorkloadSpec(input_len=128, output_len=128),
        load=LoadSpec(**{"concurrency": 4, "requests": 100, "warmup_requests": 2, **load}),
    )
    return spec.to_dict()


def block(**fields: Any) -> dict[str, Any]:
    """An engine's summary block: 100 requests of 140 prompt and 128 answer tokens, served
    with usage, all full length, nothing cached; `fields` change it."""
    numbers = engine_summary(0.1, 0.02, 1.0, 500.0)
    numbers.update(input_tokens=14_000, output_tokens=12_800, cached_tokens=0, honoured_output_len=True)
    numbers.update(fields)
    return numbers


def fingerprint(engine_block: dict[str, Any], config: dict[str, Any] | None = None) -> Comparability:
    summary = {"engines": {"vllm": engine_block}, "ttft_includes_connect": False}
    return run_fingerprint(config or bench_config(), summary, [], "vllm")


def differing(a: Comparability, b: Comparability) -> list[str]:
    return [d.field for d in compare_fingerprints(a, b, ("A", "B")).differences]


def test_the_same_setup_is_comparable() -> None:
    verdict = compare_fingerprints(fingerprint(block()), fingerprint(block()), ("A", "B"))
    assert verdict.comparable and verdict.headline == "B against A: comparable"


def test_ignore_eos_honoured_by_one_engine_and_not_the_other() -> None:
    honoured = fingerprint(block())
    short = fingerprint(block(honoured_output_len=False, short_output_requests=40, output_tokens=9_000))
    assert differing(honoured, short) == ["output_len_served", "fixed_output_honoured"]
    verdict = compare_fingerprints(honoured, short, ("#1 vllm", "#2 llamacpp"))
    assert verdict.differences[0].text == (
        "Output length as served: #1 vllm 128 tokens, #2 llamacpp 90 tokens"
    )
    assert "Fixed output length honoured: #1 vllm yes, #2 llamacpp no" in [
        d.text for d in verdict.differences
    ]


def test_a_warm_prefix_cache_on_one_side() -> None:
    cold = fingerprint(block(cached_tokens=1_600))  # the shared instruction: a block per prompt
    warm = fingerprint(block(cached_tokens=12_000))  # the same prompts again (vllm #52884)
    assert (cold.prefix_cache, warm.prefix_cache) == ("cold", "warm")
    verdict = compare_fingerprints(cold, warm, ("A", "B"))
    assert [d.text for d in verdict.differences] == ["Prefix cache: A cold, B warm"]


def test_a_cache_filled_within_each_run_is_the_engines_difference_not_a_refusal() -> None:
    # Issue 54: the same seeded workload, each engine's cache cold at the run's first request;
    # one engine's cache served most prompts later: the engines' property, to explain.
    cold = fingerprint(block(cached_tokens=1_600, cache_warm_at_start=False))
    warm = fingerprint(block(cached_tokens=12_000, cache_warm_at_start=False))
    verdict = compare_fingerprints(cold, warm, ("A", "B"))
    assert verdict.comparable
    said = "each cache filled within the measured run: the engines' own difference"
    assert [d.text for d in verdict.engine_changes] == [f"Prefix cache: A cold, B warm ({said})"]
    # A cache that held the workload before the run (an earlier identical run): still refused.
    before = fingerprint(block(cached_tokens=12_000, cache_warm_at_start=True))
    assert differing(cold, before) == ["prefix_cache"]
    # Unknown on one side (a run stored before this was recorded): refused as before.
    old = fingerprint(block(cached_tokens=12_000))
    assert differing(cold, old) == ["prefix_cache"]


def test_the_first_request_tells_a_cache_warm_before_the_run() -> None:
    def record(start: float, cached: int | None, warmup: bool = False) -> RequestRecord:
        return RequestRecord(
            engine="e",
            index=0,
            ok=True,
            start_s=start,
            input_tokens=100,
            cached_tokens=cached,
            warmup=warmup,
        )

    # The first request sent (a warm-up) found nothing cached; later ones did: filled within.
    assert cache_warm_at_start([record(1.0, 90), record(0.0, 0, warmup=True)]) is False
    assert cache_warm_at_start([record(0.0, 50), record(1.0, 0)]) is True
    # More than the 10 points two cached shares may differ by and still be the same: warm.
    assert cache_warm_at_start([record(0.0, 11)]) is True
    assert cache_warm_at_start([record(0.0, 10)]) is False
    assert cache_warm_at_start([record(0.0, None)]) is None


def test_ttft_including_reasoning_on_one_side_and_unknown_when_not_recorded() -> None:
    plain = fingerprint(block(ttft_includes_reasoning=False))
    thinking = fingerprint(block(ttft_includes_reasoning=True))
    assert differing(plain, thinking) == ["ttft_includes_reasoning"]
    old = fingerprint(block())  # a run from before the field was recorded
    verdict = compare_fingerprints(old, thinking, ("A", "B"))
    assert verdict.comparable and "TTFT includes reasoning" in verdict.unchecked


def test_token_counts_from_different_counters() -> None:
    usage = fingerprint(block())
    chunks = fingerprint(block(input_tokens=0))  # no usage reported: the stream's chunks counted
    assert (usage.token_counter, chunks.token_counter) == ("engine usage", "text chunks")
    assert "token_counter" in differing(usage, chunks)


def test_load_warm_up_sampling_and_timing_differences() -> None:
    base = fingerprint(block())
    other_config = bench_config(mode="rate", rate=2.0)
    other_config["temperature"] = 0.7
    other_config["load"]["warmup_requests"] = 0
    other = run_fingerprint(
        other_config, {"engines": {"vllm": block()}, "ttft_includes_connect": True}, [], "vllm"
    )
    assert differing(base, other) == ["warmup_requests", "loop", "level", "sampling", "timing"]


def test_engine_version_is_what_is_compared_not_a_difference() -> None:
    a = Comparability(source="Shootout", engine_kind="vllm", engine_version="0.11.0")
    b = Comparability(source="Shootout", engine_kind="vllm", engine_version="0.12.0")
    verdict = compare_fingerprints(a, b, ("A", "B"))
    assert verdict.comparable
    assert [d.text for d in verdict.engine_changes] == ["Engine version: A 0.11.0, B 0.12.0"]


def test_an_old_odd_summary_reads_as_unknown() -> None:
    found = run_fingerprint({}, {"engines": {"x": {"completed": "many"}}, "comparability": 3}, [], "x")
    assert found == Comparability(source="Shootout")  # stored here, so measured here; the rest unknown
    assert (
        Comparability.from_json({"prefix_cache": "lukewarm", "warmup_requests": "2"}) == Comparability()
    )


def test_a_finished_benchmark_stores_its_fingerprints() -> None:
    spec = BenchSpec(
        engines=(
            EngineTarget(name="a", base_url="http://x:1"),
            EngineTarget(name="b", base_url="http://x:2"),
        ),
        workload=WorkloadSpec(input_len=16, output_len=4),
        load=LoadSpec(concurrency=2, requests=3, warmup_requests=1),
    )

    def record(engine: str, index: int, output: int, prompt: int | None) -> RequestRecord:
        return RequestRecord(
            engine=engine, index=index, ok=True, start_s=index * 0.1, ttft_s=0.05, e2e_s=0.2,
            output_tokens=output, input_tokens=prompt, requested_output_tokens=4,
        )  # fmt: skip

    records = [record("a", i, 4, 30) for i in range(3)] + [record("b", i, 2, None) for i in range(3)]
    summary = jobs.build_summary(spec, records, None)
    stored = stored_fingerprints(summary)
    assert set(stored) == {"a", "b"}
    a, b = stored["a"], stored["b"]
    assert (a.source, a.loop, a.level, a.warmup_requests, a.sampling) == (
        "Shootout", "closed", "concurrency 2", 1, "temperature 0",
    )  # fmt: skip
    assert (a.input_len_asked, a.output_len_asked, a.output_len_served) == (16.0, 4.0, 4.0)
    assert (a.fixed_output_honoured, b.fixed_output_honoured) == (True, False)
    assert (a.token_counter, b.token_counter) == ("engine usage", "text chunks")
    assert a.timing == "Shootout streaming client, connections opened ahead"
    assert a.ttft_includes_reasoning is False  # recorded: the scripted model does not think


def test_imports_say_what_their_files_say(db_url: str) -> None:
    samples = Path(__file__).parents[1] / "importers" / "samples"
    aiperf = importers.import_file(samples / "aiperf_run" / "profile_export_aiperf.json").run_ids[0]
    sglang = importers.import_file(samples / "sglang_bench_serving.jsonl").run_ids[0]
    a = runs.compare_runs([aiperf]).series[0].fingerprint
    s = runs.compare_runs([sglang]).series[0].fingerprint
    assert a.source and a.source.startswith("NVIDIA AIPerf")
    assert (a.token_counter, a.output_len_asked, a.loop, a.level) == (
        "tokenizer", 100.0, "closed", "concurrency 100",
    )  # fmt: skip
    assert (s.input_len_asked, s.output_len_asked, s.level) == (256.0, 4.0, "concurrency 4")
    assert s.token_counter is None  # bench_serving's file does not say who counted
    csv = importers.import_file(samples / "aiperf_profile_export_aiperf.csv").run_ids[0]
    # Without its command line the file cannot say whether --use-server-token-count was given.
    assert runs.compare_runs([csv]).series[0].fingerprint.token_counter is None


def test_compare_refuses_a_winner_and_the_override_stays_visible(db_url: str) -> None:
    config = bench_config()
    a = make_run(name="A", engines={"vllm": block()}, config=config)
    b = make_run(
        name="B",
        engines={"vllm": block(honoured_output_len=False, output_tokens=6_000)},
        config=config,
    )
    refused = runs.compare_runs([a, b])
    assert not refused.comparability.comparable and refused.verdicts == []
    assert refused.rows  # the figures are still shown, side by side
    assert refused.comparability.title.startswith("Not comparable: no winner is named")
    page = reports.export_comparison([a, b]).data.decode()
    assert "Comparability" in page and "no winner is named" in page and "<h2>Verdicts</h2>" not in page
    anyway = runs.compare_runs([a, b], allow_incomparable=True)
    assert anyway.verdicts and anyway.comparability.override
    page = reports.export_comparison([a, b], allow_incomparable=True).data.decode()
    assert "compared anyway (override)" in page and "<h2>Verdicts</h2>" in page
    assert "Fixed output length honoured" in page


def test_a_run_level_reasoning_flag_reaches_an_engine_that_did_not_say() -> None:
    """The engine's block says nothing of thinking; the run's summary does (an import)."""
    summary = {"engines": {"x": {"completed": 2}}, "ttft_includes_reasoning": True}
    assert run_fingerprint({}, summary, [], "x").ttft_includes_reasoning is True
    said = {**summary, "engines": {"x": {"completed": 2, "ttft_includes_reasoning": False}}}
    assert run_fingerprint({}, said, [], "x").ttft_includes_reasoning is False


def test_every_field_of_a_fingerprint_reads_back_from_its_stored_form() -> None:
    """The reader names each field: one added to the record but not to `from_json` fails here."""
    values: dict[str, Any] = {}
    for item in dataclasses.fields(Comparability):
        hint = str(item.type)
        values[item.name] = (
            {"block_size": "16"}
            if item.name == "engine_settings"
            else "warm"
            if item.name == "prefix_cache"
            else "tokenizer"
            if item.name == "token_counter"
            else 0.25
            if "float" in hint
            else 3
            if "int" in hint
            else False
            if "bool" in hint
            else f"{item.name} value"
        )
    full = Comparability(**values)
    assert all(getattr(full, name) not in (None, {}) for name in values)
    assert Comparability.from_json(full.to_json()) == full
    odd = Comparability.from_json({**full.to_json(), "cached_share": 1.5, "prefix_cache": "lukewarm"})
    assert odd.cached_share is None and odd.prefix_cache is None
    assert Comparability.from_json({"cached_share": 2.0, "prefix_cache": "warm"}).prefix_cache is None
