"""The engines reference (every cell sourced), the decision helper, and launch commands."""

from __future__ import annotations

import shlex

import pytest

from services.core.errors import ConflictError, ValidationError
from services.engines import endpoints, kinds
from services.planner import PlanRequest
from services.planner import engines_reference as ref
from services.planner.launch import (
    LaunchOptions,
    build_launch,
    launch_engines,
    options_for_plan,
    register_launched_engine,
)


def test_every_cell_has_a_value_and_a_source() -> None:
    for kind, cells in ref.MATRIX.items():
        assert kind in kinds(), kind  # the same kinds as the engine adapters
        assert set(cells) == set(ref.FEATURES), kind
        for feature, cell in cells.items():
            assert cell.value.strip(), (kind, feature)
            assert cell.source.startswith("https://") or "/" in cell.source, (kind, feature)
    rows = ref.feature_rows()
    assert len(rows) == len(ref.MATRIX) * len(ref.FEATURES)


def test_matrix_facts_the_dashboard_relies_on() -> None:
    assert "--enable-metrics" in ref.MATRIX["sglang"]["Prometheus metrics"].value
    assert "--metrics" in ref.MATRIX["llamacpp"]["Prometheus metrics"].value
    assert "RadixAttention" in ref.MATRIX["sglang"]["Prefix caching"].value
    assert "NVIDIA GPUs only" in ref.MATRIX["trtllm"]["Hardware"].value


def test_ranking_follows_constraints_and_says_why() -> None:
    busy = ref.rank_engines(ref.Constraints(traffic="high-throughput", prefix_sharing="heavy", gpus=8))
    assert busy[0].kind == "sglang"
    assert {r.kind for r in busy[:3]} == {"sglang", "vllm", "trtllm"}
    assert all(r.reasons for r in busy)
    laptop = ref.rank_engines(
        ref.Constraints(
            hardware="apple", traffic="single-user", operations="simplest", model_format="gguf"
        )
    )
    assert {laptop[0].kind, laptop[1].kind} == {"llamacpp", "ollama"}
    unsupported = {r.kind for r in laptop if not r.supported}
    assert {"trtllm", "vllm", "sglang", "tgi"} <= unsupported
    assert all(not r.supported for r in laptop[len(laptop) - len(unsupported) :])


def test_launch_commands_carry_the_flags() -> None:
    options = {
        "model": "meta-llama/Llama-3.1-70B-Instruct",
        "gpus": 4,
        "max_model_len": 8192,
        "gpu_memory_utilization": 0.85,
    }
    vllm = build_launch(LaunchOptions("vllm", **options))
    for flag in (
        "vllm serve meta-llama/Llama-3.1-70B-Instruct",
        "--tensor-parallel-size 4",
        "--max-model-len 8192",
        "--gpu-memory-utilization 0.85",
        "--enable-prefix-caching",
    ):
        assert flag in vllm.plain
    for part in ("vllm/vllm-openai", "--host 0.0.0.0", "-p 127.0.0.1:8000:8000"):
        assert part in vllm.docker
    sglang = build_launch(LaunchOptions("sglang", **options))
    for flag in (
        "sglang.launch_server",
        "--tp 4",
        "--mem-fraction-static 0.85",
        "--enable-metrics",
        "--context-length 8192",
    ):
        assert flag in sglang.plain
    assert "--disable-radix-cache" not in sglang.plain
    assert (
        "--disable-radix-cache"
        in build_launch(LaunchOptions("sglang", prefix_caching=False, **options)).plain
    )
    trt = build_launch(LaunchOptions("trtllm", **options))
    assert (
        "trtllm-serve" in trt.plain
        and "--tp_size 4" in trt.plain
        and "return_perf_metrics: true" in trt.plain
    )
    llama = build_launch(
        LaunchOptions("llamacpp", model="/models/x.gguf", parallel_slots=4, max_model_len=4096)
    )
    for flag in ("-m /models/x.gguf", "-ngl 999", "-np 4", "-c 16384", "--metrics"):
        assert flag in llama.plain
    assert llama.base_url == "http://127.0.0.1:8080"
    assert set(launch_engines()) == {"vllm", "sglang", "trtllm", "llamacpp", "tgi", "ollama"}


def test_launch_quotes_and_validates() -> None:
    odd = build_launch(LaunchOptions("vllm", model="my model; rm -rf /"))
    assert shlex.quote("my model; rm -rf /") in odd.plain
    with pytest.raises(ValidationError, match="model"):
        build_launch(LaunchOptions("vllm", model="  "))
    with pytest.raises(ValidationError, match="utilisation"):
        build_launch(LaunchOptions("vllm", model="m", gpu_memory_utilization=1.5))
    with pytest.raises(ValidationError, match="No launch recipe"):
        build_launch(LaunchOptions("triton", model="m"))
    opened = build_launch(LaunchOptions("vllm", model="m", bind_host="0.0.0.0", port=9000))
    assert opened.base_url == "http://127.0.0.1:9000" and "--host 0.0.0.0 --port 9000" in opened.plain


def test_register_the_launched_endpoint(db_url: str) -> None:
    command = build_launch(LaunchOptions("llamacpp", model="/m/smol.gguf", port=8099))
    record = register_launched_engine(command, "planned-llama")
    assert (record.kind, record.base_url, record.model) == (
        "llamacpp",
        "http://127.0.0.1:8099",
        "/m/smol.gguf",
    )
    assert [e.name for e in endpoints.list_engines()] == ["planned-llama"]
    with pytest.raises(ConflictError):
        register_launched_engine(command, "planned-llama")


