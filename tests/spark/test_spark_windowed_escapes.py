"""Windowed queries on Spark over Parquet rows whose cells are not in normal form (an IRI written
with `\\u` escapes, spaces around a cell, an `xsd:string` literal): Spark reads them as the
oracle's Parquet reader does, so they join with, are matched as and land in the join-key bucket
of their normal form — Spark's rows are the windowed oracle's."""
from __future__ import annotations


import pytest

pytest.importorskip("pyspark")

from tests.support.windowed_spark import assert_same_as_oracle

NS = "http://example.org/iptv#"
QUERY = """PREFIX : <http://example.org/iptv#>
REGISTER QUERY Rated AS
SELECT ?u ?c ?r FROM STREAM <http://example.org/iptv/log> [RANGE 4s STEP 2s]
WHERE { ?u :join ?c . ?u :rate ?r }
"""
XSD_STRING = "http://www.w3.org/2001/XMLSchema#string"


def escaped(iri_local: str) -> str:
    """`<NS + local>` with its first letter written as a `\\u` escape (same IRI, other spelling)."""
    return f"<{NS}\\u{ord(iri_local[0]):04X}{iri_local[1:]}>"


def raw_rows() -> list[tuple[int, str, str, str]]:
    """Users join channels (normal cells); their ratings name them with escapes, one rating
    predicate is escaped too, one literal is an explicit xsd:string, one cell has spaces."""
    rows = []
    for i in range(16):
        ts = 500 * i
        rows.append((ts, f"<{NS}u{i}>", f"<{NS}join>", f"<{NS}ch{i % 3}>"))
        rate = escaped("rate") if i % 4 == 0 else f"<{NS}rate>"
        score = f'"{i}"^^<{XSD_STRING}>' if i % 5 == 0 else f'"{i}"'
        subject = f" <{NS}u{i}> " if i == 7 else escaped(f"u{i}")
        rows.append((ts + 100, subject, rate, score))
    return rows


def write_parquet(rows: list, path: str) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    ts, s, p, o = zip(*rows)
    pq.write_table(pa.table({"ts": pa.array(ts, pa.int64()), "s": list(s), "p": list(p), "o": list(o)}), path)


@pytest.mark.parametrize("ingest", ["rows", "direct"])  # direct: each distinct cell checked (runtime/windowed_rows.py)
def test_escaped_iris_on_parquet_rows_equal_the_oracle(spark, tmp_path, ingest: str) -> None:
    from tefq.analysis import load
    from tefq.io.readers import read_stream
    from tefq.oracle.windowed import run as oracle_run
    from tefq.spark import run as spark_run
    from tefq.spark.planning.windowed import plan_windowed
    from tefq.spark.runtime.spark_hash import string_bucket

    query = tmp_path / "rated.rspql"
    query.write_text(QUERY)
    doc = load(str(query))
    assert plan_windowed(doc, 2).key is not None  # the elements are shuffled by ?u
    moved = [i for i in range(16) if string_bucket(escaped(f"u{i}"), 2) != string_bucket(f"<{NS}u{i}>", 2)]
    assert moved  # some raw spellings hash to another bucket than their normal form
    stream = tmp_path / "log"
    stream.mkdir()
    write_parquet(raw_rows(), str(stream / "part-000.parquet"))
    elements = list(read_stream(str(stream / "part-000.parquet")))
    got = spark_run(doc, [str(stream)], spark=spark, buckets=2, progress=False, ingest=ingest)
    want = oracle_run(doc, elements)
    assert_same_as_oracle(got, want)
    assert len(want[0].rows) >= 16  # every user's rating joined its channel


def test_the_python_xxhash64_is_sparks(spark) -> None:
    """runtime/spark_hash.xxhash64 = Spark SQL's xxhash64 on strings of every length class (under
    4, 8 and 32 bytes, whole stripes and tails) and multi-byte UTF-8."""
    import random
    import string

    from pyspark.sql import functions as F

    from tefq.spark.runtime.spark_hash import xxhash64

    rng = random.Random(7)
    words = ["", "a", f"<{NS}u1>", "é€𝄞"] + ["".join(rng.choice(string.printable + "éü€𝄞") for _ in range(n))
                                            for n in range(90)]
    got = dict(spark.createDataFrame([(w,) for w in words], "w string").select("w", F.xxhash64("w")).collect())
    assert {w: xxhash64(w.encode("utf-8")) for w in words} == got
