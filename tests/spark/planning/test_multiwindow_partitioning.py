"""The planner's facts for the Spark windowed operator, Spark-free: which queries split by a join
key (tefq.spark.kernels.windowed.partitioning), and the incremental run's state between micro-batches (the
join-order memory survives being saved and restored (runtime/codec), as it does in Spark's state
store; only open windows' elements stay)."""
from __future__ import annotations


import pandas as pd
import pytest

from tefq.spark.kernels.windowed.multiwindow import MultiWindowEvaluator
from tefq.spark.kernels.windowed.multiwindow_incremental import FrameState, IncrementalBatchedRun, due_closes
from tefq.spark.kernels.windowed.partitioning import join_key
from tefq.spark.runtime.codec import decode, encode
from tests.support.multiwindow_cases import doc, ex, query


def key_of(sparql: str, registers: bool = False):
    d = doc(query(sparql, 6000, 2000, registers=registers, form="construct" if registers else "select"))
    run = IncrementalBatchedRun(d)
    return join_key(run.queries[0], MultiWindowEvaluator(run.queries[0].sparql).algebra)


@pytest.mark.parametrize("sparql, variable", [
    ("SELECT ?c (COUNT(?u) AS ?n) WHERE { ?u :join ?c } GROUP BY ?c", "c"),
    ("SELECT ?u ?c WHERE { ?u :join ?c OPTIONAL { ?u :quit ?c } }", "c"),
    ("SELECT ?u (COUNT(*) AS ?n) WHERE { { ?u :join ?c } UNION { ?u :quit ?c } } GROUP BY ?u", "u"),
    ("SELECT DISTINCT ?u WHERE { ?u :join ?c MINUS { ?u :rate ?c } }", "u"),
    ("SELECT DISTINCT ?u WHERE { ?u :join ?c . ?c :joinedBy ?u }", "u"),  # per predicate one position
])
def test_join_keys(sparql: str, variable: str) -> None:
    key = key_of(sparql)
    assert key is not None and key.variable == variable


@pytest.mark.parametrize("sparql", [
    "SELECT (COUNT(?u) AS ?n) WHERE { ?u :join ?c }",  # the empty group reports in every window
    "SELECT ?g (COUNT(?u) AS ?n) WHERE { ?u :join ?c . ?c :genre ?g } GROUP BY ?g",  # GROUP BY through a chain
    "SELECT ?u ?c WHERE { ?u :join ?c } ORDER BY ?u LIMIT 3",  # LIMIT sees rows across keys
    "SELECT ?u WHERE { ?u ?p ?c }",  # a variable predicate: no place to find the key
    "SELECT ?u ?c WHERE { ?u :knows ?c . ?c :knows ?u }",  # one predicate, the key in two positions
])
def test_no_join_key(sparql: str) -> None:
    assert key_of(sparql) is None


def test_feedback_has_no_join_key() -> None:
    assert key_of("CONSTRUCT { ?u :seen ?c } WHERE { ?u :join ?c }", registers=True) is None


def test_due_closes_are_close_instants_after_done() -> None:
    from tefq.oracle.windowed.windows import close_instants

    for first, last, done, upto in [(0, 50_000, None, None), (1234, 99_999, 30_000, 80_000), (5, 7, 6000, None)]:
        want = [c for c in close_instants(first, last, 6000, 2000, 0)
                if c > 0 and (done is None or c > done) and (upto is None or c <= upto)]
        assert due_closes(first, last, 6000, 2000, 0, done, upto).tolist() == want


def test_state_keeps_open_windows_and_join_order_memory_across_saves() -> None:
    d = doc(query("SELECT ?u ?v WHERE { ?u :join ?c . ?u :rate ?v . ?c :genre ?g }", 6000, 2000))
    run = IncrementalBatchedRun(d, small=0)
    st = run.new_state()
    rows = [(t, ex(f"u{t % 7}"), ex("join"), ex("A")) for t in range(0, 40_000, 300)]
    rows += [(t, ex(f"u{t % 7}"), ex("rate"), ex("x")) for t in range(0, 40_000, 700)]
    table = pd.DataFrame(sorted(rows), columns=["ts", "s", "p", "o"])
    for lo, hi in [(0, 20_000), (20_000, 40_000)]:
        part = table[(table["ts"] >= lo) & (table["ts"] < hi)]
        run.add(st, part, lo, hi - 1, len(part))
        run.advance(st, st.last)
        assert int(st.external["ts"].min()) >= st.done - 6000  # only windows not yet closed
        first = run.join_orders(st)
        assert first and all(r["query"] == "Q" for r in first)
        st = decode(encode(st, FrameState), FrameState)  # Spark's state store
    assert st.orders[0].batch >= 2 and st.orders[0].previous  # the batch before's cardinalities survived
