"""How fast `tefq gen iptv` writes Parquet, and in how much memory.

    .venv/bin/python bench/gen_throughput.py [--events 10000000] [--users U] [--format parquet]

Users default to the paper's density (22,872 users per 100,000 events per day), so the log keeps
its one-day shape at any size. Prints wall and CPU throughput, files, bytes and peak memory
(ru_maxrss). The machine is shared: CPU throughput is the steadier figure.
"""
from __future__ import annotations

import argparse
import os
import resource
import shutil
import tempfile
import time

from tefq.iptv.generator import IptvConfig
from tefq.iptv.writer import generate


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--events", type=int, default=10_000_000)
    ap.add_argument("--users", type=int, default=None)
    ap.add_argument("--days", type=float, default=1.0)
    ap.add_argument("--format", default="parquet")
    ap.add_argument("--epg", action="store_true")
    ap.add_argument("--keep", metavar="DIR", help="write here and keep the files")
    a = ap.parse_args()
    users = a.users or max(1, round(a.events * 22_872 / 100_000 / a.days))
    cfg = IptvConfig(events=a.events, users=users, days=a.days)
    out = a.keep or tempfile.mkdtemp(prefix="tefq-gen-")
    target = os.path.join(out, "data")
    try:
        wall, cpu = time.perf_counter(), time.process_time()
        w = generate(cfg, target, epg=a.epg, fmt=a.format)
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        size = sum(os.path.getsize(f) for f in w.log_files + w.epg_files)
        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(f"events {w.log_events:,} ({users:,} users, {a.days:g} days, {a.format}), "
              f"{len(w.log_files)} log files, {size / 2**20:,.0f} MiB")
        print(f"wall {wall:.2f} s = {w.log_events / wall:,.0f} events/s;  "
              f"cpu {cpu:.2f} s = {w.log_events / cpu:,.0f} events/s;  peak RSS {rss:,.0f} MiB")
    finally:
        if not a.keep:
            shutil.rmtree(out, ignore_errors=True)


if __name__ == "__main__":
    main()
