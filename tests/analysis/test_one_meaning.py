"""A name has one meaning, and a pattern that can never match is named (spec §4, §4.2; issue 38):
the binder refuses what the engines used to read two ways (the oracle's column held the counts,
Spark's the channel IRIs), and a run warns once per predicate no input and no background holds."""
from __future__ import annotations

import subprocess
import sys

import pytest

import tefq
from tests.support.paths import ROOT

SPEC10 = ROOT / "examples" / "spec10"
UC1 = (SPEC10 / "uc1.tef").read_text()
WATCHING = "(CURRENT ?user :watching ?channel)"


def error_of(text: str) -> tefq.TefqError:
    with pytest.raises(tefq.TefqError) as e:
        tefq.compile(text, name="q.tef")
    return e.value


@pytest.mark.parametrize("edit, where, says", [
    ({"COUNT ?user": "COUNT ?user AS ?channel", "?user AS USER": "?channel AS N"}, (8, 37),
     "?channel is a group variable and COUNT's result"),
    ({"COUNT ?user": "COUNT ?channel"}, (8, 22), "?channel is a group variable and COUNT's result"),
    ({"COUNT ?user": "COUNT ?user AS ?n, COUNT DISTINCT ?user AS ?n", "?user AS USER": "?n AS N"}, (8, 41),
     "two aggregates bind ?n"),
    ({"?user AS USER": "?user AS USER, ?user AS USER"}, (7, 44), "duplicate output name 'USER'"),
    ({WATCHING: "(CURRENT ?user :watching ?channel [?S,?S])"}, (9, 46), "[?S, ?S] binds ?S twice"),
    ({WATCHING: "(CURRENT ?user :watching ?channel [?user,?E])"}, (9, 43),
     "?user is bound by a triple pattern and by this interval binding"),
    ({WATCHING: "(CURRENT ?user :watching ?channel [?S,?E]) . (?user :watching ?channel [?S,?E2])"}, (9, 80),
     "?S is bound by two interval bindings"),
    ({"COUNT ?user": "COUNT ?user AS ?n", "?user AS USER": "?n AS N", WATCHING: WATCHING + " FILTER(?n > 3)"},
     (9, 50), "?n is COUNT's result, which a FILTER inside WHERE cannot see"),
])
def test_a_name_with_two_meanings_is_refused_where_it_is_bound(edit, where, says):
    text = UC1
    for old, new in edit.items():
        assert old in text
        text = text.replace(old, new)
    e = error_of(text)
    assert (e.line, e.column) == where and says in e.message, e.render()


def test_the_filter_error_says_where_the_condition_belongs():
    text = UC1.replace("COUNT ?user", "COUNT ?user AS ?n").replace("?user AS USER", "?n AS N")
    e = error_of(text.replace(WATCHING, WATCHING + " FILTER(?n > 3)"))
    assert "put the condition in HAVING" in e.message
    having = text.replace("GROUP BY ?channel", "GROUP BY ?channel HAVING (?n > 1)")
    assert tefq.compile(having).run(SPEC10 / "events.tsv").to_pandas()["N"].tolist() == [2, 3]


def test_a_filter_on_a_solution_variable_is_still_fine():
    """Without AS, COUNT ?user binds ?user for SELECT; inside WHERE, ?user is still each solution's."""
    text = UC1.replace(WATCHING, WATCHING + " FILTER(?user != <http://example.org/iptv#Bob>)")
    assert tefq.compile(text).run(SPEC10 / "events.tsv").to_pandas()["USER"].tolist() == [1, 1, 2, 1, 3]  # Bob left out


GENRES = """PREFIX : <http://example.org/iptv#>
CONSTRUCT FACT UserFact {?user :watching ?channel .}
(UNION (SINCE ?user :join ?channel) (UNTIL ?user :quit ?channel))
SELECT ?genre AS GENRE, ?user AS USERS
(AGGREGATE ?genre, COUNT ?user
 WHERE { (CURRENT ?user :watching ?channel) . ?channel :genre ?genre }
 GROUP BY ?genre
 EVERY "PT5S"^^xsd:duration)
"""
WARNING = ("q.tef:6:47: warning: predicate <http://example.org/iptv#genre> appears in no input and no background: "
           "this pattern can never match (did you forget --background?)")


