"""The parity run's summary record: stored runs read back unchanged, odd values never raise."""

from __future__ import annotations

import copy
import json
from typing import Any

from services.parity import results as views
from services.parity.metrics import Answer, compare, summarise
from services.parity.summary import ParityComparison, ParityEngine, ParitySummary

E2E = {
    "mean": 0.6,
    "p50": 0.6,
    "p90": 0.68,
    "p95": 0.69,
    "p99": 0.698,
    "min": 0.5,
    "max": 0.7,
    "std": 0.1,
}

#: A summary as the worker stored it before the record existed (views.build_summary's dicts).
STORED: dict[str, Any] = {
    "reference": "llamacpp-4slot",
    "engines": {
        "llamacpp-4slot": {
            "prompts": 3,
            "sent": 3,
            "completed": 3,
            "failed": 0,
            "task_score": 2 / 3,
            "scored": 3,
            "output_throughput_tok_s": 41.5,
            "completion_tokens": 48,
            "prompt_tokens": 90,
            "e2e_s": E2E,
            "logprobs": "reported",
            "top_logprobs": "reported",
            "errors": {},
            "first_errors": [],
            "is_reference": True,
        },
        "no-logprobs": {
            "prompts": 3,
            "sent": 3,
            "completed": 2,
            "failed": 1,
            "task_score": 0.5,
            "scored": 2,
            "output_throughput_tok_s": 12.0,
            "completion_tokens": 30,
            "prompt_tokens": 60,
            "e2e_s": E2E,
            "logprobs": "not reported by OpenAI-compatible",
            "top_logprobs": "not reported by OpenAI-compatible",
            "errors": {"context_exceeded": 1},
            "first_errors": ["The prompt is longer than the context."],
            "is_reference": False,
            "parity": {
                "compared": 2,
                "exact_match_rate": 0.5,
                "diverged": 1,
                "divergence_positions": [3],
                "divergence_median": 3.0,
                "divergence_p10": 3.0,
                "divergence_p90": 3.0,
                "token_agreement_mean": 0.8,
                "logprob_diff_mean": None,
                "topk_rate": None,
                "units": ["word"],
                "not_compared": 1,
            },
            "exact_match_rate": 0.5,
            "token_agreement_mean": 0.8,
        },
    },
    "conclusion_headline": "no-logprobs: 50% exact match vs llamacpp-4slot",
}


def test_a_stored_summary_reads_back_typed_and_writes_back_the_same() -> None:
    summary = ParitySummary.from_json(copy.deepcopy(STORED))
    assert summary.reference == "llamacpp-4slot"
    assert list(summary.engines) == ["llamacpp-4slot", "no-logprobs"]
    reference, other = summary.engines["llamacpp-4slot"], summary.engines["no-logprobs"]
    assert reference.is_reference and reference.parity is None
    assert other.errors == {"context_exceeded": 1} and other.failed == 1 and summary.any_failed
    parity = summary.comparison("no-logprobs")
    assert parity.divergence_positions == [3] and parity.not_compared == 1 and parity.units == ["word"]
    assert summary.comparison("llamacpp-4slot") == ParityComparison()  # the reference: nothing
    assert summary.to_json() == STORED
    assert json.dumps(summary.to_json()) == json.dumps(STORED)  # the key order too


def test_unknown_keys_are_kept_at_every_level() -> None:
    stored = copy.deepcopy(STORED)
    stored["later"] = {"x": 1}
    stored["engines"]["no-logprobs"]["cost_usd"] = 0.01
    stored["engines"]["no-logprobs"]["parity"]["margin_median"] = 0.2
    assert ParitySummary.from_json(stored).to_json() == stored


def test_an_empty_or_odd_summary_never_raises() -> None:
    assert ParitySummary.from_json({}).to_json() == {}
    assert ParitySummary.from_json(None).engines == {}
    odd = ParitySummary.from_json(
        {
            "reference": 7,
            "engines": {
                "a": "not a block",
                "b": {
                    "completed": "three",
                    "task_score": float("nan"),
                    "errors": ["x"],
                    "first_errors": "boom",
                    "is_reference": "yes",
                    "parity": {"divergence_positions": ["x", 2.0, None], "units": "token"},
                },
            },
            "conclusion_headline": ["not text"],
        }
    )
    assert odd.reference is None and odd.conclusion_headline is None and list(odd.engines) == ["b"]
    block = odd.engines["b"]
    assert block.completed == 0 and block.task_score is None and block.errors == {}
    assert block.first_errors == [] and block.is_reference is False
    assert odd.comparison("b").divergence_positions == [2] and odd.comparison("b").units == []
    assert views.headline(odd) == "b: nothing compared with None yet"


def test_the_pooled_figures_become_the_stored_comparison() -> None:
    pairs = [("a b c", "a b d"), ("x", "x")]
    figures = summarise([compare(Answer(ref), Answer(other)) for ref, other in pairs])
    stored = ParityComparison.pooled(figures, not_compared=1).to_json()
    assert stored == {**figures.to_dict(), "not_compared": 1}
    block = ParityEngine(parity=ParityComparison.pooled(figures, 1))
    assert block.to_json()["exact_match_rate"] == figures.exact_match_rate == 0.5


def test_the_request_times_are_a_distribution_written_back_as_stored() -> None:
    """Issue 57: an engine's E2E statistics read as a typed Distribution; a block without them
    (or with an odd value) writes `{}` as it always did, and stored figures come back as stored."""
    block = ParityEngine.from_json(STORED["engines"]["llamacpp-4slot"])
    assert block.e2e_s.p90 == 0.68 and block.to_json()["e2e_s"] == E2E
    for odd in ({"prompts": 1}, {"prompts": 1, "e2e_s": "odd"}):
        empty = ParityEngine.from_json(odd)
        assert empty.e2e_s.p90 is None and empty.to_json()["e2e_s"] == {}
