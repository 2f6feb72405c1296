"""`tefq.spark.kernels.windowed.coded_bgp`: the coded join gives pandas.merge's rows in pandas.merge's order."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from rdflib import URIRef, Variable

from tefq.spark.kernels.windowed import coded_bgp
from tefq.spark.kernels.windowed.multiwindow import variable_name


@pytest.mark.parametrize("keys", [1, 2, 3])
def test_the_coded_join_is_merge_row_for_row(keys: int) -> None:
    rng = np.random.default_rng(keys)
    for trial in range(100):
        na, nb, k = (int(x) for x in rng.integers(1, 60, 3))
        a = {f"k{i}": rng.integers(0, k if i else 4, na) for i in range(keys)} | {"a": np.arange(na)}
        b = {f"k{i}": rng.integers(0, k if i else 4, nb) for i in range(keys)} | {"b": np.arange(nb)}
        if trial % 3 == 0:  # right side unique on the keys (pandas' other path)
            unique = pd.DataFrame(b).drop_duplicates([f"k{i}" for i in range(keys)])
            b = {c: unique[c].to_numpy() for c in unique.columns}
        want = pd.DataFrame(a).merge(pd.DataFrame(b), on=[f"k{i}" for i in range(keys)])
        got = coded_bgp.join(a, b)
        assert list(got) == list(want.columns)
        for c in want.columns:
            assert (got[c] == want[c].to_numpy()).all(), (trial, c)


def test_match_and_decoded() -> None:
    triples = {"\x00w": np.array([0, 0, 1]), "s": np.array([5, 6, 5]), "p": np.array([1, 1, 1]),
               "o": np.array([5, 7, 8])}
    x, y, p = Variable("x"), Variable("y"), URIRef("http://a/p")
    code = {"<http://a/p>": 1}.__getitem__
    got = coded_bgp.match(triples, (x, p, y), ["\x00w"], code, variable_name)
    assert {c: v.tolist() for c, v in got.items()} == {"\x00w": [0, 0, 1], "x": [5, 6, 5], "y": [5, 7, 8]}
    same = coded_bgp.match(triples, (x, p, x), ["\x00w"], code, variable_name)
    assert same["x"].tolist() == [5]
    terms = np.array([f"t{i}" for i in range(9)], dtype=object)
    frame = coded_bgp.decoded(got, ["\x00w", "x"], terms, {"\x00w"})
    assert frame.values.tolist() == [[0, "t5"], [0, "t6"], [1, "t5"]]