def test_a_background_pattern_without_background_is_named_once(tmp_path):
    query = tmp_path / "q.tef"
    query.write_text(GENRES + GENRES[GENRES.index("SELECT"):])  # two queries, one warning
    done = subprocess.run([sys.executable, "-m", "tefq", "run", "q.tef", "--stream", str(SPEC10 / "events.tsv"),
                           "--engine", "oracle"], capture_output=True, text=True, cwd=tmp_path)
    assert done.returncode == 0 and done.stderr.count("warning: predicate") == 1 and WARNING in done.stderr
    background = tmp_path / "bg.nt"
    background.write_text("<http://example.org/iptv#A> <http://example.org/iptv#genre> <http://x/news> .\n")
    done = subprocess.run([sys.executable, "-m", "tefq", "run", "q.tef", "--stream", str(SPEC10 / "events.tsv"),
                           "--background", str(background), "--engine", "oracle"], capture_output=True, text=True,
                          cwd=tmp_path)
    assert done.returncode == 0 and "warning" not in done.stderr and "http://x/news" in done.stdout


def test_spark_reads_the_predicates_of_its_staged_files(tmp_path, capsys):
    """The Spark engine's check (after staging, before the run) reads column p of the staged files."""
    from tefq.io.bad_rows import BadRowLog
    from tefq.io.staging import stage_streams
    from tefq.spark.engine import warn_absent_predicates

    doc = tefq.compile(GENRES, name="q.tef").document()
    staging = stage_streams([str(SPEC10 / "events.tsv")], str(tmp_path), BadRowLog(None))
    warn_absent_predicates(doc, staging.paths)
    assert capsys.readouterr().err.strip() == WARNING
    events = tmp_path / "with-genre.tsv"
    events.write_text((SPEC10 / "events.tsv").read_text() + "1\t<http://x/A>\t<http://example.org/iptv#genre>\t<http://x/g>\n")
    warn_absent_predicates(doc, stage_streams([str(events)], str(tmp_path / "2"), BadRowLog(None)).paths)
    assert capsys.readouterr().err == ""


def run_on(engine: str, streams: list[str], capsys, spark=None, stream_format: str | None = None) -> str:
    """The run's warnings (stderr) on `engine`."""
    from tefq.service import QueryFile, RunRequest, SparkOptions, execute

    capsys.readouterr()
    execute(RunRequest(QueryFile(str(SPEC10 / "uc1.tef")), streams, engine=engine, progress=False,
                       stream_format=stream_format, spark=SparkOptions(session=spark)))
    return capsys.readouterr().err


def test_empty_inputs_are_named_instead_of_every_predicate(tmp_path, capsys):
    """No events at all: every predicate is missing, and "did you forget --background?" would
    point the wrong way; the run names the empty inputs instead (exit 0, no error)."""
    empty, other = tmp_path / "empty.tsv", tmp_path / "header-only.tsv"
    empty.write_text("")
    other.write_text("ts\ts\tp\to\n")
    assert run_on("oracle", [str(empty)], capsys) == f"tefq: warning: {empty} holds no events\n"
    assert run_on("oracle", [str(empty), str(other)], capsys) == \
        f"tefq: warning: {empty} and {other} hold no events\n"
    # one input holds events: the others' emptiness is no reason for the pattern's predicate to be absent
    no_join = tmp_path / "no-join.tsv"
    no_join.write_text("ts\ts\tp\to\n1000\t<http://x/a>\t<http://example.org/iptv#quit>\t<http://x/c>\n")
    err = run_on("oracle", [str(empty), str(no_join)], capsys)
    assert "holds no events" not in err and "warning: predicate <http://example.org/iptv#join>" in err, err


def test_spark_names_empty_staged_inputs_as_the_oracle(tmp_path, capsys):
    """The Spark engine's check counts the staged files' rows (their footers): no Spark needed."""
    from tefq.io.bad_rows import BadRowLog
    from tefq.io.staging import stage_streams
    from tefq.spark.engine import warn_absent_predicates

    empty = tmp_path / "empty.tsv"
    empty.write_text("")
    doc = tefq.compile(UC1, name="q.tef").document()
    staging = stage_streams([str(empty)], str(tmp_path / "w"), BadRowLog(None))
    warn_absent_predicates(doc, staging.paths, ["<stdin>"])
    assert capsys.readouterr().err == "tefq: warning: <stdin> holds no events\n"


@pytest.mark.spark
def test_spark_run_names_an_empty_input_as_the_user_gave_it(tmp_path, capsys, spark):
    """Through the run service: a `--stream-format` input is staged under another name, and the
    warning still names the user's file, on both engines."""
    empty = tmp_path / "empty.txt"
    empty.write_text("")
    for engine in ("oracle", "spark"):
        err = run_on(engine, [str(empty)], capsys, spark=spark, stream_format="tsv")
        assert f"tefq: warning: {empty} holds no events\n" in err and "predicate" not in err, (engine, err)
