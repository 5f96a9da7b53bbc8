"""Issue 44, item 15, on the command line: a 20-digit run number, an unclosed IPv6 address and a
port past 65535 get one line on stderr and a non-zero exit, never a traceback."""

from __future__ import annotations

import pytest

from tests.commands.test_cli import cli

HUGE = "9" * 20


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["runs", "show", HUGE], f"'{HUGE}' is not a run number."),
        (["runs", "compare", HUGE, "1"], f"'{HUGE}' is not a run number."),
        (["runs", "note", HUGE, "x"], f"'{HUGE}' is not a run number."),
        (["runs", "delete", HUGE, "--yes"], f"'{HUGE}' is not a run number."),
        (["export", HUGE], f"'{HUGE}' is not a run number."),
        (["demo", "--show", HUGE], f"'{HUGE}' is not a run number."),
        (["parity", "--show", HUGE], f"'{HUGE}' is not a run number."),
        (["history", "--run", HUGE], f"'{HUGE}' is not a run number."),
        (
            ["bench", "--url", "http://127.0.0.1:9", "--requests", "1", "--baseline", HUGE],
            "is not a run number",
        ),
        (
            ["bench", "--url", "http://[::1", "--requests", "1"],
            "is not a valid URL: Invalid IPv6 URL.",
        ),
        (
            ["bench", "--url", "http://127.0.0.1:99999", "--requests", "1"],
            "has an invalid port (1-65535).",
        ),
        (["engines", "add", "x", "http://[::1"], "is not a valid URL: Invalid IPv6 URL."),
        (["engines", "add", "x", "http://127.0.0.1:99999"], "has an invalid port (1-65535)."),
    ],
)
def test_an_impossible_id_or_url_is_one_line_and_a_non_zero_exit(
    db_url: str, args: list[str], words: str
) -> None:
    result = cli(*args)
    assert result.returncode != 0, result.stdout
    assert "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and words in result.stderr, result.stderr
