"""What the Engines page is given: probe verdicts, local-engine rows with their one action,
the outcome of "Probe and add", and endpoint cards, with what servers and users named escaped."""

from __future__ import annotations

from services import local_engines
from services.engines import endpoints
from services.engines.endpoints import add_engine
from services.engines.probe import ProbeResult
from services.fleet import view as engines_view
from services.telemetry.gpu import NullGpuSampler
from services.telemetry.scraper import ScrapeTarget
from tests.services.telemetry.support import MetricsServer, Route
from tests.support.markdown import as_read
from tests.support.scripted_server import ScriptedServer
from tests.support.telemetry_hub import reset_hub


def _status(status: str, installed: bool = True, message: str = "") -> local_engines.LocalEngineStatus:
    return local_engines.LocalEngineStatus(
        id="llamacpp-4slot",
        label="llama.cpp",
        kind="llamacpp",
        port=8081,
        url="http://127.0.0.1:8081",
        status=status,  # type: ignore[arg-type]  # the tests name states as the page shows them
        pid=42 if status == "running" else None,
        log_file=None,
        message=message,
        installed=installed,
    )


def test_a_probe_that_answered_says_what_the_server_is_escaped() -> None:
    ok = ProbeResult(
        "http://h", "ok", "Ready", version="1.*2*", models=["m_1"], context_length=2048, latency_ms=3.0
    )
    message = engines_view.probe_message(ok)
    assert message.level == "success"
    assert message.markdown.startswith(":material/check_circle: Ready")
    # Read as shown: the server's words stay words (no emphasis), its model a code span.
    assert "version 1.*2* · models: ` m_1 `" in as_read(message.markdown)
    assert engines_view.probe_message(ProbeResult("http://h", "unhealthy", "Loading")).level == "warning"
    assert (
        engines_view.probe_message(ProbeResult("http://h", "unreachable", "No answer")).level == "error"
    )


def test_each_local_engine_offers_the_one_action_its_state_allows() -> None:
    running = engines_view._local_row(_status("running"))
    assert (running.action, running.failed) == ("stop", False)
    assert "pid 42" in running.detail
    assert engines_view._local_row(_status("stopped")).action == "start"
    assert engines_view._local_row(_status("not_installed", installed=False)).action is None
    failed = engines_view._local_row(_status("failed", message="port *busy*"))
    assert failed.failed
    assert "did not start: port *busy*" in as_read(failed.detail)


def test_an_address_that_does_not_answer_is_not_stored_unless_asked(db_url: str) -> None:
    refused = engines_view.add_endpoint("dead", "http://127.0.0.1:9")
    assert [m.level for m in refused] == ["error", "info"]
    assert "Not stored" in refused[-1].markdown
    assert not engines_view.has_endpoints()
    stored = engines_view.add_endpoint("dead", "http://127.0.0.1:9", kind="vllm", store_unreachable=True)
    assert stored[-1].level == "success"
    assert engines_view.has_endpoints()
    assert engines_view.add_endpoint("", "ftp://nowhere")[0].level == "error"


def test_a_second_name_for_one_server_is_refused_before_it_is_stored(
    db_url: str, scripted_server: ScriptedServer
) -> None:
    model = scripted_server.model(ttft=1, itl=1)
    engines_view.add_endpoint("first", scripted_server.base_url, kind="vllm", model=model)
    refused = engines_view.add_endpoint("second", scripted_server.base_url, kind="vllm")
    assert [m.level for m in refused] == ["warning"]
    assert "Not stored: first already point(s) at" in refused[0].markdown
    assert [e.name for e in endpoints.list_engines()] == ["first"]
    second = engines_view.add_endpoint(
        "second", scripted_server.base_url, kind="vllm", model=model, same_url_ok=True
    )
    assert [m.level for m in second] == ["success", "success", "info"]
    assert "As asked, a second name: first" in second[-1].markdown
    assert sorted(e.name for e in endpoints.list_engines()) == ["first", "second"]


