"""Every importer builds its engine blocks and sweep rows as the typed results record
(services/bench/results.py): what it stores is what the record writes, read back the same."""

from __future__ import annotations

from pathlib import Path

import pytest

from services import importers
from services.bench.results import EngineResults
from services.importers import vllm
from services.importers.common import Counts, fill_from_requests, headline_step, request_row
from tests.services.importers.conftest import SAMPLES

FILES = sorted(p for p in SAMPLES.rglob("*") if p.is_file() and p.suffix != ".md")


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(SAMPLES)))
def test_each_block_is_what_the_record_writes(path: Path) -> None:
    _, runs = importers.parse_file(path.read_bytes(), path.name, path=path)
    for run in runs:
        blocks = [*run.summary["engines"].values(), *run.summary["sweep"]]
        assert blocks
        for block in blocks:
            assert EngineResults.from_json(block).to_json() == block


def test_a_count_the_file_left_out_comes_from_its_rows() -> None:
    figures, counts = vllm.engine_numbers({"duration": 2.0, "completed": 3, "mean_ttft_ms": 100})
    assert isinstance(figures, EngineResults) and counts == Counts(completed=3)
    rows = [request_row("e", i, ok=i != 2, ttft_s=0.1 * (i + 1), output_tokens=4) for i in range(3)]
    block = fill_from_requests(figures, rows, counts)
    # The file's count wins; the rows tell the failures and the statistics it did not give.
    assert (block.completed, block.failed, block.sent) == (3, 1, 3)
    assert block.ttft_s is not None and block.ttft_s.mean == pytest.approx(0.1)
    assert block.ttft_s.max == pytest.approx(0.2) and block.output_tokens == 8
    assert block.errors_by_class == {"error": 1}


def test_the_headline_is_the_busiest_step_without_its_load() -> None:
    steps = [
        EngineResults(engine="e", rate=1.0, request_throughput_rps=1.0, extra={"strategy": "constant"}),
        EngineResults(engine="e", rate=4.0, request_throughput_rps=3.0, extra={"strategy": "constant"}),
    ]
    headline = headline_step(steps)
    assert headline.from_step == 1 and headline.request_throughput_rps == 3.0
    assert (headline.engine, headline.rate, headline.extra) == (None, None, {})
