"""A tuning run is a run like the others: listed in Runs with its conclusion, compared with a
benchmark, exported as CSV, JSON and HTML."""

from __future__ import annotations

import json

from services import runs
from services.bench.arrivals import LoadSpec
from services.bench.workloads import WorkloadSpec
from services.runs import reports
from services.tune import jobs
from services.tune.spec import TuneSpec


def test_a_tuning_run_lists_compares_and_exports(db_url: str, local_engines: list) -> None:
    from services.bench.jobs import (
        create_run as create_benchmark,
    )
    from services.bench.jobs import (
        engine_target,
    )
    from services.bench.jobs import (
        execute_run as run_benchmark,
    )
    from services.bench.spec import BenchSpec

    tiny = {
        "workload": WorkloadSpec(input_len=16, output_len=8),
        "load": LoadSpec(concurrency=1, requests=3),
    }
    tune_id = jobs.create_run(TuneSpec(kind="llamacpp", grid={"np": ("1", "2")}, **tiny), trusted=True)
    jobs.execute_run(tune_id)
    bench_id = create_benchmark(BenchSpec(engines=(engine_target("llamacpp-1slot"),), **tiny))
    run_benchmark(bench_id, wait_for_metrics_s=0)

    listed = {item.id: item for item in runs.list_runs(runs.RunFilter(kinds=("tune",))).items}
    assert list(listed) == [tune_id]
    assert "the highest output throughput" in listed[tune_id].headline

    comparison = runs.compare_runs([tune_id, bench_id])
    labels = [series.label for series in comparison.series]
    assert labels == [f"#{tune_id} np=1", f"#{tune_id} np=2", f"#{bench_id} llamacpp-1slot"]
    settings = {row.key for row in comparison.settings}
    assert any("np" in key for key in settings), settings

    csv_text = reports.export_run(tune_id, "csv").data.decode()
    assert csv_text.count("\n") == 1 + 6  # header and 3 requests per configuration
    document = json.loads(reports.export_run(tune_id, "json").data)
    assert document["run"]["kind"] == "tune"
    assert [c["label"] for c in document["run"]["summary"]["configs"]] == ["np=1", "np=2"]
    html = reports.export_run(tune_id, "html").data.decode()
    assert "np=2" in html
