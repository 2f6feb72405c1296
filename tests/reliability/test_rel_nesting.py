"""Issue 39, case 5: deep nesting is a located exit 2 with a sentence, never a RecursionError, and
everything SPARQL allows up to the limit runs. Before: 1,000 nested `( … )` in a TEF WHERE or a
windowed query nested 1,000 deep ended in exit 1 RecursionError; 40 nested `{ }` (valid SPARQL)
was "not a valid SPARQL 1.1 query" (rdflib ran out of Python's 1,000 frames); an `.n3` background
with a formula `{…} => {…}` was exit 1 TermError."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tefq.errors import TefqError
from tefq.syntax import parse
from tefq.syntax.nesting import MAX_NESTING, check_nesting

pytestmark = pytest.mark.reliability

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")
STREAM = os.path.join(ROOT, "tests", "data", "streams", "basic.tsv")
PREFIX = "PREFIX : <http://example.org/iptv#>\n"
FACT = "CONSTRUCT FACT UserFact {?u :watching ?c .} (UNION (SINCE ?u :join ?c) (UNTIL ?u :quit ?c))\n"


def aggregate(where: str, condition: str = "?u != :nobody") -> str:
    return (PREFIX + FACT + f"SELECT ?c AS C, ?n AS N (AGGREGATE ?c, COUNT ?u AS ?n WHERE {where} "
            f"GROUP BY ?c EVERY \"PT10S\"^^xsd:duration)\n").replace("COND", condition)


def windowed(groups: int) -> str:
    return (PREFIX + "REGISTER QUERY Deep AS\nPREFIX : <http://example.org/iptv#>\nSELECT ?u ?c\n"
            "FROM STREAM <http://example.org/iptv/log> [RANGE 10s STEP 10s]\n"
            "WHERE " + "{ " * groups + "?u :join ?c" + " }" * groups + "\n")


def run(tmp_path, text: str, *extra: str, engine: str = "oracle", name: str = "q.tef") -> subprocess.CompletedProcess:
    doc = tmp_path / name
    doc.write_text(text)
    return subprocess.run([sys.executable, "-m", "tefq", "run", str(doc), "--engine", engine, "--stream", STREAM,
                           "--format", "csv", *extra], capture_output=True, text=True, cwd=ROOT, timeout=600)


def refused(proc: subprocess.CompletedProcess, words: str) -> str:
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    (line,) = [x for x in proc.stderr.splitlines() if "error:" in x]
    assert words in line and len(proc.stderr) < 1500
    return line


def test_a_thousand_nested_parentheses_in_a_where_is_located(tmp_path) -> None:
    proc = run(tmp_path, aggregate("(" * 1000 + "CURRENT ?u :watching ?c" + ")" * 1000))
    line = refused(proc, f"error: nested more than {MAX_NESTING} deep")
    assert line.startswith(f"{tmp_path / 'q.tef'}:3:")


def test_a_windowed_query_nested_a_thousand_deep_is_located(tmp_path) -> None:
    refused(run(tmp_path, windowed(1000)), f"nested more than {MAX_NESTING} deep")


def test_nesting_up_to_the_limit_runs_and_gives_the_plain_rows(tmp_path) -> None:
    plain = run(tmp_path, aggregate("{ (CURRENT ?u :watching ?c) FILTER(COND) }"))
    deep = run(tmp_path, aggregate("{ " + "(" * 40 + "(CURRENT ?u :watching ?c) FILTER(" + "(" * 20 + "?u != :nobody"
                                   + ")" * 20 + ")" + ")" * 40 + " }"), name="deep.tef")
    assert plain.returncode == deep.returncode == 0, deep.stderr
    assert deep.stdout == plain.stdout and plain.stdout.count("\n") > 1


@pytest.mark.parametrize("groups", [40, MAX_NESTING - 1])
def test_a_windowed_query_with_deeply_nested_groups_runs(tmp_path, groups) -> None:
    """SPARQL allows any nesting: up to the limit (one level is the window's `[RANGE ...]`) it runs."""
    plain, deep = run(tmp_path, windowed(1)), run(tmp_path, windowed(groups), name="deep.tef")
    assert plain.returncode == deep.returncode == 0, deep.stderr[-2000:]
    assert deep.stdout == plain.stdout and plain.stdout.count("\n") > 1


@pytest.mark.spark
def test_deep_groups_run_on_spark_too(tmp_path) -> None:
    oracle, spark = run(tmp_path, windowed(40)), run(tmp_path, windowed(40), engine="spark", name="s.tef")
    assert spark.returncode == 0, spark.stderr[-2000:]
    assert spark.stdout == oracle.stdout


def test_a_long_chain_of_operators_is_located_and_a_shorter_one_runs(tmp_path) -> None:
    chain = aggregate("{ (CURRENT ?u :watching ?c) FILTER(COND) }", " + ".join(["1"] * 3000) + " > 0")
    refused(run(tmp_path, chain), "nested more than 256 deep (a chain of operators counts one level each)")
    short = aggregate("{ (CURRENT ?u :watching ?c) FILTER(COND) }", " + ".join(["1"] * 200) + " > 0")
    assert run(tmp_path, short, name="short.tef").returncode == 0


def test_brackets_inside_strings_iris_and_comments_do_not_count() -> None:
    text = ('# ((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((\n'
            + '"' + "(" * 100 + '" ' + "'" + "{" * 100 + "' " + '"""' + "[" * 100 + '\n"""' + " <http://x/(> "
            + "(" * MAX_NESTING + ")" * MAX_NESTING)
    check_nesting(text)
    with pytest.raises(TefqError, match="nested more than"):
        check_nesting(text + "(" * (MAX_NESTING + 1))


def test_the_limit_is_checked_before_the_parser_recurses() -> None:
    text = aggregate("(" * 100_000 + "CURRENT ?u :watching ?c" + ")" * 100_000)
    with pytest.raises(TefqError) as e:
        parse(text, "big.tef")
    line, before = text.splitlines()[2], text.splitlines()[2][:e.value.column - 1]
    assert e.value.line == 3 and line[e.value.column - 1] == "(" and before.count("(") == MAX_NESTING


def test_an_n3_background_with_a_formula_names_file_and_line(tmp_path) -> None:
    bg = tmp_path / "rules.n3"
    bg.write_text("@prefix : <http://example.org/iptv#> .\n:ch1 :genre :News .\n"
                  "{ ?x :genre :News } => { ?x :kind :Info } .\n")
    line = refused(run(tmp_path, aggregate("{ (CURRENT ?u :watching ?c) }"), "--background", str(bg)),
                   "an N3 formula, rule or variable")
    assert line.startswith(f"{bg}:3:1: error:")


def test_plain_n3_background_triples_still_work(tmp_path) -> None:
    bg = tmp_path / "plain.n3"
    bg.write_text("@prefix : <http://example.org/iptv#> .\n:ch1 :genre :News .\n")
    assert run(tmp_path, aggregate("{ (CURRENT ?u :watching ?c) }"), "--background", str(bg)).returncode == 0


@pytest.mark.parametrize("error", [RecursionError("maximum recursion depth exceeded"),
                                   RuntimeError("Py4JJavaError: ... RecursionError: maximum recursion depth exceeded "
                                                "while calling a Python object\n\tat org.apache...")])
def test_a_recursion_error_anywhere_is_a_sentence_and_exit_2(monkeypatch, capsys, error) -> None:
    from tefq import cli

    def deep(args) -> int:
        raise error

    parser = cli.build_parser()
    monkeypatch.setattr(cli, "build_parser", lambda: parser)
    monkeypatch.setattr(parser, "parse_args", lambda argv: type("A", (), {"func": staticmethod(deep)})())
    assert cli.run_command(["run"]) == 2
    assert capsys.readouterr().err.strip().splitlines() == [f"tefq: error: {cli.TOO_DEEP}"]
