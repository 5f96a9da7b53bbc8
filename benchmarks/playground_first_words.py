"""First words on screen (issue 47): how long after the engine's first token the Playground shows
it, in headless Chromium driving the real app (`streamlit run serve.py`, as tests/e2e serves it)
against the scripted OpenAI-compatible server with a fixed first-token delay.

Each send: "New conversation" (an empty panel), the prompt, then one click on Send made inside
the page with its performance.now() noted; a MutationObserver notes when an answer's first word
appears in a column. The lag is that time minus the scripted server's own time from receiving
the request to writing its first token (its /_scripted/log record, `logas=`): what Shootout adds
between the click and the screen (the hand-over to the worker, its first write, the page's read
and draw). Then Stop: an exchange of a long answer is stopped mid-stream, and the time from the
click until every column reads "stopped".

    .venv/bin/python -m benchmarks.playground_first_words [--sends 20] [--ttft-ms 300] [--stops 5]
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from db.session import dispose_all
from services.engines import endpoints
from tests.e2e.conftest import CHROMIUM
from tests.support.scripted_server import WORDS, ScriptedServer
from tests.support.served import start_served_app, stop

ENGINES = ("east", "west")
#: Any scripted word in an answer column: the first words of either engine.
WORD_PATTERN = "|".join(w.strip() for w in WORDS)

FIRST_WORDS_JS = """
([wordPattern]) => new Promise((resolve) => {
  const words = new RegExp(`\\\\b(${wordPattern})\\\\b`);
  const shown = () => [...document.querySelectorAll("[data-testid='stColumn'] [data-testid='stMarkdownContainer']")]
    .some((e) => words.test(e.innerText));
  window.__firstWords = null;
  const observer = new MutationObserver(() => {
    if (window.__firstWords === null && shown()) {
      window.__firstWords = performance.now();
      observer.disconnect();
    }
  });
  observer.observe(document.body, {subtree: true, childList: true, characterData: true});
  const button = document.querySelector(".st-key-pg_send button");
  window.__clicked = performance.now();
  button.click();
  resolve(window.__clicked);
})
"""

STOPPED_JS = """
() => {
  window.__stopped = null;
  const all = () => {
    const marks = [...document.querySelectorAll("[data-testid='stColumn'] p")].map((p) => p.innerText.trim());
    return marks.filter((t) => t === "stopped").length >= 2;
  };
  const observer = new MutationObserver(() => {
    if (window.__stopped === null && all()) { window.__stopped = performance.now(); observer.disconnect(); }
  });
  observer.observe(document.body, {subtree: true, childList: true, characterData: true});
  window.__stopClicked = performance.now();
  document.querySelector(".st-key-pg_stop button").click();
}
"""


@dataclass
class Measured:
    lags_s: list[float]
    server_ttft_s: list[float]
    stops_s: list[float]
    stream_ends_s: list[float]


def register(server: ScriptedServer, ttft_ms: float, tokens: int) -> None:
    """Exactly the two scripted engines in the app's database (SHOOTOUT_DATABASE_URL names it)."""

    for record in endpoints.list_engines():
        endpoints.remove_engine(record.name)
    for salt, name in enumerate(ENGINES):
        model = server.model(ttft=ttft_ms, itl=20, tokens=tokens, salt=salt, logas=name)
        endpoints.add_engine(name, server.base_url, model=model)
    dispose_all()


def wait_idle(page: Any, timeout_ms: int = 60_000) -> None:
    page.wait_for_function(
        "() => { const a = document.querySelector(\"[data-testid='stApp']\");"
        " return a && a.getAttribute('data-test-script-state') === 'notRunning'"
        " && a.getAttribute('data-test-connection-state') === 'CONNECTED'; }",
        timeout=timeout_ms,
    )


def new_conversation(page: Any) -> None:
    page.locator(".st-key-pg_new button").wait_for()
    page.wait_for_function("() => !document.querySelector('.st-key-pg_new button').disabled")
    page.locator(".st-key-pg_new button").click()
    page.get_by_text("Answers appear here").wait_for()
    wait_idle(page)


def first_words_lag(page: Any, server: ScriptedServer, prompt: str) -> tuple[float, float]:
    """(lag, the server's own first-token time) of one send, seconds."""
    page.locator(".st-key-pg_prompt textarea").fill(prompt)
    page.locator(".st-key-pg_prompt textarea").press("Tab")  # the prompt reaches the server
    wait_idle(page)
    clicked = page.evaluate(FIRST_WORDS_JS, [WORD_PATTERN])
    page.wait_for_function("() => window.__firstWords !== null", timeout=60_000)
    shown = page.evaluate("() => window.__firstWords")
    # Wait for the end of the exchange (the Send button comes back) before the next one.
    page.wait_for_function(
        "() => !document.querySelector('.st-key-pg_send button').disabled", timeout=120_000
    )
    wait_idle(page)
    own = []
    for name in ENGINES:
        record = server.log(name)
        assert record and record["writes"], f"no server record of {name}"
        own.append(record["writes"][0] - record["received"])
    server_ttft = min(own)
    return (shown - clicked) / 1000 - server_ttft, server_ttft


