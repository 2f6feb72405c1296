"""RSP-QL on real Spark: every CSRBench query rewritten in RSP-QL, plus ISTREAM/DSTREAM forms,
in one document (one streaming run), gives window by window the windowed oracle's rows of the
C-SPARQL form; UC1 in RSP-QL (two windows, feedback) equals the oracle."""
from __future__ import annotations

import re

import pytest

pytest.importorskip("pyspark")

from tefq.analysis import load
from tefq.io.stream_writers import write_stream
from tefq.oracle.windowed import run as oracle_run
from tests.support.paths import CSRBENCH, ROOT
from tests.support.windowed_cases import csparql_text, iptv_log, rspql_text

pytestmark = pytest.mark.spark


def _spark_rows(spark, doc, elements, stream_dir) -> dict:
    from tefq.spark import run as spark_run

    stream_dir.mkdir()
    write_stream(elements, str(stream_dir / "part-000.tsv"), "tsv")
    got = spark_run(doc, [str(stream_dir)], spark=spark, progress=False)
    return {r.name: r for r in got.results}


def _named(text: str, n: int, kind: str) -> str:
    return re.sub(r"REGISTER \w+ <http://ex.org/out/test>", f"REGISTER {kind} <http://ex.org/out/Q{n}{kind[0]}>", text)


@pytest.mark.needs_shared("external/csrbench")
def test_csrbench_queries_in_rspql_on_spark_equal_the_csparql_oracle(spark, tmp_path) -> None:
    from tefq.oracle.windowed.streams import read_elements

    elements = read_elements(CSRBENCH / "csrbench-dataset.trig")
    texts = [_named(rspql_text(csparql_text(n)), n, "RSTREAM") for n in range(1, 8)]
    texts += [_named(rspql_text(csparql_text(5), kind), 5, kind) for kind in ("ISTREAM", "DSTREAM")]
    doc_path = tmp_path / "csrbench.rspql"
    doc_path.write_text("\n\n".join(texts))
    rspql = load(str(doc_path))
    got = _spark_rows(spark, rspql, elements, tmp_path / "stream")
    oracle_rspql = {r.name: r for r in oracle_run(rspql, elements)}
    for n in range(1, 8):
        path = tmp_path / f"c{n}.rspql"
        path.write_text(csparql_text(n))
        want = oracle_run(load(str(path)), elements)[0]
        assert got[f"http://ex.org/out/Q{n}R"].rows == want.sorted_rows(), n
    for kind in "ID":
        name = f"http://ex.org/out/Q5{kind}"
        assert got[name].rows == oracle_rspql[name].sorted_rows() and got[name].rows, name
    assert got["http://ex.org/out/Q5I"].rows != got["http://ex.org/out/Q5R"].rows


def test_uc1_rspql_two_windows_and_feedback_on_spark(spark, tmp_path) -> None:
    log = iptv_log(4, n=200, span_ms=60_000)
    doc = load(str(ROOT / "usecases" / "uc1_rspql.rspql"))
    got = _spark_rows(spark, doc, log, tmp_path / "log")
    want = oracle_run(doc, log)
    assert all(w.rows for w in want)
    for w in want:
        assert got[w.name].rows == w.sorted_rows(), w.name
