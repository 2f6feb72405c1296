"""The windowed (C-SPARQL) cases several test modules share: the algebra constructs' queries over one window, an IPTV log, CSRBench queries as documents."""
from __future__ import annotations

import json
import re
from pathlib import Path

from tests.support.paths import CSRBENCH

E = "http://e.org/"
XSD = "http://www.w3.org/2001/XMLSchema#"


def iri(x: str) -> str:
    return f"<{E}{x}>"


def num(v, dt: str = "integer") -> str:
    return f'"{v}"^^<{XSD}{dt}>'


QUERIES = {
    "bgp": "SELECT ?s ?o WHERE { ?s :p ?o }",
    "bgp_join": "SELECT ?s ?x ?y WHERE { ?s :p ?x . ?x :q ?y }",
    "repeated_var": "SELECT ?s WHERE { ?s :p ?s }",
    "variable_predicate": "SELECT ?s ?p WHERE { ?s ?p :a }",
    "filter_numeric": "SELECT ?s ?v WHERE { ?s :r ?v FILTER(?v > 1 && ?v != 3) }",
    "filter_fallback": 'SELECT ?s ?o WHERE { ?s :p ?o FILTER(isIRI(?o) || STR(?o) = "x") }',
    "filter_not_or": "SELECT ?s ?v WHERE { ?s :r ?v FILTER(!(?v < 2) || ?v = 0.5) }",
    "optional_filter": "SELECT ?s ?o ?v WHERE { ?s :p ?o OPTIONAL { ?s :r ?v FILTER(?v >= 2) } }",
    "optional_unbound_join": "SELECT ?s ?x ?y WHERE { ?s :p ?o OPTIONAL { ?s :q ?x } OPTIONAL { ?x :p ?y } }",
    "union": "SELECT ?s ?o WHERE { { ?s :p ?o } UNION { ?s :q ?o } }",
    "minus": "SELECT ?s ?o WHERE { ?s :p ?o MINUS { ?s :q ?z } }",
    "bind": ('SELECT ?s ?w ?m ?c ?size ?b WHERE { ?s :r ?v BIND(?v + 2 - 1 AS ?w) BIND(?v * 2 AS ?m) BIND(COALESCE(?nope, ?v) AS ?c) '
             'BIND(IF(?v > 1, :big, :small) AS ?size) BIND(BOUND(?w) && ?v < 3 AS ?b) }'),
    "bind_division": "SELECT ?s ?h WHERE { ?s :r ?v BIND(?v / 2 AS ?h) }",
    "group_aggregates": ("SELECT ?s (COUNT(?v) AS ?n) (SUM(?v) AS ?sum) (AVG(?v) AS ?avg) (MIN(?v) AS ?min) "
                         "(MAX(?v) AS ?max) (COUNT(DISTINCT ?v) AS ?d) WHERE { ?s :r ?v } GROUP BY ?s"),
    "count_star": "SELECT (COUNT(*) AS ?n) WHERE { ?s ?p ?o }",
    "count_optional": "SELECT ?s (COUNT(?v) AS ?n) WHERE { ?s :p ?o OPTIONAL { ?o :r ?v } } GROUP BY ?s",
    "having": "SELECT ?s (COUNT(*) AS ?n) WHERE { ?s ?p ?o } GROUP BY ?s HAVING (COUNT(*) > 1)",
    "subquery": ("SELECT ?s ?n WHERE { ?s :p ?o { SELECT ?s (COUNT(*) AS ?n) WHERE { ?s :q ?x } GROUP BY ?s } }"),
    "optional_subquery": ("SELECT ?s ?n WHERE { { SELECT DISTINCT ?s WHERE { ?s ?p ?o } } "
                          "OPTIONAL { SELECT ?s (COUNT(?o) AS ?n) WHERE { ?s :p ?o } GROUP BY ?s } }"),
    "distinct": "SELECT DISTINCT ?s WHERE { ?s ?p ?o }",
    "order_limit": "SELECT ?s ?v WHERE { ?s :r ?v } ORDER BY DESC(?v) ?s LIMIT 2",
    "values": "SELECT ?s ?o WHERE { VALUES ?s { :a :b } ?s :p ?o }",
    "construct": "CONSTRUCT { ?s :twice ?w . ?s :seen true } WHERE { ?s :r ?v BIND(?v + ?v AS ?w) }",
    "ask": "ASK { ?s :q ?o }",
    "timestamp": "SELECT ?s ?o (timestamp(?s, :p, ?o) AS ?t) WHERE { ?s :p ?o }",
    "group_by_expression": "SELECT ?k (COUNT(*) AS ?n) WHERE { ?s :r ?v } GROUP BY (?v > 1 AS ?k)",
}

