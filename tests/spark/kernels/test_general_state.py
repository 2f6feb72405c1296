"""The general kernels' state (tefq.spark.kernels.general.state): numpy arrays only, so it
round-trips through its saved bytes (runtime/codec) between any two batches without changing a row; and
bounded by what later ticks can see: open facts and pending elements, plus under WHILE the closed
facts and events an open scope fact overlaps — never the elements read."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from tefq.oracle import prepare
from tefq.oracle.facts import INF, TripleIndex, build_store
from tefq.plan.ticks import tick_range
from tefq.spark.kernels.general.coding import code_elements
from tefq.spark.kernels.general.local import LocalRun, coded_background, run_local
from tests.support.general_shapes import BACKGROUND, EXAMPLES, PROGRAMS, SHAPES, oracle_rows, plan, streams


@pytest.mark.parametrize("shape", ["genre", "UC3 (derived fact, WHILE)", "WHILE with a background pattern",
                                   "mixed numbers: SUM, AVG, MIN, MAX, COUNT DISTINCT"])
def test_state_round_trips_through_its_saved_bytes_between_batches(shape):
    @settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(streams(shape in PROGRAMS), st.lists(st.integers(1, 24), min_size=1, max_size=4), st.integers(1, 3))
    def run(elements, cuts, buckets):
        doc, p = plan(SHAPES[shape], buckets)
        got = run_local(p.compiled(doc), elements, BACKGROUND, cuts=cuts, buckets=p.buckets, restart=True)
        assert got == oracle_rows(doc, elements)
    run()


def long_stream(n: int, users: int = 40, channels: int = 5, seed: int = 1) -> list[tuple[int, str, str, str]]:
    """Users hopping between channels (every quit closes the user's join), with programs airing."""
    rng = np.random.default_rng(seed)
    iri = "http://example.org/iptv#"
    on: dict[int, int] = {}
    out = []
    t = 0
    for i in range(n):
        t += int(rng.integers(0, 4))
        if i % 7 == 0:
            c, p = int(rng.integers(channels)), int(rng.integers(3))
            out.append((t, f"<{iri}c{c}>", f"<{iri}{'start' if i % 14 else 'finish'}>", f"<{iri}p{p}>"))
            continue
        u = int(rng.integers(users))
        if u in on:
            out.append((t, f"<{iri}u{u}>", f"<{iri}quit>", f"<{iri}c{on.pop(u)}>"))
        else:
            on[u] = int(rng.integers(channels))
            out.append((t, f"<{iri}u{u}>", f"<{iri}join>", f"<{iri}c{on[u]}>"))
    return out


def open_at(doc, elements, tick: int) -> int:
    """Fact intervals open at `tick` (started at or before it, ending after it), per the oracle."""
    seen = prepare([e for e in elements if e[0] <= tick])
    store = build_store(doc, seen, TripleIndex(BACKGROUND))
    return sum(1 for t in store.tables.values() for ivs in t.intervals.values() for s, e in ivs if e == INF and s <= tick)


@pytest.mark.parametrize("shape", ["genre", "event pattern", "fact pattern, SUM DURATION", "two facts joined"])
def test_state_holds_open_facts_and_pending_elements_only(shape):
    """Without WHILE, after each batch the state is the facts open at the last tick plus the
    elements after it; it does not grow with the elements read."""
    elements = long_stream(3000)
    doc, p = plan(SHAPES[shape], 1)
    cq = p.compiled(doc)
    for lo, batch, run in in_batches(cq, elements, 250):
        size = run.states[0].size()
        tick = run.done * cq.every
        assert size["closed_facts"] == 0 and size["events"] == 0
        assert size["open_facts"] == open_at(doc, elements[:lo + len(batch)], tick)
        assert size["pending"] <= sum(1 for e in batch if e[0] > tick)
        assert size["terms"] <= 4 * (size["open_facts"] + size["pending"]) + 8


def in_batches(cq, elements, size: int):
    """A one-bucket LocalRun fed `size` elements at a time (in time order), reporting the ticks
    before each batch's last time; yields (position, batch, run) after each batch."""
    run = LocalRun(cq, *coded_background(BACKGROUND))
    run.done = tick_range(elements[0][0], elements[-1][0], 0, cq.every)[0] - 1
    for lo in range(0, len(elements), size):
        batch = elements[lo:lo + size]
        run.ingest(*code_elements(batch, lo))
        run.report_through((batch[-1][0] - 1) // cq.every)
        yield lo, batch, run


def test_state_under_while_keeps_only_what_open_scopes_overlap():
    """UC3: closed attends-facts stay only while a show they overlap is still on air."""
    elements = long_stream(3000)
    doc, p = plan(SHAPES["UC3 (derived fact, WHILE)"], 1)
    cq = p.compiled(doc)
    peak = 0
    for _, _, run in in_batches(cq, elements, 250):
        peak = max(peak, run.states[0].size()["closed_facts"])
    run.report_through(tick_range(elements[0][0], elements[-1][0], 0, cq.every)[1])  # end of input
    assert 0 < peak < len(elements) // 4
    assert run.rows() == oracle_rows(doc, elements)
