"""The README's screenshots are made by scripts/screenshots.py (issue 47: they showed an older
layout): every picture the README shows is one the script makes, and the README says so."""

from __future__ import annotations

import importlib.util
import re

from tests.conftest import REPO_ROOT


def test_every_readme_picture_is_made_by_the_script() -> None:
    spec = importlib.util.spec_from_file_location(
        "screenshots", REPO_ROOT / "scripts" / "screenshots.py"
    )
    assert spec and spec.loader
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    readme = (REPO_ROOT / "README.md").read_text()
    pictures = set(re.findall(r"!\[[^\]]*\]\(docs/([a-z_]+)\.png\)", readme))
    assert pictures and pictures <= set(script.PAGES), pictures - set(script.PAGES)
    assert "made by a script" in readme and "scripts/screenshots.py --serve" in readme
