"""Issue 8: an API key lives only in its environment variable. After a playground
exchange, a benchmark, a recording and every export, the key is nowhere in the database
files, the exports, or any log under the data directory."""

from __future__ import annotations

from pathlib import Path

from db.session import dispose_all
from services import playground
from services.bench import jobs
from services.bench.arrivals import LoadSpec
from services.bench.spec import BenchSpec
from services.bench.workloads import WorkloadSpec
from services.client import ChatRequest, build_headers
from services.engines import SamplingParams, endpoints
from services.runs import reports
from services.telemetry import recorder
from tests.support.scripted_server import ScriptedServer

SECRET = "sk-shootout-test-7f3a9c1e5b2d4f60"


def test_api_key_never_stored(
    db_url: str, tmp_path: Path, scripted_server: ScriptedServer, monkeypatch
) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("SHOOTOUT_TEST_KEY", SECRET)
    request = ChatRequest(
        base_url=scripted_server.base_url, model="m", messages=[], api_key_env="SHOOTOUT_TEST_KEY"
    )
    assert build_headers(request)["authorization"] == f"Bearer {SECRET}"  # it is really sent
    for name in ("keyed-a", "keyed-b"):
        endpoints.add_engine(
            name,
            scripted_server.base_url,
            kind="vllm",
            model=scripted_server.model(tokens=6, itl=1),
            api_key_env="SHOOTOUT_TEST_KEY",
            metrics_url=scripted_server.root_url + "/metrics",
        )
    handle = playground.send(
        playground.SendRequest(
            engines=(playground.EngineChoice("keyed-a"), playground.EngineChoice("keyed-b")),
            prompt="hi",
            params=SamplingParams(max_tokens=6),
        )
    )
    assert playground.wait(handle.run_id, 30)
    recording = recorder.begin_recording_run("keyed", ["keyed-a"], gpus=False, interval_s=0.2)
    bench_id = jobs.create_run(
        BenchSpec(
            engines=(jobs.engine_target("keyed-a"),),
            workload=WorkloadSpec(input_len=8, output_len=6),
            load=LoadSpec(concurrency=2, requests=6),
        )
    )
    jobs.execute_run(bench_id)
    recorder.stop_recording(recording.run_id)
    exports = tmp_path / "exports"
    exports.mkdir()
    for run_id in (handle.run_id, bench_id, recording.run_id):
        for fmt in ("csv", "json", "html"):
            (exports / f"{run_id}.{fmt}").write_bytes(reports.export_run(run_id, fmt).data)
        code = playground.request_code(handle.run_id, "keyed-a")
        (exports / "code.txt").write_text("\n".join(code))
    dispose_all()  # flush the WAL into the files we search
    searched = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert any(p.name.startswith("shootout.db") for p in searched)
    leaks = [str(p) for p in searched if SECRET.encode() in p.read_bytes()]
    assert leaks == []
    assert (
        "SHOOTOUT_TEST_KEY" in (exports / "code.txt").read_text()
    )  # the code names the variable instead
