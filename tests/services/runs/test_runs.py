"""Run history and comparison: fixed data in, exact numbers out."""

from __future__ import annotations

import json
import re
from datetime import UTC, date, datetime
from typing import Any

import numpy as np
import pytest
from scipy import stats as scipy_stats
from sqlalchemy import func, select

from db.models import RequestResult, Run, RunTag
from db.session import session_scope
from services import importers, runs
from services.core.errors import NotFoundError, ValidationError
from services.runs import reports
from services.runs.tables import settings_table


def stats_block(p50: float, scale: float = 1.0) -> dict[str, float]:
    return {
        "mean": p50 * 1.1,
        "p50": p50,
        "p90": p50 * 1.5,
        "p95": p50 * 1.8,
        "p99": p50 * 2 * scale,
        "min": p50 / 2,
        "max": p50 * 3,
    }


def engine_summary(
    ttft_p50: float,
    tpot_p50: float,
    e2e_p50: float,
    out_rate: float,
    completed: int = 100,
    failed: int = 0,
) -> dict[str, Any]:
    return {
        "completed": completed,
        "failed": failed,
        "sent": completed + failed,
        "duration_s": 10.0,
        "request_throughput_rps": completed / 10.0,
        "output_throughput_tok_s": out_rate,
        "ttft_s": stats_block(ttft_p50),
        "tpot_s": stats_block(tpot_p50),
        "e2e_s": stats_block(e2e_p50),
    }


def make_run(
    *,
    engines: dict[str, dict[str, Any]] | None = None,
    kind: str = "benchmark",
    name: str = "run",
    status: str = "finished",
    config: dict[str, Any] | None = None,
    versions: dict[str, str] | None = None,
    model: str | None = "smollm2",
    workload: str | None = "chat",
    tags: list[str] | None = None,
    notes: str = "",
    created_at: datetime | None = None,
    requests: dict[str, list[float]] | None = None,
    info: dict[str, dict[str, Any]] | None = None,
    summary: dict[str, Any] | None = None,
) -> int:
    """A stored run, written the way the benchmark worker writes one. `requests` gives
    per-engine TTFT samples (seconds); E2E = 4 x TTFT, 8 output tokens. `summary` adds
    run-wide summary keys (load, workload, generator) beside the engines' blocks."""
    engines = engines or {}
    versions = versions or {}
    snapshots = [
        {
            "name": name_,
            "base_url": f"http://127.0.0.1:80{i}",
            "kind": "vllm",
            "model": model,
            "version": versions.get(name_, "0.11.0"),
            "info": (info or {}).get(name_, {}),
        }
        for i, name_ in enumerate(engines or (requests or {}))
    ]
    with session_scope() as session:
        run = Run(
            kind=kind,
            name=name,
            status=status,
            config=config if config is not None else {"concurrency": 4, "requests": 100},
            summary={"engines": engines, "sweep": [], **(summary or {})} if engines else {},
            engines=snapshots,
            engine_names=",".join(s["name"] for s in snapshots),
            model=model,
            workload=workload,
            tags=tags or [],
            notes=notes,
        )
        if created_at is not None:
            run.created_at = created_at
        session.add(run)
        session.flush()
        for engine, ttfts in (requests or {}).items():
            for index, ttft in enumerate(ttfts):
                session.add(
                    RequestResult(
                        run_id=run.id,
                        engine_name=engine,
                        index=index,
                        ok=True,
                        ttft_s=ttft,
                        e2e_s=ttft * 4,
                        tpot_s=ttft * 3 / 7,
                        itl_s=[ttft / 2, ttft / 2],
                        input_tokens=100,
                        output_tokens=8,
                    )
                )
        return run.id


# ---------------------------------------------------------------- comparison arithmetic


