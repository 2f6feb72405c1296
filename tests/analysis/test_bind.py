"""The bind step: classification, names, order, windowed SPARQL text, and every located error."""
from __future__ import annotations

from pathlib import Path

import pytest

from tefq.analysis import bind, load, summary
from tefq.errors import TefqError
from tefq.plan import logical as L
from tefq.syntax import parse
from tests.support.paths import DATA

QUERIES = DATA / "queries"
IPTV = "http://example.org/iptv#"
EX = {"": IPTV}
PAPER_PREFIXES = {"": IPTV, "uc": "http://example.org/uc#", "ue": "http://example.org/ue#"}


def _bind(text: str, prefixes: dict[str, str] | None = None, background: frozenset[str] = frozenset()) -> L.Document:
    return bind(parse(text, "t.tef"), "t.tef", text, prefixes if prefixes is not None else EX, background)


def _error(text: str, prefixes: dict[str, str] | None = None) -> TefqError:
    with pytest.raises(TefqError) as info:
        _bind(text, prefixes)
    return info.value


def test_spec9_binds_with_the_empty_prefix_mapped() -> None:
    doc = load(str(QUERIES / "spec9.tef"), EX)
    assert [f.name for f in doc.facts] == ["UserFact", "ProgramFact", "ViewShipFact"]
    assert [q.name for q in doc.queries] == ["q1", "q2", "q3"]
    user = doc.fact("UserFact")
    assert isinstance(user, L.EventFact)
    assert user.identity == (L.Var("user"), L.Var("channel"))
    assert user.since[0].trigger.p == L.Term(f"<{IPTV}join>")
    q1, q2, q3 = doc.queries
    assert isinstance(q1, L.AggregateQuery) and isinstance(q2, L.AggregateQuery) and isinstance(q3, L.AggregateQuery)
    assert q1.every_ms == 10_000 and q2.every_ms == 60_000
    # spec §4: COUNT ?user without alias binds ?user, which SELECT outputs as USER
    assert q1.aggregates == (L.Aggregate("COUNT", L.Var("user"), False, "user"),)
    assert [p.name for p in q1.select] == ["CHANNEL", "USER"]
    assert q1.where[0].kind == "current" and q1.where[0].facts == ("UserFact",)
    assert q2.where[0].interval == (L.Var("SC"), L.Var("EC"))
    assert q2.select[2] == L.Projection(L.Call("/", (L.Var("TotalTime"), L.Var("Count"))), "AverageDuration")
    assert q3.where[0].kind == "fact" and q3.where[0].facts == ("ViewShipFact",)
    assert q3.while_ is not None and q3.while_.facts == ("ProgramFact",)
    assert q3.group_by == (L.Var("show"),)
    derived = doc.fact("ViewShipFact")
    assert isinstance(derived, L.DerivedFact)
    assert [wp.facts for wp in derived.body] == [("UserFact",), ("ProgramFact",)]


def test_use_case_files_bind_and_summarise() -> None:
    lines = summary(load(str(QUERIES / "uc1.tef")))
    assert lines == ["fact UserFact: identity (?user, ?channel); 1 SINCE, 1 UNTIL",
                     "query q1: aggregate every 10s, group by ?channel -> CHANNEL, USER"]
    assert summary(load(str(QUERIES / "uc3.tef")))[2] == \
        "fact ViewShipFact: identity (?user, ?program); derived from UserFact, ProgramFact"
    assert load(str(QUERIES / "spec10_uc2.tef")).queries[0].every_ms == 5000  # type: ignore[union-attr]


def test_facts_come_in_dependency_order() -> None:
    doc = _bind("CONSTRUCT FACT Both {?u :both ?p} {?u :w ?c . ?c :s ?p}\n"
                "CONSTRUCT FACT {?u :w ?c} (SINCE ?u :join ?c)\n"
                "CONSTRUCT FACT {?c :s ?p} (SINCE ?c :start ?p)\n")
    assert [f.name for f in doc.facts] == ["fact1", "fact2", "Both"]


