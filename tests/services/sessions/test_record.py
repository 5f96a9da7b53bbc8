"""The record: what a page's address shows, the timeline in words, the offline HTML report,
the Planner's inputs and the QR code."""

from __future__ import annotations

import re

from services import sessions
from services.planner.plan import PlanRequest
from services.sessions import Shown
from tests.services.sessions.conftest import Room, stored_exchange


def test_addresses_name_what_a_page_shows(db_url: str) -> None:
    exchange = stored_exchange()
    assert sessions.shown_from_address("playground", {"exchange": [str(exchange)]}) == Shown(
        kind="exchange", run_ids=(exchange,)
    )
    assert sessions.shown_from_address("benchmarks", {"run": ["12"]}) == Shown(kind="run", run_ids=(12,))
    assert sessions.shown_from_address("demos", {"run": ["4"]}) == Shown(kind="demo_step", run_ids=(4,))
    assert sessions.shown_from_address("parity", {"run": ["5"]}) == Shown(kind="parity", run_ids=(5,))
    assert sessions.shown_from_address("runs", {"compare": ["3,4"], "baseline": ["4:vllm"]}) == Shown(
        kind="compare", run_ids=(3, 4), baseline="4:vllm"
    )
    # The Runs page names any run: what it is decides how followers see it.
    assert sessions.shown_from_address("runs", {"run": [str(exchange)]}) == Shown(
        kind="exchange", run_ids=(exchange,)
    )
    assert sessions.shown_from_address("runs", {"run": ["999"]}) is None
    assert sessions.shown_from_address("playground", {"exchange": ["x"]}) is None
    assert sessions.shown_from_address("engines", {"run": ["1"]}) is None
    assert sessions.shown_from_address("benchmarks", {}) is None


def test_planner_inputs_travel_and_come_back() -> None:
    request = PlanRequest(
        model="llama-3-70b", gpu="h100-sxm", dtype="fp8", batch=4, context=4096, mem_util=0.85
    )
    shown = sessions.planner_shown(request)
    assert sessions.plan_request(Shown.from_json(shown.to_json()) or shown) == request
    assert sessions.plan_request(Shown(kind="planner", inputs=(("model", "m"),))) is None
    assert (
        sessions.plan_request(
            Shown(kind="planner", inputs=(("model", "m"), ("gpu", "g"), ("batch", "x")))
        )
        is None
    )


def test_the_timeline_says_what_was_shown(room: Room) -> None:
    exchange = stored_exchange()
    sessions.publish(room.presenter, Shown(kind="exchange", run_ids=(exchange,)))
    sessions.publish(room.presenter, sessions.planner_shown(PlanRequest(model="llama-3-8b", gpu="l4")))
    sessions.publish(room.presenter, Shown(kind="run", run_ids=(404,)))
    sessions.note(room.presenter, "fast")
    labels = [entry.label for entry in sessions.timeline(room.info.id)]
    assert labels == [
        f"Playground exchange #{exchange} (exchange)",
        "Planner: llama-3-8b on l4",
        "Run #404 (deleted)",
        "Note: fast",
    ]


def test_the_report_is_offline_and_escaped(room: Room) -> None:
    exchange = stored_exchange(
        prompt="<script>alert(1)</script>", answers={"a": "red <b>fox</b>", "b": "sky"}
    )
    sessions.publish(room.presenter, Shown(kind="exchange", run_ids=(exchange,)))
    sessions.publish(room.presenter, Shown(kind="run", run_ids=(404,)))
    sessions.note(room.presenter, "<img src=x onerror=alert(1)>")
    sessions.end(room.presenter)
    page = sessions.session_report(room.info.id).data.decode()
    assert "Friday demo" in page and room.info.join_code in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page and "red &lt;b&gt;fox&lt;/b&gt;" in page
    assert "<img src=x" not in page and "Run #404 does not exist" in page
    assert "Participants who joined</td><td>2" in page
    # Offline: nothing is fetched from anywhere (plotly.js is inline, as in the run reports).
    assert not re.search(r"""<(script|link|img)[^>]+(src|href)=["']?https?:""", page)


def test_a_blind_exchange_stays_blind_in_the_report(room: Room) -> None:
    exchange = stored_exchange(answers={"vllm": "one", "sglang": "two"}, blind=True)
    sessions.publish(room.presenter, Shown(kind="exchange", run_ids=(exchange,)))
    page = sessions.session_report(room.info.id).data.decode()
    assert "Answer A" in page and "<h3>vllm" not in page


def test_the_qr_code_is_an_svg_document() -> None:
    svg = sessions.qr_svg("http://team:8501/session?join=K7M3X")
    assert svg.startswith('<svg xmlns="http://www.w3.org/2000/svg"') and svg.rstrip().endswith("</svg>")
