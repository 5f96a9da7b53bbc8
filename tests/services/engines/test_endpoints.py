"""The stored list of endpoints: validation, duplicates, edits, and no key ever stored."""

from __future__ import annotations

import pytest

from services.core.errors import ConflictError, NotFoundError, ValidationError
from services.engines import endpoints


def test_add_list_get_remove(any_db_url: str) -> None:
    record = endpoints.add_engine(
        "vllm-a", "http://gpu-box:8000/v1/", kind="vllm", model="m", api_key_env="VLLM_KEY"
    )
    assert record.base_url == "http://gpu-box:8000"
    assert record.resolved_metrics_url == "http://gpu-box:8000/metrics"
    assert [r.name for r in endpoints.list_engines()] == ["vllm-a"]
    assert endpoints.get_engine("vllm-a").api_key_env == "VLLM_KEY"
    endpoints.remove_engine("vllm-a")
    assert endpoints.list_engines() == []
    with pytest.raises(NotFoundError):
        endpoints.get_engine("vllm-a")


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("localhost:8080", "http://localhost:8080"),
        ("https://api.example.com/v1", "https://api.example.com"),
        ("http://host:9000/prefix/v1/", "http://host:9000/prefix"),
    ],
)
def test_url_normalisation(url: str, expected: str) -> None:
    assert endpoints.normalise_base_url(url) == expected


@pytest.mark.parametrize("url", ["", "ftp://x", "http://", "http://host:notaport", "http://h/?q=1"])
def test_bad_urls_are_rejected_with_a_message(url: str) -> None:
    with pytest.raises(ValidationError) as caught:
        endpoints.normalise_base_url(url)
    assert str(caught.value)


def test_duplicate_name_is_a_conflict_and_keeps_the_first(db_url: str) -> None:
    endpoints.add_engine("one", "http://a:1")
    with pytest.raises(ConflictError, match="exists already"):
        endpoints.add_engine("one", "http://b:2")
    assert endpoints.get_engine("one").base_url == "http://a:1"


@pytest.mark.parametrize(
    ("name", "kind", "key_env"),
    [
        ("bad name!", "openai", None),
        ("ok", "nosuchkind", None),
        ("ok", "openai", "sk-abc123 not a name"),
    ],
)
def test_invalid_fields(db_url: str, name: str, kind: str, key_env: str | None) -> None:
    with pytest.raises(ValidationError):
        endpoints.add_engine(name, "http://a:1", kind=kind, api_key_env=key_env)


def test_update_and_rename(db_url: str) -> None:
    endpoints.add_engine("a", "http://a:1")
    endpoints.add_engine("b", "http://b:1")
    with pytest.raises(ConflictError):
        endpoints.update_engine("a", name="b")
    updated = endpoints.update_engine(
        "a", name="c", kind="llamacpp", metrics_url="http://a:8002/metrics"
    )
    assert (updated.name, updated.kind, updated.resolved_metrics_url) == (
        "c",
        "llamacpp",
        "http://a:8002/metrics",
    )