def test_options_follow_the_plan() -> None:
    """Issue 19: planning Llama 3 70B on 4 GPUs gave `vllm serve meta-llama/Llama-3.1-8B-Instruct ... -tp 1`."""
    request = PlanRequest("llama-3-70b", "h100-sxm", batch=8, context=16384, tp=4, mem_util=0.85)
    options = options_for_plan(request, "vllm")
    assert (
        options.model,
        options.gpus,
        options.max_model_len,
        options.gpu_memory_utilization,
        options.parallel_slots,
        options.gguf_quant,
    ) == ("meta-llama/Llama-3.1-70B-Instruct", 4, 16384, 0.85, 8, "BF16")
    vllm = build_launch(options)
    for flag in (
        "vllm serve meta-llama/Llama-3.1-70B-Instruct",
        "--tensor-parallel-size 4",
        "--max-model-len 16384",
        "--gpu-memory-utilization 0.85",
    ):
        assert flag in vllm.plain and flag.split(" ", 2)[-1] in vllm.docker
    sglang = build_launch(options_for_plan(request, "sglang"))
    assert "--tp 4" in sglang.plain and "--context-length 16384" in sglang.plain
    assert build_launch(options_for_plan(request, "vllm", model=" my/model ")).plain.startswith(
        "vllm serve my/model"
    )


def test_llamacpp_never_downloads_a_checkpoint_without_gguf_files() -> None:
    request = PlanRequest("llama-3-70b", "h100-sxm", "gguf-q4_k_m", batch=4, context=8192, tp=2)
    llama = build_launch(options_for_plan(request, "llamacpp"))
    assert "-hf" not in llama.plain and "-hf" not in llama.docker
    assert "-m /path/to/Llama-3.1-70B-Instruct-Q4_K_M.gguf" in llama.plain
    assert (
        "-v /path/to:/models" in llama.docker
        and "-m /models/Llama-3.1-70B-Instruct-Q4_K_M.gguf" in llama.docker
    )
    note = llama.notes[0]
    assert (
        "meta-llama/Llama-3.1-70B-Instruct" in note
        and "without GGUF files" in note
        and "placeholder" in note
    )
    assert "-np 4" in llama.plain and "-c 32768" in llama.plain
    repo = build_launch(
        options_for_plan(request, "llamacpp", model="bartowski/Meta-Llama-3.1-70B-Instruct-GGUF")
    )
    assert (
        "-hf bartowski/Meta-Llama-3.1-70B-Instruct-GGUF:Q4_K_M" in repo.plain
        and "placeholder" not in repo.notes[0]
    )
    tagged = build_launch(LaunchOptions("llamacpp", model="someone/smol:Q8_0"))
    assert "-hf someone/smol:Q8_0" in tagged.plain
    home = build_launch(LaunchOptions("llamacpp", model="~/models/my model.gguf"))
    assert "-m ~/'models/my model.gguf'" in home.plain  # ~/ stays unquoted, so the shell expands it
    assert "-v ~/models:/models" in home.docker and "-m '/models/my model.gguf'" in home.docker
    ollama = build_launch(
        options_for_plan(request, "ollama", model="bartowski/Meta-Llama-3.1-70B-Instruct-GGUF")
    )
    assert "ollama pull hf.co/bartowski/Meta-Llama-3.1-70B-Instruct-GGUF:Q4_K_M" in ollama.plain
    assert "not an Ollama tag" in build_launch(options_for_plan(request, "ollama")).notes[0]


def _unquoted_substitutions(text: str) -> list[str]:
    """Every `$(` that is not inside single quotes, in a generated command."""
    found, quoted = [], False
    for index, char in enumerate(text):
        if char == "'":
            quoted = not quoted
        elif text.startswith("$(", index) and not quoted:
            found.append(text[index : index + 12])
    return found


@pytest.mark.parametrize("engine", sorted(launch_engines()))
def test_every_word_from_the_options_is_quoted(engine: str) -> None:
    command = build_launch(
        LaunchOptions(
            engine,
            model="$(touch pwned)/x",
            bind_host="$(touch${IFS}pwned)",
            served_model_name="$(touch pwned)",
        )
    )
    for text in (command.plain, command.docker):
        assert "$(touch" in text
        assert _unquoted_substitutions(text) == [], (engine, text)
    with pytest.raises(ValidationError, match="bind host"):
        build_launch(LaunchOptions(engine, model="m", bind_host="$(touch pwned)"))


def test_equal_scores_share_a_place_and_say_so() -> None:
    """Issue 19: SGLang, TensorRT-LLM and vLLM all scored +3 and were ranked 1, 2, 3 (by name)."""
    ranked = ref.rank_engines(ref.Constraints())
    top = [r for r in ranked if r.score == ranked[0].score]
    assert {r.kind for r in top} == {"sglang", "trtllm", "vllm"}
    assert [(r.place, r.tied, r.place_label) for r in top] == [(1, True, "1 (tie)")] * 3
    after = ranked[len(top)]
    assert after.place == 4 and after.place_label == ("4 (tie)" if after.tied else "4")
    places = [r.place for r in ranked if r.supported]
    assert places == sorted(places)
    apple = ref.rank_engines(ref.Constraints(hardware="apple"))
    assert all(r.place is None and r.place_label == "—" for r in apple if not r.supported)
    single = ref.rank_engines(
        ref.Constraints(hardware="apple", traffic="single-user", operations="simplest")
    )
    assert (single[0].kind, single[0].place_label) == ("ollama", "1")
