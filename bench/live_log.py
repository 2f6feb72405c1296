"""The IPTV log a live run is fed (bench/live.py): generated once per rate, one user per 50 events,
as Parquet (what the publisher reads fastest).

A run longer than `cycle_s` seconds is fed the log of its first `cycle_s` seconds over and over, each
round ending with a quit for every fact still open (`closing_quits`): every round starts from no
open fact and holds the same ones, so the audience, and the state a run holds (UC1: one open fact
per viewer), are those of `cycle_s` seconds whatever the run's length. With one log for the whole
run, a run twice as long had twice the users and, at its peaks, twice the open facts: the five-minute
run at 200,000 events/s held about 1.1 million against the two-minute run's 0.45 million, and its
delay followed them (issue 24, docs/live.md "What the state costs")."""
from __future__ import annotations

import glob
import os

QUIT = "<http://example.org/iptv#quit>"


def generated_log(rate: int, seconds: int, work: str, cycle_s: int = 0) -> str:
    """A stream directory of `seconds` of input at `rate` (and 5 s to spare); with `cycle_s`, the
    first `cycle_s` seconds' log in rounds (the module doc)."""
    from tefq.iptv.generator import IptvConfig
    from tefq.iptv.writer import generate

    span = min(seconds, cycle_s) if cycle_s else seconds
    total = rate * (span + 5)
    data = os.path.join(work, f"data-{rate}-{span}")
    if not os.path.exists(data):
        generate(IptvConfig(events=total, users=max(100, total // 50), channels=20, seed=3), data, fmt="parquet")
    log = os.path.join(data, "log")
    return log if span >= seconds else in_rounds(log, -(-(seconds + 5) // (span + 5)))


def in_rounds(log: str, rounds: int) -> str:
    """A stream directory reading `log` and its closing quits `rounds` times (linked folders `0000/`,
    `0001/`, ...: a directory's files go in the order of their relative paths)."""
    out, one = f"{log}-x{rounds}", f"{log}-round"
    if not os.path.exists(one):
        os.makedirs(one)
        files = sorted(glob.glob(os.path.join(log, "*.parquet")))
        for f in files:
            os.symlink(f, os.path.join(one, os.path.basename(f)))
        closing_quits(files, os.path.join(one, "zz-closing-quits.parquet"))
    if not os.path.exists(out):
        os.makedirs(out)
        for k in range(rounds):
            os.symlink(one, os.path.join(out, f"{k:04d}"))
    return out


def closing_quits(files: list[str], path: str) -> int:
    """Write a quit for every (user, channel) fact open at the end of `files` (open after its last
    join, closed after its last quit), one ms after the last element; returns how many."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    t = pa.concat_tables([pq.read_table(f) for f in files])
    key = pc.binary_join_element_wise(t["s"], t["o"], "\t").to_numpy(zero_copy_only=False).astype(str)
    keys, last = np.unique(key[::-1], return_index=True)  # each fact's last element
    last = len(key) - 1 - last
    open_ = ~pc.ends_with(t["p"], "quit>").to_numpy(zero_copy_only=False)[last]
    s, o = np.char.partition(keys[open_], "\t")[:, [0, 2]].T if open_.any() else (np.zeros(0, str),) * 2
    ts = int(pc.max(t["ts"]).as_py()) + 1
    pq.write_table(pa.table({"ts": pa.array(np.full(len(s), ts), pa.int64()), "s": pa.array(s.tolist(), pa.string()),
                             "p": pa.array([QUIT] * len(s), pa.string()), "o": pa.array(o.tolist(), pa.string())}),
                   path)
    return len(s)
