"""`tefq oracle check` scoring (issue 15): an empty answer's precision is undefined, not 1.0, and
plotting without matplotlib is a clear exit 2."""
from __future__ import annotations

import sys

from tefq.cli import run_command
from tefq.oracle.windowed.answers import Relation
from tefq.oracle.windowed.check import f1, window_metrics


def rel(at: int, *rows: str) -> Relation:
    return Relation(at, frozenset(rows), (at - 10, at))


def test_an_empty_answer_has_no_precision_and_scores_zero():
    oracle = [rel(10, "a"), rel(20), rel(30, "b")]
    actual = [rel(10), rel(20), rel(30, "b", "c")]
    reports, _ = window_metrics(oracle, actual)
    assert [(w.precision, w.recall) for w in reports] == [(None, 0.0), (None, None), (0.5, 1.0)]
    assert [f1(w.precision, w.recall) for w in reports] == [0.0, 1.0, 2 * 0.5 / 1.5]


def test_an_engine_that_answers_nothing_does_not_get_precision_one():
    reports, _ = window_metrics([rel(10, "a"), rel(20, "b")], [rel(10), rel(20)])
    assert all(w.precision is None and w.recall == 0.0 for w in reports)


def test_plot_without_matplotlib_says_how_to_install_it(capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # `import matplotlib` raises ImportError
    code = run_command(["oracle", "check", "--query", "q.rspql", "--stream", "s.trig", "--answers", "a.json",
                        "--system", "default", "--plot", "out.png"])
    err = capsys.readouterr().err
    assert code == 2 and "pip install 'tefq[plot]'" in err and err.startswith("--plot: error:")


def test_tefq_json_and_jsonl_answers_read_as_the_same_relations(tmp_path):
    from tefq.io.result_writers import results_text
    from tefq.oracle.windowed.answers import read_answers
    from tefq.results import QueryResult

    i = "<http://www.w3.org/2001/XMLSchema#integer>"
    result = QueryResult("q", ("c", "n"), [(10_000, ("<http://e/a>", f'"2"^^{i}')), (10_000, ("<http://e/b>", f'"1"^^{i}')),
                                           (20_000, ("<http://e/a>", f'"3"^^{i}'))])
    read = {}
    for fmt in ("json", "jsonl"):
        (tmp_path / f"a.{fmt}").write_text(results_text([result], fmt))
        read[fmt] = read_answers(tmp_path / f"a.{fmt}")
    assert [r.at for r in read["json"]] == [10_000, 20_000]
    assert [(r.at, r.rows) for r in read["json"]] == [(r.at, r.rows) for r in read["jsonl"]]
