"""Prometheus text -> Families in one parse: how the tests build the product's input from a
fixture. The product reads an endpoint again and again through `prometheus.SeriesParser`."""

from __future__ import annotations

from collections.abc import Iterable

from prometheus_client.parser import text_string_to_metric_families

from services.engines.prometheus import Families


def select_lines(text: str, keep: tuple[str, ...] | None) -> str:
    """The sample lines whose metric name starts with one of `keep` (all sample lines when
    None)."""
    lines = text.splitlines()
    if keep is None:
        kept: Iterable[str] = (line for line in lines if line and not line.startswith("#"))
    else:
        kept = (line for line in lines if line.startswith(keep) and "_created" not in line)
    return "\n".join(kept) + "\n"


def parse_text(text: str, keep: tuple[str, ...] | None = None) -> Families:
    """Parse Prometheus text (only lines starting with `keep` when given) into Families.

    Raises ValueError when prometheus_client cannot parse the text."""
    families = Families()
    samples = families.samples
    for family in text_string_to_metric_families(select_lines(text, keep)):
        for sample in family.samples:
            labels = {k.lower(): v for k, v in sample.labels.items()} if sample.labels else {}
            samples.setdefault(sample.name, []).append((labels, float(sample.value)))
    return families
