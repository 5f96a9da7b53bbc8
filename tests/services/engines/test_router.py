"""SGLang's router (smg) without a live server: detection from its recorded answers, its own
metrics normalised from two real scrapes (before and after four requests through it), and the
local router's command and registry entry built from the chosen local engines."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from services.core.errors import EngineError
from services.engines import ProbeEvidence, get_adapter
from services.engines.base import HttpAnswer
from services.engines.normalise import EngineNormaliser, metric_prefixes
from services.engines.probe import interpret
from services.telemetry.scraper import kind_from_metrics
from services.telemetry.snapshot import Snapshot
from tests.support.metrics_text import parse_text

FIXTURES = Path(__file__).parent / "fixtures"


def recorded_evidence() -> ProbeEvidence:
    """The probe's answers from smg 1.13.0 in front of the two local llama.cpp servers."""
    answers = json.loads((FIXTURES / "smg-1.13.0-probe.json").read_text())
    return ProbeEvidence("http://127.0.0.1:8087", {path: HttpAnswer(**a) for path, a in answers.items()})


def scrape(name: str) -> str:
    return (FIXTURES / f"smg-1.13.0-{name}.prom").read_text()


def test_the_router_is_detected_from_its_recorded_answers() -> None:
    result = interpret(recorded_evidence())
    assert (result.state, result.kind, result.kind_label) == ("ok", "router", "SGLang router (smg)")
    assert result.version == "1.13.0"
    assert result.models == ["SmolLM2-135M-Instruct"]


def test_its_404_header_alone_says_router_and_a_plain_404_does_not() -> None:
    models = HttpAnswer(200, {"object": "list", "data": [{"id": "m", "owned_by": "self_hosted"}]})
    smg_404 = HttpAnswer(404, {"error": {}}, headers={"x-smg-error-code": "unknown_url"})
    header_only = ProbeEvidence("http://x:1", {"/v1/models": models, "/version": smg_404})
    assert interpret(header_only).kind == "router"
    plain = ProbeEvidence("http://x:1", {"/v1/models": models, "/version": HttpAnswer(404, {})})
    assert interpret(plain).kind == "openai"


def test_signals_from_two_real_scrapes() -> None:
    adapter = get_adapter("router")
    keep = metric_prefixes(adapter.telemetry_signals)
    normaliser = EngineNormaliser(adapter.telemetry_signals, adapter.label, latency_window_s=60.0)
    normaliser.update(parse_text(scrape("before"), keep), 0.0)
    result = normaliser.update(parse_text(scrape("after"), keep), 10.0)
    values = result.values
    # 3 answers and 1 stream in 10 s; both llama.cpp workers healthy; nothing running after.
    assert values["requests_per_s"] == pytest.approx(0.4)
    assert (values["workers_healthy"], values["workers_total"], values["requests_running"]) == (2, 2, 0)
    # Its request histogram moved by 4 requests and 1.952690711 s (the scrapes' sums).
    assert values["router_request_mean_s"] == pytest.approx((6.284373563 - 4.331682852) / 4)
    assert values["router_request_p90_s"] is not None
    assert "head" in result.notes["router_request_mean_s"]
    # Over HTTP workers smg has no token timings: said, never shown as zero.
    for signal in ("ttft_p50_s", "itl_mean_s", "kv_cache_usage", "generation_tokens_per_s"):
        assert result.missing[signal] == "not reported by SGLang router (smg)"


def test_router_signals_are_listed_with_their_units_in_the_json_form() -> None:
    snapshot = Snapshot(
        "engine:router-llamacpp",
        "router",
        "SGLang router (smg)",
        0.0,
        values={"requests_per_s": 0.4, "workers_healthy": 2.0},
    )
    signals = snapshot.to_json()["signals"]
    assert signals["requests_per_s"] == {"value": 0.4, "unit": "1/s", "status": "ok"}
    assert signals["workers_healthy"]["unit"] == "workers"
    assert signals["ttft_p50_s"]["status"] == "not_reported"


def test_a_scrape_alone_names_the_router() -> None:
    assert kind_from_metrics(scrape("after")) == "router"


@pytest.fixture
def fake_smg(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An engines dir where smg looks installed (the command is built, never run)."""
    monkeypatch.setenv("SHOOTOUT_ENGINES_DIR", str(tmp_path))
    monkeypatch.delenv("SHOOTOUT_LOCAL_PORT_BASE", raising=False)
    smg = tmp_path / "router-venv" / "bin" / "smg"
    smg.parent.mkdir(parents=True)
    smg.write_text("")
    return smg


def router_command(monkeypatch: pytest.MonkeyPatch, chosen: str) -> list[str]:
    from services.local_engines import get_spec
    from services.local_engines.backend import get_backend

    monkeypatch.setenv("SHOOTOUT_LOCAL_ENGINES", chosen)
    spec = get_spec("router-llamacpp")
    return get_backend("router").command(spec.port, spec.args)[0]


def test_the_local_router_fronts_the_chosen_llamacpp_servers(
    fake_smg: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    command = router_command(monkeypatch, "llamacpp,vllm,router")
    assert command[:2] == [str(fake_smg), "launch"]
    workers = command[command.index("--worker-urls") + 1 : command.index("--worker-urls") + 3]
    assert workers == ["http://127.0.0.1:8081", "http://127.0.0.1:8083"]
    assert "http://127.0.0.1:8082" not in command  # vLLM serves another model name
    # Both listeners on loopback: smg's metrics default to 0.0.0.0:29000.
    assert command[command.index("--host") + 1] == "127.0.0.1"
    assert command[command.index("--prometheus-host") + 1] == "127.0.0.1"
    assert command[command.index("--prometheus-port") + 1] == "8088"
    # A worker that starts later (SGLang) joins within seconds.
    assert command[command.index("--worker-startup-check-interval") + 1] == "5"
    assert command[-2:] == ["--policy", "cache_aware"]


def test_a_router_without_workers_says_so(fake_smg: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(EngineError, match="no workers: choose llamacpp or sglang"):
        router_command(monkeypatch, "router")


def test_its_registry_entry_points_at_its_metrics_port(db_url: str) -> None:
    from services.engines.endpoints import register_local
    from services.local_engines.catalog import get_spec, local_port

    router = register_local(get_spec("router-llamacpp"))
    assert (router.kind, router.model) == ("router", "SmolLM2-135M-Instruct")
    assert router.resolved_metrics_url == f"http://127.0.0.1:{local_port(8088)}/metrics"
    assert register_local(get_spec("llamacpp-4slot")).metrics_url is None
