"""Fingerprints of imported runs: what the other tool's file said, as its importer kept it in
the run's config (setup keys, load, the command line), and the served lengths from its numbers.
What a file does not say stays unknown."""

from __future__ import annotations

import re
from dataclasses import replace

from services.bench.comparability.fingerprint import Comparability, TokenCounter
from services.bench.results import EngineResults
from services.bench.summary import BenchSummary
from services.core import stored_json
from services.core.json_types import ForeignJson, JsonOut


def _level_of(rate: float | None, concurrency: float | None) -> tuple[str | None, str | None]:
    """A step's or a setup's load: a finite rate is an open loop (capped by a concurrency), an
    infinite or missing rate with a concurrency a closed one."""
    if rate is not None:
        cap = f", cap {concurrency:g}" if concurrency else ""
        return "open", f"rate {rate:g} req/s{cap}"
    if concurrency is not None:
        return "closed", f"concurrency {concurrency:g}"
    return None, None


def _reported_load(
    config: ForeignJson, summary: BenchSummary, engine: str
) -> tuple[float | None, float | None]:
    """The rate and concurrency of the step the engine's figures come from, else the setup's."""
    block = summary.engine(engine)
    step = block.from_step if block is not None else None
    rows = summary.steps_of(engine) or [r for r in summary.sweep if r.engine is None]
    row = (
        rows[step] if step is not None and 0 <= step < len(rows) else rows[0] if len(rows) == 1 else None
    )
    if row is not None:
        return stored_json.number(row.rate), stored_json.number(row.concurrency)
    return (
        stored_json.number(config.get("rate", config.get("request_rate"))),
        stored_json.number(config.get("concurrency", config.get("max_concurrency"))),
    )


def _flag(command: str, name: str) -> str | None:
    found = re.search(rf"{re.escape(name)}[ =]+\"?([^\s\"]+)", command)
    return found.group(1) if found else None


def _aiperf(config: ForeignJson, found: Comparability) -> Comparability:
    command = stored_json.text(stored_json.mapping(config.get("import")).get("cli_command")) or ""
    if command:
        # AIPerf counts with its own tokenizer unless told to take the server's usage.
        counter: TokenCounter = "engine usage" if "--use-server-token-count" in command else "tokenizer"
        found = replace(found, token_counter=counter)
    prompt = stored_json.mapping(config.get("prompt"))
    means = {
        key: stored_json.number(stored_json.mapping(prompt.get(key)).get("mean"))
        for key in ("input_tokens", "output_tokens")
    }
    if means["input_tokens"] is not None:
        found = replace(found, input_len_asked=means["input_tokens"])
    if means["output_tokens"] is not None:
        found = replace(found, output_len_asked=means["output_tokens"])
    warmup = _flag(command, "--warmup-request-count")
    return replace(
        found,
        warmup_requests=int(warmup) if warmup and warmup.isdigit() else 0 if command else None,
    )


def _sglang(config: ForeignJson, found: Comparability) -> Comparability:
    if config.get("dataset_name") != "random":
        return found
    asked_input = stored_json.number(config.get("random_input_len"))
    asked_output = stored_json.number(config.get("random_output_len"))
    if asked_input is not None:
        found = replace(found, input_len_asked=asked_input)
    if asked_output is not None:
        found = replace(found, output_len_asked=asked_output)
    return found


def imported_fingerprint(config: ForeignJson, summary: BenchSummary, engine: str) -> Comparability:
    imported = stored_json.mapping(config.get("import"))
    tool = stored_json.nonempty_text(imported.get("tool"))
    block = summary.engine(engine) or EngineResults()
    completed = block.completed

    def per_request(total: int | None) -> float | None:
        return total / completed if completed and total is not None else None

    loop, level = _level_of(*_reported_load(config, summary, engine))
    found = Comparability(
        source=tool,
        input_len_served=per_request(block.input_tokens),
        output_len_served=per_request(block.output_tokens),
        loop=loop,
        level=level,
        # Each tool times with its own client: two tools' TTFT and ITL differ by definition.
        timing=f"{tool}'s own client" if tool else None,
    )
    lowered = (tool or "").lower()
    if "aiperf" in lowered:
        return _aiperf(config, found)
    if "sglang" in lowered:
        return _sglang(config, found)
    return found


def fingerprints_of_import(config: ForeignJson, summary: BenchSummary) -> JsonOut:
    """The `comparability` an importer stores with the run (per engine), from its file."""
    return {name: imported_fingerprint(config, summary, name).to_json() for name in summary.engines}
