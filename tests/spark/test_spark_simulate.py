"""Simulated-fact baselines on real Spark: spec §10 counters, generated data over several
micro-batches and hypothesis streams (rows = TEF's with EVERY = window, bindings = the oracle-side
simulation's), and UC3 on the single-bucket oracle-simulation path. One SparkSession for the module."""
from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from tefq.oracle import run as oracle_run
from tefq.simulate import run as simulate_run
from tests.support import spark_docs as sd
from tests.support.operator_harness import streams
from tests.support.streams import write_parts

pytestmark = pytest.mark.spark


def spark_sim(spark, doc, paths, strategy, window=None, **kw):
    from tefq.spark.engine import SparkRun
    from tefq.spark.simulate import run

    return run(SparkRun.of(doc, paths, spark=spark, buckets=2, progress=False, **kw), strategy, window)


@pytest.mark.parametrize("strategy,bindings", [("refresh", 9), ("refresh-group", 6), ("sequence", 8)])
def test_spec10_on_spark(spark, tmp_path, strategy, bindings):
    elements = sd.worked_example()
    path = write_parts(tmp_path, elements, 2)
    r = spark_sim(spark, sd.uc2(60_000), [path], strategy, 5000)  # --window 5s overrides EVERY 1 min
    assert r.results[0].rows == oracle_run(sd.uc2(5000), elements, None, 0).results[0].rows
    m = r.metrics
    assert (m.intermediate_bindings, m.facts_created, m.facts_closed, m.ticks) == (bindings, 6, 2, 3)
    assert m.extra["spark_path"] == {"q1": "vectorised"}


def test_generated_data_over_micro_batches(spark, tmp_path):
    from tefq.io.readers import read_stream
    from tefq.iptv.generator import IptvConfig
    from tefq.iptv.writer import generate

    out = str(tmp_path / "iptv")
    generate(IptvConfig(events=2_000, users=250, channels=8, days=0.06, seed=5), out, fmt="tsv")
    elements = list(read_stream(os.path.join(out, "log")))
    path = write_parts(tmp_path, elements, 3)
    doc = sd.uc2(600_000)
    r = spark_sim(spark, doc, [path], "refresh-group", max_files_per_trigger=1)
    assert r.results[0].rows == oracle_run(doc, elements, None, 0).results[0].rows
    assert r.metrics.intermediate_bindings == simulate_run(doc, elements, "refresh-group").metrics.intermediate_bindings
    assert len(r.metrics.extra["micro_batches"]) == 3  # three files; the last ends the input


@settings(max_examples=2, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(streams(), st.sampled_from(["refresh", "refresh-group", "sequence"]))
def test_hypothesis_streams_on_spark(spark, tmp_path_factory, stream, strategy):
    elements, _ = stream
    path = write_parts(tmp_path_factory.mktemp("h"), elements, 2)
    doc = sd.uc2(2000)
    r = spark_sim(spark, doc, [path], strategy)
    assert r.results[0].rows == oracle_run(doc, elements, None, 0).results[0].rows
    assert r.metrics.intermediate_bindings == simulate_run(doc, elements, strategy).metrics.intermediate_bindings


def test_uc3_on_the_oracle_simulation_path(spark, tmp_path):
    iptv = sd.IPTV
    rows = [(0, "chA", "start", "News1"), (0, "chB", "start", "Match"), (1000, "Alice", "join", "chA"),
            (3000, "Bob", "join", "chB"), (9000, "Bob", "quit", "chB"), (9000, "Bob", "join", "chA"),
            (10000, "chA", "finish", "News1"), (10000, "chA", "start", "Film"), (14000, "Alice", "quit", "chA"),
            (15000, "chB", "finish", "Match")]
    elements = [(t, f"<{iptv}{s}>", f"<{iptv}{p}>", f"<{iptv}{o}>") for t, s, p, o in rows]
    path = write_parts(tmp_path, elements, 2)
    r = spark_sim(spark, sd.uc3(5000), [path], "refresh", max_files_per_trigger=1)
    assert r.results[0].rows == oracle_run(sd.uc3(5000), elements, None, 0).results[0].rows
    assert r.metrics.intermediate_bindings == simulate_run(sd.uc3(5000), elements, "refresh").metrics.intermediate_bindings
    assert r.metrics.extra["spark_path"] == {"q1": "oracle-simulation fallback"}
