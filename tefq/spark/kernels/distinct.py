"""Distinct values by hashing: `np.unique(values, return_inverse=True)`'s answer without sorting
every row (pandas' factorize sorts only the distinct values)."""
from __future__ import annotations

import numpy as np


def distinct(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The sorted distinct values (NaN once, last; 0.0 and -0.0 one value) and each row's index
    among them (int64): 8-16x faster than `np.unique` on a result's 1.5M rows, ~20x on 2.5M
    fact groups of a few hundred values."""
    import pandas as pd  # deferred: loaded where kernels run (workers, a driver reading a sink)

    inv, uniq = pd.factorize(values.reshape(-1), sort=True, use_na_sentinel=False)
    return np.asarray(uniq), inv.astype(np.int64, copy=False)
