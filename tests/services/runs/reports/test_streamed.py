"""Streamed exports (issue 20): the same bytes as the whole-run export, read in batches, with
memory that does not grow with the run."""

from __future__ import annotations

import csv
import io
import json
import re
import tracemalloc

import pytest
from sqlalchemy import event

from db.models import Exchange, Sample
from db.session import get_session_factory, session_scope
from services import importers, runs
from services.core.errors import NotFoundError, ValidationError
from services.runs import reports
from services.runs.reports import streamed as exports
from tests.support.big_runs import make_big_run

EXPORTED_AT = re.compile(rb'"exported_at": "[^"]+"')


def _old_json(run_id: int) -> bytes:
    """The export as it was built before streaming: the whole document, dumped at once."""
    document = reports.run_document(run_id)
    return json.dumps(exports.json_safe(document), indent=1, default=str, allow_nan=False).encode(
        "utf-8"
    )


def _streamed(run_id: int, fmt: str) -> bytes:
    return b"".join(exports.stream_run(run_id, fmt).chunks)


def _same_but_time(a: bytes, b: bytes) -> bool:
    return EXPORTED_AT.sub(b"", a) == EXPORTED_AT.sub(b"", b)


def test_streamed_json_is_byte_for_byte_the_whole_document(
    db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(exports, "BATCH_ROWS", 7)  # many batches, one cut in the middle of each list
    run_id = make_big_run(40)
    with session_scope() as session:
        session.add_all(
            [
                Exchange(
                    run_id=run_id,
                    conversation_id="c",
                    turn=t,
                    engine_name="e",
                    answer='a\nb "q"',
                    metrics={"ttft_s": float("nan")},
                )
                for t in range(9)
            ]
        )
        session.add_all(
            [
                Sample(run_id=run_id, ts=100.0 - i % 3, source=f"gpu:{i % 2}", values={"w": i})
                for i in range(17)
            ]
        )
    streamed = _streamed(run_id, "json")
    assert _same_but_time(streamed, _old_json(run_id))
    document = json.loads(streamed)
    assert (
        len(document["requests"]) == 40
        and len(document["exchanges"]) == 9
        and len(document["samples"]) == 17
    )
    assert [s["ts"] for s in document["samples"]] == sorted(s["ts"] for s in document["samples"])


def test_an_empty_run_streams_the_same_json_as_before(db_url: str) -> None:
    with session_scope() as session:
        from db.models import Run

        run = Run(kind="benchmark", name="empty", config={}, summary={})
        session.add(run)
        session.flush()
        run_id = run.id
    assert _same_but_time(_streamed(run_id, "json"), _old_json(run_id))


def test_streamed_json_imports_back(db_url: str, tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(exports, "BATCH_ROWS", 13)
    original = make_big_run(60)
    path = tmp_path / "run.json"
    path.write_bytes(_streamed(original, "json"))
    result = importers.import_file(path)
    assert result.requests == 60
    copy = json.loads(_streamed(result.run_ids[0], "json"))
    assert copy["requests"] == json.loads(path.read_bytes())["requests"]
    assert runs.get_run(result.run_ids[0]).summary == runs.get_run(original).summary


def test_streamed_csv_is_one_row_per_request_with_formulas_neutralised(
    db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(exports, "BATCH_ROWS", 9)
    run_id = make_big_run(100)
    rows = list(csv.reader(io.StringIO(_streamed(run_id, "csv").decode())))
    assert rows[0] == ["run_id", *exports.REQUEST_COLUMNS]
    assert len(rows) == 101
    errors = [row[exports.REQUEST_COLUMNS.index("error") + 1] for row in rows[1:] if row[4] == "False"]
    assert errors and all(error.startswith("'=HYPERLINK(") for error in errors)


def test_streamed_csv_of_samples_names_every_signal(
    db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(exports, "BATCH_ROWS", 2)
    with session_scope() as session:
        from db.models import Run

        run = Run(kind="recording", name="r")
        session.add(run)
        session.flush()
        session.add_all(
            [
                Sample(run_id=run.id, ts=float(i), source="gpu:0", values={f"s{i}": "=1"})
                for i in range(5)
            ]
        )
        run_id = run.id
    rows = list(csv.reader(io.StringIO(_streamed(run_id, "csv").decode())))
    assert rows[0] == ["run_id", "ts", "source", "s0", "s1", "s2", "s3", "s4"]
    assert rows[5][3:] == ["", "", "", "", "'=1"]


def test_what_cannot_be_exported_is_refused_before_the_first_byte(db_url: str) -> None:
    with pytest.raises(NotFoundError, match="Run #404 does not exist"):
        exports.stream_run(404, "json")
    with pytest.raises(ValidationError, match="Unknown export format"):
        exports.stream_run(1, "xml")
    with session_scope() as session:
        from db.models import Run

        run = Run(kind="recording", name="nothing yet")
        session.add(run)
        session.flush()
        run_id = run.id
    with pytest.raises(ValidationError, match="no per-request rows"):
        exports.stream_run(run_id, "csv")


def test_rows_are_read_in_batched_queries_each_in_its_own_transaction(db_url: str, monkeypatch) -> None:
    monkeypatch.setattr(exports, "BATCH_ROWS", 100)
    run_id = make_big_run(1000)
    engine = get_session_factory().kw["bind"]
    statements: list[str] = []
    begins: list[object] = []

    def record(_conn, _cursor, statement, *_args) -> None:  # type: ignore[no-untyped-def]
        statements.append(statement)

    def begin(conn) -> None:  # type: ignore[no-untyped-def]
        begins.append(conn)

    event.listen(engine, "before_cursor_execute", record)
    event.listen(engine, "begin", begin)
    try:
        stream = exports.stream_run(run_id, "json")
        statements.clear()
        begins.clear()
        chunks = list(stream.chunks)
    finally:
        event.remove(engine, "before_cursor_execute", record)
        event.remove(engine, "begin", begin)
    request_reads = [s for s in statements if "FROM request_results" in s]
    # Ten full batches, then one query that finds nothing more.
    assert len(request_reads) == 11 and all(
        "LIMIT" in s and "request_results.id >" in s for s in request_reads[1:]
    )
    assert len(begins) == len(statements)  # no transaction stays open across chunks
    assert max(len(chunk) for chunk in chunks) < len(b"".join(chunks)) / 8


def test_export_memory_does_not_grow_with_the_run(db_url: str) -> None:
    """15,000 requests: the streamed export's peak stays a few batches' worth (the whole
    document in memory was over 150 MB for 50,000). The figure for
    larger runs is benchmarks/bench_export_import_memory.py's."""
    run_id = make_big_run(15_000)
    for fmt in ("json", "csv"):
        tracemalloc.start()
        try:
            size = sum(len(chunk) for chunk in exports.stream_run(run_id, fmt).chunks)
            _current, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        assert size > 3_000_000, (fmt, size)
        assert peak < 25 * 1024**2, (fmt, peak / 1024**2)
