"""The stored run's engine entries and benchmark config, read once: an odd part reads as absent."""

from __future__ import annotations

from services.runstate.stored import bench_config, engine_named, engines_by_name, stored_engines


def test_engine_entries_that_are_not_objects_are_left_out() -> None:
    stored = [{"name": "a", "kind": "vllm"}, "b", None, {"kind": "no name"}, {"name": "a", "model": "m"}]
    assert stored_engines(stored) == [stored[0], stored[3], stored[4]]
    assert stored_engines({"name": "a"}) == [] and stored_engines(None) == []
    # The last entry of a name wins, as Run.engines was always read.
    assert engines_by_name(stored) == {"a": {"name": "a", "model": "m"}}
    assert engine_named(stored, "a") == {"name": "a", "kind": "vllm"}
    assert engine_named(stored, "ghost") is None


def test_a_benchmark_config_reads_its_parts_of_the_right_shape_only() -> None:
    stored = {
        "workload": "synthetic",
        "load": {"mode": "rate", "rate": 2},
        "engines": [{"name": "a", "kind": "vllm"}, "junk"],
        "temperature": None,
        "name": "kept",
    }
    config = bench_config(stored)
    assert "workload" not in config and config["load"] == {"mode": "rate", "rate": 2}
    assert config["engines"] == [{"name": "a", "kind": "vllm"}]
    assert config["temperature"] is None and config.get("name") == "kept"  # type: ignore[typeddict-item]
    assert stored["engines"] == [{"name": "a", "kind": "vllm"}, "junk"]  # never changed in place
    assert bench_config({"engines": {"a": 1}}) == {}
    assert bench_config("not a config") == {} and bench_config(None) == {}