def test_stop_asks_naming_the_runs_that_use_the_engine(db_url: str) -> None:
    from db.models import Run
    from db.session import session_scope

    add_engine("local-a", "http://127.0.0.1:9", local_id="local-a")
    assert engines_view.stop_question("local-a") == (
        "Stop **local-a** for everyone? No run uses it right now."
    )
    with session_scope() as session:
        for status, names in (("running", "local-a,other"), ("finished", "local-a"), ("pending", "b")):
            session.add(Run(kind="benchmark", status=status, engine_names=names))
    assert engines_view.stop_question("local-a") == (
        "Stop **local-a** for everyone? 1 run(s) use it now (#1) and would fail."
    )


def test_cards_show_each_endpoint_with_its_key_variable(db_url: str) -> None:
    add_engine("llama_box", "http://127.0.0.1:9", kind="llamacpp", model="m", api_key_env="LLAMA_KEY")
    (card,) = engine_cards = engines_view.engine_cards()
    assert len(engine_cards) == 1
    assert as_read(card.heading).startswith("**llama_box** · llama.cpp")
    assert "key from ` $LLAMA_KEY `" in as_read(card.heading)
    assert engines_view.save_engine("llama_box", base_url="ftp://nowhere") is not None
    engines_view.remove_engine("llama_box")
    assert engines_view.engine_cards() == []


LLAMACPP_METRICS = """# TYPE llamacpp:prompt_tokens_total counter
llamacpp:prompt_tokens_total 10
# TYPE llamacpp:tokens_predicted_total counter
llamacpp:tokens_predicted_total 20
# TYPE llamacpp:requests_processing gauge
llamacpp:requests_processing 1
# TYPE llamacpp:requests_deferred gauge
llamacpp:requests_deferred 0
"""


def test_the_metrics_hint_shows_only_where_reading_the_metrics_failed(db_url: str) -> None:
    """A llama.cpp card said "start with --metrics" beside metrics that worked: the hint now
    follows the last read of them (the Monitor's); Triton's says where they are until a metrics
    URL is set."""
    hub = reset_hub(gpu_sampler=NullGpuSampler())
    working, off = MetricsServer(), MetricsServer()
    working.routes["/metrics"] = Route(body=LLAMACPP_METRICS)
    off.routes["/metrics"] = Route(status=501, body='{"error": "metrics disabled"}')
    try:
        with working, off:
            records = [
                add_engine("llama_ok", working.url, kind="llamacpp"),
                add_engine("llama_off", off.url, kind="llamacpp"),
            ]
            add_engine("llama_unread", "http://127.0.0.1:9/a", kind="llamacpp")
            add_engine("triton_box", "http://127.0.0.1:9/b", kind="triton")
            hub.sample([ScrapeTarget.from_record(r) for r in records], gpus=False)
            hints = {card.record.name: card.metrics_hint for card in engines_view.engine_cards()}
    finally:
        reset_hub()
    assert hints["llama_ok"] == "" and hints["llama_unread"] == ""
    assert "--metrics" in hints["llama_off"]
    assert "port 8002" in hints["triton_box"]
    endpoints.update_engine("triton_box", metrics_url="http://127.0.0.1:9/metrics")
    (triton,) = [c for c in engines_view.engine_cards() if c.record.name == "triton_box"]
    assert triton.metrics_hint == ""


def test_a_price_is_added_shown_edited_and_a_bad_one_says_why(db_url: str) -> None:
    stored = engines_view.add_endpoint(
        "gpu", "http://127.0.0.1:9", kind="vllm", store_unreachable=True, usd_per_hour="2.75"
    )
    assert stored[-1].level == "success"
    (card,) = engines_view.engine_cards()
    assert as_read(card.heading).endswith("· 2.75 $/h")
    assert engines_view.price_field(card.record) == "2.75"
    for typed, says in (
        ("$3.50", "not a plain number"),
        ("3,50", "not a plain number"),
        ("-2", "above 0"),
    ):
        refused = engines_view.save_engine("gpu", usd_per_hour=typed)
        assert refused is not None and refused.level == "error" and says in refused.markdown
    assert endpoints.get_engine("gpu").usd_per_hour == 2.75
    absurd = engines_view.add_endpoint("big", "http://127.0.0.1:8", usd_per_hour="99999")
    assert [m.level for m in absurd] == ["error"] and "really per hour" in absurd[0].markdown
    assert engines_view.save_engine("gpu", usd_per_hour="") is None
    (card,) = engines_view.engine_cards()
    assert as_read(card.heading).endswith("· not priced") and engines_view.price_field(card.record) == ""
