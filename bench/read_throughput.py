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


def time_read(path: str, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        count = 0
        for _ in read_stream(path):
            count += 1
        best = min(best, time.perf_counter() - start)
    return best


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
            secs = time_read(path, args.repeat)
            print(f"{fmt:10s} {args.rows:>10,d} rows  {secs:7.3f} s  {args.rows / secs:>12,.0f} rows/s  "
                  f"({os.path.getsize(path) / 1e6:.1f} MB)")


if __name__ == "__main__":
    main()
