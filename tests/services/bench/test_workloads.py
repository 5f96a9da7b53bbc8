"""Workloads: seeded, reproducible, exact lengths in words, the shapes each kind promises."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest

from services.bench.workloads import (
    DEFAULT_SCHEMA,
    TAG_WORDS,
    VOCABULARY,
    Conversation,
    PromptText,
    WorkloadSpec,
    build_messages,
    calibrate_vocabulary,
    iter_conversations,
    load_trace,
    run_salt,
    take_requests,
    workload_label,
)
from services.core.errors import ValidationError


def first(spec: WorkloadSpec, n: int, salt: str = "") -> list[Conversation]:
    return list(itertools.islice(iter_conversations(spec, salt=salt), n))


def words(text: str) -> int:
    return len(text.split())


def test_same_seed_same_prompts_other_seed_other_prompts() -> None:
    spec = WorkloadSpec(input_len=50, output_len=20, seed=3)
    assert first(spec, 5) == first(spec, 5)
    assert first(spec, 5) != first(WorkloadSpec(input_len=50, output_len=20, seed=4), 5)


def test_run_one_of_two_databases_sends_other_prompts() -> None:
    """Every fresh database has a run 1: its salt was "run1" each time, so a CI job sent the
    prompts the last job sent, and a long-lived engine served 81% of a "cold" run from its
    prefix cache. The salt now has a random part; the run's name stays in it."""
    one, other = run_salt("run1"), run_salt("run1")
    assert one.startswith("run1:") and other.startswith("run1:") and one != other
    spec = WorkloadSpec(input_len=50, output_len=20)
    first_words = {
        c.turns[0].content.split()[0:4] == o.turns[0].content.split()[0:4]
        for c, o in zip(first(spec, 5, salt=one), first(spec, 5, salt=other), strict=True)
    }
    assert first_words == {False}


def test_fixed_lengths_are_exact_in_vocabulary_words() -> None:
    conversations = first(WorkloadSpec(input_len=37, output_len=11), 20, salt="run1")
    for conversation in conversations:
        (turn,) = conversation.turns
        assert words(turn.content) == 37  # salt words included in the count
        assert turn.output_len == 11
        assert all(word in VOCABULARY for word in turn.content.split())
    assert [c.turns[0].index for c in conversations] == list(range(20))


def test_salt_changes_the_start_of_every_prompt_only() -> None:
    plain = first(WorkloadSpec(input_len=20), 3, salt="a")
    other = first(WorkloadSpec(input_len=20), 3, salt="b")
    for a, b in zip(plain, other):
        assert a.turns[0].content.split()[:TAG_WORDS] != b.turns[0].content.split()[:TAG_WORDS]
        assert a.turns[0].content.split()[TAG_WORDS:] == b.turns[0].content.split()[TAG_WORDS:]


@pytest.mark.parametrize("dist", ["uniform", "normal", "conversation", "sharegpt", "code"])
def test_length_distributions_keep_their_means(dist: str) -> None:
    spec = WorkloadSpec(input_len=200, output_len=100, length_dist=dist, range_ratio=0.5)
    conversations = first(spec, 3000)
    inputs = [c.turns[0].input_len for c in conversations]
    outputs = [c.turns[0].output_len for c in conversations]
    assert sum(inputs) / len(inputs) == pytest.approx(200, rel=0.08)
    assert sum(outputs) / len(outputs) == pytest.approx(100, rel=0.08)
    assert len(set(inputs)) > 10
    if dist == "uniform":
        assert min(inputs) >= 100 and max(inputs) <= 300


def test_max_lengths_clip() -> None:
    spec = WorkloadSpec(
        input_len=500, output_len=500, length_dist="conversation", max_input_len=600, max_output_len=50
    )
    for conversation in first(spec, 500):
        assert conversation.turns[0].input_len <= 600
        assert conversation.turns[0].output_len <= 50


def test_shared_prefix_groups() -> None:
    spec = WorkloadSpec(kind="shared_prefix", prefix_groups=3, prefix_len=40, input_len=10, output_len=5)
    conversations = first(spec, 9, salt="s")
    prefixes = [c.system for c in conversations]
    assert len(set(prefixes)) == 3
    assert [c.group for c in conversations] == [0, 1, 2] * 3
    assert prefixes[0] == prefixes[3] == prefixes[6]
    assert all(words(p) == 40 for p in prefixes)
    assert all(words(c.turns[0].content) == 10 for c in conversations)
    assert len({c.turns[0].content for c in conversations}) == 9
    messages = build_messages(conversations[0], 0, [])
    assert messages[0] == {"role": "system", "content": prefixes[0]}


