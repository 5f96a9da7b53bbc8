"""Issue 47: every "copy as code" sample runs, as it is pasted, against every local engine kind
(llama.cpp, vLLM, SGLang, Triton, SGLang's router): the curl command and the Python code each
stream an answer (Triton's through its generate_stream, where /v1/chat/completions is a 404)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from services.client import ChatRequest, as_curl, as_openai_python
from services.engines import SamplingParams

pytestmark = pytest.mark.engines


def test_every_sample_of_every_local_engine_streams_an_answer(local_engines: list) -> None:
    kinds = set()
    for record in local_engines:
        request = ChatRequest(
            base_url=record.base_url,
            model=record.model or "",
            messages=[{"role": "user", "content": "Say hello."}],
            params=SamplingParams(max_tokens=4, temperature=0.0),
            kind=record.kind,
            api_key_env=record.api_key_env,
        )
        python = subprocess.run(
            [sys.executable, "-c", as_openai_python(request)],
            capture_output=True,
            text=True,
            timeout=180,
        )
        assert python.returncode == 0 and python.stdout.strip(), (record.name, python.stderr[-500:])
        curl = subprocess.run(
            ["bash", "-c", as_curl(request) + " --fail --max-time 180"],
            capture_output=True,
            text=True,
            timeout=200,
        )
        assert curl.returncode == 0 and "data:" in curl.stdout, (record.name, curl.stderr[-500:])
        kinds.add(record.kind)
    assert len(kinds) >= 4, kinds
