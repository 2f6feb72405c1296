"""Ties across files that arrive after a followed run starts (issue 24): they apply in file order
(spec §1), as on the oracle over the same files, whatever partitions Spark packs them in. Spark
packs a micro-batch's files by size, largest first: here the second-named file is much larger, so
it lands in the first partition, and its join at the same ms as the first file's quit would apply
first if ties went by partition. Both paths a followed directory of Parquet files can take: direct
(the default: each bucket's operator reads the files, `columnar.FileOrder`) and rows (`TieOrder`)."""
from __future__ import annotations

import os
import signal
import threading
import time

import pytest

from tefq.io.stream_writers import write_stream
from tests.support import spark_docs as sd
from tests.support.paths import ROOT
from tests.support.spark import oracle

IPTV = sd.IPTV
J, Q = f"<{IPTV}join>", f"<{IPTV}quit>"


def wait_for_tick(out_csv, tick: int) -> None:
    deadline = time.monotonic() + 300
    while not (out_csv.exists() and f"\n{tick}," in out_csv.read_text()) and time.monotonic() < deadline:
        time.sleep(0.3)


def add_together(d, files: dict[str, list]) -> None:
    """Write each file hidden, in name order, then rename them all at once: one micro-batch."""
    for name, rows in sorted(files.items()):
        write_stream(rows, str(d / f".{name}.tmp"), fmt="parquet")
        time.sleep(0.05)  # distinct modification times, in name order, as a publisher writes them
    for name in sorted(files):
        os.replace(d / f".{name}.tmp", d / name)


def follow(d, out_csv, later: dict[str, list], first_tick: int, last_tick: int, ingest: str = "auto") -> int:
    """`tefq run uc1 --follow` until `first_tick` is out, then `later` arrives in one go; a
    SIGTERM once `last_tick` is out."""
    from tefq.cli import run_command

    def producer() -> None:
        try:
            wait_for_tick(out_csv, first_tick)
            add_together(d, later)
            wait_for_tick(out_csv, last_tick)
        finally:
            os.kill(os.getpid(), signal.SIGTERM)

    thread = threading.Thread(target=producer, daemon=True)
    thread.start()
    code = run_command(["run", "usecases/uc1.tef", "--stream", str(d), "--follow", "--out", str(out_csv),
                        "--master", "local[2]", "--quiet", "--ingest", ingest])
    thread.join(timeout=60)
    return code


A, B = "<http://x/a>", "<http://x/b>"
EARLY = [(1000, "<http://x/u1>", J, A), (3000, "<http://x/u2>", J, B)]
LATER_EARLY = [(12000, "<http://x/u3>", J, A), (21000, "<http://x/u1>", Q, A)]


@pytest.mark.spark
@pytest.mark.parametrize("ingest", ["auto", "columnar", "rows"])
@pytest.mark.parametrize("start", [
    {"part-0000.parquet": EARLY, "part-0001.parquet": LATER_EARLY},  # ranked: two files at the start
    {"part-0000.parquet": EARLY + LATER_EARLY},  # one file at the start: ranked too (a follow run)
], ids=["two-files-at-start", "one-file-at-start"])
def test_ties_across_later_files_of_one_micro_batch_follow_file_order(spark, tmp_path, monkeypatch, start, ingest):
    """u9 quits `a` (part-0002, small) and joins it (part-0003, large) at 31000: in file order the
    quit (of nobody) comes first and u9 watches `a` at tick 40000; the other way round u9 would
    not. --out is the oracle's rows over the same files the event time passed, whether the run
    started with two files or one."""
    from tefq.io.result_writers import results_text

    a, b = A, B
    padding = [(30000 + i % 1000, f"<http://x/pad/{i}>", "<http://x/other>", f"<http://x/v/{i}>")
               for i in range(30_000)]  # what no clause matches: size only
    later = {"part-0002.parquet": [(31000, "<http://x/u9>", Q, a)],
             "part-0003.parquet": [(31000, "<http://x/u9>", J, a), (41000, "<http://x/u4>", J, b)] + padding}
    d = tmp_path / "in"
    d.mkdir()
    for name, rows in start.items():
        write_stream(rows, str(d / name), fmt="parquet")
    out_csv = tmp_path / "out.csv"
    monkeypatch.chdir(ROOT)
    assert follow(d, out_csv, later, 20000, 40000, ingest) == 0
    sizes = {n: os.path.getsize(d / n) for n in later}
    assert sizes["part-0003.parquet"] > 10 * sizes["part-0002.parquet"]  # Spark's packing puts it first
    every = [r for name in sorted(start) for r in start[name]] + [r for name in sorted(later) for r in later[name]]
    want = oracle(sd.uc1(10_000), every).results[0]
    want.rows = [r for r in want.rows if r[0] < 41000]  # the ticks the event time has passed
    assert (40000, (a, '"2"^^<http://www.w3.org/2001/XMLSchema#integer>')) in want.rows  # u3 and u9: the tie matters
    assert out_csv.read_bytes() == results_text([want], "csv").encode("utf-8")


