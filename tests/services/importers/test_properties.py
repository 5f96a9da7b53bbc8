"""Property tests (hypothesis) of the importers: any file, however broken, is either
imported or refused with the project's own error (a clear message), never a crash."""

from __future__ import annotations

import json
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from services.core.errors import ShootoutError
from services.importers import import_file

SAMPLES = Path(__file__).resolve().parent / "samples"
SAMPLE_FILES = sorted(
    p for p in SAMPLES.iterdir() if p.is_file() and p.suffix in (".json", ".jsonl", ".csv")
)

json_values = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(-(10**12), 10**12),
        st.floats(allow_nan=False),
        st.text(max_size=10),
    ),
    lambda children: st.one_of(
        st.lists(children, max_size=5), st.dictionaries(st.text(max_size=12), children, max_size=6)
    ),
    max_leaves=25,
)


def _mutated_sample(data: st.DataObject) -> tuple[bytes, str]:
    """A real sample with one value replaced, or truncated, or with junk appended."""
    path = data.draw(st.sampled_from(SAMPLE_FILES))
    raw = path.read_bytes()
    how = data.draw(st.sampled_from(["truncate", "junk", "replace"]))
    if how == "truncate":
        return raw[: data.draw(st.integers(0, len(raw)))], path.name
    if how == "junk":
        return raw + data.draw(st.binary(max_size=30)), path.name
    if path.suffix == ".json":
        document = json.loads(raw)
        if isinstance(document, dict) and document:
            key = data.draw(st.sampled_from(sorted(document)))
            document[key] = data.draw(json_values)
        return json.dumps(document).encode(), path.name
    return raw.replace(b",", b";", data.draw(st.integers(0, 3))), path.name


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(data=st.data())
def test_broken_files_raise_only_our_errors(db_url: str, data: st.DataObject) -> None:
    choice = data.draw(st.sampled_from(["sample", "json", "bytes"]))
    if choice == "sample":
        raw, name = _mutated_sample(data)
    elif choice == "json":
        raw, name = (
            json.dumps(data.draw(json_values)).encode(),
            data.draw(
                st.sampled_from(
                    [
                        "results.json",
                        "bench.jsonl",
                        "profile_export_aiperf.json",
                        "benchmarks.json",
                        "x.csv",
                    ]
                )
            ),
        )
    else:
        raw, name = (
            data.draw(st.binary(max_size=200)),
            data.draw(st.sampled_from(["a.json", "b.csv", "c.jsonl", "d"])),
        )
    try:
        import_file(raw, name)
    except ShootoutError as error:
        assert str(error)


def test_samples_exist() -> None:
    assert len(SAMPLE_FILES) >= 4
