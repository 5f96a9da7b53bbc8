"""Every page's sidebar names the local engines still installing (issue 48): a page used while
`./run.sh` installs them behind it says which are coming."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from services.local_engines import progress
from tests.conftest import REPO_ROOT


def test_the_sidebar_names_the_engines_still_installing(
    db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SHOOTOUT_ENGINES_DIR", str(tmp_path / "engines"))
    recorder = progress.Recorder("vllm", lambda line: None)
    recorder.begin()
    at = AppTest.from_file(str(REPO_ROOT / "app.py"), default_timeout=60).run()
    assert not at.exception
    assert any("still installing: vllm (Engines page)" in c.value for c in at.sidebar.caption)
    recorder.finish()
    at.run()
    assert not any("still installing" in c.value for c in at.sidebar.caption)
