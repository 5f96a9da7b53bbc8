"""`cli.py export` writes the file from the stream; `cli.py import` of a file over the import
limit is one line and a non-zero exit."""

from __future__ import annotations

import csv
import io
import json

from tests.commands.test_cli import cli
from tests.support.big_runs import make_big_run


def test_export_writes_the_stream_and_imports_back(db_url: str, tmp_path) -> None:
    run_id = make_big_run(3000)
    target = tmp_path / "run.json"
    written = cli("export", str(run_id), "--format", "json", "-o", str(target), "--json")
    assert written.returncode == 0, written.stderr
    assert json.loads(written.stdout)["bytes"] == target.stat().st_size
    assert len(json.loads(target.read_bytes())["requests"]) == 3000
    assert not list(tmp_path.glob("*.partial"))
    stdout = cli("export", str(run_id), "--format", "csv", "-o", "-")
    assert stdout.returncode == 0 and len(list(csv.reader(io.StringIO(stdout.stdout)))) == 3001
    imported = cli("import", str(target), "--json")
    assert imported.returncode == 0, imported.stderr
    assert json.loads(imported.stdout)["requests"] == 3000


def test_an_import_over_the_limit_is_one_line_and_fails(db_url: str, tmp_path) -> None:
    big = tmp_path / "big.json"
    big.write_bytes(b" " * 2_100_000 + b"{}")
    result = cli("import", str(big), env={"SHOOTOUT_LIMIT_IMPORT_MB": "2"})
    assert result.returncode == 1
    assert result.stderr.strip() == (
        "error: big.json is 2.1 MB; this server imports files of at most 2 MB "
        "(SHOOTOUT_LIMIT_IMPORT_MB)."
    )


def test_an_export_that_fails_leaves_no_file(db_url: str, tmp_path) -> None:
    result = cli("export", "404", "--format", "json", "-o", str(tmp_path / "x.json"))
    assert result.returncode == 1 and result.stderr.strip() == "error: Run #404 does not exist."
    assert not list(tmp_path.glob("x.json*"))
