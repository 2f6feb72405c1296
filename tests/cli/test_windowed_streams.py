"""`--stream IRI=PATH` feeds a windowed query's `FROM STREAM <IRI>` (and RSP-QL's `ON <IRI>`) only;
`--stream PATH` feeds every FROM STREAM (docs/windowed-sparql.md, "Streams"). The command line on
the oracle, and the same run on Spark."""
from __future__ import annotations

import subprocess
import sys

import pytest

DOC = """PREFIX : <http://example.org/>
REGISTER QUERY fromA AS SELECT ?u FROM STREAM <urn:a> [RANGE 1s TUMBLING] WHERE { ?u :join ?c }
REGISTER QUERY fromB AS SELECT ?u FROM STREAM <urn:b> [RANGE 1s TUMBLING] WHERE { ?u :join ?c }
REGISTER RSTREAM <urn:q> AS SELECT ?u FROM NAMED WINDOW <urn:w> ON <urn:b> [RANGE PT1S STEP PT1S]
WHERE { WINDOW <urn:w> { ?u :join ?c } }
"""
ROWS = {"a": ["<http://example.org/alice>"], "b": ["<http://example.org/bob>"], "both": ["<http://example.org/eve>"]}


@pytest.fixture
def inputs(tmp_path):
    paths = {}
    for name, users in ROWS.items():
        p = tmp_path / f"{name}.tsv"
        p.write_text("ts\ts\tp\to\n" + "".join(f"100\t{u}\t<http://example.org/join>\t<http://example.org/c>\n"
                                               for u in users))
        paths[name] = str(p)
    doc = tmp_path / "two.rspql"
    doc.write_text(DOC)
    return str(doc), paths


def answers(csv: str) -> dict[str, set[str]]:
    """query name -> its users (the CSV of a multi-query document: one `query` column)."""
    lines = csv.strip().splitlines()
    header = lines[0].split(",")
    out: dict[str, set[str]] = {}
    for line in lines[1:]:
        cells = dict(zip(header, line.split(",")))
        out.setdefault(cells["query"], set()).add(cells["u"])
    return out


def tefq(*args: str) -> str:
    done = subprocess.run([sys.executable, "-m", "tefq", *args, "--format", "csv", "--quiet"],
                          capture_output=True, text=True, check=True)
    return done.stdout


WANT = {"fromA": {"http://example.org/alice", "http://example.org/eve"},  # as CSV writes IRIs
        "fromB": {"http://example.org/bob", "http://example.org/eve"},
        "urn:q": {"http://example.org/bob", "http://example.org/eve"}}


def test_named_inputs_feed_their_stream_only(inputs) -> None:
    doc, p = inputs
    got = answers(tefq("run", doc, "--engine", "oracle", "--stream", f"urn:a={p['a']}",
                       "--stream", f"<urn:b>={p['b']}", "--stream", p["both"]))
    assert got == WANT


@pytest.mark.spark
def test_spark_binds_named_inputs_as_the_oracle(inputs, spark) -> None:
    from tefq.service import QueryFile, RunRequest, SparkOptions, execute

    doc, p = inputs
    results = {}
    for engine in ("oracle", "spark"):
        run = execute(RunRequest(QueryFile(doc), [p["a"], p["b"], p["both"]], engine=engine, progress=False,
                                 spark=SparkOptions(session=spark), stream_iris=("urn:a", "urn:b", None))).run
        results[engine] = {r.name: {c[0].strip("<>") for _, c in r.rows} for r in run.results}
    assert results["spark"] == results["oracle"] == WANT