def test_table_values_deltas_and_marks(db_url: str) -> None:
    a = make_run(name="A", engines={"vllm": engine_summary(0.100, 0.020, 1.0, 500.0)})
    b = make_run(
        name="B", engines={"sglang": engine_summary(0.080, 0.025, 1.0, 600.0, completed=90, failed=10)}
    )
    comparison = runs.compare_runs([a, b])
    assert [s.key for s in comparison.series] == [f"{a}:vllm", f"{b}:sglang"]
    rows = {row.label: row for row in comparison.rows}

    ttft = rows["TTFT p50"]
    assert ttft.values == (0.100, 0.080)
    assert ttft.deltas[0] is None and ttft.deltas[1] == pytest.approx(-0.020)
    assert ttft.changes[1] == pytest.approx(-20.0)
    assert ttft.marks == (None, "better")

    tpot = rows["TPOT p50"]
    assert tpot.changes[1] == pytest.approx(25.0)
    assert tpot.marks[1] == "worse"

    assert rows["E2E latency p50"].marks[1] == "same"
    throughput = rows["Output throughput"]
    assert throughput.higher_is_better and throughput.changes[1] == pytest.approx(20.0)
    assert throughput.marks[1] == "better"
    assert rows["Error rate"].values == (0.0, 0.1)
    assert rows["Error rate"].marks[1] == "worse"
    assert "ITL p50" not in rows  # no series has ITL: no empty row


def test_baseline_can_be_any_series(db_url: str) -> None:
    a = make_run(engines={"vllm": engine_summary(0.100, 0.02, 1.0, 500.0)})
    b = make_run(engines={"sglang": engine_summary(0.080, 0.02, 1.0, 600.0)})
    comparison = runs.compare_runs([a, b], baseline=f"{b}:sglang")
    row = next(r for r in comparison.rows if r.label == "TTFT p50")
    assert comparison.baseline == 1
    assert row.changes[0] == pytest.approx(25.0) and row.marks[0] == "worse"
    assert runs.compare_runs([a, b], baseline=b).baseline == 1
    with pytest.raises(ValidationError, match="Baseline"):
        runs.compare_runs([a, b], baseline="999:nothing")


def test_verdict_says_who_wins_and_by_how_much(db_url: str) -> None:
    a = make_run(engines={"vllm": engine_summary(0.100, 0.020, 1.0, 500.0)})
    b = make_run(engines={"sglang": engine_summary(0.040, 0.025, 1.2, 1500.0)})
    verdicts = {v.metric: v for v in runs.compare_runs([a, b]).verdicts}

    ttft = verdicts["ttft_s"]
    assert ttft.winner == f"{b}:sglang" and ttft.factor == pytest.approx(2.5)
    assert ttft.text.startswith(
        f"TTFT (median): #{b} sglang is fastest, 2.5× faster than #{a} vllm (40.0 ms vs 100 ms"
    )
    assert "p99 80.0 ms vs 200 ms" in ttft.text

    tpot = verdicts["tpot_s"]
    assert tpot.winner == f"{a}:vllm"
    assert "20% faster" in tpot.text  # 1 - 20/25

    rate = verdicts["output_throughput_tok_s"]
    assert rate.winner == f"{b}:sglang" and rate.factor == pytest.approx(3.0)
    assert "3.0× as high as" in rate.text
    # No repeats, no per-request samples: the verdict says the noise is unknown.
    assert ttft.noise.status == "unknown" and "noise unknown" in ttft.text


def test_two_engines_of_one_run_compare_without_other_runs(db_url: str) -> None:
    run = make_run(
        engines={
            "llamacpp": engine_summary(0.05, 0.01, 0.5, 300.0),
            "vllm": engine_summary(0.07, 0.01, 0.6, 280.0),
        }
    )
    comparison = runs.compare_runs([run])
    assert [s.engine for s in comparison.series] == ["llamacpp", "vllm"]
    assert comparison.verdicts[0].winner == f"{run}:llamacpp"


