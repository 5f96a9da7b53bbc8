"""Every HTML report escapes what a viewer or an engine named: a run label and an engine name
holding markup come out as text in the run's report, a comparison's and a demo's."""

from __future__ import annotations

import html

from db.models import Run
from db.session import session_scope
from services.runs import reports
from services.runs.reports.markup import fill, joined
from tests.services.runs.test_caveats import caveated_run
from tests.services.runs.test_comparison_split import split_run, timed

HOSTILE = '<script>alert("x")</script><img src=x onerror=alert(1)>'


def _escaped_only(page: str) -> None:
    assert "<script>alert" not in page and "<img src=x" not in page
    assert html.escape(HOSTILE) in page


def _hostile_demo() -> int:
    with session_scope() as session:
        run = Run(
            kind="demo",
            name=HOSTILE,
            status="failed",
            error=f"{HOSTILE} did not answer",
            engine_names=HOSTILE,
            engines=[{"name": HOSTILE, "kind": "vllm", "base_url": "http://127.0.0.1:1"}],
            config={"scenario": "batching"},
            summary={"steps": [], "awaiting": None},
            notes=HOSTILE,
        )
        session.add(run)
        session.flush()
        return run.id


def test_a_hostile_run_label_and_engine_name_are_escaped_in_every_report(db_url: str) -> None:
    first = split_run(HOSTILE, HOSTILE, "vllm", timed())
    second = split_run(HOSTILE + "2", HOSTILE + "2", "vllm", timed())
    caveated = caveated_run(HOSTILE)
    pages = {
        "run": reports.export_run(first, "html"),
        "caveated run": reports.export_run(caveated, "html"),
        "comparison": reports.export_comparison([first, second]),
        "demo": reports.export_run(_hostile_demo(), "html"),
    }
    for kind, page in pages.items():
        assert page.mime == "text/html", kind
        _escaped_only(page.data.decode("utf-8"))


def test_fill_escapes_every_value_and_keeps_built_fragments() -> None:
    item = fill("<li>$line</li>", line="a & <b> \"c\" 'd' $other")
    assert item == "<li>a &amp; &lt;b&gt; &quot;c&quot; &#x27;d&#x27; $other</li>"
    # A fragment fill built goes in as it is; a plain string never does.
    assert fill("<ul>$items</ul>", items=joined([item, item])) == f"<ul>{item}{item}</ul>"
    assert fill("<p>$x</p>", x=str(item)) != f"<p>{item}</p>"
    assert fill("<td>$n</td>", n=3) == "<td>3</td>"
