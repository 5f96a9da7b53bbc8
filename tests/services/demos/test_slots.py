"""The "how many slots" demo on the real local llama.cpp: a tuning run of -np 1 and 2 under the
same load, stored as its own run, and a conclusion written from the measured throughput; and what
its step reads of the tuning run's entries."""

from __future__ import annotations

from dataclasses import asdict

from services.core.processes import pid_alive
from services.demos import runner
from services.demos.records import step_view
from services.demos.slots import HowManySlots, measured
from services.tune import jobs as tune_jobs


def test_how_many_slots_runs_each_slot_count_and_concludes(local_engines: list) -> None:
    run_id = runner.start_demo(
        "how-many-slots",
        ["llamacpp-4slot"],
        options={"slots": [1, 2], "concurrency": 2, "requests": 4, "output_tokens": 8},
        background=False,
    )
    result = runner.demo_result(run_id)
    assert result["status"] == "finished", result
    verdicts = result["verdicts"]
    assert set(verdicts) == {"1", "2"} and all(v["tok_s"] > 0 for v in verdicts.values())
    assert sum(v["best"] for v in verdicts.values()) == 1
    conclusion = result["conclusion"]
    assert "slot" in conclusion and "The tuning run behind this demo is run #" in conclusion
    tune_run = int(conclusion.split("run #")[1].split(" ")[0])
    view = tune_jobs.get_run(tune_run)
    assert view.status == "finished" and [c["settings"]["np"] for c in view.configs] == ["1", "2"]
    assert not any(pid_alive(c["pid"]) for c in view.configs)  # every engine it started is stopped


def test_the_conclusion_reads_the_numbers() -> None:
    scenario = HowManySlots()
    rows = [
        {"slots": 1, "tok_s": 20.0, "ttft_p90_ms": 300.0},
        {"slots": 2, "tok_s": 30.0, "ttft_p90_ms": 350.0},
        {"slots": 4, "tok_s": 31.0, "ttft_p90_ms": 900.0},
    ]
    steps = [{"key": "slots", "data": {"rows": rows, "tune_run": 7}}]
    conclusion = scenario.conclude(steps, ["llamacpp-4slot"], {})
    assert conclusion.headline.startswith("2 slots for this machine: 1.50x the throughput of 1")
    assert "4 slots gave +3% throughput, p90 TTFT 350 ms to 900 ms" in conclusion.headline
    assert conclusion.verdicts["2"].best and not conclusion.verdicts["4"].best
    flat = [
        {"slots": 1, "tok_s": 20.0, "ttft_p90_ms": 300.0},
        {"slots": 2, "tok_s": 20.5, "ttft_p90_ms": 600.0},
    ]
    assert scenario.conclude([{"key": "slots", "data": {"rows": flat}}], [], {}).headline.startswith(
        "1 slot is enough on this machine: more slots did not add throughput"
    )


def test_the_slot_counts_p90_ttft_reads_in_ms_on_the_page() -> None:
    """Issue 57: the p90 TTFTs were stored as big numbers valued in ms (350) beside a text in ms;
    the page puts a step's times in one unit and read 350 as seconds: "350.00 s"."""
    configs = [
        {
            "label": f"np={n}",
            "status": "ok",
            "settings": {"np": str(n)},
            "metrics": {"completed": 4, "output_throughput_tok_s": rate, "ttft_s": {"p90": p90}},
        }
        for n, rate, p90 in ((1, 20.0, 0.35), (2, 30.0, 0.9))
    ]
    outcome = HowManySlots()._outcome(7, configs)
    stored = {"key": "slots", "numbers": [asdict(n) for n in outcome.numbers]}
    shown = [n.text for n in step_view(0, stored).numbers if "TTFT" in n.label]
    assert shown == ["350 ms", "900 ms"]


def test_each_configuration_reads_as_its_slots_throughput_and_p90_ttft() -> None:
    entries = [
        {
            "index": 0,
            "label": "np=1",
            "settings": {"np": "1"},
            "status": "finished",
            "reason": None,
            "metrics": {"completed": 8, "output_throughput_tok_s": 120.5, "ttft_s": {"p90": 0.25}},
        },
        {"label": "np=2", "settings": {"np": "2"}, "status": "failed_to_start", "reason": "port busy"},
        {
            "label": "np=4",
            "settings": {"np": "4"},
            "status": "finished_with_errors",
            "metrics": {"completed": 0, "output_throughput_tok_s": 0.0, "ttft_s": {"p90": None}},
        },
    ]
    assert measured(entries) == [
        {
            "slots": 1,
            "label": "np=1",
            "status": "finished",
            "tok_s": 120.5,
            "ttft_p90_ms": 250.0,
            "reason": None,
        },
        {
            "slots": 2,
            "label": "np=2",
            "status": "failed_to_start",
            "tok_s": None,
            "ttft_p90_ms": None,
            "reason": "port busy",
        },
        {
            "slots": 4,
            "label": "np=4",
            "status": "finished_with_errors",
            "tok_s": None,
            "ttft_p90_ms": None,
            "reason": None,
        },
    ]
