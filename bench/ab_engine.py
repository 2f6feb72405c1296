"""One engine run for same-run A/B comparisons of code versions (a benchmark, not a test).

    PYTHONPATH=<checkout of version X> .venv/bin/python bench/ab_engine.py --usecase uc1 --data DIR --json OUT

Runs only the Spark engine over DIR/log (1M-event micro-batches) and writes the steady rate, the
wall time, the load average and a digest of the sorted result rows, so that versions alternated in
one session can be compared with their rows checked equal (bench/throughput.py adds the limit).
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from throughput import batch_figures, docs, load_average  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--usecase", choices=("uc1", "uc2"), required=True)
    ap.add_argument("--data", required=True)
    ap.add_argument("--json", required=True)
    ap.add_argument("--files-per-trigger", type=int, default=5)
    args = ap.parse_args()
    import tefq
    from tefq.spark import run

    load_start = load_average()
    started = time.perf_counter()
    r = run(docs(args.usecase), [os.path.join(args.data, "log")], max_files_per_trigger=args.files_per_trigger,
            progress=False)
    wall = time.perf_counter() - started
    per, steady = batch_figures(r.metrics.extra.get("micro_batches", []))
    digest = hashlib.sha1(repr(r.results[0].rows).encode()).hexdigest()
    out = {"usecase": args.usecase, "code": os.path.dirname(os.path.dirname(tefq.__file__)),
           "steady_events_per_s": steady, "wall_seconds": wall, "rows_out": r.metrics.rows_out,
           "rows_sha1": digest, "collect_seconds": r.metrics.extra.get("collect_seconds"),
           "micro_batches": per, "load_average_start": load_start, "load_average_end": load_average()}
    with open(args.json, "w", encoding="utf-8") as fh:
        json.dump(out, fh, indent=2)
    print(json.dumps({k: v for k, v in out.items() if k != "micro_batches"}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
