"""The test Prometheus that test.sh starts (scripts/prometheus.sh): its URL and a wait for
enough scrapes of the targets a test reads."""

from __future__ import annotations

import os
import time

import pytest

from services.core import http

#: Every target of the test Prometheus carries this label (scripts/prometheus.sh).
TEST_SELECTOR = 'namespace="shootout-test"'
#: scripts/prometheus_samples.py, as scripts/prometheus.sh started it (its PORT + 1 by default).
SAMPLES_ORIGIN = os.environ.get("SHOOTOUT_TEST_PROM_SAMPLES_ORIGIN") or "http://127.0.0.1:59091"


def prometheus_url() -> str:
    url = os.environ.get("SHOOTOUT_TEST_PROMETHEUS_URL", "").strip()
    if not url:
        pytest.fail(
            "SHOOTOUT_TEST_PROMETHEUS_URL is not set: run the tests with ./test.sh (it starts Prometheus with "
            "scripts/prometheus.sh)",
            pytrace=False,
        )
    return url


def wait_for_scrapes(url: str, job: str, at_least: int, timeout_s: float = 120.0) -> None:
    """Until every target of `job` has been scraped successfully `at_least` times in the
    last 10 minutes (fails the test, with what Prometheus holds, after `timeout_s`)."""
    query = f'min(sum_over_time(up{{job="{job}",{TEST_SELECTOR}}}[10m]))'
    deadline = time.monotonic() + timeout_s
    seen: object = None
    while time.monotonic() < deadline:
        try:
            answer = http.fetch(
                "GET", url + "/api/v1/query", params={"query": query}, deadline_s=5
            ).json()
            result = answer["data"]["result"]
            seen = float(result[0]["value"][1]) if result else 0.0
            if seen >= at_least:
                return
        except (http.HttpError, KeyError, IndexError, ValueError) as error:
            seen = error
        time.sleep(1.0)
    pytest.fail(
        f"Prometheus at {url} scraped job {job} only {seen} time(s) in {timeout_s:g} s", pytrace=False
    )
