"""UC1 on the default data in one process, three times: the Spark run, then writing its rows as
CSV and as Parquet (docs/bench/2026-11-29-column-writers.md). Run from the repository root:

    python docs/bench/issue42/columns/writers.py DATA/log OUTDIR
"""
import sys
import time

from tefq.analysis import load
from tefq.io.result_writers import write_results
from tefq.spark import run

log, out = sys.argv[1], sys.argv[2]
doc = load("usecases/uc1.tef")
for _ in range(3):
    timings = {}
    started = time.perf_counter()
    result = run(doc, [log], progress=False)
    timings["run"] = time.perf_counter() - started
    for fmt in ("csv", "parquet"):
        started = time.perf_counter()
        write_results(result.results, fmt, f"{out}/uc1.{fmt}")
        timings[f"write {fmt}"] = time.perf_counter() - started
    print({k: round(v, 3) for k, v in timings.items()}, flush=True)
