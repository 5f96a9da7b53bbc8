"""The shape the developers' guide asks for, kept by a test: services/ and db/ never import
Streamlit (the CLI and the workers use them without it), and pages hold no SQL, HTTP or NVML."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split(".")[0])
    return names


def _offenders(folders: list[str], banned: set[str]) -> list[str]:
    found = []
    for folder in folders:
        for path in sorted((ROOT / folder).rglob("*.py")):
            hits = _imports(path) & banned
            if hits:
                found.append(f"{path.relative_to(ROOT)}: {', '.join(sorted(hits))}")
    return found


def test_services_and_db_never_import_streamlit() -> None:
    assert _offenders(["services", "db"], {"streamlit"}) == []


def test_pages_hold_no_sql_http_or_nvml() -> None:
    banned = {"sqlalchemy", "db", "httpx", "httpx2", "requests", "urllib", "pynvml", "socket"}
    assert _offenders(["app_pages"], banned) == []
    assert not _imports(ROOT / "app.py") & banned
