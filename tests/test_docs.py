"""The README stays a front door and the docs stay true to the tree: every relative link and
anchor resolves, every path the architecture map names exists, every `SHOOTOUT_*` variable the
product reads is in docs/configuration.md, and no table hides a page of prose in one cell.
Fast and offline: it reads files only."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOCS = sorted([ROOT / "README.md", *(ROOT / "docs").glob("*.md")])

README_MAX_LINES = 300
#: A table cell longer than this is prose: it goes under the table instead.
CELL_MAX_CHARS = 300

#: What the product is: the code whose SHOOTOUT_* reads must be documented (tests and
#: benchmarks set their own).
PRODUCT_PY = ("shootout", "services", "web", "commands", "db", "app_pages", "scripts")
PRODUCT_ROOT_FILES = ("app.py", "serve.py", "cli.py", "run.sh", "test.sh")
SETTING = re.compile(r"SHOOTOUT_[A-Z0-9_]*[A-Z0-9]")

FENCE = re.compile(r"^(```|~~~).*?^\1", re.MULTILINE | re.DOTALL)
CODE_SPAN = re.compile(r"`[^`\n]*`")
LINK = re.compile(r"!?\[[^\]]*\]\(([^()\s]+)(?:\s+\"[^\"]*\")?\)")
HEADING = re.compile(r"^#{1,6}\s+(.*?)\s*#*\s*$", re.MULTILINE)


def prose(text: str) -> str:
    """The text with fenced code blocks and code spans blanked out (links there are examples)."""
    return CODE_SPAN.sub("", FENCE.sub("", text))


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: its text lower-cased, punctuation dropped, spaces as '-'."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading).replace("`", "")
    return re.sub(r"[^\w\- ]", "", text.strip().lower()).replace(" ", "-")


def anchors(path: Path) -> set[str]:
    found: set[str] = set()
    for heading in HEADING.findall(FENCE.sub("", path.read_text())):
        base = slug(heading)
        name, n = base, 0
        while name in found:  # GitHub numbers repeated headings: x, x-1, x-2
            n += 1
            name = f"{base}-{n}"
        found.add(name)
    return found


def test_every_relative_link_and_anchor_resolves() -> None:
    broken = []
    for doc in DOCS:
        for target in LINK.findall(prose(doc.read_text())):
            if re.match(r"[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto:
                continue
            path_part, _, anchor = target.partition("#")
            linked = (doc.parent / path_part).resolve() if path_part else doc
            where = f"{doc.relative_to(ROOT)}: {target}"
            if not linked.exists():
                broken.append(f"{where} (no such file)")
            elif anchor and linked.suffix == ".md" and anchor not in anchors(linked):
                broken.append(f"{where} (no such heading)")
    assert not broken, "broken links:\n" + "\n".join(broken)


def test_the_readme_is_a_front_door() -> None:
    lines = (ROOT / "README.md").read_text().count("\n")
    assert lines < README_MAX_LINES, (
        f"README.md has {lines} lines; keep it under {README_MAX_LINES} and move details to docs/"
    )


def test_no_table_cell_is_a_page_of_prose() -> None:
    long_cells = []
    for doc in DOCS:
        for number, line in enumerate(FENCE.sub("", doc.read_text()).splitlines(), 1):
            if not line.startswith("|"):
                continue
            cells = re.split(r"(?<!\\)\|", line.strip().strip("|"))
            longest = max(len(cell.strip()) for cell in cells)
            if longest > CELL_MAX_CHARS:
                long_cells.append(f"{doc.relative_to(ROOT)}: a row near line {number} ({longest} chars)")
    assert not long_cells, "table cells over the limit:\n" + "\n".join(long_cells)


def _product_files() -> list[Path]:
    files = [ROOT / name for name in PRODUCT_ROOT_FILES]
    for folder in PRODUCT_PY:
        files += sorted((ROOT / folder).rglob("*.py")) + sorted((ROOT / folder).rglob("*.sh"))
    return [f for f in files if f.exists()]


def settings_read_by_the_product() -> dict[str, Path]:
    """Each SHOOTOUT_* name the product uses as a string (what os.environ is asked for), with
    a file that uses it. In Python only whole string constants count, so prose in docstrings
    and constant names such as SHOOTOUT_KEY_NAMESPACE do not."""
    found: dict[str, Path] = {}
    for path in _product_files():
        if path.is_relative_to(ROOT / "services" / "core" / "config"):
            continue  # the settings themselves: tests/services/core/config checks them against the table
        text = path.read_text()
        if path.suffix == ".py":
            names = [
                node.value
                for node in ast.walk(ast.parse(text))
                if isinstance(node, ast.Constant)
                and isinstance(node.value, str)
                and SETTING.fullmatch(node.value)
            ]
        else:
            names = [m.group(0) for m in re.finditer(rf"\b{SETTING.pattern}\b", text)]
        for name in names:
            found.setdefault(name, path)
    return found


def test_every_setting_is_in_the_configuration_page() -> None:
    settings = settings_read_by_the_product()
    # Guards the scan itself: these are named in processes.py, limits.py and scripts/postgres.sh.
    assert {"SHOOTOUT_DATA_DIR", "SHOOTOUT_LIMIT_BENCHMARKS", "SHOOTOUT_TEST_PG_PORT"} <= set(settings)
    page = (ROOT / "docs" / "configuration.md").read_text()
    missing = [
        f"{name} (read in {path.relative_to(ROOT)})"
        for name, path in sorted(settings.items())
        if not re.search(rf"\b{name}\b", page)
    ]
    assert not missing, "not in docs/configuration.md:\n" + "\n".join(missing)


#: Where a path in the architecture map starts: a top-level folder, or a file at the root.
TREE_ROOTS = ("services/", "web/", "app_pages/", "commands/", "db/", "tests/", "benchmarks/", "scripts/")
ROOT_FILES = ("app.py", "serve.py", "cli.py", "run.sh", "test.sh")


def test_every_path_the_architecture_map_names_exists() -> None:
    spans = {
        span.strip("`")
        for span in CODE_SPAN.findall(FENCE.sub("", (ROOT / "docs" / "architecture.md").read_text()))
    }
    # `services/engines/<kind>/` is a pattern, and a bare `base.py` is named relative to its package.
    paths = sorted(
        p for p in spans if (p.startswith(TREE_ROOTS) or p in ROOT_FILES) and not re.search(r"[<*\s]", p)
    )
    assert len(paths) > 40, f"the map names only {len(paths)} paths: has its format changed?"
    missing = [p for p in paths if not (ROOT / p.rstrip("/")).exists()]
    assert not missing, "docs/architecture.md names paths that do not exist:\n" + "\n".join(missing)


def test_the_ci_jobs_shown_run_commands_that_parse() -> None:
    """The README's and docs/ci-gate.md's CI job: its `shootout` command is one the CLI takes."""
    import shlex

    from shootout.cli import build_parser

    for page in ("README.md", "docs/ci-gate.md"):
        text = (ROOT / page).read_text()
        job = re.search(r"```yaml\n(.*?)```", text, re.DOTALL)
        assert job, f"{page} shows no CI job"
        command = re.search(r"- run: >\n((?:        .*\n)+)", job.group(1))
        assert command, f"{page}: the job runs no folded command"
        words = shlex.split(" ".join(line.strip() for line in command.group(1).splitlines()))
        assert words[0] == "shootout", words
        parsed = build_parser().parse_args(words[1:])
        assert parsed.fail_on and parsed.baseline, page
