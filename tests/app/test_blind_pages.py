"""Issue 45 over every page that takes a run id in its address, in AppTest: a hidden blind
exchange's engines and per-engine figures show on none of them (the run page shows its answers
by blind label; the others refuse it or do not list it)."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from tests.conftest import REPO_ROOT
from tests.services.runstate.test_blind_surfaces import _leaks, hidden_exchange

#: page -> the address parameter that names a run.
PAGES = {
    "runs": "run",
    "runs compare": "compare",
    "benchmarks": "run",
    "demos": "run",
    "parity": "run",
    "playground": "exchange",
}


def _shown(at: AppTest) -> str:
    parts: list[str] = []
    for kind in (
        "title",
        "header",
        "subheader",
        "markdown",
        "caption",
        "info",
        "warning",
        "error",
        "success",
    ):
        parts += [str(e.value) for e in at.get(kind)]
    parts += [e.value.to_string() for e in at.dataframe]
    parts += [str(e.value) for e in at.get("json")]
    parts += [str(getattr(e, "options", "")) for e in at.selectbox]
    return "\n".join(parts)


@pytest.mark.parametrize("page", sorted(PAGES))
def test_no_page_names_an_engine_of_a_hidden_exchange(db_url: str, page: str) -> None:
    run_id = hidden_exchange()
    at = AppTest.from_file(str(REPO_ROOT / "app_pages" / f"{page.split()[0]}.py"), default_timeout=60)
    at.query_params[PAGES[page]] = str(run_id)
    at.run()
    assert not at.exception, at.exception
    shown = _shown(at)
    assert not _leaks(shown), (page, _leaks(shown))
    if page == "runs":  # the exchange itself shows, by blind label
        assert "Answer A" in shown and "Answer B" in shown, shown
