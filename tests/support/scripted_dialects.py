"""The scripted server's engine dialects: what it says of itself and on /metrics in the words of
vLLM, SGLang, llama.cpp or Triton, so that every path an explanation reads evidence through (each
adapter's normalised signals, its reported batch cap) runs against a server whose truth is known.

The numbers are the server's own: its slots are a real queue (`--slots N`: a request beyond them
waits for one to free, counted as waiting, its wait timed), and every counter is what it served.
Names, types and labels follow the engines' real expositions (../shared/fixtures/metrics/), so the
adapters read them as they read the engines. Triton's dialect is its metrics and `/v2` only: its
requests take Triton's own generate protocol, which the server does not speak.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

DIALECTS = ("vllm", "sglang", "llamacpp", "triton")
#: Upper bounds of the time histograms, as vLLM's and SGLang's own coarse buckets.
BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)
#: `owned_by` in /v1/models, which the probe reads first to tell the kind.
OWNED_BY = {"vllm": "vllm", "sglang": "sglang", "llamacpp": "llamacpp", "triton": "scripted"}
#: The KV cache a request is said to take when the server has no slots: 1/512 of it.
UNSLOTTED_CAPACITY = 512


@dataclass
class Histogram:
    """A Prometheus histogram's state: cumulative counts per bucket, sum and count."""

    counts: list[int] = field(default_factory=lambda: [0] * len(BUCKETS))
    total: float = 0.0
    count: int = 0

    def observe(self, value: float) -> None:
        for index, bound in enumerate(BUCKETS):
            if value <= bound:
                self.counts[index] += 1
        self.total += value
        self.count += 1

    def lines(self, name: str, labels: str, scale: float = 1.0) -> list[str]:
        out = [
            f'{name}_bucket{{{labels},le="{bound * scale:g}"}} {self.counts[index]}'
            for index, bound in enumerate(BUCKETS)
        ]
        out.append(f'{name}_bucket{{{labels},le="+Inf"}} {self.count}')
        out.append(f"{name}_sum{{{labels}}} {self.total * scale}")
        out.append(f"{name}_count{{{labels}}} {self.count}")
        return out


@dataclass
class Served:
    """What the server served, for its /metrics: gauges now, counters and histograms so far."""

    running: int = 0
    waiting: int = 0
    requests: int = 0
    prompt_tokens: int = 0
    cached_tokens: int = 0
    generation_tokens: int = 0
    queue: Histogram = field(default_factory=Histogram)
    prefill: Histogram = field(default_factory=Histogram)
    ttft: Histogram = field(default_factory=Histogram)
    decode: Histogram = field(default_factory=Histogram)
    e2e: Histogram = field(default_factory=Histogram)

    def finished(self, queue_s: float, prefill_s: float, decode_s: float) -> None:
        self.queue.observe(queue_s)
        self.prefill.observe(prefill_s)
        self.ttft.observe(queue_s + prefill_s)
        self.decode.observe(decode_s)
        self.e2e.observe(queue_s + prefill_s + decode_s)