def test_multi_turn_resends_history_with_real_answers() -> None:
    spec = WorkloadSpec(kind="multi_turn", turns=3, input_len=8, output_len=4)
    conversation = first(spec, 1)[0]
    assert [t.index for t in conversation.turns] == [0, 1, 2]
    messages = build_messages(conversation, 2, ["answer one", "answer two"])
    assert [m["role"] for m in messages] == ["user", "assistant", "user", "assistant", "user"]
    assert messages[1]["content"] == "answer one" and messages[3]["content"] == "answer two"
    assert messages[4]["content"] == conversation.turns[2].content


def test_take_requests_cuts_the_last_conversation() -> None:
    spec = WorkloadSpec(kind="multi_turn", turns=3)
    taken = take_requests(iter_conversations(spec), 7)
    assert [len(c.turns) for c in taken] == [3, 3, 1]


def test_structured_workload_carries_the_schema() -> None:
    spec = WorkloadSpec(kind="structured", input_len=30, output_len=200)
    conversation = first(spec, 1)[0]
    assert conversation.schema == DEFAULT_SCHEMA
    assert "JSON" in conversation.turns[0].content
    assert not spec.uses_fixed_output  # a JSON answer ends by itself
    with pytest.raises(ValidationError, match="not valid"):
        WorkloadSpec(kind="structured", schema={"type": 12}).validate()


def test_prompt_file(tmp_path: Path) -> None:
    path = tmp_path / "prompts.jsonl"
    path.write_text(
        json.dumps({"prompt": "Say hi", "max_tokens": 7})
        + "\n\n"
        + json.dumps({"messages": [{"role": "user", "content": "Hello"}]})
        + "\n",
        encoding="utf-8",
    )
    spec = WorkloadSpec(kind="file", prompts_file=str(path), output_len=9)
    conversations = first(spec, 4)
    assert conversations[0].turns[0].content == "Say hi" and conversations[0].turns[0].output_len == 7
    assert build_messages(conversations[1], 0, []) == [{"role": "user", "content": "Hello"}]
    assert conversations[1].turns[0].output_len == 9
    assert conversations[2].turns[0].content == "Say hi"  # the file repeats
    assert workload_label(spec) == "file:prompts.jsonl"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("not json\n", "line 1: not JSON"),
        ('{"x": 1}\n', 'needs a "prompt"'),
        ("", "holds no prompts"),
        ('{"prompt": "a", "max_tokens": 0}\n', "positive integer"),
    ],
)
def test_prompt_file_errors(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ValidationError, match=message):
        WorkloadSpec(kind="file", prompts_file=str(path)).validate()
    with pytest.raises(ValidationError, match="does not exist"):
        WorkloadSpec(kind="file", prompts_file=str(tmp_path / "missing.jsonl")).validate()


def test_shipped_traces_and_replay_arrivals() -> None:
    conv = load_trace("conversation")
    code = load_trace("code")
    assert len(conv) == 19366 and len(code) == 8819
    assert conv[0].offset_s == 0.0 and conv[1].offset_s == pytest.approx(4.315, abs=0.001)
    assert (conv[0].input_len, conv[0].output_len) == (374, 44)
    spec = WorkloadSpec(kind="trace", trace="conv", length_scale=0.5)
    replay = first(spec, 3)
    assert [c.arrival_s for c in replay] == [row.offset_s for row in conv[:3]]
    assert replay[0].turns[0].input_len == 187 and replay[0].turns[0].output_len == 22


def test_calibrated_vocabulary_keeps_one_token_words() -> None:
    counts = {" " + word: 2 for word in VOCABULARY}  # baseline 1 (a BOS token), one token each
    counts[" the"] = 3
    kept, dropped = calibrate_vocabulary(counts, baseline=1)
    assert "the" not in kept and dropped == ["the"]
    assert len(kept) == len(VOCABULARY) - 1
    # Too few single-token words: keep the whole vocabulary rather than repetitive text.
    kept, _ = calibrate_vocabulary({}, baseline=0)
    assert kept == VOCABULARY
    text = PromptText(vocabulary=("a", "b"))
    assert set(text.words(__import__("random").Random(1), 10).split()) <= {"a", "b"}


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        (WorkloadSpec(kind="nope"), "Unknown workload"),
        (WorkloadSpec(length_dist="zipf"), "Unknown length distribution"),
        (WorkloadSpec(input_len=0), "at least 1 token"),
        (WorkloadSpec(kind="trace", trace="other"), "Unknown trace"),
        (WorkloadSpec(kind="file"), "needs a JSONL"),
        (WorkloadSpec(range_ratio=2), "range ratio"),
    ],
)
def test_workload_validation(spec: WorkloadSpec, message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        spec.validate()
