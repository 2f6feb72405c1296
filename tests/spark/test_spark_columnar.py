"""Columnar ingestion (tefq.spark.runtime.columnar, issue 14): Spark carries Parquet file paths, the
task reads each file with pyarrow. Rows and metrics equal the oracle's (ties, tick boundaries,
several micro-batches, bad rows, a restart after SIGKILL, separate executor JVMs); the choice of
path is recorded in the checkpoint and a restart cannot switch it. One session for the module."""
from __future__ import annotations

import os

import pytest

from tefq.errors import TefqError
from tefq.io.readers import read_stream
from tests.support import spark_docs as sd
from tests.support.paths import ROOT
from tests.support.spark import kill_mid_stream, oracle, run_spark
from tests.support.streams import GOOD, random_stream, with_programs, write, write_parts

pytestmark = pytest.mark.spark
METRICS = ("events_in", "facts_created", "facts_closed", "unmatched_until", "ticks", "rows_out")


@pytest.mark.parametrize("ingest", ["columnar", "direct"])
@pytest.mark.parametrize("doc,seed,nfiles,per_trigger", [("uc1", 11, 4, None), ("uc2", 12, 5, 2)])
def test_columnar_rows_equal_the_oracle(spark, tmp_path, doc, seed, nfiles, per_trigger, ingest):
    """random_stream: ties within a file and across files, events on tick boundaries, a quit and a
    rejoin at one ms; per_trigger 2: three micro-batches, the last of which ends the input (no
    micro-batch for a flush: engine.read_to_end). Direct: every bucket
    keeps its own rows of every file (coded once for both buckets: runtime/shared_files.py)."""
    elements = random_stream(seed, 400)
    path = write_parts(tmp_path, elements, nfiles, fmt="parquet")
    d = {"uc1": sd.uc1(3000), "uc2": sd.uc2(2000)}[doc]
    got = run_spark(spark, d, [path], ingest=ingest, max_files_per_trigger=per_trigger)
    want = oracle(d, elements)
    assert got.metrics.extra["ingest"] == ingest
    assert got.results[0].rows == want.results[0].rows
    for k in METRICS:
        assert getattr(got.metrics, k) == getattr(want.metrics, k), k
    if per_trigger:  # events counted per micro-batch from the heartbeats, not files
        batches = got.metrics.extra["micro_batches"]
        assert sum(b["rows"] for b in batches) == len(elements)
        assert len(batches) == -(-nfiles // per_trigger)


@pytest.mark.parametrize("ingest", ["columnar", "direct"])
def test_uc3_fact_aggregate_columnar_equals_the_oracle(spark, tmp_path, ingest):
    """UC3 (derived facts, the fact-aggregate operator, rows routed to buckets by show; direct:
    each bucket keeps its own and the replicated rows)."""

    elements = with_programs(4, random_stream(4, 200))
    path = write_parts(tmp_path, elements, 3, fmt="parquet")
    d = sd.uc3(3000)
    got = run_spark(spark, d, [path], ingest=ingest, max_files_per_trigger=2)
    want = oracle(d, elements)
    assert got.metrics.extra["ingest"] == ingest
    assert got.results[0].rows == want.results[0].rows
    for k in METRICS:
        assert getattr(got.metrics, k) == getattr(want.metrics, k), k


def test_ties_across_files_follow_stream_order(spark, tmp_path):
    """A join and a quit of one user at the same ms in two files: the file order (by name, as the
    oracle reads the directory) decides, whatever Spark's modification-time order is."""
    u, c = f"<{sd.IPTV}u1>", f"<{sd.IPTV}ch1>"
    d = tmp_path / "s"
    d.mkdir()
    write(str(d / "a.parquet"), [(1000, u, f"<{sd.IPTV}join>", c), (5000, u, f"<{sd.IPTV}join>", c)])
    write(str(d / "b.parquet"), [(5000, u, f"<{sd.IPTV}quit>", c), (9000, u, f"<{sd.IPTV}join>", c)])
    os.utime(d / "a.parquet", (2_000_000, 2_000_000))  # Spark lists b first
    os.utime(d / "b.parquet", (1_000_000, 1_000_000))
    doc = sd.uc1(1000)
    elements = list(read_stream(str(d)))
    got = run_spark(spark, doc, [str(d)], ingest="columnar")
    assert got.results[0].rows == oracle(doc, elements).results[0].rows


def test_row_groups_and_timestamp_typed_ts(spark, tmp_path):
    """Files of several row groups (a Parquet dictionary each: the rows of each keep their place
    for ties) and a ts column of Parquet timestamps, read as the oracle's reader reads them."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    elements = sorted(random_stream(21, 300), key=lambda e: e[0])
    d = tmp_path / "s"
    d.mkdir()
    for i, part in enumerate((elements[:150], elements[150:])):
        cols = list(zip(*part))
        pq.write_table(pa.table({"ts": pa.array(cols[0], pa.int64()).cast(pa.timestamp("ms", "UTC")),
                                 "s": list(cols[1]), "p": list(cols[2]), "o": list(cols[3])}),
                       str(d / f"part-{i}.parquet"), row_group_size=40)
    doc = sd.uc1(3000)
    got = run_spark(spark, doc, [str(d)], ingest="columnar")
    want = oracle(doc, list(read_stream(str(d))))
    assert got.results[0].rows == want.results[0].rows and want.results[0].rows
    assert got.metrics.events_in == want.metrics.events_in  # duplicates count once (a stream is a set)


@pytest.mark.parametrize("ingest", ["columnar", "direct"])
def test_bad_row_stops_the_run_with_file_and_row(spark, tmp_path, ingest):
    d = tmp_path / "stream"
    d.mkdir()
    write(str(d / "part-0.parquet"), GOOD[:2] + [(3_000, "<a b>", f"<{sd.IPTV}join>", f"<{sd.IPTV}ch1>")])
    with pytest.raises(TefqError) as e:
        run_spark(spark, sd.uc1(1000), [str(d)], ingest=ingest)
    assert e.value.file.endswith("part-0.parquet") and e.value.line == 3
    assert "bad-term" in e.value.render() or "IRI" in e.value.render()


def test_auto_takes_direct_for_file_inputs(spark, tmp_path):
    """Parquet files, and text files once staged as Parquet (tefq.io.staging.Stager), take direct
    ingestion for a CURRENT aggregate; `--ingest rows` the row path; all give the oracle's rows."""
    elements = random_stream(5, 60)
    (tmp_path / "t").mkdir()
    (tmp_path / "p").mkdir()
    tsv = write_parts(tmp_path / "t", elements, 2, fmt="tsv")
    par = write_parts(tmp_path / "p", elements, 2, fmt="parquet")
    doc = sd.uc1(3000)
    runs = [run_spark(spark, doc, [tsv]), run_spark(spark, doc, [par]), run_spark(spark, doc, [par], ingest="rows")]
    assert [r.metrics.extra["ingest"] for r in runs] == ["direct", "direct", "rows"]
    want = oracle(doc, elements).results[0].rows
    assert all(r.results[0].rows == want for r in runs)
    from tefq.analysis import load

    from tefq.spark.planning.fallback import FallbackPlan
    from tefq.spark.shapes import plan_document
    from tefq.spark.runtime.ingest import choose_ingest

    windowed = load(os.path.join(ROOT, "usecases", "uc1_csparql.rspql"))
    (plan,) = plan_document(windowed, 2)
    assert [choose_ingest(i, plan, [par]) for i in ("auto", "columnar", "direct")] == ["direct", "columnar", "direct"]
    fallback = FallbackPlan("q", 0, ("x",), 1000, "a shape no vectorised operator runs")
    for ingest in ("columnar", "direct"):  # a plan no columnar mapper covers is refused, not run as rows
        with pytest.raises(TefqError, match=f"--ingest {ingest}: query q is neither"):
            choose_ingest(ingest, fallback, [par])


SHARED_CHILD = """
import json, sys
from tests.support import spark_docs as sd
from tefq.spark import run
got = run(sd.uc1(3000), [sys.argv[1]], master="local[2]", buckets=2, progress=False, ingest="direct")
print(json.dumps([list(r) for r in got.results[0].rows]))
"""


def test_direct_buckets_code_each_file_once(tmp_path):
    """On a local master the two buckets share the coding of each file (runtime/shared_files.py):
    the workers' profile shows one coding per file, not one per file and bucket; the rows are the
    oracle's. A fresh process, so that its workers see TEFQ_SPARK_PROFILE; its session, started by
    the run, also started its Python workers beside the planning (engine.started_session)."""
    import json
    import subprocess
    import sys

    from tests.support.spark import child_env

    elements = random_stream(21, 600)
    path = write_parts(tmp_path, elements, 4, fmt="parquet")
    profile = tmp_path / "profile.jsonl"
    env = dict(child_env(), TEFQ_SPARK_PROFILE=str(profile), TEFQ_SERVER="0")
    done = subprocess.run([sys.executable, "-c", SHARED_CHILD, path], env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    want = oracle(sd.uc1(3000), elements).results[0].rows
    assert json.loads(done.stdout.splitlines()[-1]) == json.loads(json.dumps([list(r) for r in want]))
    records = [json.loads(line) for line in profile.read_text().splitlines()]
    coded = [r["rows_in"] for r in records if r["where"] == "columnar_mapper" and r["rows_in"]]
    assert len(coded) == 4 and sum(coded) == len(elements)
    assert any(r["where"] == "warm_up" for r in records)


def test_explain_physical_names_the_ingestion():
    from tefq.analysis import load
    from tefq.spark.shapes import explain_physical

    windowed = load(os.path.join(ROOT, "usecases", "uc1_csparql.rspql"))
    assert "Ingestion (--ingest auto): direct when every --stream holds Parquet files" in explain_physical(windowed)

    assert "Ingestion (--ingest auto): direct when every --stream holds Parquet files" in explain_physical(sd.uc1())
    assert "on a cluster each reads every file (read amplification = 3 buckets)" in explain_physical(sd.uc1(), buckets=3)
    assert "Ingestion (--ingest auto): direct" in explain_physical(sd.uc3())


def test_sigkill_restart_equals_the_oracle_and_cannot_switch_path(spark, tmp_path):
    elements = random_stream(8, 150)
    path = write_parts(tmp_path, elements, 6, fmt="parquet")
    ck = str(tmp_path / "ck")
    assert 2 <= kill_mid_stream(path, ck, extra=', ingest="columnar"') < 7
    with pytest.raises(TefqError, match="cannot switch ingestion paths") as e:
        run_spark(spark, sd.uc2(2000), [path], checkpoint=ck, max_files_per_trigger=1, ingest="rows")
    assert e.value.file.endswith("q1")
    got = run_spark(spark, sd.uc2(2000), [path], checkpoint=ck, max_files_per_trigger=1)  # auto: the recorded path
    assert got.results[0].rows == oracle(sd.uc2(2000), elements).results[0].rows  # every tick exactly once


def test_row_checkpoint_refuses_columnar_with_exit_2(spark, tmp_path):
    from tefq.cli import run_command

    elements = random_stream(9, 40)
    path = write_parts(tmp_path, elements, 2, fmt="parquet")
    ck = str(tmp_path / "ck")
    run_spark(spark, sd.uc1(3000), [path], checkpoint=ck, max_files_per_trigger=1, ingest="rows")
    query = os.path.join(ROOT, "usecases", "uc1.tef")
    code = run_command(["run", query, "--stream", path, "--checkpoint", ck, "--ingest", "columnar", "--quiet",
                        "--out", str(tmp_path / "out.csv")])
    assert code == 2
