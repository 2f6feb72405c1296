"""The bench's single numpy pass for fact aggregates (tefq.spark.derived_limit), against which
bench/throughput.py checks the Spark engine's UC3 rows cell by cell: it must give the oracle's
rows and fact counts."""
from __future__ import annotations


import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from tefq.io.readers import stream_files
from tefq.iptv.generator import IptvConfig
from tefq.iptv.writer import generate
from tefq.oracle import run
from tefq.spark.derived_limit import single_pass

from tefq.spark.shapes import collector_of, plan_document
from tests.support import spark_docs as sd


def test_single_pass_gives_the_oracles_rows_and_facts(tmp_path):
    generate(IptvConfig(events=20_000, users=2_000, channels=12, days=0.2, seed=3), str(tmp_path), epg=True)
    table = pa.concat_tables([pq.read_table(f) for d in ("log", "epg") for f in stream_files(str(tmp_path / d))])
    table = table.take(pa.array(np.argsort(table.column("ts").to_numpy(), kind="stable")))  # as the bench
    doc = sd.uc3(60_000)
    (plan,) = plan_document(doc, 1)
    counts, records = single_pass(plan, table)
    col = collector_of(plan)
    for record in records:
        col.add(*record)
    elements = list(zip(*(table.column(c).to_pylist() for c in ("ts", "s", "p", "o"))))
    want = run(doc, elements, None, 0)
    assert len(want.results[0].rows) > 100
    assert col.sorted_rows() == want.results[0].rows
    assert counts["facts_created"] == want.metrics.facts_created and counts["rows_out"] == want.metrics.rows_out
