"""Issue 20 in the browser: untrusted text renders without fetching anything, on every page.

A hostile engine (its answers, error bodies, model name in /v1/models and metric labels, version) and
hostile imported files (labels, model names, error texts, a stored demo) all carry a
markdown image, an <img> tag, a markdown link, a bare URL and backticks, every address
pointing at a canary server on another loopback port that records each request it gets.
Chromium then opens every page that shows them. The canary must get nothing, the browser
must ask for nothing on its port, no link may point there, and each text must be on
screen as text (so the test cannot pass by rendering nothing).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from tests.e2e.conftest import assert_no_exception, screenshot, wait_for_app
from tests.support.scripted_server import Identity, ScriptedServer

pytestmark = pytest.mark.e2e


class Canary:
    """A loopback HTTP server that answers everything with an empty 200 and remembers it."""

    def __init__(self) -> None:
        self.requests: list[str] = []
        seen = self.requests

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                seen.append(self.path)
                self.send_response(200)
                self.send_header("content-length", "0")
                self.end_headers()

            do_POST = do_HEAD = do_GET

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.host_port = f"127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def hostile(self, where: str) -> str:
        """Everything that used to fetch or link, and a marker to find the text by."""
        url = f"http://{self.host_port}/leak"
        return (
            f'![leak]({url}?q={where}-img) <img src="{url}?q={where}-tag"> [click]({url}?q={where}-link) '
            f"{url}?q={where}-bare ``we`ird`` MARK-{where}"
        )

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def canary() -> Iterator[Canary]:
    server = Canary()
    yield server
    server.close()


def _answer_stream(text: str) -> str:
    chunks = [text[i : i + 16] for i in range(0, len(text), 16)]
    events = [
        {
            "id": "x",
            "object": "chat.completion.chunk",
            "model": "m",
            "choices": [{"index": 0, "delta": {"content": piece}, "finish_reason": None}],
        }
        for piece in chunks
    ]
    events.append(
        {
            "id": "x",
            "object": "chat.completion.chunk",
            "model": "m",
            "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
        }
    )
    return "".join(f"data: {json.dumps(e)}\n\n" for e in events) + "data: [DONE]\n\n"


def _vllm_result(canary: Canary, label: str, ttft_ms: float) -> bytes:
    """A `vllm bench serve --save-result --save-detailed` file whose label, model and
    errors are hostile (the label becomes the engine's name)."""
    ttfts = [ttft_ms / 1000 * (1 + i / 10) for i in range(4)]
    return json.dumps(
        {
            "date": "20260101-120000",
            "backend": "vllm",
            "endpoint_type": "openai-chat",
            "label": canary.hostile(label),
            "model_id": canary.hostile("model-id"),
            "num_prompts": 5,
            "request_rate": "inf",
            "burstiness": 1.0,
            "max_concurrency": 2,
            "duration": 2.0,
            "completed": 4,
            "failed": 1,
            "total_input_tokens": 40,
            "total_output_tokens": 80,
            "request_throughput": 2.0,
            "output_throughput": 40.0,
            "mean_e2el_ms": 500.0,
            "median_e2el_ms": 500.0,
            "max_concurrent_requests": 2,
            "input_lens": [10] * 5,
            "output_lens": [20, 20, 20, 20, 0],
            "ttfts": [*ttfts, 0.0],
            "itls": [[0.02] * 19] * 4 + [[]],
            "latencies": [t + 0.38 for t in ttfts] + [0.0],
            "start_times": [0.0, 0.1, 0.2, 0.3, 0.4],
            "generated_texts": [canary.hostile("generated")] * 4 + [""],
            "errors": ["", "", "", "", canary.hostile("import-error")],
        }
    ).encode()


def _demo_export(canary: Canary) -> bytes:
    """A stored demo from another server (Shootout run JSON keeps its kind)."""
    chart = {
        "title": canary.hostile("chart-title"),
        "x_title": "engine",
        "y_title": "s",
        "kind": "bar",
        "series": [
            {
                "name": canary.hostile("series"),
                "x": [canary.hostile("category")],
                "y": [1.0],
                "text": [canary.hostile("bar-text")],
            }
        ],
    }
    step = {
        "key": "one",
        "title": canary.hostile("step-title"),
        "explanation": canary.hostile("step-explanation"),
        "status": "finished",
        "chart": chart,
        "finding": canary.hostile("finding")
        + "\n\n![x](http://"
        + canary.host_port
        + "/leak?q=after-blank-line)",
        "errors": [canary.hostile("step-error")],
        "numbers": [
            {
                "label": canary.hostile("number-label"),
                "text": "1.0 s",
                "value": 1.0,
                "help": canary.hostile("number-help"),
            }
        ],
    }
    summary = {
        "title": canary.hostile("demo-title"),
        "steps": [step],
        "conclusion": canary.hostile("conclusion"),
        "conclusion_headline": canary.hostile("headline"),
        "conclusion_lines": [canary.hostile("line")],
        "skipped_engines": {"other": canary.hostile("skipped")},
    }
    run = {
        "id": 7,
        "kind": "demo",
        "name": "prefix_cache",
        "status": "finished",
        "config": {"scenario": "nope"},
        "summary": summary,
        "engine_names": "demo-engine",
        "error": canary.hostile("demo-error"),
    }
    return json.dumps({"format": "shootout.run", "version": 1, "run": run}).encode()


def test_untrusted_text_fetches_nothing_on_any_page(
    app_page, app_server, tmp_path, canary, monkeypatch
) -> None:  # type: ignore[no-untyped-def]
    from db.session import dispose_all
    from services import importers, runs
    from services.bench import jobs
    from services.bench.arrivals import LoadSpec
    from services.bench.spec import BenchSpec, EngineTarget
    from services.bench.workloads import WorkloadSpec
    from services.engines import endpoints

    monkeypatch.setenv("SHOOTOUT_DATABASE_URL", app_server.database_url)
    monkeypatch.setenv("SHOOTOUT_DATA_DIR", str(app_server.data_dir))
    (tmp_path / "hostile-answer.txt").write_text(_answer_stream(canary.hostile("answer")))
    (tmp_path / "hostile-error.json").write_text(
        json.dumps({"error": {"message": canary.hostile("error-body")}})
    )
    identity = Identity(
        served_model="m``o`d![m](http://" + canary.host_port + "/leak?q=model)",
        version=canary.hostile("version"),
    )
    with ScriptedServer(replay_dir=tmp_path, identity=identity) as engine:
        for record in endpoints.list_engines():
            endpoints.remove_engine(record.name)
        answers = engine.model(replay="hostile-answer.txt", itl=1)
        failures = engine.model(fault="http", status=500, body="file:hostile-error.json")
        endpoints.add_engine("hostile-answers", engine.base_url, kind="vllm", model=answers)
        endpoints.add_engine("hostile-errors", engine.base_url, kind="vllm", model=failures)
        endpoints.add_engine("hostile-model", engine.base_url, kind="vllm", model=identity.served_model)

        bench_id = jobs.create_run(
            BenchSpec(
                engines=(
                    EngineTarget("hostile-answers", engine.base_url, "vllm", answers),
                    EngineTarget("hostile-errors", engine.base_url, "vllm", failures),
                ),
                workload=WorkloadSpec(input_len=8, output_len=8),
                load=LoadSpec(concurrency=1, requests=2),
                name=canary.hostile("bench-name"),
            )
        )
        # In a thread of its own: Playwright's sync API already runs an event loop in this one.
        worker = threading.Thread(target=jobs.execute_run, args=(bench_id,))
        worker.start()
        worker.join(timeout=120)
        first = importers.import_file(
            _vllm_result(canary, "label-a", 100), "a.json", tags=["nightly"]
        ).run_ids[0]
        second = importers.import_file(_vllm_result(canary, "label-b", 50), "b.json").run_ids[0]
        runs.update_run(
            first,
            name=canary.hostile("run-name"),
            notes=canary.hostile("notes"),
            tags=["nightly", canary.hostile("tag")[:60]],
        )
        demo_id = importers.import_file(_demo_export(canary), "demo.json").run_ids[0]
        dispose_all()

        page = app_page
        asked: list[str] = []
        page.on("request", lambda request: asked.append(request.url))
        main = page.locator("[data-testid='stMain']")

        def visit(path: str, *marks: str, shot: str | None = None) -> None:
            page.goto(app_server.url + path)
            wait_for_app(page)
            for mark in marks:
                page.get_by_text(f"MARK-{mark}").first.wait_for(timeout=60_000)
            settle(shown=bool(marks))
            if shot:
                screenshot(page, shot)

        def settle(shown: bool = True) -> None:
            wait_for_app(page)
            page.wait_for_timeout(500)  # images and charts ask for what they load as they mount
            assert_no_exception(page)
            where = f"{page.url}"
            assert main.locator(f"a[href*='{canary.host_port}']").count() == 0, where
            assert main.locator(f"img[src*='{canary.host_port}']").count() == 0, where
            if shown:  # as the text it is: the tag reads literally
                text = main.inner_text()
                assert "<img src=" in text and "MARK-" in text, where

        # Playground: an answer, an error body and a model name from the engine.
        visit("/")
        page.locator(".st-key-pg_prompt textarea").fill("Say something")
        page.locator(".st-key-pg_send button").click()
        page.get_by_text("MARK-answer").first.wait_for(timeout=60_000)
        page.get_by_text("MARK-error-body").first.wait_for(timeout=60_000)
        settle()
        screenshot(page, "no-fetch-playground")

        # Engines: what a probe reports (version, model names).
        visit("/engines")
        page.locator(".st-key-engine_card_hostile-model").get_by_role("button", name="Probe").click()
        page.get_by_text("MARK-version").first.wait_for(timeout=60_000)
        assert page.get_by_text("m``o`d![m](http://").count() >= 1  # the served model, backticks and all
        settle()
        screenshot(page, "no-fetch-engines")

        # Monitor: the engines' metrics carry the hostile model name in their labels.
        visit("/monitor")
        page.get_by_text("hostile-answers").first.wait_for(timeout=60_000)
        page.locator("[data-testid='stPlotlyChart'] .main-svg").first.wait_for(timeout=60_000)
        settle(shown=False)
        screenshot(page, "no-fetch-monitor")

        # Benchmarks: the run's name and its failures' error bodies.
        visit(f"/benchmarks?run={bench_id}", "bench-name", shot="no-fetch-benchmarks")

        # Runs: the list, one run (name, labels, model, errors, notes), a comparison.
        visit("/runs", shot="no-fetch-runs-list")  # names sit in a canvas table, text by construction
        visit(f"/runs?run={first}", "run-name", "label-a", "model-id", shot="no-fetch-runs-detail")
        visit(f"/runs?compare={first},{second}", "label-a", "label-b", shot="no-fetch-runs-compare")

        # Demos: a stored demo imported from elsewhere, every text of it hostile.
        visit(
            f"/demos?run={demo_id}",
            "demo-title",
            "step-title",
            "finding",
            "step-error",
            "headline",
            "line",
            "number-label",
            "skipped",
            "demo-error",
            shot="no-fetch-demos",
        )
        assert (
            main.get_by_text("after-blank-line").count() >= 1
        )  # the finding's second paragraph, as text

        time.sleep(0.5)
        leaked = [url for url in asked if canary.host_port in url]
        assert not leaked, leaked
        assert canary.requests == [], canary.requests
        for name in ("hostile-answers", "hostile-errors", "hostile-model"):
            endpoints.remove_engine(name)
        dispose_all()
