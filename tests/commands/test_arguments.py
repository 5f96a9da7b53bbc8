"""Issue 56, on the command line: a number no option can hold and a URL no one can reach get a
clear message and a non-zero exit, never a traceback (`runs list --page 99999999999999999999`
was SQLite's OverflowError, `scrape 'http://[::1'` urllib's ValueError). Every number option of
every subcommand takes one of commands/arguments.py's bounded types."""

from __future__ import annotations

import argparse
import math

import pytest

from shootout.cli import build_parser
from tests.commands.test_cli import cli

HUGE = "9" * 20
#: What a bare int or float let through to a database, a clock or an engine.
HOSTILE = (HUGE, "-" + HUGE, "nan", "inf", "-inf", "1e308", "1e400", "9" * 5000, "")


def _number_options() -> list[tuple[str, argparse.Action]]:
    found = []

    def walk(parser: argparse.ArgumentParser, path: str) -> None:
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    walk(sub, f"{path} {name}".strip())
            elif action.type is not None:
                found.append((f"{path} {'/'.join(action.option_strings) or action.dest}", action))

    walk(build_parser(), "")
    return found


def test_no_option_takes_a_bare_int_or_float() -> None:
    bare = [where for where, action in _number_options() if action.type in (int, float)]
    assert bare == []


@pytest.mark.parametrize("value", HOSTILE)
def test_every_typed_option_refuses_what_nothing_can_hold(value: str) -> None:
    for where, action in _number_options():
        assert callable(action.type)
        try:
            parsed = action.type(value)
        except (argparse.ArgumentTypeError, ValueError, TypeError) as error:
            assert str(error), where  # argparse shows the message after the option's name
            continue
        except Exception as error:  # noqa: BLE001 - ids.run_number's ValidationError: one line too
            assert type(error).__name__ == "ValidationError", (where, error)
            continue
        # A list of levels may hold a large one (the benchmark's spec then bounds it, in
        # words); never one that is not finite. A number is never past what a database holds.
        if isinstance(parsed, tuple):
            assert all(math.isfinite(item) for item in parsed), (where, value)
        elif isinstance(parsed, (int, float)):
            assert math.isfinite(parsed) and abs(parsed) < 2**63, (where, value)


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["runs", "list", "--page", HUGE], "argument --page: expected a whole number from 1 to"),
        (["runs", "list", "--page", "0"], "argument --page: expected a whole number from 1 to"),
        (["scrape", "http://127.0.0.1:9", "--timeout", "inf"], "argument --timeout: expected a number"),
        (["history", "--step", "nan"], "argument --step: expected a number above 0"),
        (["plan", "--reserve-gib", "nan"], "argument --reserve-gib: expected a number"),
        (["engines", "probe", "x", "--timeout", "nan"], "argument --timeout: expected a number"),
    ],
)
def test_a_number_no_option_can_hold_is_named_with_exit_2(
    db_url: str, args: list[str], words: str
) -> None:
    result = cli(*args)
    assert result.returncode == 2, result.stdout
    assert "Traceback" not in result.stderr
    assert words in result.stderr, result.stderr


@pytest.mark.parametrize(
    "args",
    [
        ["scrape", "http://[::1"],
        ["scrape", "http://[::1", "--kind", "vllm"],
        ["scrape", "http://[::1", "--kind", "dcgm"],
        ["scrape", "http://[zz]:80"],
        ["scrape", "http://a:b:c", "--kind", "vllm"],
        ["history", "--prometheus", "http://[::1"],
        ["history", "--prometheus", "http://a:b:c"],
        ["engines", "probe", "http://[::1"],
    ],
)
def test_a_url_urllib_cannot_split_is_one_line(db_url: str, args: list[str]) -> None:
    result = cli(*args)
    assert result.returncode == 1, result.stdout
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    url = next(arg for arg in args if arg.startswith("http"))
    assert len(lines) == 1 and lines[0].startswith("error: ") and url in lines[0], result.stderr


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["tune", "--sweep", "rate=inf"], "Sweep levels must be numbers"),
        (["tune", "--slo", "ttft=inf"], "--slo: 'inf' is not a number."),
        (["bench", "--url", "http://127.0.0.1:9", "--sweep-values", "1,inf"], "expected numbers"),
    ],
)
def test_numbers_inside_a_text_option_are_finite(db_url: str, args: list[str], words: str) -> None:
    """`tune --sweep rate=inf` was stored as JSON null and ended in a TypeError traceback."""
    result = cli(*args)
    assert result.returncode in (1, 2), result.stdout
    assert "Traceback" not in result.stderr and words in result.stderr, result.stderr
