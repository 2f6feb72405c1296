"""The Spark engine's kernels against the oracle on generated streams, without Spark (issue 38):
every plan kind (CURRENT aggregates, fact aggregates, the general plan, windowed queries), every
kind of term, tied and extreme timestamps, several streams of several files, one or several
micro-batches, 1-3 buckets. The engine's own parts run as in a bounded direct-ingestion run
(tests/support/local_engine.py); the oracle runs as `tefq run --engine oracle` does. Random examples
(hypothesis prints the failing one, and its reproduction blob); TEFQ_PROPS_SCALE=10 (make
test-props) runs ten times as many."""
from __future__ import annotations

import tempfile

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import tefq
from tefq.spark.planning import plan_document
from tests.support import term_streams as ts
from tests.support.differential import EXAMPLES, KINDS, OBJECTS, document_text
from tests.support.local_engine import run_local

PROPS = settings(max_examples=EXAMPLES, deadline=None, derandomize=False, print_blob=True,
                 suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@st.composite
def cases(draw, kind: str):
    name = draw(st.sampled_from(sorted(KINDS[kind][1])))
    t = draw(ts.times())
    els = draw(ts.elements(t, KINDS[kind][1][name][1], objects=OBJECTS[kind]))
    files_per_trigger = draw(st.sampled_from([None, 1]))
    streams = draw(ts.split_streams(els, in_time_order=files_per_trigger is not None))
    return name, t.every, streams, files_per_trigger, draw(st.integers(1, 3))


def check(kind: str, name: str, every: int, streams: list, files_per_trigger, buckets: int) -> None:
    query = tefq.compile(document_text(kind, name, every))
    doc = query.document()
    assert all(isinstance(p, KINDS[kind][0]) for p in plan_document(doc, buckets)), name
    with tempfile.TemporaryDirectory(prefix="tefq-diff-") as tmp:
        paths = ts.write_streams(tmp, streams)
        want = query.run(paths, engine="oracle").results
        got, _ = run_local(doc, paths, buckets=buckets, files_per_trigger=files_per_trigger)
    assert [r.sorted_rows() for r in got] == [r.sorted_rows() for r in want]


@pytest.mark.parametrize("kind", list(KINDS))
def test_kernels_equal_the_oracle(kind):
    @PROPS
    @given(cases(kind))
    def run(case):
        check(kind, *case)
    run()
