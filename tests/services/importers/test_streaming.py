"""Imports read as streams (issue 20: a 190 MB import peaked at 4.3 GB): the size limit is
checked before reading, Shootout run JSON is stored a batch at a time, broken input is one line."""

from __future__ import annotations

import io
import json
import tracemalloc

import pytest
from sqlalchemy import func, select

from db.models import RequestResult
from db.session import session_scope
from services import importers, runs
from services.core.errors import ValidationError
from services.importers import reading
from services.runs.reports import streamed as exports
from tests.support.big_runs import make_big_run


def _export(run_id: int, path) -> None:  # type: ignore[no-untyped-def]
    with open(path, "wb") as handle:
        handle.writelines(exports.stream_run(run_id, "json").chunks)


def test_a_large_export_imports_with_bounded_memory(db_url: str, tmp_path) -> None:
    """20,000 requests (a 12 MB file): the import's traced peak stays a few batches' worth
    (json.loads of a 50,000-request file alone peaked near 200 MB). The figure for
    larger files is benchmarks/bench_export_import_memory.py's."""
    original = make_big_run(20_000)
    path = tmp_path / "big.json"
    _export(original, path)
    assert path.stat().st_size > 10_000_000
    tracemalloc.start()
    try:
        result = importers.import_file(path)
        _current, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert result.tool == "shootout" and result.requests == 20_000
    assert peak < 40 * 1024**2, peak / 1024**2
    with session_scope() as session:
        stored = session.scalar(
            select(func.count())
            .select_from(RequestResult)
            .where(RequestResult.run_id == result.run_ids[0])
        )
    assert stored == 20_000
    assert runs.get_run(result.run_ids[0]).summary == runs.get_run(original).summary


def test_the_header_may_come_after_the_rows(db_url: str) -> None:
    run_id = make_big_run(30)
    document = json.loads(b"".join(exports.stream_run(run_id, "json").chunks))
    reordered = {
        "requests": document["requests"],
        "samples": [],
        "run": document["run"],
        "version": 1,
        "format": "shootout.run",
    }
    result = importers.import_file(json.dumps(reordered).encode(), "late-header.json")
    assert result.requests == 30 and runs.get_run(result.run_ids[0]).name == document["run"]["name"]


def test_a_file_broken_halfway_stores_nothing_and_says_so_in_one_line(db_url: str) -> None:
    run_id = make_big_run(200)
    data = b"".join(exports.stream_run(run_id, "json").chunks)
    before = runs.list_runs().total
    with pytest.raises(ValidationError) as caught:
        importers.import_file(data[: len(data) // 2], "cut.json")
    assert "\n" not in str(caught.value) and "cut.json" in str(caught.value)
    broken = data.replace(b'"ttft_s": ', b'"ttft_s": [', 1)
    with pytest.raises(ValidationError, match="broken.json"):
        importers.import_file(broken, "broken.json")
    assert runs.list_runs().total == before


def test_a_row_that_cannot_be_stored_is_one_clear_line(db_url: str) -> None:
    run_id = make_big_run(3)
    document = json.loads(b"".join(exports.stream_run(run_id, "json").chunks))
    document["requests"][1]["ttft_s"] = {"not": "a number"}
    with pytest.raises(ValidationError, match="looks like Shootout run JSON but could not be stored"):
        importers.import_file(json.dumps(document).encode(), "bad-row.json")
    assert runs.list_runs().total == 1


@pytest.mark.parametrize(
    ("field", "value", "kind"),
    [
        ("input_tokens", "lots", "a whole number"),
        ("output_tokens", 2.5, "a whole number"),
        ("ttft_s", "0.5", "a number"),
        ("finish_reason", 7, "text"),
        ("itl_s", "fast", "a list of numbers"),
        ("itl_s", [0.1, "x"], "a list of numbers"),
        ("extra", ["step"], "an object"),
    ],
)
def test_a_request_value_its_column_cannot_hold_is_refused_by_name(
    db_url: str, field: str, value: object, kind: str
) -> None:
    """A row is stored only with each value of its column's type: an edited export's text in a
    count column was stored as text (SQLite keeps it) where every reader of the rows takes a count."""
    run_id = make_big_run(3)
    document = json.loads(b"".join(exports.stream_run(run_id, "json").chunks))
    document["requests"][1][field] = value
    with pytest.raises(ValidationError) as caught:
        importers.import_file(json.dumps(document).encode(), "edited.json")
    message = str(caught.value)
    assert message.startswith("edited.json: looks like Shootout run JSON but could not be stored")
    assert f"{field} is {value!r}, not {kind}" in message and "\n" not in message
    assert runs.list_runs().total == 1


def test_deep_nesting_is_refused_before_it_is_built(db_url: str) -> None:
    """ijson's builders spend memory quadratic in the depth (20,000 brackets: 1 GB)."""
    for text in (
        "[" * 20_000 + "]" * 20_000,
        '{"format": "shootout.run", "requests": [' + "[" * 20_000 + "]" * 20_000 + "]}",
    ):
        tracemalloc.start()
        try:
            with pytest.raises(ValidationError, match="nested too deeply"):
                importers.import_file(text.encode(), "deep.json")
            _current, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        assert peak < 10 * 1024**2


def test_files_over_the_import_limit_are_refused_before_reading(
    db_url: str, tmp_path, monkeypatch
) -> None:
    monkeypatch.setenv("SHOOTOUT_LIMIT_IMPORT_MB", "1")
    path = tmp_path / "big.jsonl"
    path.write_bytes(b"{}\n" * 400_000)
    with pytest.raises(
        ValidationError,
        match=r"big.jsonl is 1.2 MB; this server imports files of at most 1 MB "
        r"\(SHOOTOUT_LIMIT_IMPORT_MB\)",
    ):
        importers.import_file(path)
    with pytest.raises(ValidationError, match="upload.json is 1.2 MB"):
        importers.import_file(io.BytesIO(path.read_bytes()), "upload.json")


def test_json_lines_are_read_line_by_line_with_bare_infinity(samples) -> None:
    with reading.open_upload((samples / "sglang_bench_serving.jsonl").read_bytes(), "s.jsonl") as upload:
        assert reading.scan(upload) is None  # the tokenizer refuses SGLang's bare Infinity
        lines = reading.json_lines(upload)
    assert lines and all(isinstance(line, dict) for line in lines)
