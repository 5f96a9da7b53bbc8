import copy
import pickle
from dataclasses import dataclass, field

import pytest

from services.bench.pickling import pickled_as_fields
from services.bench.stats import RequestRecord
from services.bench.workloads import Conversation, Turn


def round_trip(item: object) -> object:
    return pickle.loads(pickle.dumps(item, protocol=pickle.HIGHEST_PROTOCOL))


def test_conversations_and_records_cross_processes_whole() -> None:
    conversation = Conversation(
        id=7,
        turns=(
            Turn(index=3, content="hello", input_len=5, output_len=9),
            Turn(
                index=4,
                content="",
                input_len=2,
                output_len=1,
                messages=({"role": "user", "content": "x"},),
            ),
        ),
        system="be brief",
        schema={"type": "object"},
        group=2,
        arrival_s=1.25,
    )
    record = RequestRecord(
        engine="e",
        index=4,
        ok=False,
        warmup=True,
        scheduled_s=0.5,
        itl_s=[0.01, 0.02],
        error_class="timeout",
        error="late",
        schema_valid=False,
        step=3,
    )
    for item in (conversation, record, conversation.turns[1]):
        copied = round_trip(item)
        assert copied == item and type(copied) is type(item)
        assert copy.deepcopy(item) == item
    assert round_trip(record).itl_s is not record.itl_s  # a copy, as before
    # As constructor arguments: no field names travel (the dataclass's own state names each).
    for item in (conversation, record):
        assert b"turns" not in pickle.dumps(item) and b"ttft_s" not in pickle.dumps(item)


def test_a_field_outside_init_is_refused() -> None:
    with pytest.raises(TypeError, match="Derived"):

        @pickled_as_fields
        @dataclass
        class Derived:
            given: int
            computed: int = field(init=False, default=0)


@pickled_as_fields
@dataclass(frozen=True)
class Single:
    value: str


def test_a_single_field_class_round_trips() -> None:
    assert round_trip(Single("x")) == Single("x")
