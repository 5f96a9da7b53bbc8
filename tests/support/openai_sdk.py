"""The openai SDK reading the same request: the reference our reader is tested against.

A test's tool, so `openai` is a test requirement (requirements-dev.txt), not the product's."""

from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass
from typing import Any

from services.client.records import ChatRequest
from services.client.request import chat_url, sdk_kwargs


@dataclass
class SdkReading:
    """What the openai SDK made of a stream: text per choice, usage, finish reasons."""

    texts: dict[int, str]
    finish_reasons: dict[int, str | None]
    usage: dict[str, Any] | None
    error: str | None = None


async def read_with_openai_sdk(request: ChatRequest) -> SdkReading:
    """Read the same request with `openai.AsyncOpenAI` (the reference our reader is tested against)."""
    import openai

    api_key = os.environ.get(request.api_key_env or "", "") or "none"
    base = chat_url(request.base_url).removesuffix("/chat/completions")
    texts: dict[int, str] = {}
    reasons: dict[int, str | None] = {}
    usage: dict[str, Any] | None = None
    async with openai.AsyncOpenAI(
        base_url=base, api_key=api_key, max_retries=0, timeout=request.read_timeout_s
    ) as sdk:
        try:
            async with asyncio.timeout(request.total_timeout_s):
                stream = await sdk.chat.completions.create(
                    **sdk_kwargs(request), extra_headers=request.headers or None
                )
                async for chunk in stream:
                    for choice in chunk.choices:
                        if choice.delta and choice.delta.content:
                            texts[choice.index] = texts.get(choice.index, "") + choice.delta.content
                        if choice.finish_reason:
                            reasons[choice.index] = choice.finish_reason
                    if chunk.usage is not None:
                        usage = chunk.usage.model_dump(exclude_none=True)
        except Exception as error:  # noqa: BLE001 - compared, not raised
            return SdkReading(texts, reasons, usage, error=f"{type(error).__name__}: {error}")
    return SdkReading(texts, reasons, usage)
