"""The Planner page in AppTest: renders standalone, plans, reports bad input, registers an endpoint."""

from __future__ import annotations

from streamlit.testing.v1 import AppTest

from db.models import Run
from db.session import session_scope
from services.engines import endpoints
from tests.conftest import REPO_ROOT
from tests.support.forms import enter_submits


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
    at.run()
    assert not at.exception
    assert metric(at, "KV cache per token") == "327,680 B"
    assert metric(at, "Fits?") == "no"
    # 140 GB of weights on one 80 GB card: no sequence runs, so no decode rate is headlined.
    assert metric(at, "Decode bound") == "—"
    assert any("not one sequence of 1 tokens fits" in e.value for e in at.error)


def test_results_follow_their_inputs_without_a_plan_button(db_url: str) -> None:
    """Issue 36: after changing the model the results stayed on the old one until "Plan" was
    clicked, with no sign that they were stale."""
    at = planner_page()
    assert metric(at, "KV cache per token") == "131,072 B"
    at.selectbox(key="planner_model").set_value("llama-3-70b").run()
    assert not at.exception
    assert metric(at, "KV cache per token") == "327,680 B"
    assert "Plan" not in [getattr(b, "label", "") for b in at.get("button")]


def test_an_impossible_plan_says_so_before_any_rate(db_url: str) -> None:
    """Issue 36: a plan where not one sequence fits headlined "Decode bound 295 tok/s"."""
    at = planner_page()
    at.selectbox(key="planner_model").set_value("llama-3-405b").run()
    assert not at.exception
    shown = list(at.tabs[0].children.values())
    kinds = [node.type for node in shown]
    first_alert = next(i for i, kind in enumerate(kinds) if kind in ("error", "warning"))
    assert kinds[first_alert] == "error" and first_alert < kinds.index("plotly_chart")
    assert "not one sequence of 8,192 tokens fits" in shown[first_alert].value
    assert metric(at, "Decode bound") == "—" and metric(at, "Prefill bound") == "—"
    assert not any(w.value.startswith("Does not fit") for w in at.warning)  # said once, as the error
    at.number_input(key="planner_tp").set_value(16).run()  # 16 GPUs hold it: rates come back
    assert not at.error and "tok/s" in metric(at, "Decode bound")


def test_bad_tensor_parallel_degree_is_a_clear_error(db_url: str) -> None:
    at = planner_page()
    at.number_input(key="planner_tp").set_value(3)
    at.run()
    assert not at.exception
    assert any("does not divide the 32 attention heads" in e.value for e in at.error)


def test_measured_number_against_the_bound(db_url: str) -> None:
    at = planner_page()
    at.radio(key="planner_measure_source").set_value("a number").run()
    at.number_input(key="planner_achieved").set_value(500.0).run()
    assert not at.exception
    assert "%" in metric(at, "Share of the bound")


def _stored_run(name: str, model: str | None, gpu: str | None, rate: float) -> None:
    with session_scope() as session:
        session.add(
            Run(
                kind="benchmark",
                name=name,
                model=model,
                config={"gpu": gpu} if gpu else {},
                summary={
                    "engines": {
                        "vllm": {
                            "output_throughput_tok_s": rate,
                            "concurrency_mean": 16,
                            "completed": 4,
                            "input_tokens": 4000,
                            "output_tokens": 1000,
                        }
                    }
                },
            )
        )


def test_stored_run_of_the_planned_model_and_gpu_against_the_bound(db_url: str) -> None:
    _stored_run("bench", "meta-llama/Llama-3.1-8B-Instruct", "NVIDIA H100 80GB HBM3", 800.0)
    _stored_run("newer, on a CPU", "SmolLM2-135M-Instruct", None, 900.0)
    at = planner_page()
    assert "bench" in at.selectbox(key="planner_run").value  # the comparable run, not the newest
    assert "%" in metric(at, "Share of the bound")
    assert not at.warning


