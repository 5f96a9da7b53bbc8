"""The registry of pages: each page's module, title, icon, address and feature, once.

app.py builds its navigation from it, in this order; tests/test_shape.py reads each page's
feature (where its one view module lives) from it, and tests/app/test_page_registry.py holds
docs/architecture.md's page table to it. No Streamlit here, so a test or a doc check reads it
without running a script. How to add a page: docs/adding.md.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class PageEntry:
    #: The page's module in app_pages/, without `.py`.
    module: str
    title: str
    #: A `:material/...:` icon name, as `st.Page` takes it.
    icon: str
    #: Its address: `/<url_path>`, which links, sessions and deep links use.
    url_path: str
    #: The services/ package whose one view module (`view.py` or `view/`) the page calls.
    feature: str

    @property
    def file(self) -> str:
        return f"{self.module}.py"


#: In navigation order; "/" opens the first.
PAGES: tuple[PageEntry, ...] = (
    PageEntry("playground", "Playground", ":material/chat:", "playground", "playground"),
    PageEntry("benchmarks", "Benchmarks", ":material/speed:", "benchmarks", "bench"),
    PageEntry("tune", "Tune", ":material/tune:", "tune", "tune"),
    PageEntry("monitor", "Monitor", ":material/monitoring:", "monitor", "telemetry"),
    PageEntry("runs", "Runs", ":material/history:", "runs", "runs"),
    PageEntry("engines", "Engines", ":material/dns:", "engines", "fleet"),
    PageEntry("planner", "Planner", ":material/calculate:", "planner", "planner"),
    PageEntry("demos", "Demos", ":material/co_present:", "demos", "demos"),
    PageEntry("parity", "Parity", ":material/compare:", "parity", "parity"),
    PageEntry("session", "Session", ":material/groups:", "session", "sessions"),
)

#: The modules of app_pages/ that are not pages: the package, the frame every page shares,
#: and this registry. Every other module there is a registered page (tests/test_shape.py).
NOT_PAGES = frozenset({"__init__", "common", "registry"})


def page(module: str) -> PageEntry:
    """The registered page whose module is `module` (a KeyError names a page never registered)."""
    for entry in PAGES:
        if entry.module == module:
            return entry
    raise KeyError(module)