WINDOW = [
    (1, iri("a"), iri("p"), iri("b")), (2, iri("b"), iri("q"), iri("c")), (3, iri("a"), iri("r"), num(1)),
    (4, iri("a"), iri("r"), num(2)), (5, iri("b"), iri("r"), num("2.5", "double")), (6, iri("c"), iri("p"), '"x"'),
    (7, iri("c"), iri("p"), iri("c")), (8, iri("a"), iri("q"), iri("a")), (9, iri("b"), iri("p"), iri("a")),
    (10, iri("a"), iri("p"), iri("b")), (11, iri("c"), iri("r"), num(3)), (12, iri("b"), iri("r"), num("0.5", "decimal")),
]


def iptv_log(seed: int, n: int = 300, span_ms: int = 90_000) -> list:
    """A small IPTV-like log: users joining and quitting a few channels (uc1_csparql's input)."""
    import random

    rng = random.Random(seed)
    ns = "http://example.org/iptv#"
    return sorted((rng.randrange(span_ms), f"<{ns}u{rng.randrange(25)}>", f"<{ns}{rng.choice(['join', 'quit'])}>",
                   f"<{ns}ch{rng.randrange(5)}>") for _ in range(n))


def csrbench_doc(n: int, tmp_path: Path):
    """CSRBench's C-SPARQL query N with its config's placeholders filled, as a tefq document."""
    import json
    import re

    from tefq.analysis import load

    q = CSRBENCH / "queries"
    values = json.loads((q / f"csparql_Q{n}.config.json").read_text())["vars"]
    text = re.sub(r"\$\{(\w+)\}", lambda m: values[m.group(1)], (q / f"csparql_Q{n}.engine.query").read_text())
    path = tmp_path / f"csparql_Q{n}.rspql"
    path.write_text(text)
    return load(str(path))


def csparql_text(n: int) -> str:
    """CSRBench's C-SPARQL query N, its config's placeholders filled (read in place)."""
    q = CSRBENCH / "queries"
    values = json.loads((q / f"csparql_Q{n}.config.json").read_text())["vars"]
    return re.sub(r"\$\{(\w+)\}", lambda m: values[m.group(1)], (q / f"csparql_Q{n}.engine.query").read_text())


def _iso(duration: str) -> str:
    """`10s` -> `PT10S` (RSP-QL windows take ISO 8601 durations)."""
    m = re.fullmatch(r"(\d+)s", duration)
    assert m, duration
    return f"PT{m.group(1)}S"


def rspql_text(csparql: str, register: str = "RSTREAM") -> str:
    """The same query in RSP-QL: REGISTER <kind> <iri>, FROM NAMED WINDOW ... ON ..., and the
    WHERE pattern inside WINDOW <w> { ... }."""
    text = re.sub(r"REGISTER\s+QUERY\s+(\w+)\s+AS", rf"REGISTER {register} <http://ex.org/out/\1> AS", csparql)
    win = re.compile(r"FROM\s+STREAM\s+(<[^>]+>)\s*\[RANGE\s+(\S+)\s+STEP\s+(\S+)\]")
    assert win.search(text), "every CSRBench C-SPARQL query has one sliding window"
    text = win.sub(lambda m: f"FROM NAMED WINDOW <http://ex.org/w> ON {m.group(1)} "
                             f"[RANGE {_iso(m.group(2))} STEP {_iso(m.group(3))}]\n", text)
    head, _, body = text.partition("WHERE {")
    last = body.rstrip().rfind("}")
    return f"{head}WHERE {{ WINDOW <http://ex.org/w> {{{body[:last]}}}\n}}{body[last + 1:]}"