def stop_time(page: Any, server: ScriptedServer) -> tuple[float, float]:
    """Seconds from a click on Stop all, mid-stream, until every column reads stopped, and
    until the server wrote its last token to either engine's stream (its clock and the
    browser's compared through the wall clock: one machine)."""
    page.locator(".st-key-pg_prompt textarea").fill("A long one, to be stopped.")
    page.locator(".st-key-pg_prompt textarea").press("Tab")
    wait_idle(page)
    page.locator(".st-key-pg_send button").click()
    page.wait_for_function(
        f"() => [...document.querySelectorAll(\"[data-testid='stColumn'] [data-testid='stMarkdownContainer']\")]"
        f".filter((e) => /\\b({WORD_PATTERN})\\b/.test(e.innerText)).length >= 2",
        timeout=60_000,
    )
    page.wait_for_timeout(300)
    page.evaluate(STOPPED_JS)
    page.wait_for_function("() => window.__stopped !== null", timeout=30_000)
    took = page.evaluate("() => (window.__stopped - window.__stopClicked) / 1000")
    clicked_epoch = page.evaluate("() => (performance.timeOrigin + window.__stopClicked) / 1000")
    wait_idle(page)
    offset = time.time() - time.perf_counter()
    last = max(server.log(name)["writes"][-1] for name in ENGINES) + offset
    return float(took), last - clicked_epoch


@contextmanager
def served(data_dir: Path) -> Iterator[str]:
    """The app as the browser tests serve it; yields its address."""
    app = start_served_app(data_dir, {})
    try:
        yield app.url
    finally:
        stop(app)


def measure(
    url: str, server: ScriptedServer, sends: int, ttft_ms: float, stops: int, page: Any
) -> Measured:
    """`sends` first-words lags and `stops` Stop times on one browser page."""
    register(server, ttft_ms, tokens=40)
    page.goto(url)
    wait_idle(page)
    measured = Measured([], [], [], [])
    # One send first, not counted: the page's first load starts the warm worker, which takes a
    # second or two to import on a busy machine (a send that early waits for it).
    for index in range(-1, sends):
        new_conversation(page)
        lag, own = first_words_lag(page, server, f"Question number {index + 1}, please answer.")
        if index < 0:
            continue
        measured.lags_s.append(lag)
        measured.server_ttft_s.append(own)
    if stops:
        register(server, ttft_ms, tokens=2000)
        for _ in range(stops):
            new_conversation(page)
            shown, ended = stop_time(page, server)
            measured.stops_s.append(shown)
            measured.stream_ends_s.append(ended)
    return measured


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]


def chromium(playwright: Any) -> Any:
    return playwright.chromium.launch(
        executable_path=CHROMIUM,
        headless=True,
        args=["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run"],
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sends", type=int, default=20)
    parser.add_argument("--stops", type=int, default=5)
    parser.add_argument("--ttft-ms", type=float, default=300.0)
    args = parser.parse_args()
    # Imported here: the benchmark's only use of Playwright (a test dependency).
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory() as tmp, ScriptedServer() as server:
        data_dir = Path(tmp)
        os.environ["SHOOTOUT_DATABASE_URL"] = f"sqlite:///{data_dir / 'shootout.db'}"
        with served(data_dir) as url, sync_playwright() as playwright:
            browser = chromium(playwright)
            page = browser.new_page(viewport={"width": 1440, "height": 1000})
            page.set_default_timeout(60_000)
            found = measure(url, server, args.sends, args.ttft_ms, args.stops, page)
            browser.close()
    lags = [lag * 1000 for lag in found.lags_s]
    print(f"cores: {os.cpu_count()}, load average {os.getloadavg()[0]:.2f}")
    print(
        f"server's own first-token time: median {statistics.median(found.server_ttft_s) * 1000:.0f} ms"
    )
    print(
        f"first words after the engine's first token, {len(lags)} sends: "
        f"p50 {percentile(lags, 0.5):.0f} ms, p90 {percentile(lags, 0.9):.0f} ms, "
        f"min {min(lags):.0f}, max {max(lags):.0f}"
    )
    if found.stops_s:
        stops = [s * 1000 for s in found.stops_s]
        print(
            f"Stop all to every column stopped, {len(stops)} stops: "
            f"p50 {percentile(stops, 0.5):.0f} ms, max {max(stops):.0f} ms; the server's last token "
            f"after the click: p50 {percentile(found.stream_ends_s, 0.5) * 1000:.0f} ms, "
            f"max {max(found.stream_ends_s) * 1000:.0f} ms"
        )
    return 0


if __name__ == "__main__":
    started = time.monotonic()
    code = main()
    print(f"took {time.monotonic() - started:.0f} s")
    raise SystemExit(code)
