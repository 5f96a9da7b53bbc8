"""A workload's endless, deterministic stream of conversations (a single-turn request is a
conversation of one turn), the lengths drawn for it, and the messages each turn sends."""

from __future__ import annotations

import random
import secrets
from collections.abc import Iterator
from dataclasses import dataclass, replace

from services.bench.pickling import pickled_as_fields
from services.bench.workloads.prompt_files import load_prompt_file
from services.bench.workloads.spec import STRUCTURED_INSTRUCTION, WorkloadSpec
from services.bench.workloads.traces import TRACES, load_trace, trace_means
from services.bench.workloads.vocabulary import TAG_WORDS, PromptText
from services.core.json_types import ForeignJson


@pickled_as_fields
@dataclass(frozen=True, slots=True)
class Turn:
    """One request: the user message added to the conversation, and the answer length asked."""

    index: int
    content: str
    input_len: int
    output_len: int
    #: Whole message list from a prompt file (replaces system + history + content).
    messages: tuple[ForeignJson, ...] | None = None


@pickled_as_fields
@dataclass(frozen=True, slots=True)
class Conversation:
    """A unit of work: its turns run one after another, each resending the history."""

    id: int
    turns: tuple[Turn, ...]
    system: str | None = None
    schema: ForeignJson | None = None
    group: int | None = None
    #: Seconds after the start when it arrives (trace replay only).
    arrival_s: float | None = None


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
            mean_in, mean_out = trace_means(spec.length_dist)
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


def run_salt(run: str) -> str:
    """The salt of one run's prompts (`iter_conversations`): its name in this database and a
    random part. A run id alone repeats in every fresh database (a CI job's run 1 sent the
    prompts the last job's run 1 sent), and an engine that served them still held their
    prefix: 81% of a "cold" benchmark's prompt tokens came from vLLM's cache."""
    return f"{run}:{secrets.token_hex(8)}"


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
) -> list[ForeignJson]:
    """The messages of turn `turn_number`: system prompt, earlier turns with their real answers, the new one."""
    turn = conversation.turns[turn_number]
    if turn.messages is not None:
        return list(turn.messages)
    messages: list[ForeignJson] = []
    if conversation.system:
        messages.append({"role": "system", "content": conversation.system})
    for earlier, answer in zip(conversation.turns[:turn_number], answers):
        messages.append({"role": "user", "content": earlier.content})
        messages.append({"role": "assistant", "content": answer})
    messages.append({"role": "user", "content": turn.content})
    return messages
