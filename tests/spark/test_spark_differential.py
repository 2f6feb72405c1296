"""The Spark engine against the oracle on generated streams, batched (issue 38): per plan kind one
document holding every query of that kind in tests/spark/test_differential.py, run once on real
Spark (2 buckets) over the union of 20 generated streams (each with names of its own; shared
literals, one time base), dealt into 2 --stream inputs of several files, one micro-batch or one file
per stream per micro-batch (with --lateness: files out of time order, one a micro-batch; the late
elements counted as the oracle's), read by direct ingestion or as rows through Spark SQL; and the
same unions from Redis streams, read in ranges split down to one entry. Random (hypothesis prints
the failing example); TEFQ_PROPS_SCALE=10 (make test-props) checks ten such unions per kind."""
from __future__ import annotations

import os
import tempfile
import time

import pytest
from hypothesis import HealthCheck, Phase, given, settings, strategies as st

import tefq
from tefq.spark.runtime import redis_source
from tests.support import term_streams as ts
from tests.support.differential import KINDS, OBJECTS, SCALE, background_text, document_text
from tests.support.spark import run_spark

pytestmark = pytest.mark.spark
STREAMS = 20
SPARK_PROPS = settings(max_examples=SCALE, deadline=None, derandomize=False, print_blob=True,
                       phases=(Phase.explicit, Phase.generate),  # no shrinking: each try is a Spark run
                       suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                              HealthCheck.function_scoped_fixture])


def kind_document(kind: str, every: int) -> str:
    """Every query of `kind` in one document, each fact defined once."""
    texts = [document_text(kind, name, every) for name in sorted(KINDS[kind][1])]
    lines = list(dict.fromkeys(line for text in texts for line in text.splitlines()))
    return "\n".join(lines) + "\n"


def renamed(term: str, i: int) -> str:
    """Stream `i`'s own IRIs and blank nodes (literals are shared: they are values)."""
    if term.startswith("<http://x/") and not term.startswith(("<http://x/set>", "<http://x/unset>", "<http://x/obs>",
                                                               "<http://x/start>", "<http://x/finish>")):
        return f"<http://x/{i}/" + term[len("<http://x/"):]
    return f"_:s{i}{term[2:]}" if term.startswith("_:") else term


def union_elements(draw, kind: str) -> tuple[ts.Times, list]:
    """STREAMS generated streams of `kind`'s predicates, each with names of its own, in one list."""
    t = draw(ts.times())
    predicates = sorted({p for _, ps in KINDS[kind][1].values() for p in ps})
    els = []
    for i in range(STREAMS):
        drawn = draw(ts.elements(t, predicates, objects=OBJECTS[kind], max_size=8))
        els += [(e[0], renamed(e[1], i), e[2], renamed(e[3], i)) for e in drawn]
    return t, els


@st.composite
def unions(draw, kind: str):
    t, els = union_elements(draw, kind)
    # --lateness as in tests/support/differential.py: files out of time order, one a micro-batch
    lateness = None if kind == "windowed" else draw(st.sampled_from([None, None, 1, t.every // 2, min(2 * t.every, 1 << 58)]))
    files_per_trigger = 1 if lateness else draw(st.sampled_from([None, 1]))
    streams = draw(ts.split_streams(els, in_time_order=files_per_trigger is not None and not lateness, max_files=4))
    return t.every, streams, files_per_trigger, draw(st.sampled_from(["auto", "rows"])), lateness


def write_background(tmp: str) -> str:
    background = os.path.join(tmp, "background.nt")
    with open(background, "w", encoding="utf-8") as fh:  # each stream's subjects: its own names
        fh.writelines(background_text(lambda term, i=i: renamed(term, i)) for i in range(STREAMS))
    return background


@pytest.mark.parametrize("kind", list(KINDS))
def test_spark_equals_the_oracle_on_generated_streams(spark, kind):
    @SPARK_PROPS
    @given(unions(kind))
    def run(union):
        every, streams, files_per_trigger, ingest, lateness = union
        query = tefq.compile(kind_document(kind, every))
        doc = query.document()
        with tempfile.TemporaryDirectory(prefix="tefq-spark-diff-") as tmp:
            paths = ts.write_streams(tmp, streams)
            background = write_background(tmp)
            want = query.run(paths, engine="oracle", lateness=lateness or 0, background=background)
            got = run_spark(spark, doc, paths, background=background, max_files_per_trigger=files_per_trigger,
                            max_ticks=0, ingest=ingest, lateness_ms=lateness or 0)
        assert [r.sorted_rows() for r in got.results] == [r.sorted_rows() for r in want.results]
        assert got.metrics.ticks == want.metrics["ticks"]
        assert got.metrics.events_in == want.metrics["events_in"]
        if lateness:
            assert got.metrics.late_events == want.metrics["late_events"]
            assert got.metrics.extra["late_events_by_stream"] == want.metrics["late_events_by_stream"]
    run()


@st.composite
def redis_unions(draw, kind: str):
    """As `unions`, each stream a Redis stream (its files' elements in order, each file one
    MULTI/EXEC), read by ranges of at least 1, 5 or LEAST_PER_PARTITION entries (a range per
    Spark partition: ties across ranges), direct or as rows."""
    t, els = union_elements(draw, kind)
    streams = draw(ts.split_streams(els, max_files=4))
    least = draw(st.sampled_from([1, 5, redis_source.LEAST_PER_PARTITION]))
    return t.every, streams, least, draw(st.sampled_from(["auto", "rows"]))


@pytest.mark.parametrize("kind", list(KINDS))
def test_spark_over_redis_equals_the_oracle_on_generated_streams(spark, redis_port, monkeypatch, kind):
    """A bounded run over Redis streams (the entries there when it starts: one micro-batch) reports
    the oracle's rows over the same streams."""
    from tefq.io.redis_stream import RedisStream, add_elements

    @SPARK_PROPS
    @given(redis_unions(kind))
    def run(union):
        every, streams, least, ingest = union
        monkeypatch.setattr(redis_source, "LEAST_PER_PARTITION", least)
        query = tefq.compile(kind_document(kind, every))
        urls = [f"redis://127.0.0.1:{redis_port}/diff-{kind}-{time.time_ns()}-{i}" for i in range(len(streams))]
        for url, files in zip(urls, streams):
            stream = RedisStream.parse(url)
            client = stream.connect()
            for rows in files:
                add_elements(client, stream, rows)
            client.close()
        with tempfile.TemporaryDirectory(prefix="tefq-spark-diff-") as tmp:
            background = write_background(tmp)
            want = query.run(urls, engine="oracle", background=background)
            got = run_spark(spark, query.document(), urls, background=background, max_ticks=0, ingest=ingest)
        assert [r.sorted_rows() for r in got.results] == [r.sorted_rows() for r in want.results]
        assert got.metrics.ticks == want.metrics["ticks"]
        assert got.metrics.events_in == want.metrics["events_in"]
    run()
