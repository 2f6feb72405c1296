"""The Spark engine against the spec's worked example and the oracle (differential), end of input,
bad rows, and restart from a checkpoint after SIGKILL. One SparkSession for the module."""
from __future__ import annotations

import subprocess
import sys

import pytest

from tefq.errors import TefqError
from tests.support import spark_docs as sd
from tests.support.spark import child_env, kill_mid_stream, oracle, run_spark
from tests.support.streams import random_stream, with_programs, write_parts

pytestmark = pytest.mark.spark
XSD = "http://www.w3.org/2001/XMLSchema#"


def test_worked_example_uc2(spark, tmp_path):
    elements = sd.worked_example()
    path = write_parts(tmp_path, elements, 1)
    doc = sd.uc2(5000)
    got = run_spark(spark, doc, [path])
    dbl = lambda x: f'"{x}"^^<{XSD}double>'  # noqa: E731
    integer = lambda x: f'"{x}"^^<{XSD}integer>'  # noqa: E731
    A, B = f"<{sd.IPTV}chA>", f"<{sd.IPTV}chB>"
    from tefq.semantics.values import to_term

    want_table = [(5000, A, 1, 4.0), (5000, B, 1, 2.0), (10000, A, 1, 9.0), (10000, B, 2, 2.5),
                  (15000, A, 1, 4.0), (15000, B, 3, 6.0)]
    assert got.results[0].rows == [(t, (ch, integer(c), to_term(avg))) for t, ch, c, avg in want_table]
    assert dbl  # the spec's averages are doubles
    m = got.metrics
    assert (m.events_in, m.facts_created, m.facts_closed, m.ticks) == (8, 6, 2, 3)
    assert got.results[0].rows == oracle(doc, elements).results[0].rows


@pytest.mark.parametrize("seed,nfiles,doc", [(1, 4, "uc1"), (2, 3, "uc2"), (4, 3, "uc3")])
def test_agrees_with_oracle_over_micro_batches(spark, tmp_path, seed, nfiles, doc):
    elements = random_stream(seed, 120)
    if doc == "uc3":
        elements = with_programs(seed, elements)
    path = write_parts(tmp_path, elements, nfiles)
    d = {"uc1": sd.uc1(3000), "uc2": sd.uc2(2000), "uc3": sd.uc3(3000)}[doc]
    got = run_spark(spark, d, [path], max_files_per_trigger=1)
    want = oracle(d, elements)
    assert got.results[0].rows == want.results[0].rows
    assert len(got.metrics.extra["micro_batches"]) == nfiles  # the last ends the input: no flush run
    for k in ("events_in", "facts_created", "facts_closed", "unmatched_until", "ticks", "rows_out"):
        assert getattr(got.metrics, k) == getattr(want.metrics, k), k


def test_bad_row_names_file_and_line(spark, tmp_path):
    d = tmp_path / "bad"
    d.mkdir()
    (d / "part-0.tsv").write_text(
        "ts\ts\tp\to\n1000\t<http://x/u>\t<http://example.org/iptv#join>\t<http://x/c>\n"
        "12x\t<http://x/u>\t<http://example.org/iptv#quit>\t<http://x/c>\n", encoding="utf-8")
    with pytest.raises(TefqError) as e:
        run_spark(spark, sd.uc1(1000), [str(d)])
    assert e.value.file and e.value.file.endswith("part-0.tsv")
    assert e.value.line == 3


def test_bad_rows_dir_counts_and_keeps_them(spark, tmp_path):
    d = tmp_path / "bad"
    d.mkdir()
    (d / "part-0.tsv").write_text(
        "ts\ts\tp\to\n1000\t<http://x/u>\t<http://example.org/iptv#join>\t<http://x/c>\n"
        "12x\t<http://x/u>\t<http://example.org/iptv#quit>\t<http://x/c>\n", encoding="utf-8")
    bad = tmp_path / "rejects"
    got = run_spark(spark, sd.uc1(1000), [str(d)], bad_rows=str(bad))
    assert got.metrics.extra["bad_rows"] == 1
    kept = "".join(p.read_text() for p in bad.iterdir())
    assert "12x" in kept and "timestamp" in kept
    assert got.results[0].rows == [(1000, ("<http://x/c>", f'"1"^^<{XSD}integer>'))]


def test_sigkill_and_restart_from_checkpoint(spark, tmp_path):
    elements = random_stream(7, 150)
    path = write_parts(tmp_path, elements, 6)
    ck = str(tmp_path / "ck")
    assert 2 <= kill_mid_stream(path, ck) < 7
    got = run_spark(spark, sd.uc2(2000), [path], checkpoint=ck, max_files_per_trigger=1)
    want = oracle(sd.uc2(2000), elements)
    assert got.results[0].rows == want.results[0].rows  # every tick exactly once


CLUSTER = """
import json
from tests.support import spark_docs as sd
from tefq.spark import run
for ingest in {ingests!r}:  # one local cluster (its start-up is most of the time), each ingestion path
    r = run(sd.uc1(3000), [{path!r}], master="local-cluster[2,1,1024]", max_files_per_trigger=2, progress=False,
            ingest=ingest)
    print(f"ROWS-{{ingest}}=" + json.dumps(r.results[0].rows), flush=True)
"""
INGESTS = ("rows", "columnar", "direct")


def test_uc1_on_local_cluster_matches_oracle(tmp_path):
    """Separate executor JVMs: the engine really runs distributed, not only in one process; on the
    columnar path each task reads its files by path. Every ingestion path, in one cluster."""
    import json

    elements = random_stream(3, 80)
    path = write_parts(tmp_path, elements, 4)
    code = CLUSTER.format(path=path, ingests=INGESTS)
    out = subprocess.run([sys.executable, "-c", code],
                         env=child_env(), capture_output=True, text=True, timeout=900)
    assert out.returncode == 0, out.stderr[-3000:]
    want = oracle(sd.uc1(3000), elements).results[0].rows
    for ingest in INGESTS:
        line = [x for x in out.stdout.splitlines() if x.startswith(f"ROWS-{ingest}=")][0]
        got = [(t, tuple(cells)) for t, cells in json.loads(line.split("=", 1)[1])]
        assert got == want, ingest
