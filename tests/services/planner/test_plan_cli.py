"""`python cli.py plan`: the same numbers as the service, JSON on request, one-line errors."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

import cli
from services.planner import PlanRequest, make_plan, plan_to_dict
from tests.conftest import REPO_ROOT


def run_cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = cli.main(["plan", *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_issue_example_as_json(capsys: pytest.CaptureFixture[str], db_url: str) -> None:
    code, out, _ = run_cli(
        capsys,
        "--model",
        "llama-3-70b",
        "--dtype",
        "bf16",
        "--batch",
        "64",
        "--context",
        "8192",
        "--gpu",
        "h100-sxm",
        "--json",
    )
    assert code == 0
    payload = json.loads(out)
    assert payload["kv_cache"]["bytes_per_token"] == 327_680
    assert payload["kv_cache"]["total"]["gib"] == 160
    assert payload["weights"]["bytes"] == 141_107_412_992
    assert payload["fit"]["fits"] is False
    expected = json.loads(
        json.dumps(
            plan_to_dict(
                make_plan(PlanRequest("llama-3-70b", "h100-sxm", "bf16", batch=64, context=8192))
            ),
            default=str,
        )
    )
    assert payload == expected  # the page shows the same plan_to_dict numbers
    for section in (
        "inputs",
        "model",
        "gpu",
        "kv_cache",
        "weights",
        "fit",
        "decode",
        "prefill",
        "warnings",
    ):
        assert section in payload


def test_fp32_kv_gives_the_issue_figures(capsys: pytest.CaptureFixture[str], db_url: str) -> None:
    _, out, _ = run_cli(
        capsys,
        "--model",
        "llama-3-70b",
        "--dtype",
        "bf16",
        "--kv-dtype",
        "fp32",
        "--batch",
        "64",
        "--context",
        "8192",
        "--gpu",
        "h100-sxm",
        "--json",
    )
    payload = json.loads(out)
    assert payload["kv_cache"]["bytes_per_token"] == 655_360
    assert (
        round(payload["kv_cache"]["total"]["gb"], 1) == 343.6
        and payload["kv_cache"]["total"]["gib"] == 320
    )


def test_batch_one_decode_bound(capsys: pytest.CaptureFixture[str], db_url: str) -> None:
    _, out, _ = run_cli(
        capsys,
        "--model",
        "llama-3-70b",
        "--dtype",
        "bf16",
        "--gpu",
        "h100-sxm",
        "--context",
        "1",
        "--json",
        "--achieved",
        "12",
    )
    payload = json.loads(out)
    assert round(payload["decode"]["bound_tok_s"]) == 24
    assert payload["measured"]["fraction"] == pytest.approx(12 / payload["decode"]["bound_tok_s"])


def test_list_names_presets(capsys: pytest.CaptureFixture[str], db_url: str) -> None:
    code, out, _ = run_cli(capsys, "--list", "--json")
    listed = json.loads(out)
    assert code == 0
    assert {
        "llama-3-8b",
        "llama-3-70b",
        "llama-3-405b",
        "mixtral-8x22b",
        "deepseek-v3",
        "qwen2.5-7b",
        "qwen2.5-72b",
        "smollm2-135m",
    } <= set(listed["models"])
    gpus = {
        "h100-sxm",
        "h100-pcie",
        "h200",
        "b200",
        "a100-40gb",
        "a100-80gb",
        "l40s",
        "rtx-4090",
        "apple-m4-max",
    }
    assert gpus <= set(listed["gpus"])


def test_text_output_and_launch(capsys: pytest.CaptureFixture[str], db_url: str) -> None:
    code, out, _ = run_cli(
        capsys,
        "--model",
        "smollm2-135m",
        "--gpu",
        "rtx-4090",
        "--batch",
        "4",
        "--engine",
        "llamacpp",
        "--hf-model",
        "/models/smol.gguf",
    )
    assert code == 0
    assert "KV cache" in out and "decode bound" in out and "llama-server" in out and "--metrics" in out


def test_launch_follows_the_plan_and_says_why_there_is_no_gguf(
    capsys: pytest.CaptureFixture[str], db_url: str
) -> None:
    code, out, _ = run_cli(
        capsys,
        "--model",
        "smollm2-135m",
        "--gpu",
        "rtx-4090",
        "--dtype",
        "gguf-q8_0",
        "--context",
        "4096",
        "--batch",
        "2",
        "--engine",
        "llamacpp",
    )
    assert code == 0
    assert (
        "  -hf " not in out and "-m /path/to/SmolLM2-135M-Instruct-Q8_0.gguf" in out and "-np 2" in out
    )
    assert "# HuggingFaceTB/SmolLM2-135M-Instruct is a Hugging Face checkpoint without GGUF files" in out
    code, out, _ = run_cli(
        capsys,
        "--model",
        "llama-3-70b",
        "--gpu",
        "h100-sxm",
        "--tp",
        "4",
        "--mem-util",
        "0.8",
        "--engine",
        "vllm",
        "--json",
    )
    plain = json.loads(out)["launch"]["plain"]
    assert "meta-llama/Llama-3.1-70B-Instruct" in plain and "--tensor-parallel-size 4" in plain
    assert "--gpu-memory-utilization 0.8" in plain


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--model", "nope", "--gpu", "h100-sxm"], "Unknown model 'nope'"),
        (["--model", "llama-3-70b", "--gpu", "h100-sxm", "--batch", "0"], "whole number from 1"),
        (["--model", "llama-3-70b", "--gpu", "h100-sxm", "--tp", "3"], "does not divide"),
        (["--model", "llama-3-70b", "--gpu", "h100-sxm", "--dtype", "fp4"], "Unknown dtype"),
        (["--gpu", "h100-sxm"], "Give --model and --gpu"),
    ],
)
def test_bad_input_exits_non_zero_with_one_line(args: list[str], message: str, db_url: str) -> None:
    result = subprocess.run(
        [sys.executable, "cli.py", "plan", *args],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    # A bound the option's own type holds is argparse's refusal: its usage line, then the error.
    by_argparse = "--batch" in args
    assert result.returncode == (2 if by_argparse else 1)
    assert message in result.stderr
    lines = result.stderr.strip().splitlines()
    assert "Traceback" not in result.stderr
    if by_argparse:
        assert lines[0].startswith("usage: shootout plan") and message in lines[-1], lines
    else:
        assert len(lines) == 1, lines
