"""Issue 47: a streaming exchange is read once for every screen that shows it. Ten screens waiting
on the same exchange cost the reads of one, each sees the answers grow, and each learns of the
end."""

from __future__ import annotations

import threading

from services import playground
from services.engines import endpoints
from services.playground import EngineChoice, SendRequest, watching
from tests.support.scripted_server import ScriptedServer


def test_ten_screens_share_one_reader_and_see_the_answers_grow(
    db_url: str, scripted_server: ScriptedServer, monkeypatch
) -> None:  # type: ignore[no-untyped-def]
    for salt, name in enumerate(("left", "right")):
        endpoints.add_engine(
            name,
            scripted_server.base_url,
            model=scripted_server.model(ttft=20, itl=20, tokens=30, salt=salt),
        )
    reads = []
    read = watching._Reader._read

    def counted(self):  # type: ignore[no-untyped-def]
        reads.append(1)
        return read(self)

    monkeypatch.setattr(watching._Reader, "_read", counted)
    handle = playground.send(
        SendRequest(engines=(EngineChoice("left"), EngineChoice("right")), prompt="grow")
    )
    lengths: list[list[int]] = [[] for _ in range(10)]

    def screen(index: int) -> None:
        seen = 0
        while True:
            now = watching.growing(handle.run_id, seen, 1.0)
            seen = now.version
            lengths[index].append(sum(len(text) for _, text in now.answers.values()))
            if not now.active:
                return

    screens = [threading.Thread(target=screen, args=(i,)) for i in range(10)]
    for thread in screens:
        thread.start()
    for thread in screens:
        thread.join(30)
    assert not any(thread.is_alive() for thread in screens)
    final = playground.get_exchange(handle.run_id)
    whole = sum(len(c.answer) for c in final.columns)
    for seen in lengths:
        assert len(seen) > 3 and seen == sorted(seen) and seen[-1] == whole  # grew, then whole
    # About 0.6 s of streaming at one read per POLL_S: one reader's reads, not ten's.
    assert len(reads) < 2 * (0.6 / watching.POLL_S) + 20, len(reads)