def test_stats_come_from_rows_when_the_summary_lacks_them(db_url: str) -> None:
    run = make_run(requests={"vllm": [0.1, 0.2, 0.3, 0.4, 0.5]})
    series = runs.compare_runs([run]).series[0]
    assert series.stats["ttft_s"]["p50"] == pytest.approx(0.3)
    assert series.stats["ttft_s"]["p90"] == pytest.approx(
        float(np.percentile([0.1, 0.2, 0.3, 0.4, 0.5], 90))
    )
    assert series.stats["e2e_s"]["mean"] == pytest.approx(1.2)
    assert series.stats["itl_s"]["max"] == pytest.approx(0.25)
    assert series.completed == 5 and series.failed == 0


def test_summary_numbers_win_over_rows(db_url: str) -> None:
    run = make_run(engines={"vllm": {"ttft_s": {"p50": 0.999}}}, requests={"vllm": [0.1, 0.2, 0.3]})
    series = runs.compare_runs([run]).series[0]
    assert series.stats["ttft_s"]["p50"] == 0.999
    assert series.stats["ttft_s"]["min"] == pytest.approx(0.1)  # filled from the rows


# ---------------------------------------------------------------- noise


def test_repeated_runs_give_a_welch_verdict(db_url: str) -> None:
    old_values, new_values = [0.100, 0.102, 0.098], [0.060, 0.061, 0.059]
    old = [
        make_run(engines={"vllm": engine_summary(v, 0.02, 1.0, 500.0)}, versions={"vllm": "0.10.0"})
        for v in old_values
    ]
    new = [
        make_run(engines={"vllm": engine_summary(v, 0.02, 1.0, 500.0)}, versions={"vllm": "0.11.0"})
        for v in new_values
    ]
    comparison = runs.compare_runs([old[0], new[0]])
    first, second = comparison.series
    assert first.repeat_run_ids == tuple(sorted(old)) and second.repeat_run_ids == tuple(sorted(new))
    verdict = next(v for v in comparison.verdicts if v.metric == "ttft_s")
    expected = scipy_stats.ttest_ind(new_values, old_values, equal_var=False).pvalue
    assert verdict.noise.status == "beyond" and verdict.noise.method == "repeats"
    assert f"p = {expected:.3g}" in verdict.text
    assert "beyond run-to-run noise (3 and 3 repeated runs" in verdict.text


def test_overlapping_repeats_are_within_noise(db_url: str) -> None:
    a = [
        make_run(engines={"vllm": engine_summary(v, 0.02, 1.0, 500.0)}, versions={"vllm": "1"})
        for v in (0.10, 0.13, 0.07)
    ]
    b = [
        make_run(engines={"vllm": engine_summary(v, 0.02, 1.0, 500.0)}, versions={"vllm": "2"})
        for v in (0.11, 0.08, 0.12)
    ]
    verdict = next(v for v in runs.compare_runs([a[0], b[0]]).verdicts if v.metric == "ttft_s")
    assert verdict.noise.status == "within"
    assert "within run-to-run noise" in verdict.text


def test_two_repeats_of_one_setup_are_noise_by_definition(db_url: str) -> None:
    a = make_run(engines={"vllm": engine_summary(0.10, 0.02, 1.0, 500.0)})
    b = make_run(engines={"vllm": engine_summary(0.12, 0.02, 1.0, 500.0)})
    verdict = runs.compare_runs([a, b]).verdicts[0]
    assert verdict.noise.status == "within"
    assert f"#{a} and #{b} are repeats of one configuration" in verdict.text


def test_a_different_config_or_status_is_not_a_repeat(db_url: str) -> None:
    base = make_run(engines={"vllm": engine_summary(0.10, 0.02, 1.0, 500.0)})
    make_run(
        engines={"vllm": engine_summary(0.10, 0.02, 1.0, 500.0)},
        config={"concurrency": 8, "requests": 100},
    )
    make_run(engines={"vllm": engine_summary(0.10, 0.02, 1.0, 500.0)}, status="failed")
    make_run(
        engines={"vllm": engine_summary(0.10, 0.02, 1.0, 500.0)},
        config={"concurrency": 4, "requests": 100, "name": "x"},
    )
    assert runs.get_run(base).repeat_ids == (base, base + 3)  # a different name is still a repeat


