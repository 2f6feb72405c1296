"""The general plan's mapper and operator without Spark (issue 27 phase 2): the mapper routes each
element to the buckets that must see it (the genre query: split by user, background broadcast), the
operators of both buckets run micro-batch by micro-batch with their state saved in between (the
evaluator's arrays, runtime/codec), and the driver's collector merges their partial rows into
the oracle's rows."""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import pyarrow as pa
import pytest

from tefq.spark.kernels.general.collector import GeneralCollector
from tefq.spark.kernels.general.state import GeneralState
from tefq.spark.operators.general import GeneralBucketState, make_general_operator
from tefq.spark.planning.general import GeneralPlan
from tefq.spark.protocol import ELEMENT, HEARTBEAT
from tefq.spark.runtime.codec import decode
from tefq.spark.runtime.mappers import make_mapper
from tefq.spark.runtime.sources import FLUSH_TERM
from tefq.spark.shapes import collector_of, plan_document
from tefq.vocabulary import RunSettings
from tests.support.general_shapes import BACKGROUND, SHAPES, document, iri, oracle_rows
from tests.support.operator_harness import FakeState, element_rows

J, Q = iri("join"), iri("quit")
BATCHES = [[(1, iri("u0"), J, iri("c0")), (3, iri("u1"), J, iri("c1")), (10, iri("u2"), J, iri("c2")),
            (10, iri("u3"), iri("other"), iri("c2"))],
           [(12, iri("u0"), Q, iri("c0")), (20, iri("u3"), J, iri("c0")), (20, iri("u1"), Q, iri("c1"))],
           [(31, iri("u1"), J, iri("c2")), (40, iri("u2"), Q, iri("c2"))]]


def genre_plan() -> tuple[object, GeneralPlan]:
    doc = document(SHAPES["genre"])
    (plan,) = plan_document(doc, 2)
    assert isinstance(plan, GeneralPlan) and plan.split.var == "user" and plan.split.merge
    return doc, replace(plan, background=tuple(BACKGROUND))


def mapped(plan, batch: list, flush: bool):
    rows = batch + ([(0, FLUSH_TERM, FLUSH_TERM, FLUSH_TERM)] if flush else [])
    return pa.Table.from_batches(list(make_mapper(plan, None)(iter([element_rows(rows)]), 0))).to_pandas()


def test_the_mapper_routes_each_user_to_its_bucket_and_drops_what_nothing_matches():
    _, plan = genre_plan()
    out = mapped(plan, BATCHES[0], False)
    data = out[out["k"] == ELEMENT]
    assert len(data) == 3 and iri("other") not in data["p"].tolist()  # no clause matches :other
    assert data["n"].tolist() == [1, 1, 1]  # each element in one bucket: its first copy
    from tefq.spark.kernels.general.coding import bucket_of, encode

    want = bucket_of(encode(data["s"].tolist()), 2).tolist()
    assert data["b"].tolist() == want
    beats = out[out["k"] == HEARTBEAT]
    assert beats["b"].tolist() == [0, 1] and beats["f"].tolist() == [4, 4]  # every element counted, once per bucket


@pytest.mark.parametrize("restart", [False, True])
def test_two_buckets_over_micro_batches_give_the_oracles_rows(restart):
    doc, plan = genre_plan()
    op = make_general_operator(plan, RunSettings(0, 0))
    states = {0: FakeState(), 1: FakeState()}
    col = collector_of(plan)
    assert isinstance(col, GeneralCollector)
    for i, batch in enumerate(BATCHES):
        out = mapped(plan, batch, i == len(BATCHES) - 1)
        for b in (0, 1):
            mine = out[out["b"] == b]
            for kind, tick, payload in next(op((b,), iter([mine]), states[b])).itertuples(index=False):
                col.add(kind, tick, payload)
            if restart:  # as a new worker after a restart: the state only as its saved bytes
                states[b].get = (bytes(states[b].get[0]),)
    assert col.results()[0].rows == oracle_rows(doc, [e for b in BATCHES for e in b])
    metrics = col.run_metrics()
    assert metrics["events_in"] == 9 and metrics["facts_created"] == 5 and metrics["facts_closed"] == 3


def test_the_saved_state_holds_arrays_not_python_objects():
    _, plan = genre_plan()
    op = make_general_operator(plan, RunSettings(0, 0))
    state = FakeState()
    next(op((0,), iter([mapped(plan, BATCHES[0], False)]), state))
    st = decode(state.get[0], GeneralBucketState)
    assert isinstance(st.general, GeneralState) and st.general.dictionary.codes.dtype == np.int64
    assert st.general.pending.spo.dtype == np.int64 and st.general.dictionary.terms.dtype == object
