"""What an engine says about its own settings, read when a run starts and kept with it, so
that Compare and the HTML report can set two runs' engines side by side as *they* reported
themselves: vLLM's `/version` and its `vllm:cache_config_info` labels (block size, prefix
caching, memory fraction...), llama.cpp's `/props`, SGLang's `/server_info`, TGI's `/info`,
Triton's `/v2`. Every read is bounded (services/core/http.py) and a missing one is left out.
"""

from __future__ import annotations

from prometheus_client.parser import text_string_to_metric_families

from services.core.json_types import JsonOut
from services.engines.metrics_read import MetricsReadError, read_metrics_text
from services.engines.probe import probe

#: Info-style gauges whose labels are settings (value 1, the settings in the labels).
INFO_SUFFIX = "_info"


def _info_metrics(
    metrics_url: str, api_key_env: str | None, deadline_s: float
) -> dict[str, dict[str, str]]:
    try:
        text = read_metrics_text(metrics_url, api_key_env, deadline_s)
    except MetricsReadError:
        return {}
    return info_labels(text)


def info_labels(text: str) -> dict[str, dict[str, str]]:
    """The labels of each `*_info` gauge in Prometheus text (prometheus-client's parser)."""
    found: dict[str, dict[str, str]] = {}
    try:
        for family in text_string_to_metric_families(text):
            if family.name.endswith(INFO_SUFFIX) or family.type == "info":
                for sample in family.samples:
                    labels = {
                        k: v for k, v in sample.labels.items() if k not in ("engine", "model_name")
                    }
                    if labels:
                        found[family.name] = labels
                        break
    except ValueError:
        return {}
    return found


def reported_settings(
    base_url: str,
    metrics_url: str | None = None,
    api_key_env: str | None = None,
    deadline_s: float = 5.0,
) -> JsonOut:
    """{"version": ..., "/props": {...}, "metrics_info": {"vllm:cache_config_info": {...}}}; {} when
    the engine does not answer (a run still starts: the requests will say what is wrong)."""
    try:
        result = probe(base_url, api_key_env=api_key_env, timeout_s=deadline_s)
    except Exception:  # noqa: BLE001 - settings are an extra; the benchmark decides about the engine
        return {}
    settings: JsonOut = dict(result.server_info)
    if result.version:
        settings["version"] = result.version
    if result.context_length:
        settings["context_length"] = result.context_length
    if metrics_url:
        info = _info_metrics(metrics_url, api_key_env, deadline_s)
        if info:
            settings["metrics_info"] = info
    return settings
