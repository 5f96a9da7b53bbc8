"""Compare's headline and settings diff (issue 47): two engines that differ only in themselves
are "comparable" without a "nothing differs" above the list of what does, and the diff names
the model's format and dtype (Q4_1 vs BF16) before the settings that do not explain speed."""

from __future__ import annotations

from sqlalchemy import select

from db.models import Run
from db.session import session_scope
from tests.app.test_runs_page import runs_page, texts
from tests.services.runs.test_runs import engine_summary, make_run

LLAMA_PROPS = {
    "model_ftype": "Q4_1",
    "model_path": "/models/SmolLM2-135M-Instruct.Q4_1.gguf",
    "total_slots": 4,
    "default_generation_settings": {"params": {"top_k": 40, "min_p": 0.05}},
}


def llama_and_vllm_run() -> int:
    """One run, llama.cpp (GGUF Q4_1, as its /props says) beside vLLM (BF16, its local entry)."""
    run_id = make_run(
        engines={
            "llamacpp": engine_summary(0.050, 0.01, 0.5, 900.0),
            "vllm": engine_summary(0.200, 0.04, 2.0, 300.0),
        },
        requests={"llamacpp": [0.04, 0.05, 0.06], "vllm": [0.19, 0.20, 0.21]},
    )
    with session_scope() as session:
        run = session.scalars(select(Run).where(Run.id == run_id)).one()
        llama, vllm = (dict(e) for e in run.engines)
        llama.update(kind="llamacpp", reported={"/props": LLAMA_PROPS, "version": "b7000"})
        vllm.update(info={"local": True, "dtype": "bfloat16"})
        run.engines = [llama, vllm]
    return run_id


def test_compare_names_q4_1_vs_bf16_first_and_never_says_nothing_differs(db_url: str) -> None:
    at = runs_page(run=str(llama_and_vllm_run()))
    assert not at.exception, at.exception
    shown = texts(at) + " ".join(str(e.value) for e in at.success)
    assert "nothing that both sides recorded differs" not in shown
    assert "the engines differ as listed below" in shown, shown
    table = next(t.value for t in at.dataframe if "Setting" in t.value.columns)
    settings = list(table["Setting"])
    assert "model dtype" in settings and "model format" in settings
    dtype = table[table["Setting"] == "model dtype"].iloc[0].tolist()
    assert "Q4_1" in dtype and "BF16" in dtype
    # What explains speed comes before sampler defaults (the old order was alphabetical).
    assert settings.index("model dtype") < settings.index(
        "/props.default_generation_settings.params.min_p"
    )
    assert settings.index("/props.total_slots") < settings.index("/props.model_path")
