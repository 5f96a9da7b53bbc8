"""The code gates of the test command: ruff (lint and format) over the whole tree, mypy over the
code that holds the logic (mypy.ini: services, db, commands, web). Zero findings; a `# noqa` or
`# type: ignore` that remains says why beside it, and so does an import left inside a function.

They run as tests so `./test.sh` (and so CI) fails on them like on any other regression, with
the tool's own report as the failure message."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent


def _run(*command: str, timeout_s: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(BIN / command[0]), *command[1:]],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout_s,
        check=False,
    )


def test_ruff_lint_is_clean() -> None:
    answer = _run("ruff", "check", "--no-cache", "--output-format", "concise", ".")
    assert answer.returncode == 0, answer.stdout + answer.stderr


def test_ruff_format_is_clean() -> None:
    answer = _run("ruff", "format", "--no-cache", "--check", ".")
    assert answer.returncode == 0, answer.stdout + answer.stderr


def test_mypy_is_clean() -> None:
    # Its cache lives outside the tree: a fresh clone stays clean and a second run is fast.
    answer = _run("mypy", "--cache-dir", "/tmp/shootout-mypy-cache", timeout_s=900)
    assert answer.returncode == 0, answer.stdout + answer.stderr


#: Where a suppression hides something from the gates (tests pass wrong types on purpose).
GATED = ("shootout", "services", "db", "commands", "web", "app_pages", "app.py", "serve.py", "cli.py")
SUPPRESSION = re.compile(r"#\s*(noqa|type:\s*ignore)\b(?P<rest>.*)$")


def test_every_suppression_says_why() -> None:
    unexplained = []
    for path in sorted(ROOT.glob("**/*.py")):
        relative = path.relative_to(ROOT)
        if relative.parts[0] not in GATED:
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            found = SUPPRESSION.search(line)
            # The codes, then a reason: "noqa: CODE - why" or "type: ignore[code]  # why".
            if found and not re.search(
                r"[A-Za-z]{3,}.*[a-z]{3,}", re.sub(r"^[:\[\]\w, ]*", "", found["rest"])
            ):
                unexplained.append(f"{relative}:{number}: {line.strip()}")
    assert not unexplained, "a suppression without its reason:\n" + "\n".join(unexplained)


#: A script that edits the import path: the package is installed instead (pyproject.toml).
PATH_PATCH = re.compile(r"\bsys\.path\.(insert|append|extend)\(|\bsys\.path\s*(\+?=)[^=]")


def python_files() -> list[str]:
    """The checkout's Python files, tracked or new, as git names them (ignored ones left out)."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard", "*.py"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    return [name for name in listed.stdout.split("\0") if name]


def test_no_python_file_patches_the_import_path() -> None:
    # `pip install -e .` (run.sh, test.sh) makes the product importable from anywhere, and
    # pytest puts the checkout first for the tests. A patch hid a missing install and could
    # load another checkout's code.
    patched = []
    for name in python_files():
        path = ROOT / name
        if not path.is_file():
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if PATH_PATCH.search(line):
                patched.append(f"{name}:{number}: {line.strip()}")
    assert not patched, "the import path patched (install the package instead):\n" + "\n".join(patched)


#: Product code: what git tracks, less the tests (they import inside tests to scope fixtures).
NOT_PRODUCT = ("tests",)
#: A comment's words, once suppression markers are taken out of it.
MARKERS = re.compile(r"noqa(:\s*[A-Z0-9, ]+)?|type:\s*ignore(\[[^\]]*\])?|fmt:\s*\w+|pragma:[\w ]+")


def _says_why(line: str) -> bool:
    comment = line.partition("#")[2]
    return bool(re.search(r"[A-Za-z]{3,}", MARKERS.sub("", comment)))


def unexplained_lazy_imports(path: Path, relative: Path | str) -> list[str]:
    """The imports inside a function of `path` with no reason written: a comment on one of the
    import's lines or on the comment lines right above it. Consecutive import lines are one
    block and share the comment above the first."""
    text = path.read_text(encoding="utf-8")
    lines = text.splitlines()
    inside: list[ast.Import | ast.ImportFrom] = []
    for node in ast.walk(ast.parse(text, filename=str(path))):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            inside += [
                child for child in ast.walk(node) if isinstance(child, ast.Import | ast.ImportFrom)
            ]
    explained_until: set[int] = set()  # the last line of each explained import
    found = []
    for node in sorted(set(inside), key=lambda n: n.lineno):
        end = node.end_lineno or node.lineno
        said = any(_says_why(lines[n - 1]) for n in range(node.lineno, end + 1))
        said = said or node.lineno - 1 in explained_until
        above = node.lineno - 2
        while not said and above >= 0 and lines[above].strip().startswith("#"):
            said = _says_why(lines[above])
            above -= 1
        if said:
            explained_until.add(end)
        else:
            found.append(f"{relative}:{node.lineno}: {lines[node.lineno - 1].strip()}")
    return found


def test_every_import_inside_a_function_says_why() -> None:
    # An import belongs at the top of its module, where a cycle shows at once and the reader
    # sees what the module needs; the ones that stay lazy (a heavy or optional dependency, a
    # real cycle, a name tests patch) say which it is, so the next reader keeps them lazy.
    found = []
    for name in python_files():
        path = ROOT / name
        if Path(name).parts[0] not in NOT_PRODUCT and path.is_file():
            found += unexplained_lazy_imports(path, name)
    assert not found, "an import inside a function without its reason:\n" + "\n".join(found)


def test_the_lazy_import_gate_reads_comments(tmp_path: Path) -> None:
    module = tmp_path / "lazy.py"
    module.write_text(
        "import os\n\n\n"
        "def explained():\n"
        "    # pandas takes 0.25 s: the CLI starts without it\n"
        "    import pandas\n"
        "    import plotly\n\n"
        "    import json  # a cycle: json imports this module back\n"
        "    return pandas, plotly, json\n\n\n"
        "def bare():\n"
        "    x = 1\n"
        "    import pandas\n\n"
        "    # noqa: PLC0415\n"
        "    import plotly  # type: ignore[import]\n"
        "    return pandas, plotly, x\n"
    )
    assert unexplained_lazy_imports(module, "lazy.py") == [
        "lazy.py:15: import pandas",
        "lazy.py:18: import plotly  # type: ignore[import]",
    ]
