"""The Monitor page's form answers as values."""

from __future__ import annotations

from datetime import UTC, date, datetime, time

from services.telemetry import view as monitor_view
from services.telemetry.monitor import HISTORY_WINDOWS


def test_urls_are_split_on_commas_without_blanks() -> None:
    assert monitor_view.parse_urls(" http://a:9400/metrics, ,http://b:9400/metrics,") == [
        "http://a:9400/metrics",
        "http://b:9400/metrics",
    ]


def test_a_named_window_ends_now() -> None:
    now = datetime(2026, 1, 2, 12, 0, tzinfo=UTC)
    label, seconds = HISTORY_WINDOWS[0]
    assert monitor_view.history_span(label, now) == (now.timestamp() - seconds, now.timestamp())


def test_a_custom_window_reads_its_dates_as_utc() -> None:
    start, end = monitor_view.history_span(
        monitor_view.CUSTOM_WINDOW,
        datetime.now(UTC),
        (date(2026, 1, 1), time(10)),
        (date(2026, 1, 1), time(11)),
    )
    assert end - start == 3600 and start == datetime(2026, 1, 1, 10, tzinfo=UTC).timestamp()