def test_api_key_value_is_never_stored(db_url: str, monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("SECRET_KEY_VAR", "sk-live-do-not-store-4242")
    endpoints.add_engine("secret", "http://a:1", api_key_env="SECRET_KEY_VAR")
    from db.session import dispose_all

    dispose_all()
    for path in tmp_path.glob("shootout.db*"):
        assert b"sk-live-do-not-store-4242" not in path.read_bytes()


@pytest.mark.parametrize(
    ("typed", "said"),
    [
        ("htp:/bad url", "contains a space"),
        ("htp:/bad", "does not start with http:// or https://"),
        ("http://h:/x", "no port number"),
        ("http://u:secret@h:1", "no user name or password"),
        ("http://bad..host:80", "not a valid host name"),
        ("http://h:99999", "invalid port"),
    ],
)
def test_mistyped_urls_are_named_as_typos(db_url: str, typed: str, said: str) -> None:
    """Issue 19: `htp:/bad url` was reported as a host that does not resolve, and stored."""
    with pytest.raises(ValidationError) as error:
        endpoints.add_engine("typo", typed, kind="vllm")
    assert said in str(error.value)
    assert endpoints.list_engines() == []


def test_a_second_name_for_the_same_endpoint_is_flagged(db_url: str) -> None:
    endpoints.add_engine("first", "http://gpu-box:8000/v1", kind="vllm")
    endpoints.add_engine("second", "gpu-box:8000/", kind="vllm")
    assert endpoints.same_endpoint("http://GPU-box:8000", except_name="second") == ["first"]
    assert endpoints.same_endpoint("http://gpu-box:8001") == []


def test_the_apps_own_settings_are_never_an_engines_key(
    db_url: str, monkeypatch: pytest.MonkeyPatch, scripted_server
) -> None:  # type: ignore[no-untyped-def]
    """Issue 20: an engine at a viewer's URL with SHOOTOUT_PASSWORD as its key variable received
    the password as a Bearer token."""
    import asyncio

    from services.client import ChatRequest, build_headers, run_chat

    monkeypatch.setenv("SHOOTOUT_PASSWORD", "the-team-password")
    with pytest.raises(ValidationError, match="not one an engine may use"):
        endpoints.add_engine("thief", "http://attacker:80", api_key_env="SHOOTOUT_PASSWORD")
    request = ChatRequest(
        base_url=scripted_server.base_url,
        model="m",
        messages=[{"role": "user", "content": "x"}],
        api_key_env="SHOOTOUT_PASSWORD",
    )
    with pytest.raises(KeyError):
        build_headers(request)
    result = asyncio.run(run_chat(request))
    assert result.error_class == "config" and "the-team-password" not in (result.error or "")
    # The operator's list decides: with it set, only the names on it.
    monkeypatch.setenv("SHOOTOUT_KEY_ENVS", "VLLM_API_KEY")
    with pytest.raises(ValidationError):
        endpoints.add_engine("other", "http://a:1", api_key_env="OPENAI_API_KEY")
    assert (
        endpoints.add_engine("vllm", "http://a:1", api_key_env="VLLM_API_KEY").api_key_env
        == "VLLM_API_KEY"
    )


def test_a_local_triton_is_labelled_by_its_backend(db_url: str) -> None:
    """The registry names what serves an entry where the kind says less: the local Triton is
    "Triton (Python backend)" on every card, never plain "Triton" (nor TensorRT-LLM)."""
    from services import local_engines

    record = endpoints.register_local(local_engines.get_spec("triton-python"))
    assert endpoints.get_engine("triton-python").label == "Triton (Python backend)" == record.label
    vllm = endpoints.register_local(local_engines.get_spec("vllm-cpu"))
    assert vllm.label == "vLLM"
    plain = endpoints.add_engine("remote-triton", "http://10.0.0.9:8000", kind="triton")
    assert plain.label == "Triton"


def test_a_price_per_hour_is_stored_edited_and_cleared(db_url: str) -> None:
    assert endpoints.add_engine("a", "http://a:1").usd_per_hour is None
    assert endpoints.add_engine("b", "http://b:1", usd_per_hour="2.5").usd_per_hour == 2.5
    assert endpoints.update_engine("a", usd_per_hour=4).usd_per_hour == 4.0
    assert endpoints.get_engine("a").usd_per_hour == 4.0
    assert endpoints.update_engine("a", usd_per_hour="").usd_per_hour is None


@pytest.mark.parametrize("price", ["$3.50", "3,50", "-1", "0", "50000"])
def test_a_bad_price_is_refused_and_nothing_changes(db_url: str, price: str) -> None:
    endpoints.add_engine("a", "http://a:1", usd_per_hour=1.0)
    with pytest.raises(ValidationError, match="per hour|plain number|above"):
        endpoints.update_engine("a", usd_per_hour=price)
    with pytest.raises(ValidationError):
        endpoints.add_engine("b", "http://b:1", usd_per_hour=price)
    assert endpoints.get_engine("a").usd_per_hour == 1.0
    assert [e.name for e in endpoints.list_engines()] == ["a"]


def test_the_default_pick_leaves_out_local_engines_that_are_not_running() -> None:
    """In the first minute SGLang is still installing: the comparing pages start with two
    engines that answer, not with one that is down (issue 48)."""

    def local(name: str, kind: str) -> endpoints.EngineRecord:
        return endpoints.EngineRecord(
            id=0, name=name, base_url="http://127.0.0.1:9", kind=kind, model=None,
            api_key_env=None, metrics_url=None, local_id=name,
        )  # fmt: skip

    engines = [
        local("llamacpp-4slot", "llamacpp"),
        local("sglang-cpu", "sglang"),
        local("vllm-cpu", "vllm"),
    ]
    everything = {"llamacpp-4slot", "sglang-cpu", "vllm-cpu"}
    assert endpoints.default_picks(engines, live=everything) == ["vllm-cpu", "sglang-cpu"]
    assert endpoints.default_picks(engines, live={"llamacpp-4slot", "vllm-cpu"}) == [
        "vllm-cpu",
        "llamacpp-4slot",
    ]
    # Fewer than two up: the usual pick, so the form is never empty.
    assert endpoints.default_picks(engines, live={"vllm-cpu"}) == ["vllm-cpu", "sglang-cpu"]