def test_classification_event_background_fact() -> None:
    bg = frozenset({f"<{IPTV}genre>"})
    doc = _bind("CONSTRUCT FACT F {?u :w ?c} (SINCE ?u :join ?c)\n"
                "SELECT ?g AS G (AGGREGATE ?g, COUNT ?u WHERE ?u :w ?c [?S,?E] . ?c :genre ?g . ?u :click ?x"
                " FILTER(?S > 0) EVERY 1m)", background=bg)
    q = doc.queries[0]
    assert isinstance(q, L.AggregateQuery)
    assert [wp.kind for wp in q.where] == ["fact", "background", "event"]
    assert len(q.filters) == 1


def test_unnamed_queries_and_duplicate_names() -> None:
    agg = '(AGGREGATE ?c, COUNT ?u WHERE ?u :w ?c EVERY 1m)'
    doc = _bind(f"REGISTER QUERY A AS SELECT ?c {agg}\nSELECT ?c {agg}\nSELECT ?c {agg}")
    assert [q.name for q in doc.queries] == ["A", "q1", "q2"]
    e = _error(f"REGISTER QUERY A AS SELECT ?c {agg}\nREGISTER QUERY A AS SELECT ?c {agg}")
    assert "duplicate query name 'A'" in e.message and (e.line, e.column) == (2, 1)


def test_windowed_query_sparql_is_static_sparql_rdflib_accepts() -> None:
    from rdflib.plugins.sparql import prepareQuery

    doc = load(str(QUERIES / "paper_uc1_csparql.tef"), PAPER_PREFIXES)
    assert [q.name for q in doc.queries] == ["UserJoinQuitCounts", "UserChannelCountsQuery"]
    for q in doc.queries:
        assert isinstance(q, L.WindowedQuery)
        assert q.registers_stream and q.form == "construct"
        assert q.windows == (L.StreamWindow(None, 10_000, 10_000),)
        assert "FROM STREAM" not in q.sparql and "REGISTER" not in q.sparql
        prepareQuery(q.sparql)
    w = load(str(QUERIES / "windowed_select.tef")).queries[0]
    assert isinstance(w, L.WindowedQuery)
    assert w.select_names == ("genre", "joins", "last")
    assert w.windows == (L.StreamWindow("http://example.org/iptv/log", 60_000, 30_000),)
    assert w.background == ("http://example.org/iptv/channels",)
    assert "urn:tefq:fn:timestamp" in w.sparql and "PREFIX g:" in w.sparql
    prepareQuery(w.sparql)


def test_paper_csparql_needs_its_prefixes() -> None:
    text = (QUERIES / "paper_uc1_csparql.tef").read_text()
    with pytest.raises(TefqError) as info:
        bind(parse(text, "p.tef"), "p.tef", text, {})
    e = info.value
    assert "undeclared prefix 'uc:'" in e.message and (e.line, e.column) == (4, 18)


def test_an_undeclared_colon_binds_and_is_an_error_when_run() -> None:
    """Spec §1/§9: the paper's queries use `:` undeclared; they bind (tefq parse, explain) and a
    run refuses them at the first `:`, naming --prefix; mapped, they bind to the real IRIs."""
    text = "CONSTRUCT FACT F {?u :w ?c} (SINCE ?u :join ?c)"
    doc = bind(parse(text, "p.tef"), "p.tef", text, {})
    with pytest.raises(TefqError) as info:
        doc.require_mapped()
    e = info.value
    assert "--prefix :=IRI" in e.message and (e.file, e.line, e.column) == ("p.tef", 1, 22)
    mapped = bind(parse(text, "p.tef"), "p.tef", text, {"": "http://x/"})
    mapped.require_mapped()
    assert mapped.facts[0].template.p.nt == "<http://x/w>"


