"""`Query.facts(events, engine="spark")` (tefq/facts/api.py): Spark's fact table = the oracle's,
from in-memory events (handed to Spark as a Parquet file) and from a stream path."""
from __future__ import annotations


import pandas as pd
import pytest

import tefq
from tefq.io.stream_writers import write_stream
from tests.support.fact_streams import UC3, uc3_events


@pytest.mark.spark
def test_query_facts_on_spark_equals_the_oracle(spark, tmp_path):  # noqa: F811
    query = tefq.load(UC3)
    events = uc3_events(7, 120, 0)
    want = query.facts(events, engine="oracle")
    assert len(want.rows) > 10 and any(r.end is None for r in want.rows)
    assert query.facts(events, engine="spark", master="local[2]").rows == want.rows
    frame = pd.DataFrame(events, columns=["ts", "s", "p", "o"])
    path = str(tmp_path / "events.tsv")
    write_stream(events, path, fmt="tsv")
    assert query.facts(path, engine="spark", master="local[2]").to_pandas().equals(want.to_pandas())
    assert query.facts(frame, engine="auto").rows == want.rows  # small: the oracle
