"""`tefq facts --stream DIR --follow` (spec §12, tefq.facts.live): closed facts appended as they
close, the facts open at the last reported tick rewritten atomically in OUT.open.EXT. On real
Spark: a followed directory that grows while the run goes; after every micro-batch the snapshot
holds no fact of the closed file; once stopped, closed + open = the bounded table of the same
files. Without Spark: the writer and the operator's open snapshots."""
from __future__ import annotations

import os
import signal
import threading
import time

import numpy as np
import pytest

from tefq.cli import run_command
from tefq.facts.live import LiveFactWriter, open_snapshot_path
from tefq.io.stream_writers import write_stream
from tefq.spark.fact_output import FactCollector, OPEN_FACTS, facts_record, open_facts_record
from tefq.spark.operators.base import StreamSettings
from tefq.spark.operators.fact import make_fact_operator
from tefq.spark.output import terms_record
from tefq.spark.planning.fact import plan_fact_table as table_plan
from tests.support import spark_docs as sd
from tests.support.fact_harness import batch_of, fact_rows
from tests.support.fact_streams import IPTV, UC3, complete_lines, uc3_events
from tests.support.operator_harness import FakeState


def snapshot_id(path: str) -> int:
    """The snapshot file's inode: every atomic rewrite is a new file."""
    try:
        return os.stat(path).st_ino
    except FileNotFoundError:
        return -1


def interval_key(line: str) -> tuple:
    """A row without its end: the interval (fact, identity, start) it is about."""
    return tuple(line.split(",")[:-1])


@pytest.mark.spark
def test_follow_appends_closed_facts_and_rewrites_the_open_ones(spark, tmp_path):  # noqa: F811
    parts = [uc3_events(1, 30, 0), uc3_events(2, 30, 15_000), uc3_events(3, 30, 30_000)]
    # a last file whose one element matches no fact: it only moves the event time past every event
    sentinel = [(50_000, f"<{IPTV}probe>", f"<{IPTV}ping>", f"<{IPTV}x>")]
    d = tmp_path / "in"
    d.mkdir()
    out = str(tmp_path / "facts.csv")
    snapshot = open_snapshot_path(out)
    assert snapshot == str(tmp_path / "facts.open.csv")
    seen: list[tuple[list[str], list[str]]] = []  # (closed rows, open rows) after each file's batch

    def wait_for_new_snapshot(before: int) -> None:
        deadline = time.monotonic() + 120
        while snapshot_id(snapshot) == before and time.monotonic() < deadline:
            time.sleep(0.1)

    def producer() -> None:
        try:
            for i, part in enumerate(parts + [sentinel]):
                before = snapshot_id(snapshot)
                write_stream(part, str(d / f".part-{i}.tsv.tmp"), fmt="tsv")
                os.replace(d / f".part-{i}.tsv.tmp", d / f"part-{i}.tsv")
                wait_for_new_snapshot(before)
                closed = complete_lines(out)  # the closed file first: it only grows
                seen.append((closed, complete_lines(snapshot)))
        finally:
            os.kill(os.getpid(), signal.SIGTERM)  # stops after the micro-batch in progress

    thread = threading.Thread(target=producer, daemon=True)
    thread.start()
    code = run_command(["facts", UC3, "--stream", str(d), "--follow", "--out", out, "--master", "local[2]",
                        "--quiet"])
    thread.join(timeout=60)
    assert code == 0 and len(seen) == 4
    for closed, open_ in seen:
        assert open_[0] == closed[0] == "fact,user,channel,program,start,end"
        assert all(line.endswith(",") for line in open_[1:])  # open: no end
        assert not {interval_key(r) for r in open_[1:]} & {interval_key(r) for r in closed[1:]}
    assert any(len(open_) > 1 for _, open_ in seen) and len(seen[0][0]) < len(seen[-1][0])

    bounded = str(tmp_path / "bounded.csv")
    assert run_command(["facts", UC3, "--stream", str(d), "--engine", "oracle", "--out", bounded, "--quiet"]) == 0
    closed, open_, want = complete_lines(out), complete_lines(snapshot), complete_lines(bounded)
    assert closed[0] == open_[0] == want[0]
    assert sorted(closed[1:] + open_[1:]) == sorted(want[1:])
    assert len(open_) > 1 and len(closed) > 1


