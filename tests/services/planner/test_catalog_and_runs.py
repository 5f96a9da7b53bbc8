"""The user's own models and GPUs (a JSON file in the data dir), and stored benchmark throughputs."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from db.models import Run, Sample
from db.session import session_scope
from services.core.errors import ConflictError, NotFoundError, ValidationError
from services.planner import PlanRequest, catalog, make_plan
from services.planner.presets import MODELS
from services.planner.runs import runs_for_plan, stored_throughputs
from services.planner.specs import GIB, GpuSpec


def test_custom_model_and_gpu_round_trip(db_url: str) -> None:
    model = replace(MODELS["llama-3-8b"], key="my-llama", name="My Llama")
    catalog.save_custom_model(model)
    gpu = GpuSpec(
        key="my-gpu", name="My GPU", memory_bytes=48 * GIB, bandwidth_bytes_s=1e12, bf16_tflops=200
    )
    catalog.save_custom_gpu(gpu)
    assert catalog.get_model("my-llama").custom
    assert catalog.get_gpu("my-gpu").memory_bytes == 48 * GIB
    plan = make_plan(PlanRequest("my-llama", "my-gpu", "bf16", batch=2, context=1024))
    assert plan.kv_bytes_per_token == 131_072
    with pytest.raises(ConflictError):
        catalog.save_custom_model(model)
    with pytest.raises(ConflictError, match="built-in"):
        catalog.save_custom_gpu(replace(gpu, key="h100-sxm"))
    catalog.delete_custom("model", "my-llama")
    with pytest.raises(NotFoundError, match="Unknown model"):
        catalog.get_model("my-llama")


def test_custom_entries_are_validated(db_url: str) -> None:
    with pytest.raises(ValidationError, match="preset key"):
        catalog.save_custom_gpu(
            GpuSpec(key="Bad Key", name="x", memory_bytes=1, bandwidth_bytes_s=1, bf16_tflops=1)
        )
    with pytest.raises(ValidationError, match="Memory bandwidth"):
        catalog.save_custom_gpu(
            GpuSpec(key="ok", name="x", memory_bytes=1, bandwidth_bytes_s=0, bf16_tflops=1)
        )
    with pytest.raises(ValidationError, match="layers"):
        catalog.save_custom_model(replace(MODELS["llama-3-8b"], key="zero", layers=0))


def test_corrupt_presets_file_is_a_clear_error(db_url: str) -> None:
    catalog.custom_presets_path().parent.mkdir(parents=True, exist_ok=True)
    catalog.custom_presets_path().write_text("{broken", encoding="utf-8")
    with pytest.raises(ValidationError, match="Cannot read the saved planner presets"):
        catalog.all_models()


def test_stored_throughputs_skip_runs_without_numbers(db_url: str) -> None:
    with session_scope() as session:
        session.add_all(
            [
                Run(
                    kind="benchmark",
                    name="good",
                    model="smollm2",
                    summary={
                        "engines": {
                            "vllm-cpu": {
                                "output_throughput_tok_s": 55.5,
                                "concurrency_mean": 3.6,
                                "completed": 10,
                                "input_tokens": 1000,
                                "output_tokens": 400,
                            },
                            "llamacpp": {"output_throughput_tok_s": None},
                            "broken": "not a dict",
                        }
                    },
                ),
                Run(kind="benchmark", name="old format", summary={"engines": {"x": {"ttft_s": {}}}}),
                Run(kind="playground", name="no engines", summary={}),
                Run(
                    kind="benchmark",
                    name="configured",
                    config={"concurrency": 8},
                    summary={"engines": {"sglang": {"output_throughput_tok_s": 10}}},
                ),
            ]
        )
    entries = stored_throughputs()
    by_engine = {e.engine: e for e in entries}
    assert set(by_engine) == {"vllm-cpu", "sglang"}
    good = by_engine["vllm-cpu"]
    assert (good.output_tok_s, good.batch, good.context) == (55.5, 4, 120)
    assert by_engine["sglang"].batch == 8 and by_engine["sglang"].context is None
    assert "55.5 tok/s" in good.label


def _bench(name: str, model: str | None, age_min: int, **fields: object) -> Run:
    summary = {"engines": {"vllm": {"output_throughput_tok_s": 100.0 + age_min, "concurrency_mean": 8}}}
    summary.update(fields.pop("summary", {}))  # type: ignore[arg-type]
    created = datetime(2026, 1, 1, tzinfo=UTC) - timedelta(minutes=age_min)
    return Run(kind="benchmark", name=name, model=model, summary=summary, created_at=created, **fields)


def test_runs_for_plan_keeps_only_the_planned_model_on_the_planned_gpu(db_url: str) -> None:
    with session_scope() as session:
        cpu_smol = _bench(
            "smol on cpu", "SmolLM2-135M-Instruct", 0
        )  # the newest: used to be pre-selected
        by_config = _bench(
            "70b config",
            "meta-llama/Llama-3.1-70B-Instruct",
            1,
            config={"gpu": "NVIDIA H100 80GB HBM3", "concurrency": 8},
        )
        by_telemetry = _bench("70b telemetry", "llama3:70b", 2)
        on_a100 = _bench(
            "70b a100",
            "Llama-3.1-70B-Instruct",
            3,
            summary={"hardware": {"gpus": [{"name": "NVIDIA A100-SXM4-80GB"}]}},
        )
        no_model = _bench("no model", None, 4, config={"gpu": "NVIDIA H100 80GB HBM3"})
        session.add_all([cpu_smol, by_config, by_telemetry, on_a100, no_model])
        session.flush()
        session.add_all(
            [
                Sample(
                    run_id=by_telemetry.id,
                    ts=float(t),
                    source="gpu:0",
                    values={
                        "_kind": "gpu",
                        "_label": "NVIDIA H100 80GB HBM3",
                        "gpu_utilization_pct": 90,
                    },
                )
                for t in range(3)
            ]
        )
    found = runs_for_plan("llama-3-70b", "h100-sxm")
    assert [m.entry.run_name for m in found.comparable] == ["70b config", "70b telemetry"]
    assert found.comparable[1].entry.hardware == ("NVIDIA H100 80GB HBM3",)
    why = {m.entry.run_name: " ".join(m.reasons) for m in found.others}
    assert set(why) == {"smol on cpu", "70b a100", "no model"}
    assert "not Llama 3.1 70B" in why["smol on cpu"] and "recorded no GPU" in why["smol on cpu"]
    assert "NVIDIA A100-SXM4-80GB, not NVIDIA H100 SXM 80GB" in why["70b a100"]
    assert "recorded no model" in why["no model"]
    assert not runs_for_plan(
        "smollm2-135m", "h100-sxm"
    ).comparable  # right model, but no hardware recorded
