"""`--follow` (issue 15, issue 17 fault 5): a followed directory ignores hidden, `_` and `*.tmp`
files instead of stopping; the follow loop hands each micro-batch's rows on and keeps none of them
(driver memory does not grow with the rows emitted)."""
from __future__ import annotations

import gc
import os
import signal
import threading
import time
import tracemalloc

import numpy as np
import pyarrow as pa
import pytest

from tefq.io.stream_writers import write_stream
from tefq.plan.logical import Var
from tefq.spark.output import NumericRows, rows_record, terms_record
from tefq.spark.runtime.follow import SinkTail
from tests.support import spark_docs as sd
from tests.support.follow_checkpoints import commit_records, sink_plan
from tests.support.paths import ROOT
from tests.support.spark import oracle

IPTV = sd.IPTV


def commit_batch(out, batch: int, rows: int) -> list[tuple]:
    """Write one micro-batch into a Parquet sink as Spark's file sink does (a data file, then its
    `_spark_metadata` log entry); returns the rows it holds, formatted."""
    ticks = np.repeat(np.arange(rows // 2, dtype=np.int64) * 1000 + batch * 10_000_000, 2)
    groups = np.tile(np.array([[11], [22]], np.int64), (rows // 2, 1))
    counts = np.arange(rows, dtype=np.int64)
    commit_records(out, batch, [rows_record(NumericRows(ticks, groups, {"USER": counts})),
                                terms_record({11: "<http://x/a>", 22: "<http://x/b>"})])
    return [(int(t), ("<http://x/a>" if g == 11 else "<http://x/b>", f'"{c}"^^<http://www.w3.org/2001/XMLSchema#integer>'))
            for t, g, c in zip(ticks.tolist(), groups[:, 0].tolist(), counts.tolist())]


def test_sink_tail_hands_each_batch_on_once_and_keeps_no_rows(tmp_path):
    plan = sink_plan(("channel",), (("CHANNEL", Var("group:channel")), ("USER", Var("USER"))))
    out = tmp_path / "output"
    out.mkdir()
    tail = SinkTail(plan, str(out))
    want = commit_batch(out, 0, 10)
    got, warnings = tail.poll()
    assert sorted(got[0].rows) == sorted(want) and warnings == []
    assert tail.poll() == ([], [])  # nothing new: nothing handed on twice
    gc.collect()
    tracemalloc.start()
    try:
        base = None
        for batch in range(1, 7):  # 6 x 40,000 rows: tens of MB if they were kept
            want = commit_batch(out, batch, 40_000)
            got, _ = tail.poll()
            assert len(got[0].rows) == 40_000 and got[0].rows[0] in want
            del got, want
            gc.collect()
            now = tracemalloc.get_traced_memory()[0]
            base = now if base is None else base
        grown = now - base
    finally:
        tracemalloc.stop()
    assert grown < 1_000_000, f"the tail kept {grown} bytes over 200,000 rows handed on"
    assert tail.rows_out == 10 + 6 * 40_000 and tail.kept == {}


def follow_until(query: str, d, out_csv, second: list, last_tick: int) -> int:
    """`tefq run QUERY --stream D --follow --out OUT` in this process until tick 20000 is in OUT;
    then `second` arrives in D as a producer writes it (`part-0001.tsv.tmp`, renamed), and once
    `last_tick` is in OUT a real SIGTERM lets the run finish its micro-batch. Returns the exit code."""
    from tefq.cli import run_command

    def wait_for_tick(tick: int) -> None:
        deadline = time.monotonic() + 300
        while not (out_csv.exists() and f"\n{tick}," in out_csv.read_text()) and time.monotonic() < deadline:
            time.sleep(0.3)

    def producer() -> None:
        try:
            wait_for_tick(20000)
            write_stream(second, str(d / "part-0001.tsv.tmp"), fmt="tsv")
            os.replace(d / "part-0001.tsv.tmp", d / "part-0001.tsv")
            wait_for_tick(last_tick)
        finally:
            os.kill(os.getpid(), signal.SIGTERM)  # the follow loop stops after its micro-batch

    thread = threading.Thread(target=producer, daemon=True)
    thread.start()
    code = run_command(["run", query, "--stream", str(d), "--follow", "--out", str(out_csv),
                        "--master", "local[2]", "--quiet"])
    thread.join(timeout=60)
    return code


@pytest.mark.spark
def test_follow_ignores_hidden_underscore_and_tmp_files(spark, tmp_path, monkeypatch):
    """A followed TSV directory holding `.notes.tsv`, `_draft.tsv` and a half-written
    `part-0001.tsv.tmp` (none of them a valid stream file) runs on; when the producer renames the
    finished `.tmp`, its rows are read once. --out is the oracle's rows the event time passed."""
    from tefq.io.result_writers import results_text

    j, q = f"<{IPTV}join>", f"<{IPTV}quit>"
    first = [(1000, "<http://x/u1>", j, "<http://x/a>"), (3000, "<http://x/u2>", j, "<http://x/b>"),
             (12000, "<http://x/u3>", j, "<http://x/a>"), (21000, "<http://x/u1>", q, "<http://x/a>")]
    second = [(25000, "<http://x/u1>", j, "<http://x/b>"), (33000, "<http://x/u2>", q, "<http://x/b>"),
              (41000, "<http://x/u4>", j, "<http://x/a>")]
    d = tmp_path / "in"
    d.mkdir()
    write_stream(first, str(d / "part-0000.tsv"), fmt="tsv")
    for junk in (".notes.tsv", "_draft.tsv", "part-0001.tsv.tmp"):
        (d / junk).write_text("not a stream file\n\x00\x01 half written")
    out_csv = tmp_path / "out.csv"
    monkeypatch.chdir(ROOT)
    assert follow_until("usecases/uc1.tef", d, out_csv, second, 40000) == 0
    want = oracle(sd.uc1(10_000), first + second).results[0]
    want.rows = [r for r in want.rows if r[0] < 41000]  # the ticks the event time has passed
    assert out_csv.read_bytes() == results_text([want], "csv").encode("utf-8")


@pytest.mark.spark
def test_follow_uc3_split_by_user_adds_the_buckets_shares_per_micro_batch(spark, tmp_path, monkeypatch):
    """UC3 under --follow on two buckets: split by user, each bucket reports its share of every
    show and tick, and each micro-batch's shares are added on the driver before its rows are
    written. One programme airs on two channels whose viewers land in different buckets; --out is
    the oracle's rows the event time passed."""
    from tefq.io.result_writers import results_text
    from tefq.spark.shapes import plan_document

    query = tmp_path / "uc3.tef"
    query.write_text(open(os.path.join(ROOT, "usecases", "uc3.tef")).read().replace('"PT1M"', '"PT10S"'))
    j, q, s, f = (f"<{IPTV}{x}>" for x in ("join", "quit", "start", "finish"))
    c1, c2, news = "<http://x/c1>", "<http://x/c2>", "<http://x/news>"
    users = [f"<http://x/u{i}>" for i in range(8)]
    first = [(0, c1, s, news), (2000, c2, s, news)] + [(1000 + 500 * i, u, j, c1 if i % 2 else c2)
                                                       for i, u in enumerate(users)]
    first += [(21000, users[1], q, c1), (24000, users[2], q, c2)]
    second = [(35000, users[3], q, c1), (36000, users[1], j, c2), (45000, c1, f, news), (52000, users[5], q, c1)]
    d = tmp_path / "in"
    d.mkdir()
    write_stream(first, str(d / "part-0000.tsv"), fmt="tsv")
    out_csv = tmp_path / "out.csv"
    from tefq.api import load

    (plan,) = plan_document(load(str(query)).document(), 2)
    assert plan.routing.key == "user" and plan.routing.merge
    from tefq.spark.runtime.columnar import term_codes

    on_c1 = [u for i, u in enumerate(users) if i % 2]
    assert set(np.mod(term_codes(pa.array(on_c1)), 2).tolist()) == {0, 1}  # c1's viewers in both buckets
    monkeypatch.chdir(ROOT)
    assert follow_until(str(query), d, out_csv, second, 50000) == 0
    want = oracle(load(str(query)).document(), first + second).results[0]
    want.rows = [r for r in want.rows if r[0] < 52000]  # the ticks the event time has passed
    assert out_csv.read_bytes() == results_text([want], "csv").encode("utf-8")


@pytest.mark.spark
def test_follow_records_a_file_before_staging_reads_it(spark, tmp_path, monkeypatch):
    """Issue 38: a file that appears between one poll's record of the stream files and its staging,
    and then grows, must be read whole: staged only once its size is recorded (before, it was
    staged half-written, recorded at its new size at the next poll, and its new rows never read)."""
    from tests.support.spark import run_spark
    from tefq.spark.runtime import follow

    j, q = f"<{IPTV}join>", f"<{IPTV}quit>"
    first = [(1000, "<http://x/u1>", j, "<http://x/a>"), (3000, "<http://x/u2>", j, "<http://x/b>"),
             (12000, "<http://x/u3>", j, "<http://x/a>")]
    head = [(21000, "<http://x/u1>", q, "<http://x/a>")]
    tail = [(33000, "<http://x/u2>", q, "<http://x/b>"), (41000, "<http://x/u4>", j, "<http://x/a>")]
    d = tmp_path / "in"
    d.mkdir()
    write_stream(first, str(d / "part-0000.tsv"), fmt="tsv")
    racing_file = d / "part-0001.tsv"
    real, polls, seen = follow.check_inputs, [], []

    def racing_check(workdir, paths):
        polls.append(1)
        if len(polls) == 3:  # the producer appends before the next poll records the file
            with open(racing_file, "a", encoding="utf-8") as fh:
                fh.writelines(f"{t}\t{s}\t{p}\t{o}\n" for t, s, p, o in tail)
        recorded = real(workdir, paths)
        if len(polls) == 2:  # the file appears just after this poll's record
            write_stream(head, str(racing_file), fmt="tsv")
        return recorded

    monkeypatch.setattr(follow, "check_inputs", racing_check)
    got = run_spark(spark, sd.uc1(10_000), [str(d)], follow=True,
                    on_rows=lambda results: seen.extend(results[0].rows),
                    stop=lambda: any(r[0] == 40000 for r in seen) or len(polls) > 600)
    want = oracle(sd.uc1(10_000), first + head + tail).results[0]
    assert sorted(seen) == [r for r in want.rows if r[0] < 41000]
    assert got.metrics.rows_out == len(seen)
