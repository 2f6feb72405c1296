"""The Spark simulation operator driven directly (no Spark): micro-batches of any size, several
buckets with heartbeats, end-of-input flush. Its rows must equal TEF's rows with EVERY = window
(the oracle) and its bindings the oracle-side simulation's (`tefq.simulate`), on hypothesis streams."""
from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings, strategies as st

from tefq.oracle import run as oracle_run
from tefq.simulate import run as simulate_run
from tefq.spark.kernels.intervals import Events, Intervals, SINCE, UNTIL
from tefq.spark.kernels.strategies import state_changes
from tefq.spark.operators.simulated import make_simulation_operator
from tests.support import spark_docs as sd
from tests.support.operator_harness import drive as drive_native, streams


def drive(doc, strategy: str, elements, batch_sizes: list[int], buckets: int):
    """The native operator's driver (engine mapper, buckets, heartbeats, flush) with the simulation."""
    return drive_native(doc, elements, batch_sizes, buckets,
                        make_op=lambda plan, settings: make_simulation_operator(plan, strategy, settings))


def test_spec10_counters():
    for strategy, want in (("refresh", 9), ("refresh-group", 6), ("sequence", 8)):
        for doc in (sd.uc1(5000), sd.uc2(5000)):
            rows, m = drive(doc, strategy, sd.worked_example(), [3, 2], 2)
            assert rows == oracle_run(doc, sd.worked_example(), None, 0).results[0].rows
            assert m["intermediate_bindings"] == want, strategy
            assert (m["facts_created"], m["facts_closed"], m["ticks"]) == (6, 2, 3)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(streams(), st.sampled_from([1, 3]), st.sampled_from(["uc1", "uc2"]), st.sampled_from([1000, 2000]),
       st.sampled_from(["refresh", "refresh-group", "sequence"]))
def test_operator_agrees_with_tef_and_oracle_simulation(stream, buckets, uc, window, strategy):
    elements, sizes = stream
    doc = sd.uc1(window) if uc == "uc1" else sd.uc2(window)
    rows, m = drive(doc, strategy, elements, sizes, buckets)
    assert rows == oracle_run(doc, elements, None, 0).results[0].rows  # TEF with EVERY = window
    sim = simulate_run(doc, elements, strategy, window)
    assert m["intermediate_bindings"] == sim.metrics.intermediate_bindings
    for k in ("facts_created", "facts_closed", "unmatched_until", "ticks", "rows_out"):
        assert m.get(k, 0) == getattr(sim.metrics, k), k


def test_state_changes_quit_and_rejoin_at_one_ms_are_two_events():
    base = Intervals(np.array([7]), np.array([100]), np.array([2**62]), np.zeros((1, 0), np.int64))
    # fact 7 (open since 100): quit and rejoin at 500, quit at 600; fact 9: unmatched quit, join, join again
    ev = Events(np.array([UNTIL, SINCE, UNTIL, UNTIL, SINCE, SINCE]), np.array([500, 500, 600, 400, 450, 460]),
                np.arange(6), np.array([7, 7, 7, 9, 9, 9]), np.zeros((6, 0), np.int64))
    c = state_changes(base, ev)
    assert c.fid.tolist() == [7, 7, 7, 9]
    assert c.opens.tolist() == [False, True, False, True]
    assert c.start.tolist() == [100, 100, 100, 450]  # the rejoin at the quit's ms continues [100, ...)
