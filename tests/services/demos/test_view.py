"""How the Demos page words a demo's state."""

from __future__ import annotations

from services.demos import view
from services.demos.readout import BigNumber


def test_no_change_is_drawn_grey_whatever_the_number_asks() -> None:
    assert view.delta_color(BigNumber("TTFT", "0.2 s", delta="+0%", delta_color="inverse")) == "off"
    assert view.delta_color(BigNumber("TTFT", "0.2 s", delta="×1.0", delta_color="normal")) == "off"
    assert view.delta_color(BigNumber("TTFT", "0.2 s", delta="-85%", delta_color="inverse")) == "inverse"


def test_statuses_read_as_words() -> None:
    assert view.status_text("cancelled") == "stopped"
    assert view.status_text("something-new") == "something-new"
