"""How fast `tefq.io.readers.read_stream` delivers elements, per format.

    .venv/bin/python bench/read_throughput.py [--rows 1000000] [--formats parquet,tsv,nq]

Writes an IPTV-like stream (users joining/quitting channels, a literal every third row) once per
format into a temporary directory with `write_stream`, then times a full iteration of
`read_stream` (best of --repeat runs) and prints rows/s. The figure is in docs/formats.md.
"""
from __future__ import annotations

import argparse
import os
import tempfile
import time

from tefq.io.readers import read_stream
from tefq.io.stream_writers import write_stream

E = "http://example.org/iptv#"
XSD_INT = "http://www.w3.org/2001/XMLSchema#integer"


def elements(n: int):
    for i in range(n):
        o = f'"{i}"^^<{XSD_INT}>' if i % 3 == 0 else f"<{E}ch{i % 50}>"
        yield i * 10, f"<{E}u{i % 1000}>", f"<{E}{'join' if i % 2 else 'quit'}>", o


def time_read(path: str, repeat: int) -> tuple[float, float]:
    """Best (wall seconds, CPU seconds of this process) over `repeat` full reads. CPU time is
    the figure to trust on a shared machine: wall time grows with other jobs' load."""
    best_wall = best_cpu = float("inf")
    for _ in range(repeat):
        wall, cpu = time.perf_counter(), time.process_time()
        count = 0
        for _ in read_stream(path):
            count += 1
        best_wall = min(best_wall, time.perf_counter() - wall)
        best_cpu = min(best_cpu, time.process_time() - cpu)
    return best_wall, best_cpu


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--formats", default="parquet")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        for fmt in args.formats.split(","):
            path = os.path.join(tmp, f"stream.{fmt}")
            write_stream(elements(args.rows), path)
            wall, cpu = time_read(path, args.repeat)
            print(f"{fmt:8s} {args.rows:>10,d} rows  wall {wall:7.3f} s = {args.rows / wall:>10,.0f} rows/s  "
                  f"cpu {cpu:7.3f} s = {args.rows / cpu:>10,.0f} rows/s  ({os.path.getsize(path) / 1e6:.1f} MB)")
    print(f"load average: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")


if __name__ == "__main__":
    main()
