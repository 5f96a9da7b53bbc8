"""Issue 45: every page, CLI command and exporter that takes a run id asks the one blind rule
(services/runstate/blind.py). Over each of them: a hidden exchange's engine names never show, and
neither does any per-engine figure (the summary's per-engine TTFT, TPOT, E2E and token rate,
stored with values no answer shows) nor, since issue 56, any answer's own timing or token count;
after the reveal the names and figures show again."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import asdict

import pytest

from db.models import Exchange, Run
from db.session import session_scope
from services import sessions
from services.core.errors import ShootoutError
from services.planner.measured import measured_by_kind
from services.playground import live_tally, votes
from services.playground import view as pg_view
from services.runs import history, reports
from services.runs import view as runs_view
from services.sessions import view as sessions_view
from services.sessions.records import Shown
from services.team.access import Viewer
from services.telemetry.monitor import run_history_view, run_timeline_figure
from services.votes import ranking
from tests.commands.test_cli import cli

ENGINES = ("zebra-engine", "yak-engine")
#: Figures only the per-engine summary holds (the answers' own are others).
PER_ENGINE = ("0.9876", "987.6", "4321", "0.0789", "78.9", "12.345", "654")
#: Each answer's own TTFT, E2E and output tokens, stored and as the pages would write them.
PER_ANSWER = ("0.1357", "136", "0.2468", "247", "0.5791", "579", "797")
OPERATOR = Viewer(role="operator", identity="local")


def hidden_exchange() -> int:
    with session_scope() as session:
        run = Run(
            kind="playground",
            status="finished_with_errors",
            name="Which colour?",
            engine_names=",".join(ENGINES),
            model="model-of-zebra",
            workload="playground",
            error="zebra-engine: connection refused",
            config={
                "turn": 1,
                "prompt": "Which colour?",
                "blind": True,
                "blind_order": list(ENGINES),
                "engines": [{"engine": name} for name in ENGINES],
            },
            engines=[{"name": name, "kind": "openai", "base_url": f"http://{name}"} for name in ENGINES],
            summary={
                "engines": {
                    name: {
                        "ttft_s": {"p50": 0.9876},
                        "tpot_s": {"p50": 0.0789},
                        "e2e_s": {"p50": 12.345},
                        "output_throughput_tok_s": 4321.0,
                        "completion_tokens": 654,
                    }
                    for name in ENGINES
                }
            },
        )
        session.add(run)
        session.flush()
        for name, ttft in zip(ENGINES, (0.1357, 0.2468), strict=True):
            session.add(
                Exchange(
                    run_id=run.id,
                    conversation_id="c",
                    engine_name=name,
                    answer="red" if name == ENGINES[0] else "blue",
                    status="finished",
                    metrics={"ttft_s": ttft, "e2e_s": 0.5791, "tpot_s": 0.01},
                    usage={"completion_tokens": 797},
                )
            )
        return run.id


def _text(value: object) -> str:
    if hasattr(value, "to_string"):
        return str(value.to_string())  # a DataFrame
    return json.dumps(value, default=str) if not isinstance(value, str) else value


def _run_page(run_id: int) -> str:
    shown = runs_view.run_page_view(run_id)
    run = shown.run
    return " ".join(
        _text(part)
        for part in (
            shown.title,
            shown.caption,
            shown.stored,
            run.exchanges,
            asdict(run.detail),
            run.view.table if run.view is not None else "",
            asdict(shown.caveats),
        )
    )


def _follower(run_id: int) -> str:
    shown = sessions_view.run_page_view(run_id)
    run = shown.run
    return " ".join(
        _text(part)
        for part in (shown.caption, shown.stored, run.exchanges, sessions_view.is_running(run_id))
    )


def _playground(run_id: int) -> str:
    arrangement = pg_view.arrange(pg_view.playground.get_exchange(run_id))
    labels = [arrangement.labels[c.engine] for c in arrangement.columns] if arrangement.hidden else []
    return _text(labels) + _text(asdict(live_tally.exchange_tally(run_id)))


def _runs_list(run_id: int) -> str:
    page = history.list_runs()
    return _text([asdict(i) for i in page.items]) + _text(runs_view.history_table(page))


def _filter_options(run_id: int) -> str:
    return _text(asdict(history.filter_options()))


def _engine_filter(run_id: int) -> str:
    return _text([asdict(i) for i in history.list_runs(history.RunFilter(engine=ENGINES[0])).items])


def _tallies(run_id: int) -> str:
    return _text([asdict(t) for t in votes.tally()]) + _text(asdict(ranking.engine_ranking()))


def _compare(run_id: int) -> str:
    return _text(runs_view.compare_page_view(str(run_id), None).view.table)


def _export(fmt: str) -> Callable[[int], str]:
    return lambda run_id: reports.export_run(run_id, fmt).data.decode("utf-8", "replace")


def _export_comparison(run_id: int) -> str:
    return reports.export_comparison([run_id]).data.decode()


def _session_report(run_id: int) -> str:
    info, presenter = sessions.start(OPERATOR, "presenter-tab", "demo")
    sessions.publish(presenter, Shown(kind="exchange", run_ids=(run_id,)))
    sessions.publish(presenter, Shown(kind="run", run_ids=(run_id,)))
    return sessions.session_report(info.id).data.decode()


def _decision_helper(run_id: int) -> str:
    # The Planner's decision helper reads finished benchmark and tuning runs only.
    return _text({kind: asdict(found) for kind, found in measured_by_kind().items()})


def _timeline(run_id: int) -> str:
    return _text(run_timeline_figure(run_id))


def _prometheus(run_id: int) -> str:
    return _text(run_history_view(object(), run_id))


SURFACES: dict[str, Callable[[int], str]] = {
    "run page": _run_page,
    "follower run view": _follower,
    "playground and live tally": _playground,
    "runs list": _runs_list,
    "runs filters": _filter_options,
    "runs list by engine": _engine_filter,
    "tally and ranking": _tallies,
    "compare": _compare,
    "export csv": _export("csv"),
    "export json": _export("json"),
    "export html": _export("html"),
    "export steps": _export("steps"),
    "export comparison": _export_comparison,
    "session report": _session_report,
    "telemetry timeline": _timeline,
    "decision helper": _decision_helper,
    "prometheus history": _prometheus,
}


def _leaks(text: str) -> list[str]:
    # A report's inlined plotly.js holds every number: only what the page itself says counts.
    text = re.sub(r"<script\b.*?</script>", "", text, flags=re.DOTALL)
    names = [word for word in (*ENGINES, "model-of-zebra") if word in text]
    figures = (*PER_ENGINE, *PER_ANSWER)
    return names + [n for n in figures if re.search(rf"(?<![\d.]){re.escape(n)}(?![\d])", text)]


@pytest.mark.parametrize("surface", sorted(SURFACES))
def test_no_surface_names_an_engine_of_a_hidden_exchange(db_url: str, surface: str) -> None:
    run_id = hidden_exchange()
    try:
        shown = SURFACES[surface](run_id)
    except ShootoutError as error:  # a refusal says why, and names no engine either
        shown = str(error)
        assert "blind" in shown
    assert not _leaks(shown), (surface, _leaks(shown))


def test_the_run_page_shows_the_answers_by_label_without_their_timings(db_url: str) -> None:
    """Issue 56: "Names and timings appear once you vote": no answer's TTFT, E2E or tokens
    before the reveal either (a timing says which engine as well as a name)."""
    run_id = hidden_exchange()
    shown = runs_view.run_page_view(run_id)
    assert "engines hidden until revealed" in shown.caption
    table = shown.run.exchanges
    assert table is not None
    assert list(table.columns) == ["Turn", "Answer", "Status", "Text", "Error"]
    assert table[["Answer", "Text"]].values.tolist() == [["Answer A", "red"], ["Answer B", "blue"]]
    assert [heading for heading, _ in runs_view.blind_answers(table)] == [
        "**Answer A** · finished",
        "**Answer B** · finished",
    ]
    assert shown.run.view is None and not shown.stored["engines"]
    votes.reveal(run_id, OPERATOR)
    assert ENGINES[0] in _run_page(run_id) and ENGINES[0] in _runs_list(run_id)


CLI_COMMANDS = {
    "runs show": ("runs", "show", "{id}"),
    "runs show --json": ("runs", "show", "{id}", "--json"),
    "runs list": ("runs", "list"),
    "runs list --json": ("runs", "list", "--json"),
    "runs compare": ("runs", "compare", "{id}"),
    "export csv": ("export", "{id}", "--format", "csv", "-o", "-"),
    "export json": ("export", "{id}", "--format", "json", "-o", "-"),
    "export html": ("export", "{id}", "--format", "html", "-o", "-"),
    "history --run": ("history", "--run", "{id}", "--prometheus", "http://127.0.0.1:9"),
}


def test_runs_show_prints_the_answers_by_label_in_the_stored_order_until_the_reveal(
    db_url: str,
) -> None:
    run_id = hidden_exchange()
    with session_scope() as session:  # the stored order, not the order the engines answered in
        session.get(Run, run_id).config = {
            **session.get(Run, run_id).config,
            "blind_order": [ENGINES[1], ENGINES[0]],
        }
    shown = cli("runs", "show", str(run_id))
    assert shown.returncode == 0, shown.stderr
    answers = shown.stdout.split("answers (")[1]
    assert answers.splitlines()[1:] == [
        "  Answer A · finished",
        "    blue",
        "  Answer B · finished",
        "    red",
    ]
    assert not _leaks(shown.stdout)
    as_json = json.loads(cli("runs", "show", str(run_id), "--json").stdout)
    assert as_json["answers"] == [
        {"Turn": 1, "Answer": "Answer A", "Status": "finished", "Text": "blue", "Error": ""},
        {"Turn": 1, "Answer": "Answer B", "Status": "finished", "Text": "red", "Error": ""},
    ]
    assert not _leaks(json.dumps(as_json))
    votes.reveal(run_id, OPERATOR)
    revealed = cli("runs", "show", str(run_id)).stdout
    assert f"  {ENGINES[0]} · finished · TTFT 136 ms" in revealed and "Answer A" not in revealed


@pytest.mark.parametrize("command", sorted(CLI_COMMANDS))
def test_no_cli_command_names_an_engine_of_a_hidden_exchange(db_url: str, command: str) -> None:
    run_id = hidden_exchange()
    result = cli(*(part.format(id=run_id) for part in CLI_COMMANDS[command]))
    shown = result.stdout + result.stderr
    assert "Traceback" not in shown
    assert not _leaks(shown), (command, _leaks(shown))
