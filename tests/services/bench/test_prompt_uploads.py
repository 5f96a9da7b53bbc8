"""Issue 44, item 14: an uploaded prompt file is checked in memory before a byte is written,
written readable by the app's user only, and deleted a week after its last upload. Through the
Benchmarks page's own view function (`views.save_prompt_file`)."""

from __future__ import annotations

import os
import stat
import time
from pathlib import Path

import pytest

from services.bench import view as views
from services.bench.workloads import load_prompt_file
from services.bench.workloads.prompt_files import UPLOAD_KEEP_S, expire_uploads
from services.core.errors import ValidationError

GOOD = b'{"prompt": "one"}\n{"messages": [{"role": "user", "content": "two"}]}\n'


def _uploads(data_dir: Path) -> Path:
    return data_dir / "workloads"


@pytest.mark.parametrize(
    ("content", "words"),
    [
        (b'{"prompt": "fine"}\nnot json\n', "line 2: not JSON"),
        (b"\xff\xfe\x00binary", "is not UTF-8 text"),
        (b"\n\n", "holds no prompts"),
        (b"[" * 100_000 + b"]" * 100_000, "line 1"),
    ],
)
def test_a_bad_upload_is_refused_before_anything_is_written(
    db_url: str, tmp_path: Path, content: bytes, words: str
) -> None:
    with pytest.raises(ValidationError, match=words):
        views.save_prompt_file("evil.jsonl", content)
    folder = _uploads(tmp_path)
    assert not folder.exists() or not any(folder.iterdir())


def test_an_upload_is_written_for_the_apps_user_only(db_url: str, tmp_path: Path) -> None:
    path = Path(views.save_prompt_file("../../etc/my prompts.jsonl", GOOD))
    assert path.parent == _uploads(tmp_path) and path.name.startswith("______etc_my_prompts-")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert [e.prompt for e in load_prompt_file(str(path))] == ["one", None]
    assert views.save_prompt_file("my prompts.jsonl", GOOD).endswith(path.name.split("-", 1)[-1])


def test_uploads_expire_a_week_after_their_last_upload(db_url: str, tmp_path: Path) -> None:
    old = Path(views.save_prompt_file("old.jsonl", b'{"prompt": "old"}\n'))
    kept = Path(views.save_prompt_file("kept.jsonl", b'{"prompt": "kept"}\n'))
    week_ago = time.time() - UPLOAD_KEEP_S - 60
    os.utime(old, (week_ago, week_ago))
    os.utime(kept, (week_ago, week_ago))
    views.save_prompt_file("kept.jsonl", b'{"prompt": "kept"}\n')  # uploaded again: kept again
    assert not old.exists() and kept.exists()
    assert expire_uploads(kept.parent, now=time.time() + UPLOAD_KEEP_S + 60) == [kept]