def test_a_run_of_another_model_is_not_compared_unless_picked(db_url: str) -> None:
    """Issue 19: a SmolLM2 chat on a CPU was shown as 153.9% of the bound of Llama 3 70B on an H100."""
    _stored_run("smol chat", "smollm2", None, 900.0)
    at = planner_page()
    at.selectbox(key="planner_model").set_value("llama-3-70b")
    at.number_input(key="planner_tp").set_value(4)
    at.run()
    assert not any(m.label == "Share of the bound" for m in at.metric)
    assert any("No stored run is comparable" in i.value and "Llama 3.1 70B" in i.value for i in at.info)
    at.checkbox(key="planner_run_any").check().run()
    assert not at.exception
    warning = next(w.value for w in at.warning if "not comparable" in w.value)
    assert "smollm2, not Llama 3.1 70B" in warning and "recorded no GPU" in warning
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


def test_enter_in_a_field_does_not_register_the_endpoint(db_url: str) -> None:
    """Enter may make the command (nothing is stored), but only the button registers an engine."""
    at = planner_page()
    submit(at, "Make command")
    assert enter_submits(at)["planner_register"] is False
    assert endpoints.list_engines() == []


def test_launch_command_follows_the_plan(db_url: str) -> None:
    """Issue 19: planning Llama 3 70B still showed `vllm serve meta-llama/Llama-3.1-8B-Instruct` on 1 GPU."""
    at = planner_page()
    at.selectbox(key="planner_model").set_value("llama-3-70b")
    at.selectbox(key="planner_dtype").set_value("gguf-q4_k_m")
    at.number_input(key="planner_tp").set_value(4)
    at.number_input(key="planner_context").set_value(16384)
    at.slider(key="planner_util").set_value(0.85)
    at.run()
    vllm = at.code[0].value
    for flag in (
        "vllm serve meta-llama/Llama-3.1-70B-Instruct",
        "--tensor-parallel-size 4",
        "--max-model-len 16384",
        "--gpu-memory-utilization 0.85",
    ):
        assert flag in vllm
    at.selectbox(key="planner_engine").set_value("llamacpp")
    at.text_input(key="planner_host").set_value("$(id)")
    submit(at, "Make command")
    llama = at.code[0].value
    assert "-hf" not in llama and "-m /path/to/Llama-3.1-70B-Instruct-Q4_K_M.gguf" in llama
    assert "--host '$(id)'" in llama
    assert any("without GGUF files" in c.value for c in at.caption)
    at.number_input(key="planner_launch_gpus").set_value(
        2
    )  # the user's own edit stands until the next plan
    submit(at, "Make command")
    assert at.number_input(key="planner_launch_gpus").value == 2
    at.number_input(key="planner_batch").set_value(32)
    at.run()  # a new plan sets the fields again
    assert at.number_input(key="planner_launch_gpus").value == 4
    assert at.number_input(key="planner_slots").value == 32


def test_add_a_gpu_then_plan_on_it(db_url: str) -> None:
    at = planner_page()
    at.text_input(key="planner_new_gpu_key").set_value("my-card")
    at.text_input(key="planner_new_gpu_name").set_value("My card")
    submit(at, "Add GPU")
    assert any("Saved My card" in s.value for s in at.success)
    at = planner_page()
    assert "my-card" in at.selectbox(key="planner_gpu").options or any(
        "My card" in o for o in at.selectbox(key="planner_gpu").options
    )


def test_add_model_without_a_file_says_what_to_do(db_url: str) -> None:
    at = planner_page()
    at.text_input(key="planner_new_model_key").set_value("x")
    submit(at, "Add model")
    assert any("Upload a config.json" in e.value for e in at.error)


def _shown_text(at: AppTest) -> list[str]:
    """Every value a user reads: metrics with their deltas, markdown, captions, and every table cell."""
    texts = [f"{m.label} {m.value} {m.delta or ''}" for m in at.metric]
    texts += [m.value for m in at.markdown] + [c.value for c in at.caption]
    for frame in at.dataframe:
        assert not frame.value.isna().to_numpy().any(), frame.value  # a NaN or None cell shows as "None"
        texts += [str(cell) for cell in frame.value.to_numpy().ravel()]
    return texts