def test_per_request_samples_give_a_bootstrap_verdict(db_url: str) -> None:
    rng = np.random.default_rng(1)
    fast = make_run(requests={"a": list(rng.normal(0.10, 0.01, 200))}, config={"x": 1})
    slow = make_run(requests={"b": list(rng.normal(0.12, 0.01, 200))}, config={"x": 2})
    same = make_run(requests={"c": list(rng.normal(0.10, 0.01, 200))}, config={"x": 3})
    verdict = next(v for v in runs.compare_runs([fast, slow]).verdicts if v.metric == "ttft_s")
    assert verdict.noise.method == "bootstrap" and verdict.noise.status == "beyond"
    assert "run-to-run noise is unknown" in verdict.text
    low, high = map(float, re.findall(r"minus #\d+ b: (-?[\d.]+) ms to (-?[\d.]+) ms", verdict.text)[0])
    assert -25 < low < high < -15  # fast - slow, in ms, around -20
    verdict = next(v for v in runs.compare_runs([fast, same]).verdicts if v.metric == "ttft_s")
    assert verdict.noise.status == "within"


def test_settings_side_by_side_mark_differences(db_url: str) -> None:
    a = make_run(
        engines={"vllm": engine_summary(0.1, 0.02, 1, 1)},
        versions={"vllm": "0.10.0"},
        info={"vllm": {"cache_config_info": {"block_size": "16", "enable_prefix_caching": "True"}}},
    )
    b = make_run(
        engines={"vllm": engine_summary(0.1, 0.02, 1, 1)},
        versions={"vllm": "0.11.0"},
        info={"vllm": {"cache_config_info": {"block_size": "16", "enable_prefix_caching": "False"}}},
    )
    settings = {row.key: row for row in runs.compare_runs([a, b]).settings}
    assert settings["version"].values == ("0.10.0", "0.11.0") and settings["version"].differs
    assert not settings["cache_config_info.block_size"].differs
    assert settings["cache_config_info.enable_prefix_caching"].differs
    table = settings_table(runs.compare_runs([a, b]), only_differences=True)
    assert "cache_config_info.block_size" not in set(table["Setting"])


def test_compare_errors_are_clear(db_url: str) -> None:
    a = make_run(engines={"vllm": engine_summary(0.1, 0.02, 1, 1)})
    with pytest.raises(NotFoundError, match="#999"):
        runs.compare_runs([a, 999])
    with pytest.raises(ValidationError):
        runs.compare_runs([])
    empty = make_run(kind="recording")
    with pytest.raises(ValidationError, match="no engine results"):
        runs.compare_runs([empty])


def test_parse_run_ids() -> None:
    assert runs.parse_run_ids("12,13 14,12") == [12, 13, 14]
    assert runs.parse_run_ids(["#3", "4,5"]) == [3, 4, 5]
    with pytest.raises(ValidationError, match="not a run number"):
        runs.parse_run_ids("12,abc")


def test_format_value() -> None:
    assert runs.format_value("ttft_s", 0.0412) == "41.2 ms"
    assert runs.format_value("e2e_s", 12.5) == "12.50 s"
    assert runs.format_value("e2e_s", 1.6) == "1.60 s"
    assert runs.format_value("e2e_s", 0.25) == "250 ms"
    assert runs.format_value("output_throughput_tok_s", 1234.4) == "1,234 tok/s"
    assert runs.format_value("ttft_s", None) == "—"


# ---------------------------------------------------------------- history


