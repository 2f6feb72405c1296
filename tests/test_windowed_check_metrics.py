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
