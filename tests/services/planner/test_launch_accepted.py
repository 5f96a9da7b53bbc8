"""The launch commands the Planner prints, and the flags a tuning run sweeps, are accepted by the
real engines installed here: each command's arguments go through the engine's own argument
parser (vLLM's and SGLang's argparse, llama-server's --help), so a renamed or removed flag in a
pinned release fails here instead of in a user's terminal."""

from __future__ import annotations

import itertools
import json
import shlex
import subprocess

import pytest

from services import local_engines
from services.engines.launching import LaunchOptions
from services.planner.launch import build_launch
from services.tune.spec import catalogue, setting_args

pytestmark = pytest.mark.engines

MODEL = "HuggingFaceTB/SmolLM2-135M-Instruct"

#: Each engine's own parser, run in its own environment: argv lists in on stdin, one verdict
#: (None, or the parser's complaint) per argv out.
PARSERS = {
    "vllm": """
import contextlib, io, json, sys
from vllm.entrypoints.launchers.cli_args import make_arg_parser
from vllm.utils.argparse_utils import FlexibleArgumentParser
parser = make_arg_parser(FlexibleArgumentParser())
out = []
for argv in json.load(sys.stdin):
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err):
            parser.parse_args(argv)
        out.append(None)
    except SystemExit:
        out.append(err.getvalue().strip().splitlines()[-1])
print("VERDICTS " + json.dumps(out))
""",
    "sglang": """
import argparse, contextlib, io, json, sys
from sglang.srt.server_args import ServerArgs
parser = argparse.ArgumentParser()
ServerArgs.add_cli_args(parser)
out = []
for argv in json.load(sys.stdin):
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err):
            parser.parse_args(argv)
        out.append(None)
    except SystemExit:
        out.append(err.getvalue().strip().splitlines()[-1])
print("VERDICTS " + json.dumps(out))
""",
}


def _argv(command: str, head: str) -> list[str]:
    """The arguments after `head` in a printed command (continuation lines joined)."""
    words = shlex.split(command.replace("\\\n", " "))
    first = shlex.split(head)
    for i in range(len(words)):
        if words[i : i + len(first)] == first:
            return words[i + len(first) :]
    raise AssertionError(f"{head!r} not in {command!r}")


def _planner_argvs(engine: str, head: str, model: str) -> list[list[str]]:
    found = []
    for caching, gpus, length in itertools.product((True, False), (1, 2), (2048, 8192)):
        options = LaunchOptions(
            engine=engine,
            model=model,
            gpus=gpus,
            max_model_len=length,
            prefix_caching=caching,
            served_model_name="smollm2",
        )
        command = build_launch(options)
        found.append(_argv(command.plain, head))
    return found


def _tune_argvs(kind: str, model_flag: str) -> list[list[str]]:
    """One argv per tunable setting of `kind`, at a value its check accepts."""
    sample = {
        "schedule-policy": "fcfs",
        "chunked-prefill-size": "512",
        "max-total-tokens": "16384",
        "mem-fraction-static": "0.5",
        "context-length": "2048",
        "max-model-len": "2048",
        "gpu-memory-utilization": "0.5",
        "max-num-batched-tokens": "2048",
        "block-size": "128",
        "kv-cache-dtype": "auto",
        "c": "4096",
        "b": "512",
        "ub": "256",
        "ctk": "f16",
        "ctv": "f16",
        "fa": "on",
        "cache-reuse": "256",
    }
    argvs = []
    for setting in catalogue()[kind]:
        values = ["on", "off"] if setting.switch else [sample.get(setting.key, "8")]
        for value in values:
            setting.check(value)  # a sample the setting refuses is this test's bug: say so
            args, _env = setting_args(kind, {setting.key: value})
            if args:
                argvs.append([model_flag, "m", *args])
    return argvs


def _verdicts(kind: str, argvs: list[list[str]]) -> list[str | None]:
    python = local_engines.engines_dir() / f"{kind}-venv" / "bin" / "python"
    assert python.exists(), f"{kind} is not installed here ({python}): run `cli.py local install`"
    done = subprocess.run(
        [str(python), "-c", PARSERS[kind]],
        input=json.dumps(argvs),
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    lines = [line for line in done.stdout.splitlines() if line.startswith("VERDICTS ")]
    assert lines, f"{kind}'s parser did not run: {done.stderr[-2000:]}"
    return json.loads(lines[-1][len("VERDICTS ") :])


@pytest.mark.parametrize(
    ("kind", "head", "model_flag"),
    [
        ("vllm", f"vllm serve {MODEL}", "--model"),
        ("sglang", "python -m sglang.launch_server", "--model-path"),
    ],
)
def test_planner_and_tune_flags_parse_in_the_real_engine(kind: str, head: str, model_flag: str) -> None:
    planner = _planner_argvs(kind, head, MODEL)
    if kind == "vllm":  # `vllm serve MODEL`: the parser of the api_server module takes --model
        planner = [["--model", MODEL, *argv] for argv in planner]
    tune = _tune_argvs(kind, model_flag)
    assert tune, f"no tunable settings of {kind}"
    argvs = planner + tune
    verdicts = _verdicts(kind, argvs)
    refused = [(" ".join(a), v) for a, v in zip(argvs, verdicts, strict=True) if v is not None]
    assert not refused, f"{kind} refuses: {refused}"


def test_a_wrong_flag_is_refused_by_the_real_parser() -> None:
    """The check has teeth: the same parser refuses a flag that does not exist."""
    verdicts = _verdicts("sglang", [["--model-path", "m", "--no-such-flag"]])
    assert verdicts[0] and "unrecognized arguments: --no-such-flag" in verdicts[0]


def test_llama_server_knows_every_planner_flag() -> None:
    server = local_engines.llama_server_path()
    assert server is not None, "llama.cpp is not installed here: run `cli.py local install`"
    text = subprocess.run(
        [str(server), "--help"], capture_output=True, text=True, timeout=60, check=False
    ).stdout
    known = {w.rstrip(",") for w in text.split() if w.startswith("-")}
    flags = set()
    for argv in _planner_argvs("llamacpp", "llama-server", "/models/smollm2.gguf"):
        flags |= {w for w in argv if w.startswith("-")}
    for argv in _tune_argvs("llamacpp", "-m"):
        flags |= {w for w in argv if w.startswith("-")}
    assert flags - known == set(), f"llama-server does not know: {sorted(flags - known)}"
