"""The typed shapes db/models.py gives its rows match the tables they describe."""

from __future__ import annotations

from typing import get_type_hints

from db.models import REQUEST_RESULT_FIELDS, RequestResult, RequestRow


def test_a_request_row_names_every_column_of_request_results() -> None:
    columns = {column.name for column in RequestResult.__table__.columns} - {"id"}
    assert set(get_type_hints(RequestRow)) == columns
    assert set(REQUEST_RESULT_FIELDS) == columns - {"run_id"}
