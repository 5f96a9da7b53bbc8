"""Parity runs against the real local engines (a short prompt set), through the worker,
cancelled, and with bad input: one clear message per engine, never a crash."""

from __future__ import annotations

import json
import time

import pytest

from cli import main as cli_main
from db.models import RequestResult
from db.session import session_scope
from services import runs
from services.core.errors import ValidationError
from services.engines import endpoints
from services.parity import results as views
from services.parity import runner
from services.parity.tasks import Task, load_prompt_lines, task_set
from services.runs.reports import export_run

SHORT = 5
TOKENS = 24


def _short_run(
    engines: list[str], reference: str | None = None, tasks: list[Task] | None = None
) -> views.ParityView:
    run_id = runner.start_parity(
        engines, reference=reference, tasks=tasks or task_set(SHORT), max_tokens=TOKENS, background=False
    )
    return views.parity_view(run_id)


def test_llamacpp_against_itself_matches_exactly_at_temperature_0(local_engines: list) -> None:
    view = _short_run(["llamacpp-4slot", "llamacpp-4slot"])
    assert view.status == "finished", view.summary
    assert view.labels == ["llamacpp-4slot", "llamacpp-4slot#2"]
    parity = view.summary.comparison("llamacpp-4slot#2")
    assert parity.compared == SHORT
    assert parity.exact_match_rate == 1.0
    assert parity.diverged == 0 and parity.divergence_median is None
    assert parity.token_agreement_mean == 1.0
    assert parity.logprob_diff_mean == pytest.approx(0.0, abs=1e-6)
    assert parity.topk_rate == 1.0


def test_llamacpp_against_vllm_gives_every_figure(local_engines: list) -> None:
    view = _short_run(["llamacpp-4slot", "vllm-cpu"])
    assert view.status == "finished", view.summary
    for label in ("llamacpp-4slot", "vllm-cpu"):
        block = view.summary.engines[label]
        assert block.completed == SHORT and block.failed == 0
        assert block.task_score is not None
        assert block.output_throughput_tok_s is not None and block.output_throughput_tok_s > 0
        assert block.logprobs == "reported" and block.top_logprobs == "reported"
        assert block.completion_tokens > 0 and block.prompt_tokens > 0  # the engines' usage
    parity = view.summary.comparison("vllm-cpu")
    for key in ("exact_match_rate", "token_agreement_mean", "logprob_diff_mean", "topk_rate"):
        assert getattr(parity, key) is not None, key
    assert parity.diverged == len(parity.divergence_positions)
    assert (parity.divergence_median is None) == (parity.diverged == 0)
    assert parity.units == ["token"]
    assert "exact match vs llamacpp-4slot" in (view.summary.conclusion_headline or "")
    rows = views.prompt_rows(view)
    assert len(rows) == SHORT and all("vllm-cpu divergence" in r for r in rows)
    # Stored in Runs like every run: compared (quality rows beside speed) and exported.
    compared = {row.label: row.values for row in runs.compare_runs([view.run_id]).rows}
    assert compared["Exact match vs the reference"][1] == parity.exact_match_rate
    assert compared["Output throughput"][1] is not None and compared["Task score"][0] is not None
    exported = json.loads(export_run(view.run_id, "json").data)
    assert exported["run"]["kind"] == "parity"


def test_the_worker_runs_it_and_cancel_keeps_what_was_answered(local_engines: list) -> None:
    run_id = runner.start_parity(
        ["llamacpp-4slot", "llamacpp-1slot"], tasks=task_set(40), max_tokens=TOKENS
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and views.parity_view(run_id).progress < 0.05:
        time.sleep(0.2)
    assert runner.cancel_parity(run_id)
    while time.monotonic() < deadline and not views.parity_view(run_id).summary.engines:
        time.sleep(0.2)
    view = views.parity_view(run_id)
    assert view.status == "cancelled"
    with session_scope() as session:
        answered = session.query(RequestResult).filter_by(run_id=run_id).count()
    assert 0 < answered < 80
    assert view.summary.engines["llamacpp-4slot"].completed > 0


def test_bad_input_is_refused_before_anything_is_stored(local_engines: list) -> None:
    with pytest.raises(ValidationError, match="2 to 6 engines"):
        runner.start_parity(["llamacpp-4slot"], background=False)
    with pytest.raises(ValidationError, match="No engine named 'nope'"):
        runner.start_parity(["llamacpp-4slot", "nope"], background=False)
    with pytest.raises(ValidationError, match="reference 'vllm-cpu' is not one of"):
        runner.start_parity(["llamacpp-4slot", "llamacpp-1slot"], reference="vllm-cpu", background=False)
    with pytest.raises(ValidationError, match="holds no prompts"):
        load_prompt_lines([], "empty.jsonl")
    assert views.list_parity_runs() == []


def test_a_prompt_longer_than_the_context_and_an_engine_without_logprobs_are_said_per_engine(
    local_engines: list, scripted_server
) -> None:  # type: ignore[no-untyped-def]
    endpoints.add_engine(
        "no-logprobs", scripted_server.base_url, kind="openai", model=scripted_server.model(tokens=8)
    )
    long_prompt = Task("long", "file", ({"role": "user", "content": "word " * 9000},))
    short = task_set(2)
    view = _short_run(["llamacpp-4slot", "no-logprobs"], tasks=[*short, long_prompt])
    assert view.status == "finished_with_errors"
    llama = view.summary.engines["llamacpp-4slot"]
    assert llama.errors == {"context_exceeded": 1}
    assert "The prompt is longer than llamacpp-4slot's context" in llama.first_errors[0]
    other = view.summary.engines["no-logprobs"]
    assert other.logprobs == "not reported by OpenAI-compatible"
    parity = view.summary.comparison("no-logprobs")
    assert parity.units == ["word"] and parity.logprob_diff_mean is None and parity.topk_rate is None
    assert parity.compared == 2 and parity.not_compared == 1


def test_cli_writes_json_and_refuses_bad_input_in_one_line(
    local_engines: list, tmp_path, capsys
) -> None:  # type: ignore[no-untyped-def]
    out = tmp_path / "parity.json"
    code = cli_main(
        [
            "parity",
            "--engine",
            "llamacpp-4slot",
            "--engine",
            "llamacpp-1slot",
            "--count",
            "3",
            "--max-tokens",
            "16",
            "--json",
            str(out),
        ]
    )
    assert code == 0
    data = json.loads(out.read_text())
    assert data["reference"] == "llamacpp-4slot" and len(data["prompts"]) == 3
    assert data["summary"]["engines"]["llamacpp-1slot"]["parity"]["compared"] == 3
    assert "llamacpp-1slot" in capsys.readouterr().out
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n")
    assert (
        cli_main(
            ["parity", "--engine", "llamacpp-4slot", "--engine", "vllm-cpu", "--prompts", str(empty)]
        )
        == 1
    )
    error = capsys.readouterr().err.strip().splitlines()
    assert error[-1] == "error: empty.jsonl holds no prompts."
