"""A stream is a set (spec §1): the same element twice at one ms is one element read. On the
windowed plan each element's hash goes with it (and, for an element no query can match, alone to
bucket 0 as an OTHER row), and its bucket counts a repeat as a duplicate while the windows have
not passed its time, so `events_in` is the oracle's: for copies in one file and in two
micro-batches, of a predicate a query matches or not, in two spellings of one literal, under each
split of the plan (none, by a join key, by windows) and on both ingestion paths. Before, Spark
counted every copy (a scaled differential run found it)."""
from __future__ import annotations

import os

import pytest

pytest.importorskip("pyspark")

import tefq
from tefq.spark.planning.windowed import plan_windowed
from tests.support.windowed_spark import NS, PREFIX, load_text

pytestmark = pytest.mark.spark

QUERIES = {  # how plan_windowed splits each over 2 buckets
    "by a join key": PREFIX + """REGISTER QUERY J AS
SELECT ?c (COUNT(?u) AS ?n) FROM STREAM <http://example.org/iptv/log> [RANGE 1s TUMBLING]
WHERE { ?u :join ?c } GROUP BY ?c""",
    "by windows": PREFIX + """REGISTER RSTREAM <http://example.org/q> AS
SELECT (COUNT(*) AS ?n) FROM NAMED WINDOW :w ON <http://example.org/iptv/log> [RANGE PT2S STEP PT1S]
WHERE { WINDOW :w { ?u :join ?c } }""",
}


def el(t: int, s: str, p: str, o: str) -> tuple[int, str, str, str]:
    return t, f"<{NS}{s}>", f"<{NS}{p}>", o if o.startswith('"') else f"<{NS}{o}>"


# Two files, each a micro-batch. Repeats: of a matched element (in one file, across the two),
# of an element no query matches (:rate), and of a literal in two spellings ("5" and "05" are
# two terms: not repeats; "a" and "a"^^xsd:string are one term).
# Nothing is late: the second file starts at the first one's event time (1.5 s).
FIRST = [el(100, "u1", "join", "ch1"), el(100, "u1", "join", "ch1"), el(300, "u2", "rate", '"5"'),
         el(300, "u2", "rate", '"5"'), el(300, "u2", "rate", '"05"'), el(900, "u3", "join", "ch2"),
         el(1500, "u3", "join", "ch2"), el(1500, "u4", "join", '"a"')]
SECOND = [el(1500, "u4", "join", '"a"^^<http://www.w3.org/2001/XMLSchema#string>'), el(1500, "u3", "join", "ch2"),
          el(1500, "u2", "rate", '"5"'), el(1600, "u2", "rate", '"5"'), el(1600, "u2", "rate", '"5"'),
          el(2500, "u5", "join", "ch1")]
ELEMENTS = 9  # distinct


def write_tsv(path, rows: list, age: int) -> None:
    path.write_text("ts\ts\tp\to\n" + "".join(f"{t}\t{s}\t{p}\t{o}\n" for t, s, p, o in rows))
    os.utime(path, (1_700_000_000 + age, 1_700_000_000 + age))  # Spark takes the oldest file first


@pytest.mark.parametrize("ingest", ["rows", "auto"])
@pytest.mark.parametrize("split", sorted(QUERIES))
def test_a_repeated_element_is_read_once(spark, tmp_path, split: str, ingest: str) -> None:
    from tefq.spark import run as spark_run

    doc = load_text(tmp_path, QUERIES[split])
    plan = plan_windowed(doc, 2)
    assert (plan.key is not None) == (split == "by a join key") and (plan.slabs is not None) == (split == "by windows")
    log = tmp_path / "log"
    log.mkdir()
    write_tsv(log / "part-0.tsv", FIRST, 0)
    write_tsv(log / "part-1.tsv", SECOND, 1)
    want = tefq.compile(QUERIES[split]).run([str(log)], engine="oracle")  # the oracle reads the same files
    got = spark_run(doc, [str(log)], spark=spark, progress=False, max_files_per_trigger=1, buckets=2, ingest=ingest)
    assert [r.sorted_rows() for r in got.results] == [r.sorted_rows() for r in want.results]
    assert got.metrics.ticks == want.metrics["ticks"]
    assert got.metrics.late_events == 0
    assert got.metrics.events_in == want.metrics["events_in"] == ELEMENTS
    assert got.metrics.extra["duplicates"] == len(FIRST + SECOND) - ELEMENTS


def test_a_repeat_in_two_streams_is_read_once(spark, tmp_path) -> None:
    """The same element in two inputs is one element of the run (the oracle's set of elements)."""
    from tefq.spark import run as spark_run

    doc = load_text(tmp_path, QUERIES["by a join key"])
    paths = []
    for i, rows in enumerate([FIRST, FIRST[:2] + SECOND[-1:]]):
        d = tmp_path / f"s{i}"
        d.mkdir()
        write_tsv(d / "part-0.tsv", rows, i)
        paths.append(str(d))
    want = tefq.compile(QUERIES["by a join key"]).run(paths, engine="oracle")
    got = spark_run(doc, paths, spark=spark, progress=False, buckets=2)
    assert [r.sorted_rows() for r in got.results] == [r.sorted_rows() for r in want.results]
    assert got.metrics.events_in == want.metrics["events_in"] == 7
