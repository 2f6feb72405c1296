"""The Spark engine's kernels against the oracle on generated streams, without Spark (issue 38):
every plan kind (CURRENT aggregates, fact aggregates, the general plan, windowed queries), every
kind of term, tied and extreme timestamps, several streams of several files, one or several
micro-batches, 1-3 buckets. The engine's own parts run as in a bounded direct-ingestion run
(tests/support/local_engine.py); the oracle runs as `tefq run --engine oracle` does. Random examples
(hypothesis prints the failing one, and its reproduction blob); TEFQ_PROPS_SCALE=10 (make
test-props) runs ten times as many."""
from __future__ import annotations

import pytest

from tests.support.differential import check_kind


@pytest.mark.parametrize("kind", ["current", "fact", "general"])
def test_kernels_equal_the_oracle(kind):
    check_kind(kind)
