"""S2R and R2S of the windowed oracle over hand-made streams: one test per report policy, tick,
scope bound and R2S operator (spec §8, SECRET as in papers 001/004)."""
from __future__ import annotations

from tefq.oracle.windowed.engine import WindowEvaluator, relations
from tefq.oracle.windowed.query import OracleQuery
from tefq.oracle.windowed.secret import Semantics
from tefq.oracle.windowed.windows import scopes
from tefq.plan.logical import StreamWindow

EX = "http://ex.org/"


def el(ts: int, s: str, p: str = "p", o: str = "o") -> tuple[int, str, str, str]:
    return (ts, f"<{EX}{s}>", f"<{EX}{p}>", f"<{EX}{o}>")


def spans(ts, rng, step, sem, t0=0):
    return [(s.open, s.close, s.at, s.lo, s.hi) for s in scopes(ts, rng, step, sem, t0)]


def test_window_close_tumbling_half_open():
    ts = [0, 5000, 9999, 10000, 25000]
    got = spans(ts, 10000, 10000, Semantics())
    # [0,10000) holds 0, 5000, 9999; 10000 opens the next window; [10000,20000) and [20000,30000)
    assert got == [(0, 10000, 10000, 0, 3), (10000, 20000, 20000, 3, 4), (20000, 30000, 30000, 4, 5)]


def test_window_close_closed_right_includes_the_close_instant():
    ts = [0, 10000]
    got = spans(ts, 10000, 10000, Semantics(closed_right=True))
    assert got[0][3:] == (0, 2)  # [0, 10000] holds both
    assert got[1][:2] == (10000, 20000) and got[1][3:] == (1, 2)


def test_non_empty_content_drops_empty_windows():
    ts = [1000, 31000]
    assert [s[2] for s in spans(ts, 10000, 10000, Semantics())] == [10000, 20000, 30000, 40000]
    assert [s[2] for s in spans(ts, 10000, 10000, Semantics(non_empty=True))] == [10000, 40000]


def test_partial_first_windows_are_clipped_to_t0():
    ts = [1000, 6000]
    full = spans(ts, 10000, 5000, Semantics())
    partial = spans(ts, 10000, 5000, Semantics(partial_first=True))
    assert full[0][:3] == (0, 10000, 10000)
    assert partial[0][:3] == (0, 5000, 5000)  # the window [-5000, 5000), reported from t0
    assert partial[0][3:] == (0, 1)
    assert partial[1:] == full


def test_elements_before_t0_belong_to_no_window():
    ts = [500, 1500, 2500]
    got = spans(ts, 1000, 1000, Semantics(), t0=1000)
    assert got == [(1000, 2000, 2000, 1, 2), (2000, 3000, 3000, 2, 3)]


def test_content_change_time_vs_tuple_tick():
    ts = [0, 0, 4000, 12000]
    time = spans(ts, 10000, 10000, Semantics(window_close=False, content_change=True, tick="time"))
    tuple_ = spans(ts, 10000, 10000, Semantics(window_close=False, content_change=True, tick="tuple"))
    assert [(s[2], s[3], s[4]) for s in time] == [(0, 0, 2), (4000, 0, 3), (12000, 3, 4)]
    assert [(s[2], s[3], s[4]) for s in tuple_] == [(0, 0, 1), (0, 0, 2), (4000, 0, 3), (12000, 3, 4)]
    assert time[2][0] == 10000  # the active window moved on: its scope opens at 10000


def test_content_change_active_window_is_the_earliest_open_one():
    # sliding 10 s by 5 s: at 12 s both [5,15) and [10,20) hold the element; the active one is [5,15)
    ts = [3000, 7000, 12000]
    got = spans(ts, 10000, 5000, Semantics(window_close=False, content_change=True))
    assert got[-1][0] == 5000 and (got[-1][3], got[-1][4]) == (1, 3)


