"""The real SGLang (0.5.23, CPU) through every flow the app offers: a benchmark beside vLLM with
SGLang's own metrics and `/server_info` kept with the run, a tuning run of one SGLang setting
through the local launcher, and a vLLM-vs-SGLang parity run (the two serve the same HF weights).
The engine's own basics (answers, streams, cached tokens, metrics, detection) are in
test_sglang_real.py."""

from __future__ import annotations

import pytest

from db.models import Run
from db.session import session_scope
from services.bench import jobs
from services.bench.arrivals import LoadSpec
from services.bench.spec import BenchSpec
from services.bench.stats import SloSpec
from services.bench.workloads import WorkloadSpec
from services.core.processes import pid_alive
from services.parity import results as views
from services.parity import runner
from services.parity.tasks import task_set
from services.tune import jobs as tune_jobs
from services.tune.spec import TuneSpec

pytestmark = pytest.mark.engines


def test_a_benchmark_of_vllm_and_sglang_keeps_what_each_engine_reported(local_engines: list) -> None:
    sglang = jobs.engine_target("sglang-cpu")
    vllm = jobs.engine_target("vllm-cpu")
    spec = BenchSpec(
        engines=(vllm, sglang),
        workload=WorkloadSpec(input_len=32, output_len=12),
        load=LoadSpec(concurrency=2, requests=4, warmup_requests=1),
        timeout_s=180,
    )
    run_id = jobs.create_run(spec)
    summary = jobs.execute_run(run_id)
    assert jobs.get_run(run_id).status == "finished"
    block = summary["engines"]["sglang-cpu"]
    assert (block["completed"], block["failed"]) == (4, 0)
    assert block["output_tokens"] == 4 * 12 and block["honoured_output_len"] is True
    assert block["ttft_s"]["p50"] > 0 and block["itl_s"]["p50"] > 0
    assert block["unsupported_options"] == []
    # SGLang's own metrics, read on the run's clock beside ours.
    assert block["engine_metrics"]["kv_cache_usage_max"] is not None
    # Exact prompt lengths from SGLang's own tokenizer endpoint.
    records = [r for r in jobs.load_records(run_id) if r.engine == "sglang-cpu" and not r.warmup]
    assert len({r.input_tokens for r in records}) == 1 and records[0].input_tokens >= 32
    # What SGLang said about itself (/server_info), kept with the run for Compare and reports.
    with session_scope() as session:
        run = session.get(Run, run_id)
        assert run is not None
        stored = {e["name"]: e["reported"] for e in run.engines}
    assert stored["sglang-cpu"]["version"] == "0.5.23"
    info = stored["sglang-cpu"]["/server_info"]
    assert info["device"] == "cpu" and info["attention_backend"] == "torch_native"


def test_a_tuning_run_launches_sglang_with_its_setting_through_the_local_launcher(
    local_engines: list,
) -> None:
    """One configuration, not a grid: each costs an SGLang start, and the grid's mechanics (every
    configuration run and stopped, the best chosen) are tests/services/tune/test_tune_runs.py's on
    llama.cpp. What only SGLang can show: the launcher passes the setting and SGLang ran with it."""
    spec = TuneSpec(
        kind="sglang",
        grid={"max-running-requests": ("3",)},
        slo=SloSpec(ttft_ms=30_000),
        workload=WorkloadSpec(input_len=16, output_len=8),
        load=LoadSpec(concurrency=2, requests=4),
    )
    summary = tune_jobs.execute_run(tune_jobs.create_run(spec, trusted=True))
    (config,) = summary["configs"]
    assert config["status"] == "finished", config.get("log_tail")
    assert config["metrics"]["completed"] == 4
    assert config["port"] != 8084
    assert not pid_alive(config["pid"]), f"{config['label']} left its engine running"
    # SGLang itself says it ran with the value asked for (its default here is 8).
    reported = config["reported"]
    assert reported["version"] == "0.5.23"
    assert reported["/server_info"]["max_running_requests"] == 3
    assert "--max-running-requests" in summary["best"]["launch"]["plain"]


def test_vllm_and_sglang_parity_on_the_same_weights(local_engines: list) -> None:
    run_id = runner.start_parity(
        ["vllm-cpu", "sglang-cpu"],
        reference="vllm-cpu",
        tasks=task_set(4),
        max_tokens=16,
        background=False,
    )
    view = views.parity_view(run_id)
    assert view.status == "finished", view.summary
    for label in ("vllm-cpu", "sglang-cpu"):
        block = view.summary.engines[label]
        assert block.completed == 4 and block.failed == 0
        assert block.logprobs == "reported"
    parity = view.summary.comparison("sglang-cpu")
    assert parity.compared == 4
    for key in ("exact_match_rate", "token_agreement_mean", "logprob_diff_mean"):
        assert getattr(parity, key) is not None, key
    print("vLLM vs SGLang, same bf16 weights:", parity.exact_match_rate, parity.token_agreement_mean)
