"""A live run's state size per micro-batch (issue 24): `SinkTail` sums each operator call's size
figures over its buckets, so bench/live.py can tell a state that grows with the run from one that
follows its open facts."""
from __future__ import annotations

import json
import os
import signal
import threading
import time

import pytest

from tefq.io.stream_writers import write_stream
from tefq.plan.logical import Var
from tefq.spark.output import metric_record
from tefq.spark.runtime.follow import SinkTail
from tests.support import spark_docs as sd
from tests.support.follow_checkpoints import commit_records, sink_plan
from tests.support.paths import ROOT

IPTV = sd.IPTV


def test_sink_tail_sums_the_state_size_of_each_operator_call_over_buckets(tmp_path):
    plan = sink_plan(("channel",), (("CHANNEL", Var("group:channel")), ("USER", Var("USER"))))
    out = tmp_path / "output"
    out.mkdir()
    tail = SinkTail(plan, str(out))
    for batch, open_facts in ((1, (3, 4)), (2, (5, 1))):
        sizes = [{"batch": batch, "state_bytes": 100 * n, "open_facts": n, "rows_out": 2, "events_in": 10 * n}
                 for n in open_facts]
        commit_records(out, batch, [metric_record(0, m) for m in sizes])
        tail.poll()
    assert tail.state_by_batch() == [{"batch": 1, "state_bytes": 700, "open_facts": 7},
                                     {"batch": 2, "state_bytes": 600, "open_facts": 6}]
    assert tail.metrics["rows_out"] == 8 and "open_facts" not in tail.metrics  # sizes are not summed over batches


def uc1_files(k: int) -> list[tuple]:
    """File k of a stream whose open facts stay at two: user k joins channel a, user k - 2 quits it."""
    j, q, a = f"<{IPTV}join>", f"<{IPTV}quit>", "<http://x/a>"
    rows = [(10_000 * k + 1000, f"<http://x/u{k}>", j, a)]
    return rows + ([(10_000 * k + 2000, f"<http://x/u{k - 2}>", q, a)] if k >= 2 else [])


@pytest.mark.spark
@pytest.mark.skipif(os.environ.get("TEFQ_FAULTS_LONG") != "1",
                    reason="make test-faults (TEFQ_FAULTS_LONG=1): three live micro-batches, 60 s at load 8")
def test_a_follow_runs_state_holds_its_open_facts_and_no_more(spark, tmp_path, monkeypatch):
    """Three micro-batches (three files, then one, then one) after each of which UC1 has two open
    facts at the last reported tick: every micro-batch's state holds those two (issue 24: the state
    must not grow with the run), and Spark's state store one row per bucket."""
    from tefq.cli import run_command

    d, out_csv, metrics = tmp_path / "in", tmp_path / "out.csv", tmp_path / "metrics.json"
    d.mkdir()
    for k in range(3):  # the first micro-batch reports ticks up to 20,000
        write_stream(uc1_files(k), str(d / f"part-{k:04d}.tsv"), fmt="tsv")

    def producer() -> None:
        try:
            for k in (3, 4):  # file k once tick 10,000 (k - 1) is out (file k makes it final)
                wait_for_line(out_csv, f"\n{10_000 * (k - 1)},")
                write_stream(uc1_files(k), str(d / f".part-{k:04d}.tsv.tmp"), fmt="tsv")
                os.replace(d / f".part-{k:04d}.tsv.tmp", d / f"part-{k:04d}.tsv")
            wait_for_line(out_csv, "\n40000,")
        finally:
            os.kill(os.getpid(), signal.SIGTERM)  # the follow loop stops after its micro-batch

    thread = threading.Thread(target=producer, daemon=True)
    thread.start()
    monkeypatch.chdir(ROOT)
    assert run_command(["run", "usecases/uc1.tef", "--stream", str(d), "--follow", "--out", str(out_csv),
                        "--metrics", str(metrics), "--master", "local[2]", "--quiet"]) == 0
    thread.join(timeout=60)
    m = json.loads(metrics.read_text())
    sizes = m["state_by_batch"]  # from tick 20,000 on, users k - 1 and k - 2 are open at tick 10,000 k
    assert len(sizes) == 3 and all(b["open_facts"] == 2 for b in sizes), sizes
    assert sizes[-1]["state_bytes"] <= sizes[0]["state_bytes"] + 256, m["state_by_batch"]
    rows = {b["state_sizes"]["numRowsTotal"] for b in m["micro_batches"] if b.get("state_sizes")}
    assert rows <= {0, 1, 2}, m["micro_batches"]  # one state row per bucket (local[2]: two buckets)


def wait_for_line(path, text: str) -> None:
    deadline = time.monotonic() + 300
    while not (path.exists() and text in path.read_text()) and time.monotonic() < deadline:
        time.sleep(0.2)
