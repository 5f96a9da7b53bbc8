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
"""

from __future__ import annotations

import csv
import gzip
import hashlib
import json
import random
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path
from typing import Any

from services.errors import ValidationError

DATA_DIR = Path(__file__).resolve().parent / "data"

WORKLOAD_KINDS = (
    "synthetic",
    "long_prompt",
    "shared_prefix",
    "multi_turn",
    "structured",
    "file",
    "trace",
)
LENGTH_DISTRIBUTIONS = ("fixed", "uniform", "normal", "conversation", "code")
DISTRIBUTION_ALIASES = {"sharegpt": "conversation", "conv": "conversation", "constant": "fixed"}
TRACES = {"conversation": "azure_llm_2023_conv.csv.gz", "code": "azure_llm_2023_code.csv.gz"}
TRACE_ALIASES = {"conv": "conversation", "sharegpt": "conversation"}

TRACE_ATTRIBUTION = (
    "Azure LLM inference traces 2023 (Azure Public Dataset, CC-BY 4.0): Patel et al., "
    '"Splitwise: Efficient generative LLM inference using phase splitting", ISCA 2024.'
)

# Common English words that are one token each (with their leading space) in GPT-2-style
# and SentencePiece vocabularies; calibrate_vocabulary() checks this against the engine.
VOCABULARY: tuple[str, ...] = (
    "the",
    "of",
    "and",
    "to",
    "in",
    "is",
    "was",
    "for",
    "on",
    "are",
    "with",
    "as",
    "be",
    "at",
    "by",
    "this",
    "have",
    "from",
    "or",
    "one",
    "had",
    "not",
    "but",
    "what",
    "all",
    "were",
    "when",
    "we",
    "there",
    "can",
    "an",
    "your",
    "which",
    "their",
    "said",
    "if",
    "do",
    "will",
    "each",
    "about",
    "how",
    "up",
    "out",
    "them",
    "then",
    "she",
    "many",
    "some",
    "so",
    "these",
    "would",
    "other",
    "into",
    "has",
    "more",
    "her",
    "two",
    "like",
    "him",
    "see",
    "time",
    "could",
    "no",
    "make",
    "than",
    "first",
    "been",
    "its",
    "who",
    "now",
    "people",
    "my",
    "made",
    "over",
    "did",
    "down",
    "only",
    "way",
    "find",
    "use",
    "may",
    "water",
    "long",
    "little",
    "very",
    "after",
    "words",
    "called",
    "just",
    "where",
    "most",
    "know",
    "get",
    "through",
    "back",
    "much",
    "go",
    "good",
    "new",
    "write",
    "our",
    "me",
    "man",
    "too",
    "any",
    "day",
    "same",
    "right",
    "look",
    "think",
    "also",
    "around",
    "another",
    "came",
    "come",
    "work",
    "three",
    "word",
    "must",
    "because",
    "does",
    "part",
    "even",
    "place",
    "well",
    "such",
    "here",
    "take",
    "why",
    "things",
    "help",
    "put",
    "years",
    "different",
    "away",
    "again",
    "off",
    "went",
    "old",
    "number",
    "great",
    "tell",
    "men",
    "say",
    "small",
    "every",
    "found",
    "still",
    "between",
    "name",
    "should",
    "home",
    "big",
    "give",
    "air",
    "line",
    "set",
    "own",
    "under",
    "read",
    "last",
    "never",
    "us",
    "left",
    "end",
    "along",
    "while",
    "might",
    "next",
    "sound",
    "below",
    "saw",
    "something",
    "thought",
    "both",
    "few",
    "those",
    "always",
    "looked",
    "show",
    "large",
    "often",
    "together",
    "asked",
    "house",
    "world",
    "going",
    "want",
    "school",
    "important",
    "until",
    "form",
    "food",
    "keep",
    "children",
    "feet",
    "land",
    "side",
    "without",
    "boy",
    "once",
    "animals",
    "life",
    "enough",
    "took",
    "sometimes",
    "four",
    "head",
    "above",
    "kind",
    "began",
    "almost",
    "live",
    "page",
    "got",
    "earth",
    "need",
    "far",
    "hand",
    "high",
    "year",
    "mother",
    "light",
    "parts",
    "country",
    "father",
    "let",
    "night",
    "following",
    "picture",
    "being",
    "study",
    "second",
    "eyes",
    "soon",
    "times",
    "story",
    "boys",
    "since",
    "white",
    "days",
    "ever",
    "paper",
    "hard",
    "near",
    "sentence",
    "better",
    "best",
    "across",
    "during",
    "today",
    "others",
    "however",
    "sure",
    "means",
    "knew",
    "try",
    "told",
    "young",
    "miles",
    "sun",
    "ways",
    "thing",
    "whole",
    "hear",
    "example",
    "heard",
    "several",
    "change",
    "answer",
    "room",
    "sea",
    "against",
    "top",
    "turned",
    "learn",
    "point",
    "city",
    "play",
    "toward",
    "five",
    "using",
    "himself",
    "usually",
    "money",
    "seen",
    "car",
    "morning",
    "given",
    "body",
    "family",
    "later",
    "order",
    "river",
    "short",
)

DEFAULT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "name": {"type": "string"},
        "age": {"type": "integer", "minimum": 0, "maximum": 150},
        "city": {"type": "string"},
        "hobbies": {"type": "array", "items": {"type": "string"}, "maxItems": 5},
    },
    "required": ["name", "age", "city", "hobbies"],
    "additionalProperties": False,
}

STRUCTURED_INSTRUCTION = (
    "Invent a fictional person and answer only with a JSON object with the fields name, age, city "
    "and hobbies. Background words follow, ignore them:"
)
TAG_WORDS = 4


@dataclass(frozen=True)
class WorkloadSpec:
    """What the requests of a run ask. Lengths in tokens; `input_len`/`output_len` are means."""

    kind: str = "synthetic"
    input_len: int = 128
    output_len: int = 128
    length_dist: str = "fixed"
    range_ratio: float = 0.5
    max_input_len: int | None = None
    max_output_len: int | None = None
    prefix_groups: int = 4
    prefix_len: int = 256
    turns: int = 3
    schema: dict[str, Any] | None = None
    prompts_file: str | None = None
    trace: str = "conversation"
    length_scale: float = 1.0
    seed: int = 0
    #: Ask the engine for exactly output_len tokens (ignore_eos / min_tokens where it can).
    fixed_output: bool = True

    def validate(self) -> WorkloadSpec:
        """The spec with aliases resolved; raises ValidationError with a message for a user."""
        spec = replace(
            self,
            length_dist=DISTRIBUTION_ALIASES.get(self.length_dist, self.length_dist),
            trace=TRACE_ALIASES.get(self.trace, self.trace),
        )
        if spec.kind not in WORKLOAD_KINDS:
            raise ValidationError(
                f"Unknown workload {spec.kind!r}; choose one of {', '.join(WORKLOAD_KINDS)}."
            )
        if spec.length_dist not in LENGTH_DISTRIBUTIONS:
            raise ValidationError(
                f"Unknown length distribution {self.length_dist!r}; choose one of "
                f"{', '.join(LENGTH_DISTRIBUTIONS)} (or sharegpt)."
            )
        if spec.input_len < 1 or spec.output_len < 1:
            raise ValidationError("Input and output lengths must be at least 1 token.")
        if spec.input_len > 1_000_000 or spec.output_len > 1_000_000:
            raise ValidationError("Input and output lengths above a million tokens are not sensible.")
        if not 0 <= spec.range_ratio <= 1:
            raise ValidationError("The length range ratio must be between 0 and 1.")
        if spec.kind == "shared_prefix" and (spec.prefix_groups < 1 or spec.prefix_len < 1):
            raise ValidationError(
                "Shared-prefix workloads need at least one group and a prefix of at least 1 token."
            )
        if spec.kind == "multi_turn" and not 1 <= spec.turns <= 100:
            raise ValidationError("Multi-turn conversations have 1 to 100 turns.")
        if spec.kind == "trace" and spec.trace not in TRACES:
            raise ValidationError(f"Unknown trace {self.trace!r}; choose one of {', '.join(TRACES)}.")
        if spec.length_scale <= 0:
            raise ValidationError("The length scale must be positive.")
        if spec.kind == "file":
            if not spec.prompts_file:
                raise ValidationError("The file workload needs a JSONL prompts file.")
            load_prompt_file(spec.prompts_file)
        if spec.kind == "structured" and spec.schema is not None and not isinstance(spec.schema, dict):
            raise ValidationError("The JSON schema must be a JSON object.")
        if spec.schema is not None:
            _check_schema(spec.schema)
        return spec

    @property
    def uses_fixed_output(self) -> bool:
        """Structured answers end with their JSON: forcing a length would break them."""
        return self.fixed_output and self.kind != "structured"

    @property
    def effective_schema(self) -> dict[str, Any] | None:
        if self.kind != "structured":
            return None
        return self.schema or DEFAULT_SCHEMA


def _check_schema(schema: dict[str, Any]) -> None:
    import jsonschema

    try:
        jsonschema.validators.validator_for(schema).check_schema(schema)
    except jsonschema.SchemaError as error:
        raise ValidationError(f"The JSON schema is not valid: {error.message}") from None


@dataclass(frozen=True, slots=True)
class Turn:
    """One request: the user message added to the conversation, and the answer length asked."""

    index: int
    content: str
    input_len: int
    output_len: int
    #: Whole message list from a prompt file (replaces system + history + content).
    messages: tuple[dict[str, Any], ...] | None = None


@dataclass(frozen=True, slots=True)
class Conversation:
    """A unit of work: its turns run one after another, each resending the history."""

    id: int
    turns: tuple[Turn, ...]
    system: str | None = None
    schema: dict[str, Any] | None = None
    group: int | None = None
    #: Seconds after the start when it arrives (trace replay only).
    arrival_s: float | None = None


@dataclass
class PromptText:
    """Deterministic text of an exact number of vocabulary words."""

    vocabulary: tuple[str, ...] = VOCABULARY
    tokens_per_word: float = 1.0

    def words(self, rng: random.Random, tokens: int) -> str:
        count = max(1, round(tokens / self.tokens_per_word))
        vocab = self.vocabulary
        return " ".join(vocab[int(rng.random() * len(vocab))] for _ in range(count))

    def tag(self, salt: str, words: int = 4) -> str:
        """A few words derived from `salt`: prompts of different runs never share a prefix."""
        digest = hashlib.sha256(salt.encode()).digest()
        return " ".join(self.vocabulary[digest[i] % len(self.vocabulary)] for i in range(words))


@dataclass(frozen=True)
class PromptFileEntry:
    prompt: str | None
    messages: tuple[dict[str, Any], ...] | None
    max_tokens: int | None


def load_prompt_file(path: str) -> list[PromptFileEntry]:
    """Read a JSONL prompt file; one clear ValidationError for the first bad line."""
    file = Path(path).expanduser()
    if not file.is_file():
        raise ValidationError(f"Prompt file {path!r} does not exist.")
    entries: list[PromptFileEntry] = []
    with file.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as error:
                raise ValidationError(f"{file.name} line {number}: not JSON ({error.msg}).") from None
            if not isinstance(row, dict):
                raise ValidationError(f"{file.name} line {number}: expected a JSON object.")
            prompt = row.get("prompt")
            messages = row.get("messages")
            if not isinstance(prompt, str) and not (isinstance(messages, list) and messages):
                raise ValidationError(
                    f'{file.name} line {number}: needs a "prompt" string or a "messages" list.'
                )
            if messages is not None and not all(isinstance(m, dict) and "role" in m for m in messages):
                raise ValidationError(
                    f"{file.name} line {number}: each message needs a role and content."
                )
            max_tokens = row.get("max_tokens", row.get("output_len"))
            if max_tokens is not None and (not isinstance(max_tokens, int) or max_tokens < 1):
                raise ValidationError(
                    f"{file.name} line {number}: max_tokens must be a positive integer."
                )
            entries.append(
                PromptFileEntry(
                    prompt=prompt if isinstance(prompt, str) else None,
                    messages=tuple(messages) if isinstance(messages, list) else None,
                    max_tokens=max_tokens,
                )
            )
    if not entries:
        raise ValidationError(f"Prompt file {file.name} holds no prompts.")
    return entries


@dataclass(frozen=True)
class TraceRow:
    offset_s: float
    input_len: int
    output_len: int


@lru_cache(maxsize=4)
def load_trace(name: str) -> tuple[TraceRow, ...]:
    """The rows of a shipped trace (arrival offset, context tokens, generated tokens)."""
    name = TRACE_ALIASES.get(name, name)
    if name not in TRACES:
        raise ValidationError(f"Unknown trace {name!r}; choose one of {', '.join(TRACES)}.")
    with gzip.open(DATA_DIR / TRACES[name], "rt", encoding="utf-8", newline="") as handle:
        reader = csv.reader(handle)
        next(reader)
        return tuple(TraceRow(int(row[0]) / 1000, int(row[1]), int(row[2])) for row in reader)


@lru_cache(maxsize=4)
def _trace_means(name: str) -> tuple[float, float]:
    rows = load_trace(name)
    return sum(r.input_len for r in rows) / len(rows), sum(r.output_len for r in rows) / len(rows)


@dataclass
class LengthSampler:
    """Draws (input, output) lengths for one workload from its distribution, seeded."""

    spec: WorkloadSpec
    rng: random.Random

    def _one(self, mean: int) -> int:
        dist = self.spec.length_dist
        if dist == "uniform":
            low = max(1, round(mean * (1 - self.spec.range_ratio)))
            high = max(low, round(mean * (1 + self.spec.range_ratio)))
            return self.rng.randint(low, high)
        if dist == "normal":
            return max(1, round(self.rng.gauss(mean, mean * self.spec.range_ratio)))
        return mean

    def sample(self) -> tuple[int, int]:
        spec = self.spec
        if spec.length_dist in TRACES:
            rows = load_trace(spec.length_dist)
            row = rows[int(self.rng.random() * len(rows))]
            mean_in, mean_out = _trace_means(spec.length_dist)
            input_len = max(1, round(row.input_len * spec.input_len / mean_in))
            output_len = max(1, round(row.output_len * spec.output_len / mean_out))
        else:
            input_len, output_len = self._one(spec.input_len), self._one(spec.output_len)
        return self.clip(input_len, output_len)

    def clip(self, input_len: int, output_len: int) -> tuple[int, int]:
        if self.spec.max_input_len:
            input_len = min(input_len, self.spec.max_input_len)
        if self.spec.max_output_len:
            output_len = min(output_len, self.spec.max_output_len)
        return max(1, input_len), max(1, output_len)


def iter_conversations(
    spec: WorkloadSpec, *, salt: str = "", text: PromptText | None = None
) -> Iterator[Conversation]:
    """The workload's endless, deterministic stream of conversations.

    `salt` (a run id, a sweep step) starts every prompt with a few words of its own so a
    run never hits the prefix cache that an earlier run warmed; within one run it is the
    same for every engine, and within a shared-prefix group the prefix stays shared.
    """
    spec = spec.validate()
    text = text or PromptText()
    rng = random.Random(f"{spec.seed}:{spec.kind}")
    lengths = LengthSampler(spec, rng)
    tag = text.tag(salt, TAG_WORDS) + " " if salt else ""
    tag_words = TAG_WORDS if salt else 0

    def body(input_len: int) -> str:
        # The salt words count toward the length so the prompt stays exactly input_len tokens.
        return tag + text.words(rng, max(1, input_len - tag_words))

    request_index = 0
    conversation_id = 0

    def next_index() -> int:
        nonlocal request_index
        request_index += 1
        return request_index - 1

    if spec.kind == "shared_prefix":
        prefix_rng = random.Random(f"{spec.seed}:prefixes")
        prefixes = [
            tag + text.words(prefix_rng, max(1, spec.prefix_len - tag_words))
            for _ in range(spec.prefix_groups)
        ]
        while True:
            group = conversation_id % spec.prefix_groups
            input_len, output_len = lengths.sample()
            content = text.words(rng, input_len)
            yield Conversation(
                conversation_id,
                (Turn(next_index(), content, input_len, output_len),),
                system=prefixes[group],
                group=group,
            )
            conversation_id += 1
    elif spec.kind == "multi_turn":
        while True:
            turns = []
            for turn_number in range(spec.turns):
                input_len, output_len = lengths.sample()
                content = body(input_len) if turn_number == 0 else text.words(rng, input_len)
                turns.append(Turn(next_index(), content, input_len, output_len))
            yield Conversation(conversation_id, tuple(turns))
            conversation_id += 1
    elif spec.kind == "file":
        entries = load_prompt_file(spec.prompts_file or "")
        while True:
            for entry in entries:
                output_len = entry.max_tokens or lengths.sample()[1]
                if entry.messages is not None:
                    turn = Turn(next_index(), "", 0, output_len, messages=entry.messages)
                else:
                    turn = Turn(next_index(), entry.prompt or "", 0, output_len)
                yield Conversation(conversation_id, (turn,))
                conversation_id += 1
    elif spec.kind == "trace":
        rows = load_trace(spec.trace)
        span = rows[-1].offset_s + 1.0
        cycle = 0
        while True:
            for row in rows:
                input_len, output_len = lengths.clip(
                    max(1, round(row.input_len * spec.length_scale)),
                    max(1, round(row.output_len * spec.length_scale)),
                )
                content = body(input_len)
                yield Conversation(
                    conversation_id,
                    (Turn(next_index(), content, input_len, output_len),),
                    arrival_s=cycle * span + row.offset_s,
                )
                conversation_id += 1
            cycle += 1
    else:  # synthetic, long_prompt, structured
        schema = spec.effective_schema
        while True:
            input_len, output_len = lengths.sample()
            if schema is not None:
                content = f"{STRUCTURED_INSTRUCTION} {body(input_len)}"
            else:
                content = body(input_len)
            yield Conversation(
                conversation_id, (Turn(next_index(), content, input_len, output_len),), schema=schema
            )
            conversation_id += 1


def take_requests(conversations: Iterator[Conversation], requests: int) -> list[Conversation]:
    """The first conversations holding `requests` requests in all (the last one cut short)."""
    taken: list[Conversation] = []
    remaining = requests
    while remaining > 0:
        conversation = next(conversations)
        if len(conversation.turns) > remaining:
            conversation = replace(conversation, turns=conversation.turns[:remaining])
        taken.append(conversation)
        remaining -= len(conversation.turns)
    return taken


def build_messages(
    conversation: Conversation, turn_number: int, answers: list[str]
) -> list[dict[str, Any]]:
    """The messages of turn `turn_number`: system prompt, earlier turns with their real answers, the new one."""
    turn = conversation.turns[turn_number]
    if turn.messages is not None:
        return list(turn.messages)
    messages: list[dict[str, Any]] = []
    if conversation.system:
        messages.append({"role": "system", "content": conversation.system})
    for earlier, answer in zip(conversation.turns[:turn_number], answers):
        messages.append({"role": "user", "content": earlier.content})
        messages.append({"role": "assistant", "content": answer})
    messages.append({"role": "user", "content": turn.content})
    return messages


def workload_label(spec: WorkloadSpec) -> str:
    """A short human name, stored in Run.workload for filtering."""
    if spec.kind == "trace":
        return f"trace-{spec.trace}"
    if spec.kind == "file":
        return f"file:{Path(spec.prompts_file or '').name}"
    label = f"{spec.kind} {spec.input_len}/{spec.output_len}"
    if spec.length_dist != "fixed":
        label += f" {spec.length_dist}"
    if spec.kind == "shared_prefix":
        label += f" {spec.prefix_groups}x{spec.prefix_len}"
    if spec.kind == "multi_turn":
        label += f" {spec.turns} turns"
    return label


@dataclass
class Calibration:
    """What calibrate_vocabulary found, stored with the run."""

    method: str
    engine: str | None = None
    words_checked: int = 0
    words_kept: int = 0
    dropped: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "method": self.method,
            "engine": self.engine,
            "words_checked": self.words_checked,
            "words_kept": self.words_kept,
            "dropped": self.dropped[:20],
        }


def calibrate_vocabulary(
    token_counts: dict[str, int], baseline: int
) -> tuple[tuple[str, ...], list[str]]:
    """Keep the words the engine's tokenizer counts as exactly one token.

    `token_counts` maps each word (with its leading space, as sent inside a prompt) to the
    tokens the engine counted; `baseline` is its count for the empty text (special tokens).
    Falls back to the whole vocabulary when too few words survive to make varied text.
    """
    kept = tuple(word for word in VOCABULARY if token_counts.get(" " + word, 0) - baseline == 1)
    dropped = [word for word in VOCABULARY if word not in kept]
    if len(kept) < 64:
        return VOCABULARY, dropped
    return kept, dropped
