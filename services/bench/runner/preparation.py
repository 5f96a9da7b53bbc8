"""Preparing an engine before its load: its model name (from /v1/models) and the prompt
vocabulary checked against its own tokenizer."""

from __future__ import annotations

import asyncio

import httpx2

from services.bench.spec import EngineTarget
from services.bench.workloads import VOCABULARY, Calibration, PromptText, calibrate_vocabulary
from services.client import ChatRequest, build_headers
from services.core import http
from services.engines import get_adapter

#: How long an engine may take to list its model or tokenize the prompt words (less where the
#: run's request time limit is less).
PREPARE_TIMEOUT_S = 10.0


async def discover_model(engine: EngineTarget, timeout_s: float = PREPARE_TIMEOUT_S) -> str | None:
    """The first model the engine lists in /v1/models (for engines given without one)."""
    headers = build_headers(
        ChatRequest(base_url=engine.base_url, model="", messages=[], api_key_env=engine.api_key_env)
    )
    url = engine.base_url.rstrip("/")
    url = (url if url.endswith("/v1") else url + "/v1") + "/models"
    try:
        answer = await http.fetch_async(
            "GET",
            url,
            headers={k: v for k, v in headers.items() if k == "authorization"},
            deadline_s=timeout_s,
            max_bytes=1024 * 1024,
        )
        body = answer.json() if answer.status == 200 else None
    except http.HttpError:  # no model list: the request itself will say what is wrong
        return None
    data = body.get("data") if isinstance(body, dict) else None
    if isinstance(data, list) and data and isinstance(data[0], dict) and data[0].get("id"):
        return str(data[0]["id"])
    return None


async def calibrate_prompt_text(
    engines: tuple[EngineTarget, ...], timeout_s: float = PREPARE_TIMEOUT_S
) -> tuple[PromptText, Calibration]:
    """Check the prompt vocabulary against the first engine that can tokenize."""
    for engine in engines:
        calibrated = await _calibrate_on(engine, timeout_s)
        if calibrated is not None:
            return calibrated
    return PromptText(), Calibration("none")


async def _calibrate_on(engine: EngineTarget, timeout_s: float) -> tuple[PromptText, Calibration] | None:
    """One engine's tokenizer asked about the vocabulary; None where it cannot tell (no
    tokenize endpoint, an error: calibration is an improvement, never a blocker)."""
    adapter = get_adapter(engine.kind)
    if adapter.tokenize_path is None:
        return None
    url = engine.base_url.rstrip("/").removesuffix("/v1") + adapter.tokenize_path
    try:
        async with httpx2.AsyncClient(timeout=timeout_s) as client:

            async def count(text: str) -> int | None:
                answer = await http.fetch_async(
                    "POST",
                    url,
                    json=adapter.tokenize_body(text, engine.model),
                    deadline_s=timeout_s,
                    max_bytes=4 * 1024 * 1024,
                    client=client,
                )
                if answer.status != 200:
                    return None
                return adapter.tokenize_count(answer.json())

            baseline = await count("")
            whole = " " + " ".join(VOCABULARY)
            total = await count(whole)
            if baseline is None or total is None:
                return None
            if total - baseline == len(VOCABULARY):
                return PromptText(), Calibration(
                    "tokenize", engine.name, len(VOCABULARY), len(VOCABULARY)
                )
            semaphore = asyncio.Semaphore(16)

            async def one(word: str) -> tuple[str, int | None]:
                async with semaphore:
                    return word, await count(" " + word)

            counted = await asyncio.gather(*(one(word) for word in VOCABULARY))
    except Exception:  # noqa: BLE001 - calibration is an improvement, never a blocker
        return None
    counts = {" " + word: n for word, n in counted if n is not None}
    kept, dropped = calibrate_vocabulary(counts, baseline)
    return PromptText(vocabulary=kept), Calibration(
        "tokenize", engine.name, len(VOCABULARY), len(kept), dropped
    )
