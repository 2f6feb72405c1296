"""Where Spark overtakes the oracle with the warm engine up (`--engine auto`'s warm bar,
`tefq.service.AUTO_ORACLE_EVENTS_WARM`): whole `tefq run` wall time timed from outside, both
engines run in the warm engine as `auto` would run them there (a benchmark, not a test):

    python bench/warm_crossover.py [--sizes 2000,5000,20000,50000] [--usecases uc1,uc2] [--repeat 2]
                                   [--data-root DIR] [--json OUT]

Data: `tefq gen iptv --out DIR/N --epg --seed 1 --events N --users U` (made when absent; U keeps the
default data's 22,872 users per 100,000 events). The engine is
started once (a first `--engine spark` run, not timed) in a private directory and stopped at the
end; then per size and use-case, `repeat` times alternating: `--engine oracle`, `--engine spark`.
Every Spark CSV must equal the oracle's.
"""
from __future__ import annotations

import argparse
import filecmp
import json
import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from warm import ROOT, tefq  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="2000,5000,20000,50000")
    ap.add_argument("--usecases", default="uc1,uc2")
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--data-root", default="/tmp/tefq-bench-sizes")
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    home = tempfile.mkdtemp(prefix="tefq-bench-engines-")
    env = {**os.environ, "TEFQ_SERVER": "1", "TEFQ_SERVER_DIR": home}
    sizes = [int(n) for n in args.sizes.split(",")]
    usecases = args.usecases.split(",")
    rows = []
    try:
        with tempfile.TemporaryDirectory() as tmp:
            for n in sizes:
                data = os.path.join(args.data_root, str(n))
                if not os.path.isdir(os.path.join(data, "log")):
                    users = max(1, n * 22_872 // 100_000)
                    tefq(["gen", "iptv", "--out", data, "--epg", "--seed", "1", "--events", str(n), "--users", str(users)],
                         {**os.environ, "TEFQ_SERVER": "0"})
                for uc in usecases:
                    streams = ["--stream", os.path.join(data, "log")]
                    if uc == "uc3":
                        streams += ["--stream", os.path.join(data, "epg")]
                    base = ["run", os.path.join(ROOT, "usecases", f"{uc}.tef"), *streams, "--format", "csv", "--quiet"]
                    if not rows:  # the engine starts here, untimed
                        tefq([*base, "--out", os.path.join(tmp, "start.csv"), "--engine", "spark"], env)
                    row = {"events": n, "usecase": uc, "oracle_seconds": [], "spark_seconds": [], "equal": True}
                    for i in range(args.repeat):
                        for engine in ("oracle", "spark"):
                            out = os.path.join(tmp, f"{engine}.csv")
                            row[f"{engine}_seconds"].append(round(tefq([*base, "--out", out, "--engine", engine], env), 2))
                        row["equal"] &= filecmp.cmp(os.path.join(tmp, "oracle.csv"), os.path.join(tmp, "spark.csv"),
                                                    shallow=False)
                    row["load"] = list(os.getloadavg())
                    rows.append(row)
                    print(f"{uc} {n:>7,} events: oracle {row['oracle_seconds']} s, Spark {row['spark_seconds']} s"
                          f" (warm engine), CSVs equal: {row['equal']}", flush=True)
    finally:
        tefq(["server", "stop"], env)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump({"rows": rows, "cpus": os.cpu_count()}, fh, indent=1)
    return 0 if all(r["equal"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
