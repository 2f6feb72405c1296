"""bench/live_windowed.py's correctness figures (issue 40), as YABench reports them: per window,
precision (the live run's rows that are the oracle's) and recall (the oracle's rows it has)."""
from __future__ import annotations

from bench.live_windowed import window_agreement


def test_a_missing_row_lowers_recall_and_a_repeat_or_a_stray_row_lowers_precision():
    want = {1000: ["1000,a,1\n", "1000,b,2\n"], 2000: ["2000,a,3\n"], 3000: ["3000,a,1\n"], 9000: ["9000,z,1\n"]}
    got = {1000: ["1000,a,1\n"],  # b missing: recall 1/2
           2000: ["2000,a,3\n", "2000,a,3\n"],  # reported twice: precision 1/2
           3000: ["3000,a,1\n", "3000,x,9\n"]}  # a stray row: precision 1/2
    r = window_agreement(got, want)
    assert r["windows_compared"] == 3  # up to the live run's last window: 9000 is not due yet
    assert r["windows_equal"] == 0
    assert (r["precision_min"], r["recall_min"]) == (0.5, 0.5)
    assert r["precision_mean"] == (1 + 0.5 + 0.5) / 3 and r["recall_mean"] == (0.5 + 1 + 1) / 3


def test_a_window_the_live_run_skipped_counts_with_recall_zero():
    want = {1000: ["1000,a,1\n"], 2000: ["2000,a,1\n"], 3000: ["3000,a,1\n"]}
    r = window_agreement({1000: ["1000,a,1\n"], 3000: ["3000,a,1\n"]}, want)
    assert r["windows_compared"] == 3 and r["windows_equal"] == 2 and r["recall_min"] == 0.0
