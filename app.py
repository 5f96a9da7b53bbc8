"""Shootout: the router and frame. Pages live in app_pages/, logic in services/."""

from __future__ import annotations

from pathlib import Path

import streamlit as st

from app_pages import common, registry
from app_pages.parts import session_share

PAGES_DIR = Path(__file__).resolve().parent / "app_pages"

# The wide layout alone still left a third of a 1400 px screen to a sidebar holding two captions
# and to 5rem margins, while wide tables scrolled at the right and the Playground's columns were
# about 300 px (issue 36). A narrower sidebar and 2rem margins give the pages that room.
FRAME_CSS = """<style>
section[data-testid="stSidebar"]{width:15rem !important;min-width:15rem !important}
[data-testid="stMainBlockContainer"]{padding-left:2rem;padding-right:2rem;max-width:none}
</style>"""


def run() -> None:
    # An emoji: Streamlit draws it as an inline SVG, where a `:material/...:` icon made every
    # page fetch the favicon from a font CDN (an offline team server never reaches out).
    st.set_page_config(page_title="Shootout", page_icon="⏱️", layout="wide")
    st.html(FRAME_CSS)
    if common.viewer_gate() is None:
        return
    common.recover_once()
    pages = [
        st.Page(PAGES_DIR / page.file, title=page.title, icon=page.icon, url_path=page.url_path)
        for page in registry.PAGES
    ]

    def home() -> None:
        # "/" opens the first page (the Playground) under its own address, so /playground links work too.
        st.switch_page(pages[0])

    navigation = st.navigation(
        [st.Page(home, title="Shootout", url_path="home", default=True, visibility="hidden"), *pages],
        position="top",
    )
    counted = common.sidebar()
    # A presenter's tab shows the room what this page's address shows (app_pages/parts/session_share.py).
    session_share.rejoin()
    session_share.share_address(navigation.url_path)
    session_share.sidebar_line()
    navigation.run()
    # Counted again after a page that ran to its end: what it just changed (an endpoint added,
    # removed) shows on the same run, not one interaction later. Nothing can be drawn after
    # a page's st.stop(), so the sidebar itself comes before the page.
    common.count_engines(counted)


run()