def test_filters_and_pages(db_url: str) -> None:
    day = lambda d: datetime(2026, 11, d, 12, tzinfo=UTC)
    ids = {
        "a": make_run(name="alpha", engines={"vllm": {}}, tags=["nightly"], created_at=day(1)),
        "b": make_run(
            name="beta",
            engines={"vllm-cpu": {}},
            tags=["nightly", "h200"],
            created_at=day(2),
            model="qwen",
        ),
        "c": make_run(
            name="gamma",
            kind="playground",
            engines={"llamacpp": {}},
            created_at=day(3),
            notes="prefix cache on",
        ),
        "d": make_run(
            name="delta",
            kind="import",
            engines={"vllm": {}, "sglang": {}},
            created_at=day(4),
            workload="rag",
        ),
    }
    listed = lambda **kw: [i.id for i in runs.list_runs(runs.RunFilter(**kw)).items]
    assert listed() == [ids["d"], ids["c"], ids["b"], ids["a"]]  # newest first
    assert listed(engine="vllm") == [ids["d"], ids["a"]]  # exact engine, not "vllm-cpu"
    assert listed(tag="nightly") == [ids["b"], ids["a"]]
    assert listed(tag="h200") == [ids["b"]]
    assert listed(kinds=("playground", "import")) == [ids["d"], ids["c"]]
    assert listed(model="qwen") == [ids["b"]]
    assert listed(workload="rag") == [ids["d"]]
    assert listed(since=date(2026, 11, 2), until=date(2026, 11, 3)) == [ids["c"], ids["b"]]
    assert listed(text="PREFIX") == [ids["c"]]  # notes, case-insensitive
    assert listed(text="50%") == []  # LIKE wildcards are taken literally

    page = runs.list_runs(page=2, page_size=3)
    assert page.total == 4 and page.pages == 2 and [i.id for i in page.items] == [ids["a"]]

    options = runs.filter_options()
    assert options.engines == ["llamacpp", "sglang", "vllm", "vllm-cpu"]
    assert options.tags == ["h200", "nightly"]
    assert options.kinds == ["benchmark", "import", "playground"]

    with pytest.raises(ValidationError, match="Unknown run kind"):
        runs.list_runs(runs.RunFilter(kinds=("nope",)))
    with pytest.raises(ValidationError, match="start date is after"):
        runs.list_runs(runs.RunFilter(since=date(2026, 11, 5), until=date(2026, 11, 1)))


def test_history_filters_on_postgresql(any_db_url: str) -> None:
    a = make_run(name="alpha", engines={"vllm": {}}, tags=["nightly"])
    make_run(name="beta", engines={"vllm-cpu": {}}, tags=["other"])
    assert [
        i.id for i in runs.list_runs(runs.RunFilter(engine="vllm", tag="nightly", text="ALP")).items
    ] == [a]
    assert runs.filter_options().engines == ["vllm", "vllm-cpu"]


def test_archive_hides_and_brings_back(db_url: str) -> None:
    a = make_run(name="kept")
    runs.set_archived(a, True)
    assert runs.list_runs().total == 0
    assert [i.id for i in runs.list_runs(runs.RunFilter(archived="only")).items] == [a]
    runs.set_archived(a, False)
    assert runs.list_runs().total == 1


def test_notes_and_tags(db_url: str) -> None:
    a = make_run(tags=["old"])
    detail = runs.update_run(
        a, notes="after the driver update", tags=[" new ", "old", "new", ""], name="Renamed"
    )
    assert (
        detail.tags == ("new", "old")
        and detail.notes == "after the driver update"
        and detail.name == "Renamed"
    )
    with session_scope() as session:
        assert sorted(session.scalars(select(RunTag.tag).where(RunTag.run_id == a))) == ["new", "old"]
    assert [i.id for i in runs.list_runs(runs.RunFilter(tag="new")).items] == [a]
    with pytest.raises(ValidationError, match="comma"):
        runs.update_run(a, tags=["a,b"])


def test_delete_removes_everything_and_refuses_a_live_run(db_url: str) -> None:
    a = make_run(requests={"vllm": [0.1, 0.2]}, tags=["x"])
    result = runs.delete_run(a)
    assert result.requests == 2
    with session_scope() as session:
        assert session.scalar(select(func.count()).select_from(RequestResult)) == 0
        assert session.scalar(select(func.count()).select_from(RunTag)) == 0
    with pytest.raises(NotFoundError):
        runs.get_run(a)
    live = make_run(status="running")
    with pytest.raises(ValidationError, match="running"):
        runs.delete_run(live)


