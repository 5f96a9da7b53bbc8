"""Property tests (hypothesis) of scraping and normalising: any text an endpoint answers,
and any sequence of values (resets, NaN, negative, huge) gives a snapshot, never an
exception; ratios stay in [0, 1] or are missing."""

from __future__ import annotations

import math
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from services.engines.signals import SIGNALS
from services.telemetry.scraper import EngineScraper, ScrapeTarget
from tests.services.telemetry.support import FIXTURES, MetricsServer, Route

VLLM_REAL = (FIXTURES / "vllm_cpu_0.32_real.txt").read_text()
LLAMA = (FIXTURES / "llamacpp.txt").read_text()
RATIOS = tuple(name for name, info in SIGNALS.items() if info.unit == "ratio")

metric_line = st.builds(
    lambda name, labels, value: f"{name}{labels} {value}",
    st.sampled_from(
        [
            "vllm:num_requests_running",
            "vllm:kv_cache_usage_perc",
            "vllm:prefix_cache_hits_total",
            "vllm:prefix_cache_queries_total",
            "vllm:generation_tokens_total",
            "llamacpp:requests_processing",
            "llamacpp:prompt_tokens_total",
            "vllm:time_to_first_token_seconds_bucket",
        ]
    ),
    st.sampled_from(["", '{model_name="m"}', '{le="0.1"}', '{le="+Inf"}', "{bad", '{a="b",}']),
    st.one_of(
        st.floats(allow_nan=True, allow_infinity=True).map(repr),
        st.sampled_from(["NaN", "+Inf", "x", ""]),
    ),
)
any_text = st.one_of(
    st.text(max_size=300),
    st.lists(metric_line, max_size=15).map("\n".join),
    st.sampled_from([VLLM_REAL, LLAMA]).flatmap(lambda t: st.integers(0, len(t)).map(lambda n: t[:n])),
    st.just('[1, 2, {"a": null}]'),
    st.just('{"kvCacheStats": "nope"}'),
)


def _scraper(server: MetricsServer, kind: str) -> EngineScraper:
    return EngineScraper(
        ScrapeTarget("prop", kind, server.url + "/metrics", base_url=server.url), retry_after_s=0.0
    )


def _check(snapshot) -> None:  # type: ignore[no-untyped-def]
    for name in RATIOS:
        value = snapshot.values.get(name)
        assert value is None or (0.0 <= value <= 1.0), (name, value)
    for value in snapshot.values.values():
        assert value is None or not math.isnan(value)


@settings(
    max_examples=120,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(
    texts=st.lists(any_text, min_size=1, max_size=4),
    kind=st.sampled_from(["vllm", "llamacpp", "sglang", "trtllm"]),
    status=st.sampled_from([200, 200, 200, 404, 500, 501]),
)
def test_any_answer_gives_a_snapshot(texts: list[str], kind: str, status: int) -> None:
    with _server() as server:
        scraper = _scraper(server, kind)
        for step, text in enumerate(texts):
            server.routes["/metrics"] = Route(status=status, body=text)
            snapshot = scraper.scrape(now=1000.0 + step)
            _check(snapshot)
        scraper.close()


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    values=st.lists(
        st.tuples(st.floats(-1e12, 1e12), st.floats(-1e12, 1e12), st.floats(-5, 5)),
        min_size=2,
        max_size=8,
    )
)
def test_counters_that_jump_or_reset_keep_ratios_sane(values: list[tuple[float, float, float]]) -> None:
    with _server() as server:
        scraper = _scraper(server, "vllm")
        for step, (hits, queries, usage) in enumerate(values):
            server.routes["/metrics"] = Route(
                body=(
                    "# TYPE vllm:prefix_cache_hits counter\n"
                    f"vllm:prefix_cache_hits_total {abs(hits)}\n"
                    "# TYPE vllm:prefix_cache_queries counter\n"
                    f"vllm:prefix_cache_queries_total {abs(queries)}\n"
                    "# TYPE vllm:kv_cache_usage_perc gauge\n"
                    f"vllm:kv_cache_usage_perc {usage}\n"
                )
            )
            _check(scraper.scrape(now=2000.0 + step))
        scraper.close()


_SHARED: list[MetricsServer] = []


class _server:
    """One loopback server for every example (starting one per example is slow)."""

    def __enter__(self) -> MetricsServer:
        if not _SHARED:
            _SHARED.append(MetricsServer().start())
        return _SHARED[0]

    def __exit__(self, *_: object) -> None:
        pass


def teardown_module() -> None:
    for server in _SHARED:
        server.stop()
    _SHARED.clear()


assert Path(FIXTURES).is_dir()
