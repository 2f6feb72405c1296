"""The vectorised SPARQL 1.1 evaluator over one window's content (no Spark dependency): the
multi-window evaluator (tefq.spark.kernels.windowed.multiwindow) on a batch of one window.

The windowed oracle (`tefq.oracle.windowed.r2r`) evaluates each window with rdflib, row by row;
this evaluates the *same* prepared query (the oracle's `Evaluator` parses it, rewrites
`timestamp()`, orders the BGPs and corrects rdflib where it departs from SPARQL 1.1) with
relational operators over pandas tables. Its answer is the oracle's: the tests compare the two
window by window (tests/spark/kernels/test_sparql_vectorised.py) and on the W3C suite (tests/test_w3c.py).
"""
from __future__ import annotations

from typing import Iterable

import numpy as np
import pandas as pd

from tefq.oracle.windowed.r2r import Answer, Evaluator
from tefq.spark.kernels.windowed.multiwindow import MultiWindowEvaluator
from tefq.spark.kernels.windowed.window_content import COLUMNS, Part, batch


class VectorEvaluator:
    """The oracle's prepared query (`Evaluator`), evaluated with relational operators one window
    at a time. `small`: a window with fewer relevant triples goes to rdflib (the oracle's own
    evaluator): pandas' fixed cost per operator is larger than rdflib's whole evaluation of a
    tiny window."""

    def __init__(self, sparql: str, source: str = "<query>", background: Iterable[tuple[str, str, str]] = (),
                 line: int = 0, small: int = 0) -> None:
        self.multi = MultiWindowEvaluator(sparql, source, background, line)
        self.prepared: Evaluator = self.multi.prepared
        self.small = small
        self.algebra = self.multi.algebra

    @property
    def names(self) -> tuple[str, ...]:
        return self.prepared.names

    @property
    def predicates(self) -> frozenset[str] | None:
        return self.prepared.predicates

    def evaluate(self, content) -> Answer:
        """`content`: (ts, s, p, o) tuples or a DataFrame with those columns."""
        df = content[COLUMNS] if isinstance(content, pd.DataFrame) else \
            pd.DataFrame(list(content), columns=COLUMNS) if len(content) else pd.DataFrame(columns=COLUMNS)
        df = df.astype({"ts": np.int64}).reset_index(drop=True)
        if self.predicates is not None:
            df = df[df["p"].isin(self.predicates)]
        if self.small and len(df) + len(self.multi.background) < self.small:
            return self.prepared.evaluate(list(df.itertuples(index=False, name=None)))
        ts = df["ts"].to_numpy(np.int64)
        first, close = (int(ts.min()), int(ts.max()) + 1) if len(ts) else (0, 1)
        one = batch([Part(df, close - first)], np.array([close]), first, self.predicates,
                    self.prepared.uses_timestamp)
        return self.multi.evaluate(one)[close]


__all__ = ["VectorEvaluator"]
