"""Prometheus text -> Families: every fixture parses, names and labels resolve the way the
engines write them, histogram windows and percentiles are right."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from services.engines.prometheus import Families, Histogram
from tests.support.metrics_text import parse_text

TEXT_FIXTURES = sorted(
    p.name
    for p in (Path(__file__).resolve().parents[3].parent / "shared/fixtures/metrics").glob("*.txt")
)


def test_fixture_folder_is_there(shared_dir: Path) -> None:
    assert len(TEXT_FIXTURES) >= 9, TEXT_FIXTURES


@pytest.mark.parametrize("name", TEXT_FIXTURES)
def test_every_fixture_parses_typed_and_untyped(shared_dir: Path, name: str) -> None:
    text = (shared_dir / "fixtures/metrics" / name).read_text()
    typed = list(text_string_to_metric_families(text))
    families = parse_text(text)
    assert typed and len(families) > 0
    samples_typed = sum(len(f.samples) for f in typed)
    samples_untyped = sum(len(rows) for rows in families.samples.values())
    assert samples_untyped == samples_typed


def test_counters_found_with_or_without_total(shared_dir: Path) -> None:
    tgi = parse_text((shared_dir / "fixtures/metrics/tgi.txt").read_text())
    assert tgi.counter("tgi_request_count") == 4119  # written without _total
    assert "tgi_request_count_total" not in tgi
    vllm = parse_text((shared_dir / "fixtures/metrics/vllm_cpu_0.32_real.txt").read_text())
    assert vllm.counter("vllm:prompt_tokens") == 82.0
    assert vllm.counter_name("vllm:prompt_tokens") == "vllm:prompt_tokens_total"
    # a histogram whose own name ends in _total keeps it
    assert vllm.histogram("vllm:iteration_tokens_total") is not None


def test_labels_are_matched_case_insensitively(shared_dir: Path) -> None:
    text = (shared_dir / "fixtures/metrics/dcgm_exporter.txt").read_text()
    old = parse_text(text)
    new = parse_text(text.replace("Hostname=", "hostname="))
    for families in (old, new):
        rows = families.select("DCGM_FI_DEV_GPU_TEMP", (("hostname", ("gpu-node-07",)),))
        assert sorted(v for _, v in rows) == [57.0, 61.0]
        assert {labels["uuid"] for labels, _ in rows} == {
            "GPU-6f1a2b7c-91d4-4e0f-b3a8-2c5d7e9f0a13",
            "GPU-0c3e9d12-57ab-4a61-8e20-f4b1c6d7a9e5",
        }


def test_aggregation_sums_away_other_labels(shared_dir: Path) -> None:
    sglang = parse_text((shared_dir / "fixtures/metrics/sglang.txt").read_text())
    streaming = sglang.counter("sglang:prompt_tokens", (("is_streaming", ("true",)),))
    both = sglang.counter("sglang:prompt_tokens")
    assert streaming == 1.0670801e07 and both == pytest.approx(1.0670801e07 + 2.44234e06)
    ttft = sglang.histogram("sglang:time_to_first_token_seconds")
    assert ttft is not None
    assert ttft.buckets[-1][0] == math.inf
    assert ttft.buckets[-1][1] == ttft.count  # +Inf bucket = count, over both is_streaming values
    triton = parse_text((shared_dir / "fixtures/metrics/trtllm_triton.txt").read_text())
    active = triton.gauge("nv_trt_llm_request_metrics", (("request_type", ("active",)),))
    assert active == 14


def test_keep_selects_lines_before_parsing(shared_dir: Path) -> None:
    text = (shared_dir / "fixtures/metrics/vllm_cpu_0.32_real.txt").read_text()
    families = parse_text(text, ("vllm:num_requests_running", "vllm:time_to_first_token_seconds"))
    assert families.names() == [
        "vllm:num_requests_running",
        "vllm:time_to_first_token_seconds_bucket",
        "vllm:time_to_first_token_seconds_count",
        "vllm:time_to_first_token_seconds_sum",
    ]


def test_unparseable_text_raises_value_error() -> None:
    with pytest.raises(ValueError):
        parse_text('metric{label="unterminated} 1\n')


def hist(*pairs: tuple[float, float], total: float = 0.0) -> Histogram:
    return Histogram(tuple(b for b, _ in pairs), tuple(c for _, c in pairs), total, pairs[-1][1])


def test_quantile_interpolates_inside_the_bucket() -> None:
    h = hist((0.1, 10), (0.5, 30), (1.0, 40), (math.inf, 40))
    assert h.quantile(0.5) == pytest.approx(0.1 + 0.4 * (20 - 10) / (30 - 10))
    assert h.quantile(0.99) == pytest.approx(0.5 + 0.5 * (39.6 - 30) / 10)
    assert h.quantile(0.1) == pytest.approx(0.04)  # first bucket interpolates from 0


def test_quantile_in_the_inf_bucket_answers_the_largest_bound() -> None:
    h = hist((0.1, 1), (0.5, 2), (math.inf, 10))
    assert h.quantile(0.9) == 0.5


def test_empty_histogram_has_no_quantile() -> None:
    assert hist((0.1, 0), (math.inf, 0)).quantile(0.5) is None
    assert hist((0.1, 0), (math.inf, 0)).mean() is None


def test_window_is_the_difference_of_two_readings() -> None:
    before = hist((0.1, 5), (1.0, 8), (math.inf, 8), total=3.0)
    after = hist((0.1, 5), (1.0, 18), (math.inf, 18), total=8.0)
    window = after.minus(before)
    assert window is not None
    assert window.buckets == ((0.1, 0), (1.0, 10), (math.inf, 10))
    assert window.count == 10 and window.mean() == pytest.approx(0.5)
    assert window.quantile(0.5) == pytest.approx(0.55)


def test_different_bucket_layouts_do_not_subtract() -> None:
    assert hist((0.1, 1), (math.inf, 1)).minus(hist((0.2, 1), (math.inf, 1))) is None


def test_families_built_by_hand() -> None:
    families = Families()
    families.add("x_total", 3, {"Mode": "a"})
    families.add("x_total", 4, {"Mode": "b"})
    assert families.counter("x") == 7
    assert families.counter("x", (("mode", ("b",)),)) == 4
    assert families.gauge("missing") is None


@pytest.mark.parametrize("name", TEXT_FIXTURES)
def test_series_parser_matches_the_full_parse_read_after_read(shared_dir: Path, name: str) -> None:
    from services.engines.prometheus import SeriesParser

    text = (shared_dir / "fixtures/metrics" / name).read_text()
    parser = SeriesParser()
    for round_number in range(3):
        # every value changes between reads, as on a busy engine
        changed = "\n".join(
            line
            if line.startswith("#") or not line.strip()
            else f"{line.rsplit(' ', 1)[0]} {round_number + 0.5}"
            for line in text.splitlines()
        )
        expected = parse_text(changed)
        got = parser.parse(changed)
        assert got.samples == expected.samples


def test_series_parser_never_caches_lines_it_cannot_reread() -> None:
    from services.engines.prometheus import SeriesParser

    parser = SeriesParser()
    first = parser.parse('a{x="1"} 1 1700000000000\nb NaN\nc{y="q w"} +Inf\n')
    assert (
        first.gauge("a") == 1 and math.isnan(first.samples["b"][0][1]) and first.gauge("c") == math.inf
    )
    second = parser.parse('a{x="1"} 2 1700000001000\nb 3\nc{y="q w"} 4\n')
    assert (
        second.gauge("a") == 2 and second.gauge("b") == 3 and second.gauge("c", (("y", ("q w",)),)) == 4
    )
    assert 'a{x="1"} 1' not in parser._series  # the timestamped line is parsed in full each time


def test_series_parser_keep_per_call() -> None:
    from services.engines.prometheus import SeriesParser

    parser = SeriesParser(("a",))
    assert parser.parse("a 1\nb 2\n").names() == ["a"]
    assert parser.parse("a 1\nb 2\n", keep=("b",)).names() == ["b"]
