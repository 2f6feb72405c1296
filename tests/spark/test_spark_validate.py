"""Spark accepts and rejects exactly the rows the oracle does (tefq.io.validate is the one
definition of a bad row): Parquet input with each kind of bad cell a Parquet file can hold, plus
cells the engine's cheap Spark SQL check cannot vouch for but the oracle accepts. One session."""
from __future__ import annotations

import os

import pytest

from tefq.io.bad_rows import BadRowLog
from tefq.io.readers import read_stream
from tests.support import spark_docs as sd
from tests.support.spark import oracle, run_spark
from tests.support.streams import GOOD, IPTV, JOIN, OTHER, write

pytestmark = pytest.mark.spark
XSD_STRING = "<http://www.w3.org/2001/XMLSchema#string>"

# (ts, s, p, o): one row per kind of bad cell (the oracle's kind in the comment)
BAD = [
    (None, f"<{IPTV}u1>", JOIN, f"<{IPTV}ch1>"),  # empty-cell: ts null
    (2_000, None, JOIN, f"<{IPTV}ch1>"),  # empty-cell: s null
    (2_500, f"<{IPTV}u1>", JOIN, ""),  # empty-cell: o empty
    (3_000, "<a b>", JOIN, f"<{IPTV}ch1>"),  # bad-term: a space in an IRI
    (3_500, "<noscheme>", OTHER, f"<{IPTV}ch1>"),  # bad-term: not absolute, on a row no clause matches
    (4_000, f"<{IPTV}u2>", JOIN, '"open'),  # bad-term: unterminated literal
    (4_500, f"<{IPTV}u2>", OTHER, '"a\\qb"'),  # bad-escape
    (5_000, '"lit"', JOIN, f"<{IPTV}ch2>"),  # term-position: a literal as subject
    (5_500, f"<{IPTV}u2>", "_:b1", f"<{IPTV}ch2>"),  # term-position: a blank node as predicate
    (6_000, f"<{IPTV}u3>", "<http://x/p\x00q>", f"<{IPTV}ch2>"),  # NUL in an IRI
    (6_500, f"<{IPTV}u3>", JOIN, f"<{IPTV}ch2> junk"),  # bad-term: text after the term
]
# Cells Spark SQL cannot vouch for (not in normal form) that the oracle accepts.
UNDECIDED_GOOD = [
    (7_000, f" <{IPTV}u9>", JOIN, f"<{IPTV}ch3>"),  # spaces around a cell carry nothing
    (7_500, f"<{IPTV}u4>", OTHER, f'"x"^^{XSD_STRING}'),  # rewritten literal, no clause matches
    (8_000, f"<{IPTV}u4>", OTHER, '"tab\there"'),
    (8_500, f"<{IPTV}u4>", OTHER, "<http://x/\\u0041>"),
]


def rejected(directory) -> set[tuple[str, ...]]:
    """The (ts, s, p, o) cells of every rejected row: the last four fields of each line, as both
    engines write them ("" for a null cell)."""
    out = set()
    for f in os.listdir(directory):
        with open(os.path.join(directory, f), encoding="utf-8") as fh:
            out |= {tuple(line.rstrip("\n").split("\t")[-4:]) for line in fh if line.strip()}
    return out


@pytest.mark.parametrize("ingest", ["rows", "columnar", "direct"])
def test_spark_and_oracle_reject_the_same_rows(spark, tmp_path, ingest):
    """Direct ingestion: every bucket reads the file, bucket 0 alone records (one line per bad row)."""
    d = tmp_path / "stream"
    d.mkdir()
    rows = sorted(GOOD + BAD + UNDECIDED_GOOD, key=lambda r: r[0] or 0)
    write(str(d / "part-0.parquet"), rows)
    doc = sd.uc1(1000)
    log = BadRowLog(str(tmp_path / "oracle-bad"))
    want = oracle(doc, list(read_stream(str(d), log)))
    log.close()
    got = run_spark(spark, doc, [str(d)], bad_rows=str(tmp_path / "spark-bad"), ingest=ingest)
    assert log.count == len(BAD)
    assert got.metrics.extra["bad_rows"] == len(BAD)
    assert rejected(tmp_path / "spark-bad") == rejected(tmp_path / "oracle-bad")
    recorded = [ln for f in os.listdir(tmp_path / "spark-bad") for ln in open(tmp_path / "spark-bad" / f) if ln.strip()]
    assert len(recorded) == len(BAD)
    assert got.results[0].rows == want.results[0].rows  # " <u9>" is <u9>, as the oracle reads it


def damaged_parquet(path, where: str) -> None:
    """A Parquet file of good rows, damaged in its data pages or its footer (bytes overwritten), or
    without its o column."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    n = 5_000
    columns = {"ts": pa.array(range(0, n * 100, 100), pa.int64()), "s": [f"<{IPTV}u{i % 97}>" for i in range(n)],
               "p": [JOIN] * n, "o": [f"<{IPTV}ch{i % 13}>" for i in range(n)]}
    if where == "no o column":
        del columns["o"]
    pq.write_table(pa.table(columns), path, compression="snappy", use_dictionary=False)
    if where == "no o column":
        return
    data = bytearray(path.read_bytes())
    at = len(data) // 4 if where == "pages" else len(data) - 40  # the footer's metadata ends 8 bytes early
    data[at:at + 32] = b"\xff" * 32
    path.write_bytes(bytes(data))


@pytest.mark.parametrize("where", ["pages", "footer", "no o column"])
@pytest.mark.parametrize("ingest", ["rows", "columnar", "direct"])
def test_a_damaged_parquet_file_is_the_oracles_located_error(spark, tmp_path, ingest, where):
    """Bad input, not an internal error: whoever reads the file (the driver, a Python worker,
    Spark's own file source), the run stops with the oracle reader's message, file and row.
    (A missing column as well: the workers open files asking for s, p and o by name.)"""
    from tefq.errors import TefqError

    d = tmp_path / "stream"
    d.mkdir()
    damaged_parquet(d / "part-0.parquet", where)
    with pytest.raises(TefqError) as want:
        list(read_stream(str(d)))
    with pytest.raises(TefqError) as got:
        run_spark(spark, sd.uc1(1000), [str(d)], ingest=ingest)
    expected = "missing Parquet column" if where == "no o column" else "cannot read the Parquet file"
    assert expected in want.value.message
    assert (got.value.message, got.value.file, got.value.line) == (want.value.message, want.value.file,
                                                                   want.value.line)
