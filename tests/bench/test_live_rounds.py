"""bench/live.py's log in rounds (bench/live_log.py, issue 24): each round ends with a quit for
every fact still open, so a run of any length holds the open facts of one round."""
from __future__ import annotations

import os

import pyarrow as pa
import pyarrow.parquet as pq

from bench.live_log import QUIT, in_rounds
from tefq.io.readers import stream_files

I = "http://example.org/iptv#"
JOIN = f"<{I}join>"


def open_facts(files: list[str]) -> list[set]:
    """The (user, channel) facts open after each file (open after a join, closed after a quit)."""
    status: dict = {}
    after = []
    for f in files:
        for row in pq.read_table(f).to_pylist():
            status[(row["s"], row["o"])] = row["p"] == JOIN
        after.append({k for k, v in status.items() if v})
    return after


def test_each_round_ends_with_every_fact_closed_and_holds_the_same_facts(tmp_path):
    log = tmp_path / "log"
    log.mkdir()
    rows = [(1, "u1", JOIN, "a"), (2, "u2", JOIN, "a"), (3, "u1", QUIT, "a"), (4, "u1", JOIN, "b"),
            (5, "u3", JOIN, "c"), (6, "u3", QUIT, "c")]
    for i, part in enumerate((rows[:3], rows[3:])):
        pq.write_table(pa.table({"ts": pa.array([r[0] for r in part], pa.int64()),
                                 "s": [f"<{I}{r[1]}>" for r in part], "p": [r[2] for r in part],
                                 "o": [f"<{I}{r[3]}>" for r in part]}), log / f"part-{i:05d}.parquet")
    files = stream_files(in_rounds(str(log), 2))
    assert [os.path.relpath(f, str(log) + "-x2") for f in files] == [
        f"{k}/{name}" for k in ("0000", "0001")
        for name in ("part-00000.parquet", "part-00001.parquet", "zz-closing-quits.parquet")]
    quits = pq.read_table(files[2]).to_pylist()
    assert sorted((q["s"], q["o"]) for q in quits) == [(f"<{I}u1>", f"<{I}b>"), (f"<{I}u2>", f"<{I}a>")]
    assert {q["p"] for q in quits} == {QUIT} and {q["ts"] for q in quits} == {7}
    after = open_facts(files)
    assert after[2] == set() and after[5] == set() and after[:3] == after[3:]