def test_later_files_are_keyed_by_arrival_whatever_their_partition():
    """protocol.TieOrder without Spark: two files the ranks do not know, the later one read by
    partition 0 and the earlier by partition 1; the earlier file's rows come first, after every
    ranked row, each file's rows in order, and the keys stay batch-free (`ranked_keys`)."""
    import numpy as np
    import pyarrow as pa

    from tefq.spark.protocol import ORDER_SHIFT, TieOrder, ranked_keys, streams_of_keys
    from tefq.spark.runtime.ranks import path_hash

    t0 = 1_790_000_000_000
    ranks = {path_hash("file:/in/a", 0, t0): 0, path_hash("file:/in/b", 0, t0 + 5): 1}
    earlier, later = path_hash("file:/in/c", 1, t0 + 9000), path_hash("file:/in/d", 1, t0 + 9050)
    k_later = TieOrder(ranks, 0)(pa.array([later] * 3, pa.int64())).to_numpy()
    k_earlier = TieOrder(ranks, 1)(pa.array([earlier] * 2, pa.int64())).to_numpy()
    k_ranked = TieOrder(ranks, 0)(pa.array([list(ranks)[1]] * 2, pa.int64())).to_numpy()
    assert list(np.diff(k_later)) == [1, 1] and k_earlier[1] - k_earlier[0] == 1
    assert k_ranked.max() < k_earlier.min() and k_earlier.max() < k_later.min()
    for batch in (0, 7):  # what the operators order by: batch * ORDER_SHIFT + ranked_keys(batch, key)
        final = batch * ORDER_SHIFT + ranked_keys(batch, np.concatenate([k_later, k_earlier]))
        assert list(final) == list(k_later) + list(k_earlier)
    assert list(streams_of_keys(np.concatenate([k_ranked, k_earlier]), (0, 2), True)) == [0, 0, 1, 1]


def test_a_task_reading_files_keys_later_ones_by_arrival_as_the_row_path_does(tmp_path):
    """columnar.FileOrder (direct ingestion of a followed run): a file there at the start by its
    rank; one that arrived later by its input directory's stream, then its modification time,
    with the key the row path gives the same file (`protocol.Arrivals`); an earlier arrival first,
    whatever its name; a file outside every input is unranked."""
    import pyarrow as pa

    from tefq.spark.protocol import ORDER_SHIFT, ROW_BITS, TieOrder, ranked_keys, streams_of_keys
    from tefq.spark.runtime.columnar import FileOrder
    from tefq.spark.runtime.ranks import path_hash

    t0 = 1_790_000_000_000
    dirs = [tmp_path / "s0", tmp_path / "s1"]
    for i, d in enumerate(dirs):
        d.mkdir()
        write_stream(EARLY, str(d / "part-0.parquet"), fmt="parquet")
        os.utime(d / "part-0.parquet", ns=((t0 + i) * 1_000_000,) * 2)
    order = FileOrder.of([str(d) for d in dirs], follow=True)
    assert order.newest == t0 + 1
    assert order.place(str(dirs[1] / "part-0.parquet")) == (1, 1 << ROW_BITS)
    for name, at in (("b.parquet", t0 + 9000), ("a.parquet", t0 + 9050)):
        write_stream(EARLY, str(dirs[1] / name), fmt="parquet")
        os.utime(dirs[1] / name, ns=(at * 1_000_000,) * 2)
    (s_b, k_b), (s_a, k_a) = order.place(str(dirs[1] / "b.parquet")), order.place(str(dirs[1] / "a.parquet"))
    assert s_b == s_a == 1 and (1 << ROW_BITS) < k_b < k_a  # after the ranked files, by arrival
    assert list(streams_of_keys([k_b], (0, 1), True)) == [1]
    assert list(ranked_keys(5, [k_b])) == [k_b - 5 * ORDER_SHIFT]  # batch-free, like a ranked file's
    ranks = {path_hash("file:/s0/part-0", 0, t0): 0, path_hash("file:/s1/part-0", 1, t0 + 1): 1}
    row_path = TieOrder(ranks, 0)(pa.array([path_hash("file:/s1/b", 1, t0 + 9000)], pa.int64())).to_numpy()
    assert int(row_path[0]) == k_b
    outside = tmp_path / "elsewhere.parquet"
    write_stream(EARLY, str(outside), fmt="parquet")
    assert order.place(str(outside)) == (0, None) and not FileOrder.of([str(dirs[0])]).keyed(str(outside))