# ---------------------------------------------------------------- located errors
@pytest.mark.parametrize("text, prefixes, words, line, column", [
    ("PREFIX x: <http://x/>\nCONSTRUCT FACT F {?u x:w ?c} (SINCE ?u x:join ?c)\n"
     'SELECT ?c (AGGREGATE ?c, COUNT ?u WHERE ?u y:w ?c EVERY 1m)', {}, "undeclared prefix 'y:'", 3, 44),
    ("CONSTRUCT FACT F {?u :w ?c}\n(UNION (SINCE ?u :join ?c) (UNTIL ?u :quit ?x))", EX,
     "template variable ?c not bound by this UNTIL pattern", 2, 28),
    ("CONSTRUCT FACT F {?u :w ?c} (SINCE ?u :join ?c)\n"
     "SELECT ?c AS C, ?x AS X (AGGREGATE ?c, COUNT ?u WHERE ?u :w ?c EVERY 1m)", EX,
     "unknown variable ?x in SELECT", 2, 17),
    ("SELECT ?s WHERE { ?s ?p ?o } EVERY 1m", EX, "EVERY belongs in an (AGGREGATE ...) block", 1, 36),
    ("CONSTRUCT FACT A {?x :a ?y} {?x :b ?y}\nCONSTRUCT FACT B {?x :b ?y} {?x :a ?y}", EX,
     "facts form a cycle: A -> B -> A", 1, 1),
    ("CONSTRUCT FACT A {?x :a ?y} {?x ?p ?y}", EX, "facts form a cycle: A -> A", 1, 1),
    ("SELECT ?c (AGGREGATE ?c, COUNT ?u WHERE CURRENT ?u :w ?c EVERY 1m)", EX,
     "CURRENT pattern matches no fact template", 1, 41),
    ("SELECT ?c (AGGREGATE ?c, COUNT ?u WHERE ?u :w ?c [?S,?E] EVERY 1m)", EX, "needs a fact pattern", 1, 41),
    ("SELECT ?c (AGGREGATE ?c, COUNT ?u WHERE ?u :w ?c)", EX, "needs EVERY", 1, 11),
    ("SELECT ?c (AGGREGATE ?c, COUNT ?u WHERE ?u :w ?c EVERY 0s)", EX, "positive duration", 1, 56),
    ("SELECT ?c (AGGREGATE ?c, COUNT ?u WHERE ?u :w ?c EVERY 10x)", EX, "bad duration '10x'", 1, 56),
    ('SELECT ?c (AGGREGATE ?c, COUNT ?u WHERE ?u :w ?c EVERY "PT1M"^^xsd:string)', EX, "expects an xsd:duration", 1, 56),
    ("SELECT ?c (AGGREGATE ?d, COUNT ?u WHERE ?u :w ?c EVERY 1m)", EX, "group variable ?d is not bound", 1, 22),
    ("SELECT ?c (AGGREGATE ?c, SUM STRLEN(?u) WHERE ?u :w ?c EVERY 1m)", EX, "needs a name", 1, 26),
    ("REGISTER QUERY Q AS SELECT ?s FROM STREAM <http://s> WHERE { ?s ?p ?o }", EX, "needs a window", 1, 31),
    ("REGISTER QUERY Q AS SELECT ?s WHERE { ?s ?p ?o }", EX, "needs FROM STREAM", 1, 1),
])
def test_bind_errors_are_located(text: str, prefixes: dict[str, str], words: str, line: int, column: int) -> None:
    e = _error(text, prefixes)
    assert words in e.message
    assert (e.file, e.line, e.column) == ("t.tef", line, column)
    assert e.source_line == text.splitlines()[line - 1]


def test_load_missing_file_names_it(tmp_path: Path) -> None:
    missing = tmp_path / "nope.tef"
    with pytest.raises(TefqError) as info:
        load(str(missing))
    assert info.value.file == str(missing) and "cannot read" in info.value.message