def _quoted(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _usage(served: Served, slots: int) -> float:
    return min(1.0, served.running / (slots or UNSLOTTED_CAPACITY))


def _family(name: str, kind: str, help_text: str, samples: list[str]) -> list[str]:
    return [f"# HELP {name} {help_text}", f"# TYPE {name} {kind}", *samples]


def _vllm(served: Served, model: str, slots: int) -> list[str]:
    m = f'model_name="{model}"'
    return [
        *_family(
            "vllm:num_requests_running",
            "gauge",
            "Number of requests in model execution batches.",
            [f"vllm:num_requests_running{{{m}}} {served.running}"],
        ),
        *_family(
            "vllm:num_requests_waiting",
            "gauge",
            "Number of requests waiting to be processed.",
            [f"vllm:num_requests_waiting{{{m}}} {served.waiting}"],
        ),
        *_family(
            "vllm:kv_cache_usage_perc",
            "gauge",
            "KV-cache usage. 1 means 100 percent usage.",
            [f"vllm:kv_cache_usage_perc{{{m}}} {_usage(served, slots):.4f}"],
        ),
        *_family(
            "vllm:num_preemptions_total",
            "counter",
            "Cumulative number of preemption from the engine.",
            [f"vllm:num_preemptions_total{{{m}}} 0"],
        ),
        *_family(
            "vllm:prompt_tokens_total",
            "counter",
            "Number of prefill tokens processed.",
            [f"vllm:prompt_tokens_total{{{m}}} {served.prompt_tokens}"],
        ),
        *_family(
            "vllm:generation_tokens_total",
            "counter",
            "Number of generation tokens processed.",
            [f"vllm:generation_tokens_total{{{m}}} {served.generation_tokens}"],
        ),
        *_family(
            "vllm:request_success_total",
            "counter",
            "Count of successfully processed requests.",
            [f'vllm:request_success_total{{finished_reason="stop",{m}}} {served.requests}'],
        ),
        *_family(
            "vllm:request_queue_time_seconds",
            "histogram",
            "Histogram of time spent in WAITING phase for request.",
            served.queue.lines("vllm:request_queue_time_seconds", m),
        ),
        *_family(
            "vllm:request_prefill_time_seconds",
            "histogram",
            "Histogram of time spent in PREFILL phase for request.",
            served.prefill.lines("vllm:request_prefill_time_seconds", m),
        ),
        *_family(
            "vllm:request_decode_time_seconds",
            "histogram",
            "Histogram of time spent in DECODE phase for request.",
            served.decode.lines("vllm:request_decode_time_seconds", m),
        ),
    ]


def _sglang(served: Served, model: str, slots: int) -> list[str]:
    rank = f'engine_type="unified",model_name="{model}",moe_ep_rank="0",pp_rank="0",tp_rank="0"'
    stream = f'engine_type="unified",is_streaming="true",model_name="{model}"'
    return [
        *_family(
            "sglang:num_running_reqs",
            "gauge",
            "The number of running requests.",
            [f"sglang:num_running_reqs{{{rank}}} {float(served.running)}"],
        ),
        *_family(
            "sglang:num_queue_reqs",
            "gauge",
            "The number of requests in the waiting queue.",
            [f"sglang:num_queue_reqs{{{rank}}} {float(served.waiting)}"],
        ),
        *_family(
            "sglang:token_usage",
            "gauge",
            "The token usage.",
            [f"sglang:token_usage{{{rank}}} {_usage(served, slots):.4f}"],
        ),
        *_family(
            "sglang:num_retracted_requests_total",
            "counter",
            "Total number of retracted requests due to kvcache full.",
            [f"sglang:num_retracted_requests_total{{{rank}}} 0.0"],
        ),
        *_family(
            "sglang:prompt_tokens_total",
            "counter",
            "Number of prefill tokens processed.",
            [f"sglang:prompt_tokens_total{{{stream}}} {float(served.prompt_tokens)}"],
        ),
        *_family(
            "sglang:generation_tokens_total",
            "counter",
            "Number of generation tokens processed.",
            [f"sglang:generation_tokens_total{{{stream}}} {float(served.generation_tokens)}"],
        ),
        *_family(
            "sglang:cached_tokens_total",
            "counter",
            "Number of cached prompt tokens.",
            [f"sglang:cached_tokens_total{{{stream}}} {float(served.cached_tokens)}"],
        ),
        *_family(
            "sglang:queue_time_seconds",
            "histogram",
            "Histogram of queueing time in seconds.",
            served.queue.lines("sglang:queue_time_seconds", rank),
        ),
        *_family(
            "sglang:per_stage_req_latency_seconds",
            "histogram",
            "The latency of each stage of requests.",
            [
                *served.prefill.lines(
                    "sglang:per_stage_req_latency_seconds", f'{rank},stage="prefill_forward"'
                ),
                *served.decode.lines(
                    "sglang:per_stage_req_latency_seconds", f'{rank},stage="decode_forward"'
                ),
            ],
        ),
        *_family(
            "sglang:time_to_first_token_seconds",
            "histogram",
            "Histogram of time to first token in seconds.",
            served.ttft.lines("sglang:time_to_first_token_seconds", stream),
        ),
        *_family(
            "sglang:e2e_request_latency_seconds",
            "histogram",
            "Histogram of End-to-end request latency in seconds",
            served.e2e.lines("sglang:e2e_request_latency_seconds", stream),
        ),
    ]


def _llamacpp(served: Served, slots: int) -> list[str]:
    # llama-server's own exposition: no labels, counters with _total, its slots' gauges.
    computed = served.prompt_tokens - served.cached_tokens
    return [
        *_family(
            "llamacpp:prompt_tokens_total",
            "counter",
            "Number of prompt tokens processed.",
            [f"llamacpp:prompt_tokens_total {computed}"],
        ),
        *_family(
            "llamacpp:prompt_tokens_cached_total",
            "counter",
            "Number of prompt tokens reused from the cache.",
            [f"llamacpp:prompt_tokens_cached_total {served.cached_tokens}"],
        ),
        *_family(
            "llamacpp:prompt_seconds_total",
            "counter",
            "Prompt process time",
            [f"llamacpp:prompt_seconds_total {served.prefill.total}"],
        ),
        *_family(
            "llamacpp:tokens_predicted_total",
            "counter",
            "Number of generation tokens processed.",
            [f"llamacpp:tokens_predicted_total {served.generation_tokens}"],
        ),
        *_family(
            "llamacpp:tokens_predicted_seconds_total",
            "counter",
            "Predict process time",
            [f"llamacpp:tokens_predicted_seconds_total {served.decode.total}"],
        ),
        *_family(
            "llamacpp:requests_processing",
            "gauge",
            "Number of requests processing.",
            [f"llamacpp:requests_processing {served.running}"],
        ),
        *_family(
            "llamacpp:requests_deferred",
            "gauge",
            "Number of requests deferred.",
            [f"llamacpp:requests_deferred {served.waiting}"],
        ),
        *_family(
            "llamacpp:n_busy_slots_per_decode",
            "counter",
            "Average number of busy slots per llama_decode() call",
            [f"llamacpp:n_busy_slots_per_decode {min(served.running, slots or served.running)}"],
        ),
    ]


def _triton(served: Served, model: str) -> list[str]:
    m = f'model="{model}",version="1"'
    compute_us = round((served.prefill.total + served.decode.total) * 1e6)
    return [
        *_family(
            "nv_inference_request_success",
            "counter",
            "Number of successful inference requests, all batch sizes",
            [f"nv_inference_request_success{{{m}}} {served.requests}"],
        ),
        *_family(
            "nv_inference_count",
            "counter",
            "Number of inferences performed (does not include cached requests)",
            [f"nv_inference_count{{{m}}} {served.requests}"],
        ),
        *_family(
            "nv_inference_exec_count",
            "counter",
            "Number of model executions performed (does not include cached requests)",
            [f"nv_inference_exec_count{{{m}}} {served.requests}"],
        ),
        *_family(
            "nv_inference_pending_request_count",
            "gauge",
            "Instantaneous number of pending requests awaiting execution per-model.",
            [f"nv_inference_pending_request_count{{{m}}} {served.waiting}"],
        ),
        *_family(
            "nv_inference_request_duration_us",
            "counter",
            "Cumulative inference request duration in microseconds (includes cached requests)",
            [f"nv_inference_request_duration_us{{{m}}} {round(served.e2e.total * 1e6)}"],
        ),
        *_family(
            "nv_inference_queue_duration_us",
            "counter",
            "Cumulative inference queuing duration in microseconds (includes cached requests)",
            [f"nv_inference_queue_duration_us{{{m}}} {round(served.queue.total * 1e6)}"],
        ),
        *_family(
            "nv_inference_compute_infer_duration_us",
            "counter",
            "Cumulative compute inference duration in microseconds (does not include cached requests)",
            [f"nv_inference_compute_infer_duration_us{{{m}}} {compute_us}"],
        ),
    ]


def metrics_text(dialect: str, served: Served, served_model: str, slots: int) -> str:
    """/metrics in the dialect's words, from what the server served."""
    model = _quoted(served_model)
    if dialect == "sglang":
        lines = _sglang(served, model, slots)
    elif dialect == "llamacpp":
        lines = _llamacpp(served, slots)
    elif dialect == "triton":
        lines = _triton(served, model)
    else:
        lines = _vllm(served, model, slots)
    return "\n".join([*lines, ""])


def info_routes(dialect: str, served_model: str, version: str, slots: int) -> dict[str, str]:
    """The JSON each dialect answers about itself on its own paths (GET), by path."""
    if dialect == "llamacpp":
        props = {
            "total_slots": slots or 1,
            "build_info": f"b0-{version}",
            "model_path": served_model,
            "default_generation_settings": {"n_ctx": 8192},
        }
        return {"/props": json.dumps(props)}
    if dialect == "sglang":
        info = {"version": version, "model_path": served_model, "context_length": 8192}
        if slots:
            info["max_running_requests"] = slots
        return {"/server_info": json.dumps(info), "/get_server_info": json.dumps(info)}
    if dialect == "triton":
        return {"/v2": json.dumps({"name": "triton", "version": version, "extensions": []})}
    return {}
