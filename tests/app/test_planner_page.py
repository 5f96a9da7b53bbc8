"""The Planner page in AppTest: renders standalone, plans, reports bad input, registers an endpoint."""

from __future__ import annotations

from streamlit.testing.v1 import AppTest

from db.models import Run
from db.session import session_scope
from services import endpoints
from tests.conftest import REPO_ROOT


def planner_page() -> AppTest:
    at = AppTest.from_file(str(REPO_ROOT / "app_pages" / "planner.py"), default_timeout=60)
    at.run()
    assert not at.exception
    return at


def metric(at: AppTest, label: str) -> str:
    return next(m.value for m in at.metric if m.label == label)


def submit(at: AppTest, label: str) -> None:
    next(b for b in at.get("button") if getattr(b, "label", "") == label).click().run()


def test_renders_with_defaults(db_url: str) -> None:
    at = planner_page()
    assert metric(at, "KV cache per token") == "131,072 B"  # Llama 3.1 8B in BF16
    assert metric(at, "Fits?") == "yes"
    assert len(at.get("plotly_chart")) >= 3
    assert not at.error


def test_plans_the_worked_example(db_url: str) -> None:
    at = planner_page()
    at.selectbox(key="planner_model").set_value("llama-3-70b")
    at.selectbox(key="planner_dtype").set_value("bf16")
    at.number_input(key="planner_batch").set_value(1)
    at.number_input(key="planner_context").set_value(1)
    submit(at, "Plan")
    assert not at.exception
    assert metric(at, "KV cache per token") == "327,680 B"
    assert metric(at, "Decode bound") == "24 tok/s"
    assert metric(at, "Fits?") == "no"
    assert any("Does not fit" in w.value for w in at.warning)


def test_bad_tensor_parallel_degree_is_a_clear_error(db_url: str) -> None:
    at = planner_page()
    at.number_input(key="planner_tp").set_value(3)
    submit(at, "Plan")
    assert not at.exception
    assert any("does not divide the 32 attention heads" in e.value for e in at.error)


def test_measured_number_against_the_bound(db_url: str) -> None:
    at = planner_page()
    at.radio(key="planner_measure_source").set_value("a number").run()
    at.number_input(key="planner_achieved").set_value(500.0).run()
    assert not at.exception
    assert "%" in metric(at, "Share of the bound")


def test_stored_run_against_the_bound(db_url: str) -> None:
    with session_scope() as session:
        session.add(Run(kind="benchmark", name="bench", summary={"engines": {
            "vllm": {"output_throughput_tok_s": 800.0, "concurrency_mean": 16, "completed": 4,
                     "input_tokens": 4000, "output_tokens": 1000}}}))
    at = planner_page()
    assert "%" in metric(at, "Share of the bound")


def test_launch_command_and_register(db_url: str) -> None:
    at = planner_page()
    at.selectbox(key="planner_engine").set_value("sglang")
    submit(at, "Make command")
    codes = [c.value for c in at.code]
    assert any("--enable-metrics" in c and "sglang.launch_server" in c for c in codes)
    at.text_input(key="planner_register_name").set_value("planned-sglang")
    submit(at, "Register this endpoint")
    assert not at.exception
    assert any("Registered planned-sglang" in s.value for s in at.success)
    assert endpoints.get_engine("planned-sglang").kind == "sglang"
    submit(at, "Register this endpoint")
    assert any("exists already" in e.value for e in at.error)


def test_add_a_gpu_then_plan_on_it(db_url: str) -> None:
    at = planner_page()
    at.text_input(key="planner_new_gpu_key").set_value("my-card")
    at.text_input(key="planner_new_gpu_name").set_value("My card")
    submit(at, "Add GPU")
    assert any("Saved My card" in s.value for s in at.success)
    at = planner_page()
    assert "my-card" in at.selectbox(key="planner_gpu").options or any(
        "My card" in o for o in at.selectbox(key="planner_gpu").options)


def test_add_model_without_a_file_says_what_to_do(db_url: str) -> None:
    at = planner_page()
    at.text_input(key="planner_new_model_key").set_value("x")
    submit(at, "Add model")
    assert any("Upload a config.json" in e.value for e in at.error)
