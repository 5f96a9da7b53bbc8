"""The registry of pages (app_pages/registry.py) is what app.py routes to, what the architecture
map's page table lists and what docs/pages.md has a section for; what the shape test reads from
it is in tests/test_shape.py."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest

from app_pages.registry import PAGES, PageEntry
from tests.conftest import REPO_ROOT

APP = str(REPO_ROOT / "app.py")


def test_the_frame_routes_to_the_registered_pages_in_order(
    db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    shown: list[list[Any]] = []
    navigation = st.navigation

    def recorded(pages: list[Any], **kw: Any) -> Any:
        shown.append(pages)
        return navigation(pages, **kw)

    monkeypatch.setattr(st, "navigation", recorded)
    at = AppTest.from_file(APP, default_timeout=60).run()
    assert not at.exception
    # "/" opens the Playground by switching to it: a second run of the frame, the same list.
    pages = shown[-1]
    assert all(
        [(p.title, p.url_path) for p in run] == [(p.title, p.url_path) for p in pages] for run in shown
    )
    home, *routed = pages
    # The hidden default page that sends "/" to the first page ("home"; Streamlit reads it as "").
    assert (home.title, home.url_path, home.visibility, home._default) == (
        "Shootout",
        "",
        "hidden",
        True,
    )
    assert [(p.title, p.url_path, p.icon, Path(p._page)) for p in routed] == [
        (e.title, e.url_path, e.icon, REPO_ROOT / "app_pages" / e.file) for e in PAGES
    ]


def test_each_page_is_registered_once_with_its_own_address() -> None:
    for field in ("module", "title", "url_path"):
        values = [getattr(entry, field) for entry in PAGES]
        assert len(values) == len(set(values)), field
    for entry in PAGES:
        assert (REPO_ROOT / "app_pages" / entry.file).is_file(), entry
        assert re.fullmatch(r":material/[a-z_]+:", entry.icon), entry
        assert re.fullmatch(r"[a-z][a-z0-9_-]*", entry.url_path), entry


def _view_path(entry: PageEntry) -> str:
    package = REPO_ROOT / "services" / entry.feature
    return (
        f"services/{entry.feature}/view/"
        if (package / "view").is_dir()
        else f"services/{entry.feature}/view.py"
    )


def page_table(pages: tuple[PageEntry, ...]) -> list[str]:
    """The rows docs/architecture.md's page table should hold for `pages`."""
    return [f"| {e.title} | `app_pages/{e.file}` | `{_view_path(e)}` |" for e in pages]


def doc_page_rows(doc: str) -> list[str]:
    section = doc.split("\n## Each page and its view service\n", 1)[1].split("\n## ", 1)[0]
    return [line for line in section.splitlines() if line.startswith("| ") and "`" in line]


def test_the_architecture_map_lists_exactly_the_registered_pages() -> None:
    rows = doc_page_rows((REPO_ROOT / "docs" / "architecture.md").read_text(encoding="utf-8"))
    expected = page_table(PAGES)
    assert rows == expected, "docs/architecture.md's page table should read:\n" + "\n".join(expected)


def test_the_pages_doc_has_a_section_per_page_in_order() -> None:
    doc = (REPO_ROOT / "docs" / "pages.md").read_text(encoding="utf-8")
    assert re.findall(r"^## (.+)$", doc, flags=re.MULTILINE) == [e.title for e in PAGES]


def test_a_page_missing_from_the_map_is_caught() -> None:
    doc = (REPO_ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    extra = PageEntry("ledger", "Ledger", ":material/book:", "ledger", "runs")
    assert doc_page_rows(doc) != page_table((*PAGES, extra))
    assert doc_page_rows(doc) != page_table(PAGES[::-1])
