"""Any OpenAI-compatible server we do not recognise: chat works, no metrics assumed."""

from __future__ import annotations

from services.engines.base import EngineAdapter
from services.engines.registry import register


@register
class OpenAICompatibleAdapter(EngineAdapter):
    kind = "openai"
    label = "OpenAI-compatible"
    priority = -100