def test_periodic_reports_the_active_window_content_so_far():
    ts = [1000, 4000, 8000]
    got = spans(ts, 10000, 10000, Semantics(window_close=False, periodic_ms=3000))
    assert [(s[2], s[4] - s[3]) for s in got] == [(3000, 1), (6000, 2), (9000, 3)]


def test_combined_window_close_and_content_change():
    ts = [1000, 10000]
    got = scopes(ts, 10000, 10000, Semantics(window_close=True, content_change=True))
    assert [(s.trigger, s.at) for s in got] == [("change", 1000), ("close", 10000), ("change", 10000),
                                                 ("close", 20000)]


QUERY = OracleQuery("q", f"SELECT ?s WHERE {{ ?s <{EX}p> <{EX}o> }}", (StreamWindow(None, 10000, 10000),))


def _rel(sem: Semantics, elements, t0: int = 0):
    ev = WindowEvaluator(QUERY, elements)
    return [(r.at, sorted(v for b in r.rows for _, v in b)) for r in relations(ev, sem, t0)]


STREAM = [el(1000, "a"), el(12000, "a"), el(13000, "b"), el(25000, "b"), el(45000, "c")]
A, B, C = f"<{EX}a>", f"<{EX}b>", f"<{EX}c>"


def test_rstream_with_and_without_empty_relations():
    assert _rel(Semantics(), STREAM) == [(10000, [A]), (20000, [A, B]), (30000, [B]), (50000, [C])]
    assert _rel(Semantics(empty_relation=True), STREAM) == [
        (10000, [A]), (20000, [A, B]), (30000, [B]), (40000, []), (50000, [C])]


def test_istream_emits_new_mappings_only():
    assert _rel(Semantics(r2s="istream"), STREAM) == [(10000, [A]), (20000, [B]), (50000, [C])]
    assert _rel(Semantics(r2s="istream", empty_relation=True), STREAM) == [
        (10000, [A]), (20000, [B]), (30000, []), (40000, []), (50000, [C])]


def test_dstream_emits_mappings_that_left():
    assert _rel(Semantics(r2s="dstream"), STREAM) == [(30000, [A]), (40000, [B])]
    # non-empty content keeps the empty window 30-40 s from reporting: b leaves only at 50 s
    assert _rel(Semantics(r2s="dstream", non_empty=True), STREAM) == [(30000, [A]), (50000, [B])]


def test_periodic_and_window_close_combined():
    ts = [1000, 12000]
    got = scopes(ts, 10000, 10000, Semantics(window_close=True, periodic_ms=5000))
    # at 10000 [0, 10000) closes and reports; the periodic report shows the new active window
    assert [(s.trigger, s.at, s.size) for s in got] == [
        ("periodic", 5000, 1), ("close", 10000, 1), ("periodic", 10000, 0), ("periodic", 15000, 1),
        ("close", 20000, 1)]
    # with [o, c] scopes the window closing at 10000 is still active then: one report, not two
    got = scopes(ts, 10000, 10000, Semantics(window_close=True, periodic_ms=5000, closed_right=True))
    assert [(s.trigger, s.at) for s in got][:3] == [("periodic", 5000), ("close", 10000), ("periodic", 15000)]


def test_run_rejects_report_policies_it_does_not_run():
    import pytest

    from tefq.errors import TefqError
    from tefq.oracle.windowed import run
    from tefq.plan.logical import Document, WindowedQuery

    q = WindowedQuery("q", False, "select", (StreamWindow(None, 1000, 1000),), (), QUERY.sparql, ("s",))
    d = Document("d.tef", None, (), (), (q,))
    with pytest.raises(TefqError):
        run(d, STREAM, semantics=Semantics(window_close=False, content_change=True))
    out = run(d, STREAM, semantics=Semantics(r2s="istream"))
    assert [t for t, _ in out[0].rows] == [2000, 13000, 14000, 26000, 46000]
