"""An ill-typed literal is legal RDF (SPARQL makes its value an error where it is used): rdflib's
own warning and logged traceback about it stay off stderr, in the command line and in a process
without logging set up, as a Spark worker is (corrections.quiet_ill_typed_literals)."""
from __future__ import annotations

import subprocess
import sys

XSD = "http://www.w3.org/2001/XMLSchema#"
WORKER = f"""
from rdflib import Literal, URIRef
import tefq.oracle.windowed.r2r  # what a worker evaluating windows imports
for lex, dt in (("abc", "integer"), ("yes", "boolean"), ("2020-01-01T25:00:00", "dateTime")):
    Literal(lex, datatype=URIRef("{XSD}" + dt))
print("done")
"""


def test_a_process_without_logging_prints_nothing_for_ill_typed_literals() -> None:
    out = subprocess.run([sys.executable, "-c", WORKER], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and out.stdout == "done\n"
    assert out.stderr == "", out.stderr


def test_a_windowed_run_over_ill_typed_literals_says_only_its_summary(tmp_path) -> None:
    stream = tmp_path / "s.tsv"
    stream.write_text("ts\ts\tp\to\n"
                      f'1000\t<http://e/a>\t<http://e/p>\t"yes"^^<{XSD}boolean>\n'
                      f'2000\t<http://e/b>\t<http://e/p>\t"abc"^^<{XSD}integer>\n', encoding="utf-8")
    query = tmp_path / "q.rspql"
    query.write_text("REGISTER QUERY q AS\nSELECT ?s (STR(?o) AS ?t) FROM STREAM <http://e/s> [RANGE 10s STEP 10s] "
                     "WHERE { ?s <http://e/p> ?o FILTER(?o != 1) }\n", encoding="utf-8")
    out = subprocess.run([sys.executable, "-m", "tefq", "run", str(query), "--stream", str(stream), "--engine", "oracle"],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == ["tick,s,t", "10000,http://e/a,yes"]  # "abc" != 1 is an error: no row
    assert out.stderr.startswith("tefq: 2 events in") and len(out.stderr.splitlines()) == 1, out.stderr