def test_no_cell_or_metric_shows_none_or_nan_and_units_agree(db_url: str) -> None:
    at = planner_page()
    at.selectbox(key="planner_model").set_value("llama-3-405b")
    at.selectbox(key="planner_gpu").set_value("a100-40gb")  # does not fit, no FP8: the awkward values
    at.run()
    for text in _shown_text(at):
        for word in text.replace("(", " ").replace(")", " ").split():
            assert word.strip(".,:;") not in ("None", "nan", "NaN", "inf"), (
                text
            )  # Python's spellings, not prose
    assert metric(at, "KV cache for the batch").endswith("GiB")  # as the memory bar and the fit warning
    assert metric(at, "Weights").endswith("GiB")
    assert metric(at, "Decode limited by") == "bandwidth"  # "memory bandwidth" was cut to "memory ban…"
    gpus = next(f.value for f in at.dataframe if "fp8_tflops" in f.value.columns)
    assert gpus.set_index("key").loc["a100-40gb", "fp8_tflops"] == "—"
    assert "bandwidth_gb_s" in gpus.columns  # GB/s, as the "Add a GPU" form takes it


def test_engines_with_equal_scores_are_shown_as_tied(db_url: str) -> None:
    at = planner_page()
    # The ranking names no measured winner: it says where one comes from (issue 32).
    assert any(c.value.startswith("Ranked from the engines' reference data") for c in at.caption)
    headings = [m.value.split(" — ")[0] for m in at.markdown if " — " in m.value]
    assert headings[:4] == [
        "**1 (tie). SGLang**",
        "**1 (tie). TensorRT-LLM**",
        "**1 (tie). vLLM**",
        "**4. llama.cpp**",
    ]


def test_huge_rates_stay_short_enough_for_their_metric(db_url: str) -> None:
    at = planner_page()
    at.selectbox(key="planner_model").set_value("smollm2-135m")
    at.selectbox(key="planner_gpu").set_value("b200")
    at.number_input(key="planner_batch").set_value(100_000)
    at.number_input(key="planner_context").set_value(1)
    at.run()
    assert not at.exception
    for label in ("Decode bound", "Prefill bound"):
        value = metric(at, label)
        assert value.endswith("tok/s") and len(value) <= 12, value


def test_a_price_per_gpu_hour_gives_the_cost_floor_and_a_bad_one_says_why(db_url: str) -> None:
    at = planner_page()
    assert metric(at, "Cost floor per 1M output tokens") == "not priced"  # no silent default price
    at.text_input(key="planner_gpu_usd").set_value("2.5").run()
    assert metric(at, "Cost floor per 1M output tokens").startswith("$")
    assert not at.error
    at.text_input(key="planner_gpu_usd").set_value("2,50 €").run()
    assert not at.exception
    assert any("not a plain number" in e.value for e in at.error)


def test_the_decision_helper_says_measured_cost_and_energy_or_not_priced(db_url: str) -> None:
    """Issue 33: under each ranked engine, the cheapest stored step of its kind meeting its SLOs
    with its cost and energy; "not priced" where its runs had no price."""
    from tests.services.planner.test_measured import SLO, step
    from tests.services.runs.test_runs import make_run
    from tests.support.markdown import as_read

    make_run(config=SLO, engines={"vllm": step(500.0, 3.6, j_per_token=0.25)})
    at = planner_page()
    read = [as_read(m.value) for m in at.markdown]
    assert any(
        line.startswith("Cheapest measured meeting its SLOs: vLLM (#") and "$2.00" in line
        for line in read
    )
    captions = [as_read(c.value) for c in at.caption]
    assert any("0.25 J per output token" in c and "$2.00 per 1M" in c for c in captions)
    assert any(c.startswith("Measured: no finished benchmark") for c in captions)
    assert not at.error and not at.exception