# ---------------------------------------------------------------- export and import


def test_json_export_then_import_round_trips(db_url: str, tmp_path) -> None:
    original = make_run(
        name="round trip",
        engines={"vllm": engine_summary(0.1, 0.02, 1, 500)},
        tags=["demo"],
        notes="n",
        requests={"vllm": [0.1, 0.2, 0.3]},
        info={"vllm": {"props": {"n_ctx": 8192}}},
    )
    exported = reports.export_run(original, "json")
    path = tmp_path / exported.filename
    path.write_bytes(exported.data)
    result = importers.import_file(path)
    assert result.tool == "shootout" and result.requests == 3
    copy = runs.get_run(result.run_ids[0])
    source = runs.get_run(original)
    assert copy.kind == source.kind == "benchmark"
    assert copy.summary == source.summary and copy.engines == source.engines
    assert {k: v for k, v in copy.config.items() if k != "import"} == source.config
    assert copy.config["import"]["original_id"] == original
    assert (copy.name, copy.notes, copy.tags, copy.model, copy.workload) == (
        source.name,
        source.notes,
        source.tags,
        source.model,
        source.workload,
    )
    assert copy.created_at.replace(tzinfo=None) == source.created_at.replace(tzinfo=None)
    # The copy is a repeat of the original (same setup), and compares as such.
    assert copy.repeat_ids == (original, copy.id)
    left, right = runs.compare_runs([original, copy.id]).series
    assert left.stats == right.stats and np.array_equal(left.samples["ttft_s"], right.samples["ttft_s"])
    again = json.loads(reports.export_run(copy.id, "json").data)
    assert again["requests"] == json.loads(exported.data)["requests"]


def test_csv_export_has_one_row_per_request(db_url: str) -> None:
    run = make_run(requests={"vllm": [0.1, 0.2, 0.3]})
    text = reports.export_run(run, "csv").data.decode()
    lines = text.strip().splitlines()
    assert lines[0].startswith("run_id,engine_name,index,warmup,ok")
    assert len(lines) == 4
    assert '"[0.05, 0.05]"' in lines[1]
    with pytest.raises(ValidationError, match="no per-request rows"):
        reports.export_run(make_run(kind="recording"), "csv")
    with pytest.raises(ValidationError, match="Unknown export format"):
        reports.export_run(run, "xml")


def test_html_report_is_self_contained_and_escaped(db_url: str) -> None:
    run = make_run(
        name="<script>alert(1)</script>",
        notes="<img src=x onerror=alert(2)>",
        engines={"vllm": engine_summary(0.1, 0.02, 1, 500)},
        requests={"vllm": [0.1, 0.2, 0.3]},
    )
    page = reports.export_run(run, "html").data.decode()
    assert page.startswith("<!DOCTYPE html>")
    assert "<script>alert(1)</script>" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "<img src=x" not in page
    assert not re.search(r"<script[^>]*\bsrc=", page)  # plotly.js inline: opens with no network
    assert "Plotly.newPlot" in page and len(page) > 1_000_000  # plotly.js inline, with the figures


def test_comparison_report(db_url: str) -> None:
    a = make_run(engines={"vllm": engine_summary(0.1, 0.02, 1, 500)}, requests={"vllm": [0.1, 0.2]})
    b = make_run(engines={"sglang": engine_summary(0.2, 0.02, 1, 500)}, requests={"sglang": [0.2, 0.3]})
    exported = reports.export_comparison([a, b])
    assert exported.filename == f"shootout-compare-{a}-{b}.html"
    page = exported.data.decode()
    assert "Verdicts" in page and "TTFT (median)" in page and "+100.0% worse" in page


# ---------------------------------------------------------------- command line


