"""The parity metrics on exact fixtures: a divergence at token 3, missing logprobs, different lengths."""

from __future__ import annotations

import math

import pytest

from services.parity.metrics import Answer, TokenChoice, compare, parse_answer, summarise


def _answer(tokens: list[tuple[str, float, dict[str, float]]]) -> Answer:
    return Answer(
        text="".join(t for t, _, _ in tokens),
        tokens=tuple(TokenChoice(t, lp, top) for t, lp, top in tokens),
    )


REFERENCE = _answer(
    [
        ("The", -0.5, {"The": -0.5, "A": -1.5}),
        (" answer", -0.25, {" answer": -0.25}),
        (" is", -0.125, {" is": -0.125}),
        (" 4", -1.0, {" 4": -1.0, " four": -1.25}),
        (".", -0.1, {".": -0.1}),
    ]
)


def test_a_divergence_at_token_3_is_found_and_the_prefix_scored() -> None:
    other = _answer(
        [
            ("The", -0.75, {"The": -0.75, "A": -1.0}),
            (" answer", -0.5, {" answer": -0.5}),
            (" is", -0.125, {" is": -0.125}),
            (" four", -0.9, {" four": -0.9, " 4": -1.2}),
            (".", -0.2, {".": -0.2}),
        ]
    )
    result = compare(REFERENCE, other)
    assert result.exact_match is False
    assert result.unit == "token"
    assert result.first_divergence == 3
    assert result.token_agreement == pytest.approx(4 / 5)
    # Over the shared prefix (tokens 0-2): |-.5+.75|, |-.25+.5|, 0.
    assert result.logprob_diff == pytest.approx((0.25 + 0.25 + 0.0) / 3)
    # Positions 0-3 checked; " 4" is in the other's top-k at the divergence.
    assert (result.topk_checked, result.topk_hits) == (4, 4)
    assert result.divergence_margin == pytest.approx(-0.9 - -1.2)


def test_identical_answers_match_with_no_divergence() -> None:
    result = compare(REFERENCE, REFERENCE)
    assert result.exact_match and result.first_divergence is None
    assert result.token_agreement == 1.0 and result.logprob_diff == 0.0 and result.topk_rate == 1.0
    assert result.divergence_margin is None


def test_missing_logprobs_fall_back_to_words_and_leave_logprob_figures_empty() -> None:
    other = Answer(text="The answer is four.", tokens=None)
    result = compare(REFERENCE, other)
    assert result.unit == "word"
    assert result.first_divergence == 3
    assert result.logprob_diff is None and result.topk_rate is None and result.topk_checked == 0
    assert result.token_agreement == pytest.approx(3 / 4)


def test_tokens_without_top_logprobs_give_no_topk_figure() -> None:
    other = Answer(
        text=REFERENCE.text,
        tokens=tuple(TokenChoice(t.token, t.logprob) for t in REFERENCE.tokens or ()),
    )
    result = compare(REFERENCE, other)
    assert result.exact_match and result.logprob_diff == 0.0
    assert result.topk_rate is None


def test_a_shorter_answer_diverges_where_it_ends() -> None:
    shorter = _answer([("The", -0.5, {}), (" answer", -0.25, {})])
    result = compare(REFERENCE, shorter)
    assert result.first_divergence == 2
    assert (result.reference_length, result.other_length) == (5, 2)
    assert result.token_agreement == 1.0  # the common span agrees throughout
    assert compare(shorter, REFERENCE).first_divergence == 2


def test_empty_answers() -> None:
    empty = Answer(text="", tokens=())
    assert compare(empty, empty).token_agreement == 1.0 and compare(empty, empty).exact_match
    one_sided = compare(REFERENCE, empty)
    assert one_sided.first_divergence == 0 and one_sided.token_agreement == 0.0


def test_same_text_split_into_other_tokens_is_a_match() -> None:
    other = _answer([("The answer", -0.1, {}), (" is 4.", -0.1, {})])
    assert compare(REFERENCE, other).first_divergence is None


def test_summary_pools_prompts_with_the_one_percentile() -> None:
    comparisons = [
        compare(REFERENCE, REFERENCE),
        compare(REFERENCE, _answer([("The", -0.5, {}), (" answer", -0.25, {})])),
        compare(REFERENCE, Answer(text="A thing", tokens=None)),
    ]
    summary = summarise(comparisons)
    assert summary.compared == 3
    assert summary.exact_match_rate == pytest.approx(1 / 3)
    assert summary.divergence_positions == (2, 0)
    assert summary.divergence_median == pytest.approx(1.0)
    assert summary.logprob_diff_mean == pytest.approx(0.0)
    assert summary.units == ("token", "word")
    assert summarise([]).exact_match_rate is None


def test_parse_answer_reads_the_openai_shape_and_refuses_malformed_logprobs() -> None:
    choice_logprobs = {
        "content": [
            {
                "token": "2",
                "logprob": -1.5,
                "top_logprobs": [
                    {"token": "2", "logprob": -1.5},
                    {"token": "The", "logprob": -1.9},
                    {"token": "x", "logprob": None},
                ],
            }
        ]
    }
    answer = parse_answer("2", choice_logprobs, {"completion_tokens": 1})
    assert answer.tokens == (TokenChoice("2", -1.5, {"2": -1.5, "The": -1.9}),)
    assert answer.completion_tokens == 1 and answer.has_logprobs and answer.has_top_logprobs
    assert parse_answer("2", None, None).tokens is None
    assert parse_answer("2", {"content": [{"logprob": 1}]}, {}).tokens is None
    assert parse_answer("2", {"content": []}, {}).tokens is None
    assert parse_answer("2", {"content": [{"token": "2", "logprob": math.inf}]}, {}).tokens == (
        TokenChoice("2", None),
    )
