"""`joins.TimeRanks`: order-preserving ranks of instants in bands (finite times, open ends near
OPEN and past it, "always" starts near -OPEN) and back, against a sort."""
from __future__ import annotations

import numpy as np
from hypothesis import given, settings, strategies as st

from tefq.spark.kernels.intervals import OPEN
from tefq.spark.kernels.joins import TimeRanks

ANCHORS = [-int(OPEN), -2**40, 0, 1_383_553_847_224, int(OPEN), int(OPEN) + int(OPEN) // 2]
instants = st.builds(lambda a, d: a + d, st.sampled_from(ANCHORS), st.integers(-10**10, 10**10))


@settings(max_examples=300, deadline=None)
@given(st.lists(st.lists(instants, max_size=12), min_size=1, max_size=4))
def test_time_ranks_keep_the_order_and_map_back(parts):
    arrays = [np.array(p, np.int64) for p in parts]
    tr, ranks = TimeRanks.of(*arrays)
    values, got = np.concatenate(arrays), np.concatenate(ranks)
    assert (got >= 0).all() and (got < 2**32).all()
    v, r = values[np.argsort(values, kind="stable")], got[np.argsort(values, kind="stable")]
    assert ((r[1:] > r[:-1]) == (v[1:] > v[:-1])).all() and ((r[1:] == r[:-1]) == (v[1:] == v[:-1])).all()
    assert (tr.times(got) == values).all()
