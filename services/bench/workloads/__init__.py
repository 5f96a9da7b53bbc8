"""Benchmark workloads: what each request asks, generated offline, seeded and reproducible.

A workload is an endless, deterministic stream of `Conversation`s (a single-turn request is
a conversation of one turn). The runner takes as many as the load shape needs, so a run
bounded by duration and one bounded by count see the same first requests, and every engine
of a run gets exactly the same prompts.

Prompt text is made of common English words, each one token in the usual BPE vocabularies,
so a prompt of N words is N tokens. `calibrate_vocabulary` checks that against the engine's
own tokenizer (its tokenize endpoint) and drops any word that is not one token there, which
makes the user-message length exact. The tokens the engine really counted (with its chat
template) are taken from its `usage` answer, never from this guess.

Kinds:

| kind | what it sends |
|---|---|
| synthetic | one user message of `input_len` tokens (fixed or from a length distribution) |
| long_prompt | the same with long prompts and short answers (prefill-bound) |
| shared_prefix | `prefix_groups` system prompts of `prefix_len` tokens, each followed by many different questions (prefix caching, RadixAttention) |
| multi_turn | conversations of `turns` turns that resend the whole history, with the real answers |
| structured | asks for JSON matching `schema` (response_format json_schema); the run reports the schema-valid rate |
| file | prompts from a JSONL file (`{"prompt": ...}` or `{"messages": [...]}`, optional `max_tokens`) |
| trace | the lengths (and, with the trace load shape, the arrival times) of a real Azure trace |

Length distributions (`length_dist`; `input_len`/`output_len` are the means):
fixed, uniform (mean +- `range_ratio`), normal (std = `range_ratio` x mean), and the real
request-length shapes `conversation` (alias `sharegpt`) and `code` from the Azure LLM
traces shipped in `services/bench/data/` (CC-BY 4.0, see its README), rescaled to the means.

Parts: `spec.py` (WorkloadSpec, kinds, labels), `vocabulary.py` (prompt words, calibration),
`traces.py` (the shipped traces), `prompt_files.py` (JSONL prompts), `conversations.py`
(the stream itself and the messages of each turn). Every name is importable from here.
"""

from services.bench.workloads.conversations import (
    Conversation,
    LengthSampler,
    Turn,
    build_messages,
    iter_conversations,
    run_salt,
    take_requests,
)
from services.bench.workloads.prompt_files import PromptFileEntry, load_prompt_file
from services.bench.workloads.spec import (
    DEFAULT_SCHEMA,
    DISTRIBUTION_ALIASES,
    LENGTH_DISTRIBUTIONS,
    STRUCTURED_INSTRUCTION,
    WORKLOAD_KINDS,
    WorkloadSpec,
    workload_label,
)
from services.bench.workloads.traces import (
    DATA_DIR,
    TRACE_ALIASES,
    TRACE_ATTRIBUTION,
    TRACES,
    TraceRow,
    load_trace,
)
from services.bench.workloads.vocabulary import (
    TAG_WORDS,
    VOCABULARY,
    Calibration,
    PromptText,
    calibrate_vocabulary,
)

__all__ = [
    "DATA_DIR",
    "DEFAULT_SCHEMA",
    "DISTRIBUTION_ALIASES",
    "LENGTH_DISTRIBUTIONS",
    "STRUCTURED_INSTRUCTION",
    "TAG_WORDS",
    "TRACES",
    "TRACE_ALIASES",
    "TRACE_ATTRIBUTION",
    "VOCABULARY",
    "WORKLOAD_KINDS",
    "Calibration",
    "Conversation",
    "LengthSampler",
    "PromptFileEntry",
    "PromptText",
    "TraceRow",
    "Turn",
    "WorkloadSpec",
    "build_messages",
    "calibrate_vocabulary",
    "iter_conversations",
    "load_prompt_file",
    "load_trace",
    "run_salt",
    "take_requests",
    "workload_label",
]
