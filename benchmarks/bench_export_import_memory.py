"""Memory of exporting and importing a large run, streamed against the whole-in-memory way
(issue 20), each measured in a fresh process: peak RSS and traced Python allocations.

    .venv/bin/python -m benchmarks.bench_export_import_memory [--requests 200000]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

PROBE = """
import json, resource, sys, time, tracemalloc
from db.session import get_session_factory
get_session_factory()  # the schema check is not what is measured
from services import exports, importers
from services.runs import reports
from services.importers import shootout
from services.importers.common import SourceFile
mode, run_id, path = {mode!r}, {run_id}, {path!r}
tracemalloc.start()
started = time.monotonic()
size = 0
if mode == "export json, streamed":
    with open(path, "wb") as handle:
        for chunk in exports.stream_run(run_id, "json").chunks:
            size += handle.write(chunk)
elif mode == "export json, whole":
    data = json.dumps(exports.json_safe(reports.run_document(run_id)), indent=1, default=str).encode()
    size = len(data)
    open(path, "wb").write(data)
elif mode == "export csv, streamed":
    size = sum(len(chunk) for chunk in exports.stream_run(run_id, "csv").chunks)
elif mode == "export csv, whole":
    import csv, io
    document = reports.run_document(run_id)
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(["run_id", *exports.REQUEST_COLUMNS])
    for row in document["requests"]:
        writer.writerow([run_id, *(exports.csv_cell(row[c]) for c in exports.REQUEST_COLUMNS)])
    size = len(buffer.getvalue().encode())
elif mode == "import json, streamed":
    size = importers.import_file(path).requests
elif mode == "import json, whole":
    text = open(path, "rb").read().decode("utf-8-sig")
    [run] = shootout.parse(SourceFile(name="x.json", text=text, document=json.loads(text)))
    size = len(run.requests)
    importers.save_run(run)
print(json.dumps({{"s": time.monotonic() - started, "traced_mib": tracemalloc.get_traced_memory()[1] / 2**20,
                  "rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, "size": size}}))
"""

MODES = (
    "export json, streamed",
    "export json, whole",
    "export csv, streamed",
    "export csv, whole",
    "import json, streamed",
    "import json, whole",
)


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--requests", type=int, default=200_000, help="requests in the run (default 200,000)"
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        env_code = (
            f"import os; os.environ['SHOOTOUT_DATA_DIR'] = {folder!r}; "
            f"os.environ['SHOOTOUT_DATABASE_URL'] = 'sqlite:///{folder}/shootout.db'\n"
        )
        build = (
            env_code
            + f"from tests.support.big_runs import make_big_run; print(make_big_run({args.requests}))"
        )
        run_id = int(
            subprocess.run(
                [sys.executable, "-c", build], capture_output=True, text=True, check=True, cwd=ROOT
            ).stdout.strip()
        )
        path = str(Path(folder) / "export.json")
        print(f"run of {args.requests:,} requests")
        print(f"{'what':24} {'time':>8} {'peak traced':>12} {'peak RSS':>10}  size")
        results = {}
        for mode in MODES:
            code = env_code + PROBE.format(root=str(ROOT), mode=mode, run_id=run_id, path=path)
            answer = subprocess.run(
                [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT
            )
            if answer.returncode != 0:
                print(f"{mode:24} failed: {answer.stderr.strip().splitlines()[-1][:200]}")
                continue
            result = results[mode] = json.loads(answer.stdout.strip().splitlines()[-1])
            unit = "rows" if mode.startswith("import") else "bytes"
            print(
                f"{mode:24} {result['s']:>6.1f} s {result['traced_mib']:>8.0f} MiB {result['rss_mib']:>6.0f} MiB"
                f"  {result['size']:,} {unit}"
            )
        for what in ("export json", "export csv", "import json"):
            streamed, whole = results.get(f"{what}, streamed"), results.get(f"{what}, whole")
            if streamed and whole:
                print(
                    f"{what}: the whole way takes {whole['rss_mib'] / streamed['rss_mib']:.1f}x the peak RSS, "
                    f"{whole['traced_mib'] / streamed['traced_mib']:.0f}x the traced peak"
                )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
