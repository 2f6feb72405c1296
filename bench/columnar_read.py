"""The Python side of a columnar ingestion path, per micro-batch of UC1 (a benchmark, not a test).

    .venv/bin/python bench/columnar_read.py --data /tmp/bench2m [--files 5]

Reads the first --files Parquet files of DATA/log with pyarrow, dictionary-encodes s, p, o,
checks the distinct values with the oracle's fast patterns (as tefq.io.readers does), and
computes codes, UC1's clause match, identity and bucket: what a task would do if Spark carried
only file paths. Prints the best of three: read seconds and check+encode seconds.
"""
from __future__ import annotations

import argparse
import os
import time

import numpy as np
import pyarrow.compute as pc
import pyarrow.parquet as pq

from tefq.io.readers import fast_term_patterns

PATTERNS = fast_term_patterns()
JOIN = "<http://example.org/iptv#join>"


def one_pass(files: list[str]) -> tuple[int, float, float]:
    started = time.perf_counter()
    tables = [pq.read_table(f, columns=["ts", "s", "p", "o"]) for f in files]
    read = time.perf_counter()
    rows = 0
    for t in tables:
        rows += t.num_rows
        codes, dictionaries = {}, {}
        for c in "spo":
            d = pc.dictionary_encode(t.column(c)).combine_chunks()
            if not pc.all(pc.match_substring_regex(d.dictionary, PATTERNS[c])).as_py():
                raise SystemExit(f"column {c}: a value not in normal form (the oracle's checker would run)")
            codes[c], dictionaries[c] = d.indices.to_numpy(), d.dictionary.to_pylist()
        join = dictionaries["p"].index(JOIN) if JOIN in dictionaries["p"] else -1
        kind = np.where(codes["p"] == join, 1, 2)  # noqa: F841 (the work is the point)
        fid = (codes["s"].astype(np.int64) << 20) | codes["o"]  # noqa: F841
        bucket = codes["o"] % 4  # noqa: F841
    return rows, read - started, time.perf_counter() - read


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", required=True)
    ap.add_argument("--files", type=int, default=5)
    a = ap.parse_args()
    log = os.path.join(a.data, "log")
    files = sorted(os.path.join(log, f) for f in os.listdir(log))[:a.files]
    rows, read, encode = min((one_pass(files) for _ in range(3)), key=lambda r: r[1] + r[2])
    print(f"{rows} rows: read {read:.2f} s, check+encode {encode:.2f} s (load {os.getloadavg()[0]:.1f})")


if __name__ == "__main__":
    main()
