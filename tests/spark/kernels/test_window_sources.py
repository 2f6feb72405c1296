"""`window_batches.Source`: a REGISTER STREAM's fed-back pieces are kept apart from the table
until there are `PIECES` of them, and `between` reads the table and the pieces as one stream."""
from __future__ import annotations

import pandas as pd
from hypothesis import given, settings, strategies as st

from tefq.spark.kernels.windowed.window_batches import PIECES, Source, element_table


def piece(ts: int, n: int) -> pd.DataFrame:
    return pd.DataFrame([(ts, f"<s{ts}_{k}>", "<p>", "<o>") for k in range(n)], columns=["ts", "s", "p", "o"])


@settings(max_examples=300, deadline=None)
@given(table=st.lists(st.integers(0, 50), max_size=20), fed=st.lists(st.integers(0, 3), max_size=40),
       ranges=st.lists(st.tuples(st.integers(-5, 200), st.integers(0, 60)), min_size=1, max_size=5))
def test_between_reads_the_table_and_the_pieces_as_one_stream(table, fed, ranges):
    base = element_table([(t, f"<t{i}>", "<p>", "<o>") for i, t in enumerate(sorted(table))])
    source, whole = Source(base), [base]
    t = max(table, default=0)
    for n in fed:  # one window's output a round, at its close (time order, as the rounds append them)
        t += 3
        source.add(piece(t, n))
        whole.append(piece(t, n))
        everything = pd.concat(whole, ignore_index=True)
        for lo, width in ranges:
            got = source.between(lo, lo + width).reset_index(drop=True)
            want = everything[(everything["ts"] >= lo) & (everything["ts"] <= lo + width)].reset_index(drop=True)
            pd.testing.assert_frame_equal(got, want, check_dtype=False)
    assert len(source.pieces) < PIECES


def test_the_pieces_join_the_table_every_PIECES_rounds():
    source = Source(element_table([]))
    for k in range(PIECES):
        source.add(piece(k, 1))
    assert not source.pieces and len(source.table) == PIECES
