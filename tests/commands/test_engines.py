"""`cli.py engines add|edit --usd-per-hour`: a price per hour, refused with one line when it is not one."""

from __future__ import annotations

import json

import pytest

from tests.commands.test_cli import cli


def test_a_price_is_added_edited_and_listed(db_url: str) -> None:
    added = cli(
        "engines", "add", "gpu", "http://10.0.0.1:8000", "--no-probe", "--usd-per-hour", "2.5", "--json"
    )
    assert added.returncode == 0, added.stderr
    assert json.loads(added.stdout)["usd_per_hour"] == 2.5
    edited = cli("engines", "edit", "gpu", "--usd-per-hour", "4")
    assert edited.returncode == 0, edited.stderr
    assert "4 $/h" in edited.stdout
    cleared = cli("engines", "edit", "gpu", "--usd-per-hour", "")
    assert "not priced" in cleared.stdout
    listed = cli("engines", "list", "--json")
    assert json.loads(listed.stdout)[0]["usd_per_hour"] is None


@pytest.mark.parametrize(
    ("price", "says"),
    [
        ("$3.50", "not a plain number"),
        ("3,50", "not a plain number"),
        ("-1", "above 0"),
        ("0", "above 0"),
        ("20000", "really per hour"),
    ],
)
def test_a_bad_price_is_one_line_and_non_zero(db_url: str, price: str, says: str) -> None:
    added = cli("engines", "add", "gpu", "http://10.0.0.1:8000", "--no-probe", "--usd-per-hour", price)
    assert added.returncode == 1
    lines = added.stderr.strip().splitlines()
    assert len(lines) == 1 and says in lines[0] and "Traceback" not in added.stderr
    assert json.loads(cli("engines", "list", "--json").stdout) == []