def test_cli_export_import_and_list(db_url: str, tmp_path, capsys) -> None:
    from cli import main

    run = make_run(
        name="cli", engines={"vllm": engine_summary(0.1, 0.02, 1, 500)}, requests={"vllm": [0.1, 0.2]}
    )
    target = tmp_path / "run.json"
    assert main(["export", str(run), "--format", "json", "-o", str(target)]) == 0
    assert main(["import", str(target), "--tag", "copied"]) == 0
    assert "as Shootout run JSON: run #2 (2 request rows)" in capsys.readouterr().out
    assert main(["runs", "list", "--tag", "copied", "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert [item["id"] for item in listed["runs"]] == [2]
    assert main(["runs", "compare", f"{run},2"]) == 0
    assert "are repeats of one configuration" in capsys.readouterr().out
    assert main(["export", str(run), "2", "--format", "html", "-o", str(tmp_path / "c.html")]) == 0
    assert (tmp_path / "c.html").stat().st_size > 1_000_000


def test_cli_failures_are_one_clear_line(db_url: str, tmp_path, capsys) -> None:
    from cli import main

    assert main(["runs", "show", "404"]) == 1
    assert capsys.readouterr().err.strip() == "error: Run #404 does not exist."
    bad = tmp_path / "bad.json"
    bad.write_text('{"hello": 1}')
    assert main(["import", str(bad)]) == 1
    assert capsys.readouterr().err.startswith("error: bad.json: not a results file Shootout can read.")
    run = make_run()
    assert main(["runs", "delete", str(run)]) == 1  # not a terminal: needs --yes
    assert "needs --yes" in capsys.readouterr().err
    assert main(["runs", "delete", str(run), "--yes"]) == 0
    assert main(["export", str(run), "--format", "csv"]) == 1


def test_demo_runs_show_their_conclusion_in_the_list_and_the_html_export(db_url: str) -> None:
    from db.models import Run
    from db.session import session_scope
    from services import runs
    from services.runs import reports

    with session_scope() as session:
        run = Run(
            kind="demo",
            name="prefix_cache",
            status="finished",
            engine_names="vllm-cpu",
            summary={
                "conclusion": "vllm-cpu: TTFT fell from 0.44 s to 88 ms (-80%).",
                "conclusion_headline": "vllm-cpu: TTFT fell from 0.44 s to 88 ms (-80%).",
                "steps": [],
            },
            config={"scenario": "prefix_cache"},
        )
        session.add(run)
        session.flush()
        run_id = run.id
    assert runs.list_runs().items[0].headline.startswith("vllm-cpu: TTFT fell")
    html = reports.export_run(run_id, "html").data.decode()
    assert "TTFT fell from 0.44 s to 88 ms" in html


def test_csv_cells_that_a_spreadsheet_would_run_are_neutralised(db_url: str) -> None:
    """Issue 20: an engine name or error text such as =HYPERLINK(...) was written as is."""
    from services.runs.reports.streamed import csv_cell as _csv_cell

    for dangerous in ('=HYPERLINK("http://x","y")', "+1+1", "-2+3", "@SUM(A1)", "\tx", "\rx"):
        assert _csv_cell(dangerous) == "'" + dangerous
    assert _csv_cell("plain") == "plain" and _csv_cell(-1.5) == -1.5 and _csv_cell(None) == ""


def started_by(viewer: Any, name: str) -> int:
    """A finished run started from the page by `viewer`, stored as the page stores it."""
    from services.team import limits

    with limits.admitted("benchmark", viewer) as requested_by, session_scope() as session:
        run = Run(kind="benchmark", name=name, status="finished", requested_by=requested_by)
        session.add(run)
        session.flush()
        return run.id


def test_a_viewer_renames_annotates_and_archives_only_their_own_runs(db_url: str) -> None:
    """Issue 31: any viewer could rename, annotate and archive any run, the operator's too.
    Password logins name both roles by the client's address: alice shares the operator's."""
    from services.team.access import PermissionDenied, Viewer

    alice, bob = Viewer("viewer", "ip:10.0.0.1"), Viewer("viewer", "ip:10.0.0.2")
    operator = Viewer("operator", "ip:10.0.0.1")
    mine, theirs = started_by(alice, "alice's"), started_by(operator, "operator's")
    imported = make_run(name="imported")  # no requested_by: an import or the CLI

    runs.update_run(mine, name="renamed", notes="n", tags=["t"], viewer=alice)
    runs.set_archived(mine, True, viewer=alice)
    assert runs.get_run(mine).name == "renamed" and runs.get_run(mine).archived
    refusals = {
        (mine, "bob"): "was started by another viewer",
        (theirs, "alice"): "was started by the operator",
        (imported, "alice"): "was imported or started on the server",
    }
    for (run_id, who), why in refusals.items():
        viewer = alice if who == "alice" else bob
        before = runs.get_run(run_id)
        for change in ({"name": "x"}, {"notes": "x"}, {"tags": ["x"]}):
            with pytest.raises(PermissionDenied, match=f"Run #{run_id} {why}"):
                runs.update_run(run_id, viewer=viewer, **change)
        with pytest.raises(PermissionDenied, match=f"Run #{run_id} {why}"):
            runs.set_archived(run_id, not before.archived, viewer=viewer)
        after = runs.get_run(run_id)
        assert (after.name, after.notes, after.tags, after.archived) == (
            before.name,
            before.notes,
            before.tags,
            before.archived,
        )
    # Several at once: all or none.
    with pytest.raises(PermissionDenied):
        runs.archive_runs([mine, theirs], False, viewer=alice)
    assert runs.get_run(mine).archived
    # The operator, and the CLI on the server (no viewer), change any run.
    for who in (operator, None):
        for run_id in (mine, theirs, imported):
            runs.update_run(run_id, notes=f"by {who}", viewer=who)
        runs.archive_runs([mine, theirs, imported], who is None, viewer=who)
    assert runs.get_run(imported).archived and runs.get_run(mine).notes == "by None"


def test_csv_cells_with_a_formula_behind_spaces_breaks_or_full_width_signs_are_neutralised(
    db_url: str,
) -> None:
    """Issue 31: a spreadsheet trims a leading space, ignores zero-width and control characters
    and reads the full-width ＝ ＋ － ＠ as = + - @; a leading line feed breaks the cell."""
    import csv
    import io

    from db.models import Sample
    from services.runs.reports.streamed import csv_cell, stream_run

    dangerous = [
        ' =HYPERLINK("http://x","y")',
        "  \t+1+1",
        "\n=1+1",
        "\nplain",
        "\u200b-2+3",
        "\x00@SUM(A1)",
        "\u3000=1",
        "＝1+1",
        "＋1",
        "－1",
        "＠SUM(A1)",
        " ＝1",
        "\ufe66small equals",
    ]
    for cell in dangerous:
        assert csv_cell(cell) == "'" + cell, repr(cell)
    for harmless in (" plain", "日本語", "é=1", "", "a=b"):
        assert csv_cell(harmless) == harmless
    # The export writes every cell through the one function: the header and every column too.
    name = " =cmd|' /C calc'!A0"
    run_id = make_run(requests={name: [0.1]})
    rows = list(csv.reader(io.StringIO(b"".join(stream_run(run_id, "csv").chunks).decode())))
    assert rows[1][rows[0].index("engine_name")] == "'" + name
    recording = make_run(kind="telemetry", name="rec")
    with session_scope() as session:
        session.add(Sample(run_id=recording, ts=1.0, source="＝gpu0", values={"\n=signal": "＠x"}))
    rows = list(csv.reader(io.StringIO(b"".join(stream_run(recording, "csv").chunks).decode())))
    assert rows == [["run_id", "ts", "source", "'\n=signal"], [str(recording), "1.0", "'＝gpu0", "'＠x"]]
