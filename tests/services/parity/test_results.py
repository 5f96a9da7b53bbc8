"""Reading a parity run's stored answers back (services/parity/results.py)."""

from __future__ import annotations

from services.parity.metrics import TokenChoice
from services.parity.results import _answer


def test_a_stored_answer_with_odd_token_entries_reads_without_raising() -> None:
    """A token entry that is short or odd (a hand-edited or truncated row) reads as the token
    with no log-probability; a well-formed one reads as stored."""
    answer = _answer(
        {
            "text": "a b",
            "tokens": [["a"], ["b", -0.5, {"b": -0.5, "c": -1.5}], ["c", "x"], "not a list", []],
        }
    )
    assert answer.text == "a b"
    assert answer.tokens == (
        TokenChoice("a", None, {}),
        TokenChoice("b", -0.5, {"b": -0.5, "c": -1.5}),
        TokenChoice("c", None, {}),
    )
    assert _answer({}).tokens is None and _answer({}).text == ""
