"""bench/live.py's correctness check: the rows of every tick a live run reported against the
oracle's bounded run over the same input, line for line.

A minutes-long run at 200,000 events/s publishes tens of millions of events, more than the
oracle holds in memory (about 0.85 GB per million UC1 events): `check_seconds` then checks the ticks
of the input's first seconds only. The oracle reads the files published up to that moment (a
directory of links to them); a tick before the last timestamp of those files is final there (with
`--restamp now` every later file's timestamps are larger), so it must equal the live run's.
"""
from __future__ import annotations

import os
import subprocess
import sys

TEFQ = [sys.executable, "-m", "tefq"]


def by_tick(path: str, before: int | None = None) -> dict[int, list[str]]:
    """The CSV lines of each tick (sorted), ticks before `before` only if given."""
    out: dict[int, list[str]] = {}
    if os.path.exists(path):
        with open(path, encoding="utf-8") as fh:
            for line in fh:
                head = line.split(",", 1)[0]
                if head.isdigit() and (before is None or int(head) < before):
                    out.setdefault(int(head), []).append(line)
    return {t: sorted(lines) for t, lines in out.items()}


def prefix_stream(directory: str, until_ms: float, work: str) -> tuple[str, int]:
    """A directory of links to the files of a published `directory` written by `until_ms` (wall
    clock), and the last timestamp they hold (ms)."""
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    links = os.path.join(work, f"prefix-{os.path.basename(directory)}")
    os.makedirs(links, exist_ok=True)
    last = 0
    for name in sorted(os.listdir(directory)):
        path = os.path.join(directory, name)
        if name.startswith(".") or os.stat(path).st_mtime * 1000 > until_ms:
            continue
        os.symlink(path, os.path.join(links, name))
        if name.endswith(".parquet"):
            last = max(last, pc.max(pq.read_table(path, columns=["ts"])["ts"]).as_py() or 0)
        else:
            with open(path, encoding="utf-8") as fh:
                last = max([last] + [int(line.split("\t", 1)[0]) for line in fh if line[:1].isdigit()])
    return links, last


def oracle_agreement(doc: str, stream: str, rows_csv: str, check_until_ms: float | None = None,
                     work: str = "") -> tuple[int, int]:
    """(ticks whose rows equal the oracle's, ticks compared): the oracle's bounded run over the same
    input (with `check_until_ms`, a directory's files published by then: see the module doc), in
    the same CSV format, compared line by line per tick."""
    before = None
    if check_until_ms is not None and os.path.isdir(stream):
        stream, before = prefix_stream(stream, check_until_ms, work)
    want_csv = rows_csv + ".oracle"
    subprocess.run(TEFQ + ["run", doc, "--engine", "oracle", "--stream", stream, "--format", "csv", "--out",
                           want_csv], check=True, stdout=subprocess.DEVNULL)
    got, want = by_tick(rows_csv, before), by_tick(want_csv, before)
    return sum(1 for t, lines in got.items() if lines == want.get(t)), len(got)
