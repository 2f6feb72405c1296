"""Windowed queries (spec §8) on the Spark engine's kernels against the oracle, without Spark, on
generated streams (issue 38): as tests/spark/test_differential.py does for the other plan kinds,
in a module of its own so that it runs beside that one (the windowed oracle, rdflib, is the slow
part)."""
from __future__ import annotations

from tests.support.differential import check_kind


def test_windowed_kernels_equal_the_oracle():
    check_kind("windowed")
