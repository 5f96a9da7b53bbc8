"""The export route, on the real server (`streamlit run serve.py`): an attachment streamed
in chunks, the HTML report whole, 404 for a missing run, 400 for an unknown format, and no
engine named for a blind exchange still hidden."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from services.core import http
from tests.services.runstate.test_blind_surfaces import _leaks, hidden_exchange
from tests.support.big_runs import make_big_run
from tests.support.served import start_served_app, stop


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """serve.py on a free port, with its own database; (base URL, data folder)."""
    data_dir = tmp_path_factory.mktemp("serve")
    app = start_served_app(data_dir, {})
    yield app.url, data_dir
    stop(app)


def test_the_route_streams_an_attachment_and_refuses_clearly(
    served, monkeypatch: pytest.MonkeyPatch
) -> None:
    url, data_dir = served
    monkeypatch.setenv("SHOOTOUT_DATA_DIR", str(data_dir))
    monkeypatch.setenv("SHOOTOUT_DATABASE_URL", f"sqlite:///{data_dir / 'shootout.db'}")
    run_id = make_big_run(5000)

    reply = http.fetch(
        "GET",
        f"{url}/export/runs/{run_id}.json",
        max_bytes=50 * 1024**2,
        deadline_s=60,
        headers={"Accept-Encoding": "identity"},
    )
    assert reply.status == 200
    assert reply.headers["content-disposition"] == f'attachment; filename="shootout-run-{run_id}.json"'
    assert reply.headers["content-type"].startswith("application/json")
    assert reply.headers.get("transfer-encoding") == "chunked"  # streamed, no length known up front
    assert len(json.loads(reply.body)["requests"]) == 5000

    csv_reply = http.fetch(
        "GET", f"{url}/export/runs/{run_id}.csv", max_bytes=50 * 1024**2, deadline_s=60
    )
    assert csv_reply.status == 200 and csv_reply.headers["content-type"].startswith("text/csv")
    assert csv_reply.body.count(b"\r\n") == 5001  # csv ends rows with CRLF; error texts hold bare LFs

    # The Demos page links here for a demo's report: the report of the run's kind.
    html_reply = http.fetch(
        "GET", f"{url}/export/runs/{run_id}.html", max_bytes=50 * 1024**2, deadline_s=60
    )
    assert html_reply.status == 200 and html_reply.headers["content-type"].startswith("text/html")
    assert (
        html_reply.headers["content-disposition"] == f'attachment; filename="shootout-run-{run_id}.html"'
    )
    assert f"<h1>Shootout run #{run_id}: " in html_reply.body.decode()

    for path, status, text in (
        ("/export/runs/999.json", 404, "Run #999 does not exist."),
        ("/export/runs/999.html", 404, "Run #999 does not exist."),
        (f"/export/runs/{run_id}.xml", 400, "Unknown export format 'xml': use csv, json, html, steps."),
        ("/export/runs/abc.csv", 404, "'abc' is not a run number."),
    ):
        refused = http.fetch("GET", url + path, deadline_s=10)
        assert (refused.status, refused.body.decode().strip()) == (status, text), path


@pytest.mark.parametrize("fmt", ["csv", "json", "html", "steps"])
def test_the_route_names_no_engine_of_a_hidden_exchange(
    served, monkeypatch: pytest.MonkeyPatch, fmt: str
) -> None:
    """The route answers any viewer's browser: a blind exchange still hidden gives no format
    (the HTML report and the steps CSV now come this way too) an engine's name."""
    url, data_dir = served
    monkeypatch.setenv("SHOOTOUT_DATA_DIR", str(data_dir))
    monkeypatch.setenv("SHOOTOUT_DATABASE_URL", f"sqlite:///{data_dir / 'shootout.db'}")
    run_id = hidden_exchange()
    reply = http.fetch("GET", f"{url}/export/runs/{run_id}.{fmt}", max_bytes=50 * 1024**2, deadline_s=60)
    text = reply.body.decode("utf-8", "replace")
    assert not _leaks(text), (fmt, reply.status, _leaks(text))
    assert reply.status in (200, 400), (reply.status, text[:300])
