"""The code gates of the test command: ruff (lint and format) over the whole tree, mypy over the
code that holds the logic (mypy.ini: services, db, commands, web). Zero findings; a `# noqa` or
`# type: ignore` that remains says why beside it.

They run as tests so `./test.sh` (and so CI) fails on them like on any other regression, with
the tool's own report as the failure message."""

from __future__ import annotations

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


def test_no_python_file_patches_the_import_path() -> None:
    # `pip install -e .` (run.sh, test.sh) makes the product importable from anywhere, and
    # pytest puts the checkout first for the tests. A patch hid a missing install and could
    # load another checkout's code.
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard", "*.py"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    patched = []
    for name in filter(None, listed.stdout.split("\0")):
        path = ROOT / name
        if not path.is_file():
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if PATH_PATCH.search(line):
                patched.append(f"{name}:{number}: {line.strip()}")
    assert not patched, "the import path patched (install the package instead):\n" + "\n".join(patched)
