"""The grammar and parser: strict LALR construction, the paper's queries as printed, the
leniency of spec §2, and friendly located syntax errors."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from tefq.errors import TefqError
from tefq.syntax import ast, build_parser, parse
from tests.support.paths import DATA, ROOT

QUERIES = DATA / "queries"


@pytest.mark.skipif(os.environ.get("TEFQ_FAULTS_LONG") != "1", reason="make test-faults (TEFQ_FAULTS_LONG=1): make test stays under 20 minutes")
def test_grammar_is_conflict_free_lalr() -> None:
    pytest.importorskip("interegular", reason="lark's strict mode needs interegular (lark[interegular])")
    build_parser(strict=True)  # raises GrammarError on any shift/reduce or terminal collision


def _spec9_statements() -> list[str]:
    return [s for s in (QUERIES / "spec9.tef").read_text().split("\n\n") if s.strip()]


@pytest.mark.parametrize("index", range(6))
def test_each_spec9_statement_parses_alone(index: int) -> None:
    text = _spec9_statements()[index]
    doc = parse(text, "spec9.tef")
    assert len(doc.statements) == 1


def test_spec9_document_kinds() -> None:
    doc = parse((QUERIES / "spec9.tef").read_text(), "spec9.tef")
    kinds = [type(s).__name__ for s in doc.statements]
    assert kinds == ["FactDef", "AggregateQuery", "AggregateQuery", "FactDef", "FactDef", "AggregateQuery"]
    uc3 = doc.statements[5]
    assert isinstance(uc3, ast.AggregateQuery)
    assert uc3.block.while_ is not None and uc3.block.while_.elem.interval is not None
    assert [a.func for a in uc3.block.aggregates] == ["SUM", "COUNT"]
    assert uc3.block.aggregates[1].distinct
    derived = doc.statements[4]
    assert isinstance(derived, ast.FactDef) and derived.clauses is None and len(derived.body) == 2


def test_paper_csparql_queries_parse() -> None:
    doc = parse((QUERIES / "paper_uc1_csparql.tef").read_text(), "paper.tef")
    assert [type(s).__name__ for s in doc.statements] == ["WindowedQuery", "WindowedQuery"]
    q = doc.statements[0]
    assert isinstance(q, ast.WindowedQuery)
    assert q.register is not None and q.register.kind == "STREAM" and q.register.name == "UserJoinQuitCounts"
    assert q.streams[0].iri is None and q.streams[0].tumbling and q.streams[0].range.text == "10s"


@pytest.mark.parametrize("text", [
    # lower-case keywords, `as`, names with `?`, no comma before (AGGREGATE, braces, comments
    'select ?c as ?C (aggregate ?c, count ?u where { (current ?u :w ?c) . ?c :genre ?g } group by ?c every "PT5S")',
    'SELECT ?c AS C, (AGGREGATE ?c, COUNT ?u WHERE ( ?u :w ?c ?c :g ?g ) GROUP BY ?c EVERY 5s) # comment',
    'SELECT ?c AS C (AGGREGATE ?c COUNT(?u) WHERE CURRENT ?u :w ?c [?S, ?E] FILTER(?S > 0) EVERY "PT1M"^^xsd:duration)',
    'SELECT ?c AS C (AGGREGATE ?c, COUNT(*) AS ?n, AVG DURATION(?S,?E) AS ?a WHERE ?u :w ?c [?S,?E] GROUP BY ?c [WHILE ?_ :s ?c] EVERY 10s)',
    'REGISTER QUERY Viewers AS SELECT ?c AS C (AGGREGATE ?c, COUNT DISTINCT ?u WHERE {?u :w ?c} EVERY 1m)',
    "CONSTRUCT FACT {?u :w ?c} (SINCE ?u :join ?c)",
    "CONSTRUCT FACT F {?u :w ?c} (UNION (SINCE ?u :join ?c . ?c a :Channel FILTER(?c != :x)) (UNTIL ?u :quit ?c))",
    "construct fact F {?u :w ?c .} (union (since ?u :join ?c) (until ?u :quit ?c) (until ?u :leave ?c))",
])
def test_leniency(text: str) -> None:
    assert len(parse(text, "t.tef").statements) == 1


def test_windowed_sparql_features_parse() -> None:
    text = """
    REGISTER QUERY Q AS PREFIX ex: <http://ex/>
    SELECT DISTINCT ?s ?n (STR(?o) AS ?label) (timestamp(?s, ex:p, ?o) AS ?t)
    FROM STREAM <http://ex/s1> [RANGE 10s STEP 5s] FROM STREAM <http://ex/s2> [RANGE PT1M TUMBLING]
    FROM <http://ex/bg>
    WHERE {
      ?s ex:p ?o ; ex:q ?q , ?r . [ ex:z ?z ] ex:w -5 .
      OPTIONAL { ?s ex:name ?n } MINUS { ?s a ex:Bad }
      { ?s ex:a ?x } UNION { ?s ex:b ?x }
      BIND (?q + 1 AS ?q1) VALUES ?v { 1 2 UNDEF } FILTER NOT EXISTS { ?s ex:c ?c }
      { SELECT ?s (SUM(?q) AS ?total) WHERE { ?s ex:q ?q } GROUP BY ?s HAVING (SUM(?q) > 2) }
      FILTER (regex(str(?o), "^a", "i") && ?q IN (1, 2) && xsd:integer(?q) >= 0)
    }
    ORDER BY DESC(?s) ?n LIMIT 10 OFFSET 2
    """
    q = parse(text, "w.tef").statements[0]
    assert isinstance(q, ast.WindowedQuery)
    assert [s.range.text for s in q.streams] == ["10s", "PT1M"]
    assert q.streams[0].step is not None and not q.streams[0].tumbling
    assert len(q.timestamp_calls) == 1
    assert [i.name for i in q.select or ()] == [None, None, "label", "t"]


def _error(text: str) -> TefqError:
    with pytest.raises(TefqError) as info:
        parse(text, "bad.tef")
    return info.value


def test_syntax_error_is_located_with_the_line() -> None:
    e = _error("CONSTRUCT FACT F {?u :w ?c}\n(UNION (SINCE ?u :join ?c) (UNTIL ?u :quit ?c)\nSELECT")
    assert e.file == "bad.tef" and e.line >= 2
    text = e.render()
    assert text.startswith(f"bad.tef:{e.line}:{e.column}: error: syntax error")
    assert "^" in text


@pytest.mark.parametrize("text, words, line, column", [
    ("CONSTRUCT FACT F {?u :w ?c (UNION (SINCE ?u :join ?c))", "missing '}'", 1, 28),
    ('SELECT ?c AS C (AGGREGATE ?c, COUNT ?u WHERE ?u :w ?c GROUP BY ?c EVERY "PT1M"', "missing ')'", 1, 79),
    ('SELECT ?c AS C (AGGREGATE ?c, COUNT ?u (CURRENT ?u :w ?c) EVERY "PT1M")', "missing WHERE", 1, 40),
    ('SELECT ?c AS C (AGGREGATE ?c, COUNT ?u WHERE ?u :w ?c EVERY 10)', "bad duration", 1, 61),
])
def test_common_mistakes_get_friendly_messages(text: str, words: str, line: int, column: int) -> None:
    e = _error(text)
    assert words in e.message
    assert (e.line, e.column) == (line, column)


def test_unexpected_token_lists_expected_tokens_in_words() -> None:
    e = _error("CONSTRUCT FACT F ?u :w ?c")
    assert "unexpected '?u'" in e.message and "'{'" in e.message


def test_unexpected_character() -> None:
    e = _error("SELECT ?c AS C (AGGREGATE ?c, COUNT ?u WHERE ?u :w ?c EVERY 10s) %")
    assert "unexpected character '%'" in e.message and e.column == 66


# ---------------------------------------------------------------- grammar and parser hygiene


def test_one_grammar_file() -> None:
    """`grammar/tef.lark` is the only grammar: `tefq/grammar` is a link to it (the package data)."""
    from tefq.syntax.parser import grammar_text

    assert (ROOT / "tefq" / "grammar").resolve() == (ROOT / "grammar").resolve()
    assert grammar_text() == (ROOT / "grammar" / "tef.lark").read_text(encoding="utf-8")


def test_non_editable_install_carries_the_grammar(tmp_path) -> None:
    """`pip install .` (not editable) ships grammar/tef.lark inside the package: a wheel built from
    the checkout, unpacked elsewhere, parses a query with the checkout out of reach."""
    import subprocess
    import sys
    import zipfile

    build = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(tmp_path / "w"),
                            str(ROOT)], capture_output=True, text=True)
    if build.returncode != 0:
        pytest.skip(f"cannot build a wheel here: {build.stderr.strip().splitlines()[-1:]}")
    (wheel,) = (tmp_path / "w").glob("tefq-*.whl")
    with zipfile.ZipFile(wheel) as z:
        assert z.read("tefq/grammar/tef.lark").decode("utf-8") == (ROOT / "grammar" / "tef.lark").read_text(encoding="utf-8")
        z.extractall(tmp_path / "site")
    code = ("import tefq.syntax.parser as p; assert p.__file__.startswith(%r); "
            "print(len(p.parse('SELECT ?c AS C (AGGREGATE ?c, COUNT ?u WHERE ?u :w ?c EVERY 1m)').statements))"
            % str(tmp_path / "site"))
    env = {"PYTHONPATH": str(tmp_path / "site"), "XDG_CACHE_HOME": str(tmp_path / "cache"), "PATH": "/usr/bin:/bin"}
    run = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert run.returncode == 0 and run.stdout.strip() == "1", run.stderr


def test_parser_tables_are_cached_per_grammar(tmp_path, monkeypatch) -> None:
    from tefq.syntax.parser import build_parser, grammar_text, parser_cache_file

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    path = parser_cache_file(grammar_text())
    assert path is not None and path.parent == tmp_path / "tefq" and not path.exists()
    build_parser(cache=True)
    assert path.exists()
    assert build_parser(cache=True).parse("SELECT ?c AS C (AGGREGATE ?c, COUNT ?u WHERE ?u :w ?c EVERY 1m)")
    assert parser_cache_file(grammar_text() + "\n// changed") != path


@pytest.mark.parametrize("token", ['"%s"', "'%s'", '"""%s"""', ":%s", "<http://x/%s>", "?%s", ":a\\.%s"])
def test_a_one_megabyte_token_parses_in_bounded_memory(token: str) -> None:
    """A 1 MB token (string, prefixed name, IRI, variable) used to take ~2 GB in `re`'s backtrack
    stack; the token regexes now keep it bounded (peak RSS of the parsing process < 400 MB: its
    VmHWM, which starts afresh at exec, unlike ru_maxrss, which keeps the forking parent's)."""
    import subprocess
    import sys

    if not Path("/proc/self/status").exists():
        pytest.skip("needs Linux's /proc/self/status (VmHWM)")
    body = token % ("a" * 1_000_000)
    code = ("import re, sys; from tefq.syntax import parse; "
            "d = parse('PREFIX : <http://e/> SELECT ?s FROM STREAM <http://s> [RANGE 1s TUMBLING] "
            "WHERE { ?s :p ' + sys.stdin.read() + ' }'); "
            "print(len(d.statements), re.search(r'VmHWM:\\s*(\\d+)', open('/proc/self/status').read()).group(1))")
    run = subprocess.run([sys.executable, "-c", code], input=body, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr[-500:]
    statements, peak_kb = map(int, run.stdout.split())
    assert statements == 1 and peak_kb < 400_000, f"{peak_kb} KB"


def test_invalid_utf8_is_located_by_line_and_column(tmp_path, capsys) -> None:
    from tefq.cli import run_command

    path = tmp_path / "bad.tef"
    path.write_bytes(b"PREFIX : <http://e/>\n# caf\xc3\xa9 \xff\nSELECT ?c AS C (AGGREGATE ?c, COUNT ?u WHERE ?u :w ?c EVERY 1m)\n")
    assert run_command(["parse", str(path)]) == 2
    err = capsys.readouterr().err
    assert f"{path}:2:8: error: invalid UTF-8: byte 0xff" in err and "^" in err