def test_follow_refuses_parquet_directories_the_oracle_and_plots(tmp_path, capsys):
    stream = str(tmp_path / "in")
    os.mkdir(stream)
    for extra, message in [(["--out", str(tmp_path / "f.parquet")], "--follow appends facts as they close"),
                           (["--out", str(tmp_path) + "/"], "give --out FILE, not a directory"),
                           (["--engine", "oracle"], "--follow runs on the Spark engine only"),
                           (["--plot", str(tmp_path / "t.png")], "--plot draws a bounded table")]:
        assert run_command(["facts", UC3, "--stream", stream, "--follow", "--quiet", *extra]) == 2
        assert message in capsys.readouterr().err


def fed(plan, batches: list[list[tuple]], settings: StreamSettings) -> list[list[tuple]]:
    """The records the fact operator (one bucket) emits per micro-batch over `batches`, each
    followed by its heartbeat as the mapper sends it; no end of input."""
    from tefq.spark.protocol import HEARTBEAT

    op = make_fact_operator(plan, settings, facts=True)
    state, out, offset = FakeState(), [], 0
    for part in batches:
        beat = dict(k=HEARTBEAT, fact=0, ts=min(e[0] for e in part), o=max(e[0] for e in part), f=len(part), e=0,
                    n=0, b=0)
        frame = batch_of(plan, fact_rows(plan, part, offset) + [beat]).to_pandas()
        offset += len(part)
        out.append([tuple(r) for r in next(op((0,), iter([frame]), state)).itertuples(index=False)])
    return out


def test_a_live_run_emits_its_open_snapshots_a_bounded_one_does_not():
    doc = sd.uc1(1000)
    plan = table_plan(doc, every_ms=1000)
    j, q = f"<{IPTV}join>", f"<{IPTV}quit>"
    u1, u2, u3, c1, c2 = (f"<{IPTV}{x}>" for x in ("u1", "u2", "u3", "c1", "c2"))
    batches = [[(1000, u1, j, c1), (2500, u2, j, c1)], [(3000, u1, q, c1), (9000, u3, j, c2)]]
    facts = FactCollector(tuple(f.name for f in plan.facts))
    snapshots = []
    for records in fed(plan, batches, StreamSettings(batches=(None,), idle_ms=0)):
        for kind, tick, payload in records:
            facts.add(kind, tick, payload)
        snapshots.append(facts.open_snapshots()[0]["UserFact"])
    assert snapshots[0] == {(u1, c1): [(1000, float("inf"))]}  # u2 at 2500: after the last final tick (2000)
    assert snapshots[1] == {(u2, c1): [(2500, float("inf"))]}  # u3 at 9000: after tick 8000
    assert facts.intervals()["UserFact"] == {(u1, c1): [(1000, 3000)]}
    bounded = fed(plan, batches, StreamSettings(batches=(2,)))
    assert not [r for records in bounded for r in records if r[0] == OPEN_FACTS]


def test_the_writer_rewrites_the_snapshot_before_it_appends(tmp_path, monkeypatch):
    import tefq.facts.live as live

    def append_checked(path, text, what, append=True):  # at each append the snapshot has no appended interval
        rows = [line.rsplit("\t", 1)[0] for line in text.splitlines() if not line.startswith("?")]
        assert not [r for r in rows if r in open(open_snapshot_path(path)).read()]
        real_append(path, text, what, append=append)

    real_append = live.append_records
    monkeypatch.setattr(live, "append_records", append_checked)
    doc = sd.uc1(1000)
    names = tuple(f.name for f in doc.facts)
    out = str(tmp_path / "f.tsv")
    writer = LiveFactWriter(doc, "tsv", out)
    assert open(out).read() == open(open_snapshot_path(out)).read() == "?fact\t?user\t?channel\t?start\t?end\n"
    u, c = f"<{IPTV}u1>", f"<{IPTV}c1>"

    def poll(*records) -> None:
        facts = FactCollector(names)
        for r in records:
            facts.add(*r)
        writer(facts)

    codes = np.array([[1, 2]], np.int64)
    poll(open_facts_record(0, 2000, [(0, codes, np.array([1000]))]), terms_record({1: u, 2: c}))
    assert open(out).read().count("\n") == 1 and f"{u}\t{c}\t1000\t\n" in open(open_snapshot_path(out)).read()
    poll(facts_record(0, codes, np.array([1000]), np.array([3000])), open_facts_record(0, 4000, []),
         terms_record({1: u, 2: c}))
    assert open(out).read().endswith(f"{u}\t{c}\t1000\t3000\n")
    assert open(open_snapshot_path(out)).read().count("\n") == 1
    assert (writer.closed_rows, writer.open_rows) == (1, 0)
