"""Explain the winner (issue 54) on stored numbers: each cause at its threshold's edges, each
guard, and the traps that must not produce the naive sentence. Each test asserts the sentence
that must appear and the one that must not."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from services.bench.explain import Side, explain
from services.bench.explain.claims import durations
from services.bench.explain.reasons import CLAIM_SHARE
from services.bench.results import EngineResults


def _dist(mean: float | None) -> dict[str, float | None]:
    return {"mean": mean, "p50": mean, "p90": mean, "p99": mean}


def side(
    label: str,
    *,
    kind: str | None = "vllm",
    queue: float = 0.0,
    prefill: float = 0.1,
    decode: float = 1.0,
    ttft_rest: float = 0.01,
    e2e_rest: float = 0.02,
    completed: int = 40,
    timed: int | None = None,
    failed: int = 0,
    output_tokens: int = 40 * 100,
    input_tokens: int = 40 * 200,
    metrics: dict[str, Any] | None = None,
    reported: dict[str, Any] | None = None,
    command: tuple[str, ...] = (),
    **flags: Any,
) -> Side:
    ttft = queue + prefill + ttft_rest
    e2e = queue + prefill + decode + e2e_rest
    per_token = decode / 99
    timed = completed if timed is None else timed
    split = (
        {
            "requests": completed,
            "reported": timed,
            "source": "metrics",
            "queue_reported": True,
            "queue_s": _dist(queue),
            "prefill_s": _dist(prefill),
            "decode_s": _dist(decode),
            "ttft_rest_s": _dist(ttft_rest),
            "e2e_rest_s": _dist(e2e_rest),
            "e2e_s": _dist(e2e),
        }
        if timed
        else {"requests": completed, "reported": 0}
    )
    results = EngineResults.from_json(
        {
            "completed": completed,
            "failed": failed,
            "ttft_s": _dist(ttft),
            "e2e_s": _dist(e2e),
            "tpot_s": _dist(per_token),
            "itl_s": _dist(per_token),
            "output_tokens": output_tokens,
            "input_tokens": input_tokens,
            "output_throughput_tok_s": output_tokens / 10,
            "concurrency_mean": 4.0,
            "time_split": split,
            "engine_metrics": {"samples": 60, **(metrics or {})},
        }
    )
    return Side(label, results, kind=kind, reported=reported or {}, command=command, **flags)


def test_a_queue_holding_a_quarter_of_the_ttft_gap_is_named_and_just_under_is_not() -> None:
    winner = side("A", queue=0.0)
    # The loser's extra TTFT: 0.26 s of queue, 0.74 s of prefill (so queue holds 26% of the gap).
    named = explain("ttft_s", winner, side("B", queue=0.26, prefill=0.84))
    assert named.status == "explained"
    assert any(
        "Queueing: B's requests waited" in s and "26% of the mean TTFT gap" in s for s in named.sentences
    )
    unnamed = explain("ttft_s", winner, side("B", queue=0.24, prefill=0.86))
    assert not any("Queueing" in s for s in unnamed.sentences)
    assert CLAIM_SHARE == 0.25


def test_the_slot_setting_is_named_only_when_reported_and_the_running_count_reached_it() -> None:
    metrics = {"requests_running_max": 1, "requests_waiting_share": 0.9}
    one_slot = side(
        "llamacpp-1slot",
        kind="llamacpp",
        queue=2.0,
        metrics=metrics,
        reported={"/props": {"total_slots": 1}},
    )
    four = side("llamacpp-4slot", kind="llamacpp", queue=0.0)
    said = explain("ttft_s", four, one_slot).text
    assert "Queueing: llamacpp-1slot's requests waited" in said
    assert "stayed at its --parallel of 1 (reported by the engine)" in said
    assert "llamacpp:requests_processing" in said  # the engine's own metric name
    # A remote engine whose setting it never reported: the queue is named, no setting is cited.
    remote = side("remote", kind="llamacpp", queue=2.0, metrics=metrics)
    said = explain("ttft_s", four, remote).text
    assert "Queueing" in said and "--parallel" not in said
    # Reported, but the running count never reached it: the setting is not the reason.
    busy = side(
        "x",
        kind="llamacpp",
        queue=2.0,
        metrics={"requests_running_max": 3},
        reported={"/props": {"total_slots": 4}},
    )
    assert "--parallel" not in explain("ttft_s", four, busy).text


def test_a_launched_vllm_cap_is_named_from_its_command_line() -> None:
    metrics = {"requests_running_max": 2.0}
    loser = side("v", queue=1.5, metrics=metrics, command=("vllm", "serve", "m", "--max-num-seqs", "2"))
    said = explain("ttft_s", side("w"), loser).text
    assert "--max-num-seqs of 2 (launched with)" in said


def test_the_prefix_cache_is_credited_when_it_saved_the_prefill_that_makes_the_gap() -> None:
    winner = side("warm", prefill=0.05, metrics={"prefix_cache_hit_rate": 0.8})
    loser = side("cold", prefill=0.5, metrics={"prefix_cache_hit_rate": 0.0})
    said = explain("ttft_s", winner, loser).text
    assert "Prefix cache: warm served 80% of prompt tokens from its cache against 0%" in said
    assert "vllm:prefix_cache_hits" in said
    assert "Slower prefill" not in said


def test_a_cache_hit_that_cannot_account_for_the_gap_is_not_credited() -> None:
    # The winner hits its cache, but the gap is the loser's queue: prefill is a small share.
    winner = side("warm", prefill=0.09, metrics={"prefix_cache_hit_rate": 0.8})
    loser = side("cold", queue=2.0, prefill=0.1, metrics={"prefix_cache_hit_rate": 0.0})
    said = explain("ttft_s", winner, loser).text
    assert "Queueing" in said and "Prefix cache" not in said


def test_equal_hit_rates_leave_a_slower_prefill_per_computed_token() -> None:
    winner = side("a", prefill=0.1, metrics={"prefix_cache_hit_rate": 0.5})
    loser = side("b", prefill=0.4, metrics={"prefix_cache_hit_rate": 0.5})
    said = explain("ttft_s", winner, loser).text
    assert "Slower prefill: b took" in said and "per computed prompt token" in said
    assert "Prefix cache" not in said


def test_time_outside_the_engine_is_named_for_vllm_and_never_for_llamacpp() -> None:
    vllm = explain("ttft_s", side("a"), side("b", ttft_rest=0.5)).text
    assert "Time outside the engine's own clock: b's TTFT held" in vllm
    llama = explain("ttft_s", side("a", kind="llamacpp"), side("b", kind="llamacpp", ttft_rest=0.5))
    assert "outside" not in llama.text and llama.status == "not_explained"


def test_a_router_s_rest_says_it_holds_the_router_s_own_time() -> None:
    routed = side("router", kind="router", ttft_rest=0.5)
    split = replace(routed.results.time_split, via="router")
    loser = replace(routed, results=replace(routed.results, time_split=split))
    said = explain("ttft_s", side("worker"), loser).text
    assert "the router's own time among it" in said


def test_longer_answers_are_a_confounder_not_a_slower_decode() -> None:
    winner = side("short", decode=1.0, output_tokens=40 * 100)
    loser = side("long", decode=2.0, output_tokens=40 * 200)
    found = explain("e2e_s", winner, loser)
    assert "Slower decode" not in found.text
    assert found.confounders and "long answered 200 output tokens per request against 100" in found.text
    same = explain("e2e_s", side("a", decode=1.0), side("b", decode=2.0))
    assert "Slower decode: b took" in same.text


def test_a_wider_batch_explains_a_slower_tpot_and_the_same_width_does_not() -> None:
    winner = side("narrow", decode=1.0, metrics={"requests_running_mean": 2.0})
    loser = side("wide", decode=2.0, metrics={"requests_running_mean": 8.0})
    said = explain("tpot_s", winner, loser).text
    assert "Batch width: wide decoded 8.0 requests at once on average against 2.0" in said
    same = explain(
        "tpot_s",
        side("a", metrics={"requests_running_mean": 4.0}),
        side("b", decode=2.0, metrics={"requests_running_mean": 4.0}),
    )
    assert same.status == "not_explained" and "Batch width" not in same.text


def test_preemption_on_one_side_only_is_kv_pressure_and_equal_or_none_is_not() -> None:
    pressed = {"preempting_share": 0.3, "kv_cache_usage_p90": 0.99, "requests_running_mean": 4.0}
    calm = {"requests_running_mean": 4.0}
    said = explain("tpot_s", side("a", metrics=calm), side("b", decode=2.0, metrics=pressed)).text
    assert "KV pressure: b preempted requests in 30% of 60 samples (vllm:num_preemptions)" in said
    both = explain(
        "tpot_s",
        side("a", metrics={**calm, "preempting_share": 0.3}),
        side("b", decode=2.0, metrics=pressed),
    )
    assert "KV pressure" not in both.text
    full = {"kv_cache_usage_p90": 0.99, "requests_running_mean": 4.0}  # full, nothing preempted
    assert (
        "KV pressure"
        not in explain("tpot_s", side("a", metrics=calm), side("b", decode=2.0, metrics=full)).text
    )


def test_throughput_from_batch_width_says_the_itl_trade_off() -> None:
    winner = side("wide", decode=2.0, output_tokens=40 * 400, metrics={"requests_running_mean": 8.0})
    loser = side(
        "narrow",
        kind="sglang",
        output_tokens=40 * 100,
        metrics={"requests_running_mean": 2.0, "requests_running_max": 2.0},
        reported={"/server_info": {"max_running_requests": 2}},
    )
    found = explain("output_throughput_tok_s", winner, loser)
    assert found.status == "explained"
    said = found.text
    assert "Batch width: wide ran 8.0 requests at once on average against 2.0" in said
    assert "the trade-off: its ITL was higher" in said
    assert "--max-running-requests of 2 (reported by the engine)" in said


def test_speculative_decoding_is_named_when_one_side_drafted() -> None:
    winner = side("draft", metrics={"spec_decode_acceptance_mean": 0.7})
    said = explain("tpot_s", winner, side("plain", decode=2.0)).text
    assert "Speculative decoding: draft drafted tokens and accepted 70%" in said


def test_guards_come_first_with_one_line_and_no_claims() -> None:
    a, b = side("a"), side("b", queue=2.0)
    cases = {
        "not comparable": explain("ttft_s", a, b, comparable="different workloads"),
        "within noise": explain("ttft_s", a, b, noise="within"),
        "client-bound": explain("ttft_s", a, side("b", queue=2.0, client_bound=True)),
        "ran together": explain("ttft_s", side("a", ran_together=True), b),
        "restarted": explain("ttft_s", a, side("b", queue=2.0, restarted=True)),
        "failed 4 of 40": explain("ttft_s", a, side("b", queue=2.0, completed=36, failed=4)),
        "different models": explain(
            "ttft_s",
            side("a", model="SmolLM2-135M-Q4_K_M.gguf"),
            side("b", queue=2.0, model="SmolLM2-135M (BF16)"),
        ),
    }
    for words, found in cases.items():
        assert found.status == "guarded" and not found.claims, words
        assert len(found.sentences) == 1 and words in found.text and "Queueing" not in found.text, words


def test_missing_evidence_says_why_is_not_known_and_how_to_record_it() -> None:
    sglang = side("sglang", kind="sglang", queue=2.0, timed=0, metrics={"samples": 0})
    found = explain("ttft_s", side("a"), sglang)
    assert found.status == "not_known"
    assert found.text.startswith(
        "Why is not known: sglang reports no per-request times and its metrics were not recorded"
    )
    assert "--enable-metrics" in found.text


def test_an_explanation_is_at_most_two_sentences_with_the_unattributed_share() -> None:
    # Queue 40%, prefill 30%, rest 30% of the gap: two claims, 30% unattributed.
    found = explain(
        "ttft_s",
        side("a", kind="sglang"),
        side("b", kind="sglang", queue=0.4, prefill=0.4, ttft_rest=0.31),
    )
    assert found.status == "explained" and len(found.sentences) == 2
    assert found.sentences[-1].endswith("30% of the gap is not attributed.")
    assert found.to_json()["claims"][0]["cause"] == "queue"


def test_a_part_larger_than_the_gap_says_so_and_names_what_offset_it() -> None:
    # Seen on the real llama.cpp pair: the one-slot engine queued 3.8 s, the four-slot one
    # prefilled 2.2 s longer (four requests share its compute): "247% of the gap" said nothing.
    winner = side("four", queue=0.0, prefill=1.1)
    loser = side("one", queue=2.0, prefill=0.1)
    said = explain("ttft_s", winner, loser).text
    assert "more than the whole mean TTFT gap" in said and "200%" not in said
    assert "offset in part: four's prefill took 1.00 s longer" in said
    wide = side("wide", output_tokens=40 * 114, metrics={"requests_running_mean": 3.8})
    narrow = side("narrow", output_tokens=40 * 100, metrics={"requests_running_mean": 1.0})
    said = explain("output_throughput_tok_s", wide, narrow).text
    assert "more than the whole 1.14x output throughput ratio (3.8x the width)" in said


def _run_mean(label: str, queue: float, ttft: float, e2e: float, **more: Any) -> Side:
    """A side whose engine timed no request but counted its run's totals (SGLang's histograms)."""
    run = {"requests": 40, "source": "sglang:queue_time_seconds", "queue_s": queue}
    run |= {"ttft_s": ttft, "e2e_s": e2e}
    return side(label, kind="sglang", queue=queue, timed=0, metrics={"run_split": run}, **more)


def test_a_run_mean_split_explains_and_says_it_is_a_run_mean() -> None:
    said = explain(
        "ttft_s", _run_mean("A", 0.0, 0.11, 1.2), _run_mean("B", 0.9, 1.01, 2.1), noise="beyond"
    )
    assert said.status == "explained", said.text
    assert "B's requests waited 900 ms on average" in said.text
    assert "a run mean over the 40 requests it counted in the step" in said.text
    assert "over 40 of 40 requests" not in said.text


def test_a_run_mean_is_never_set_part_by_part_against_a_per_request_split() -> None:
    timed = side("A", queue=0.0)
    counted = _run_mean("B", 0.9, 1.01, 2.1)
    said = explain("ttft_s", timed, counted, noise="beyond")
    assert said.status == "not_known", said.text
    assert "A's engine timed each request and B's only counted its run's totals" in said.text
    assert "Queueing" not in said.text


def test_an_engine_that_timed_its_requests_keeps_its_own_split_over_its_run_totals() -> None:
    # Both accounts stored: the per-request split is the one read, never the run mean.
    both = side("B", queue=0.9, metrics={"run_split": {"requests": 40, "queue_s": 5.0, "ttft_s": 6.0}})
    said = explain("ttft_s", side("A"), both, noise="beyond")
    assert "waited 900 ms on average" in said.text and "run mean" not in said.text


def test_a_part_within_two_percent_past_the_gap_is_the_whole_gap_and_past_it_is_more() -> None:
    # The loser's queue is 1.00 s longer and its prefill 0.005 s shorter: jitter, not an offset.
    near = explain("ttft_s", side("A", prefill=0.105), side("B", queue=1.0, prefill=0.1))
    assert "100% of the mean TTFT gap" in near.text and "more than the whole" not in near.text
    # 0.1 s shorter prefill: the queue holds 111% of the gap, which is said as it is.
    past = explain("ttft_s", side("A", prefill=0.2), side("B", queue=1.0, prefill=0.1))
    assert "more than the whole mean TTFT gap" in past.text


def test_two_figures_that_differ_never_read_alike_and_equal_ones_read_as_before() -> None:
    # ITL 2.00 ms against 2.04 ms, a 2% gap: one decimal of ms read "2.0 ms against 2.0 ms".
    said = explain("itl_s", side("A", decode=0.00200 * 99), side("B", decode=0.00204 * 99)).text
    assert "ITL 2.04 ms against 2.00 ms" in said, said
    assert durations(0.0200, 0.0204) == ["20.0 ms", "20.4 ms"]  # already apart: no decimal added
    assert durations(1.001, 1.004) == ["1.001 s", "1.004 s"]
    assert durations(0.0201, 0.0201) == ["20.1 ms", "20.1 ms"]
    # Two decimals more at most: a gap too small for them reads as it did, without them.
    assert durations(0.002, 0.0020000001) == ["2.0 ms", "2.0 ms"]
    assert durations(0.0, 0.002) == ["none", "2.0 ms"] and durations(0.5) == ["500 ms"]


def test_plain_figures_that_differ_never_read_alike() -> None:
    from services.bench.explain.claims import figures

    # Batch widths, hit rates, tokens per request: the same rule as durations.
    assert figures(4.02, 3.98) == ["4.02", "3.98"]
    assert figures(0.904, 0.896, decimals=0, percent=True) == ["90.4%", "89.6%"]
    assert figures(100.4, 99.6, decimals=0) == ["100.4", "99.6"]
    # Apart already, or equal: as they always read.
    assert figures(4.0, 2.0) == ["4.0", "2.0"]
    assert figures(3.0, 3.0) == ["3.0", "3.0"]
    # A gap too small even for two more decimals reads as it would without them.
    assert figures(4.00001, 4.0) == ["4.0", "4.0"]
