"""SUM and AVG per cell exactly as the oracle computes them (`tefq.semantics.expressions.exact_sum`): a cell
of integers sums to an integer, with a decimal to an exact decimal, with a double to the correctly
rounded sum of every value as a double (`math.fsum`); AVG divides that by the count with the
oracle's arithmetic. A group whose values are all non-numbers sums to the double 0.

`ExactTotal` carries one cell's exact sums so that partial sums of several buckets add up exactly
(the driver's merge). The vectorised paths give the same numbers without it: doubles as integer
limbs (`tefq.spark.kernels.exact`, durations of whole milliseconds and any other double the limbs
hold) and small integers as int64 difference arrays.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from decimal import Decimal
from fractions import Fraction
from typing import Any, Iterable

import numpy as np

from tefq.semantics.expressions import EXACT, arith, round_to_double, to_double
from tefq.spark.kernels.exact import SCALE, limbs, range_sums, rounded
from tefq.spark.kernels.general.expressions import Values

_NUMBERS = (int, Decimal, float)
SMALL_INT = 2**40  # |integers| below this sum exactly in int64 over < 2^22 contributions per cell


@dataclass
class ExactTotal:
    """One cell's numeric values, summed exactly three ways (as integers, as decimals, as doubles)."""

    n: int = 0
    n_float: int = 0
    n_decimal: int = 0
    ints: int = 0
    decimals: Decimal = field(default_factory=lambda: Decimal(0))
    doubles: Fraction = field(default_factory=Fraction)
    inf: tuple[int, int, int] = (0, 0, 0)  # +inf, -inf, NaN doubles (no exact sum)

    @staticmethod
    def of(values: Iterable[Any]) -> "ExactTotal":
        t = ExactTotal()
        for v in values:
            t.add_value(v)
        return t

    def add_value(self, v: Any) -> None:
        if type(v) not in _NUMBERS:  # bool, strings, dateTimes...: skipped (an error, spec §4)
            return
        self.n += 1
        if type(v) is float:
            self.n_float += 1
        elif type(v) is Decimal:
            self.n_decimal += 1
            self.decimals = EXACT.add(self.decimals, v)
        else:
            self.ints += v
            self.decimals = EXACT.add(self.decimals, Decimal(v))
        self.add_double(to_double(v))  # the sum were any value a double: each promoted on its own

    def add_double(self, x: float) -> None:
        if math.isfinite(x):
            self.doubles += Fraction(x)
            return
        p, m, nan = self.inf
        self.inf = (p + (x > 0), m + (x < 0), nan + (x != x))

    def __add__(self, o: "ExactTotal") -> "ExactTotal":
        return ExactTotal(self.n + o.n, self.n_float + o.n_float, self.n_decimal + o.n_decimal, self.ints + o.ints,
                          EXACT.add(self.decimals, o.decimals), self.doubles + o.doubles,
                          tuple(a + b for a, b in zip(self.inf, o.inf)))  # type: ignore[arg-type]

    def total(self) -> Any:
        """The SUM, as `exact_sum` gives it."""
        if self.n == 0:
            return 0.0  # math.fsum([]): the oracle's sum of no numbers
        if self.n_float:
            p, m, nan = self.inf
            if nan or (p and m):
                return math.nan
            return math.inf if p else -math.inf if m else round_to_double(self.doubles)
        return self.decimals if self.n_decimal else self.ints

    def average(self) -> Any:
        """The AVG (None: no number, no value)."""
        return None if self.n == 0 else arith("/", self.total(), self.n)


def numeric_kinds(v: Values) -> np.ndarray:
    """Per value: 0 integer, 1 decimal, 2 double, -1 not a number (skipped)."""
    if v.kind == "int":
        return np.where(v.ok, 0, -1)
    if v.kind == "double":
        return np.where(v.ok, 2, -1)
    if v.kind != "object":
        return np.full(len(v), -1)
    table = {int: 0, Decimal: 1, float: 2}
    return np.array([table.get(type(x), -1) if ok else -1 for x, ok in zip(v.data.tolist(), v.ok.tolist())],
                    dtype=np.int64)


def double_limbs(v: Values, kinds: np.ndarray) -> np.ndarray | None:
    """The exact limbs of every number as a double, or None when some value is outside what the
    limbs hold (negative, not finite, or finer than 2^-62)."""
    x = np.array([float(a) for a in v.data[kinds >= 0].tolist()]) if v.kind == "object" else \
        v.data[kinds >= 0].astype(np.float64)
    if len(x) and (not np.isfinite(x).all() or (x < 0).any()):
        return None
    try:
        return limbs(x)  # exact whenever it does not raise
    except ValueError:
        return None


def int_range_sums(cells_lo: np.ndarray, cells_hi: np.ndarray, x: np.ndarray, at: np.ndarray,
                   size: int | None = None) -> np.ndarray:
    return range_sums(cells_lo, cells_hi, x.astype(np.int64).reshape(1, -1), at, size)[0]


def totals_from_limbs(sums: np.ndarray, n: np.ndarray) -> list[ExactTotal]:
    """Cells whose numbers are all doubles: their exact totals from limb sums."""
    out = []
    for a, b, c, k in zip(sums[0].tolist(), sums[1].tolist(), sums[2].tolist(), n.tolist()):
        out.append(ExactTotal(k, k, 0, 0, Decimal(0), Fraction(a + (b << 32) + (c << 64), 1 << SCALE)))
    return out


def totals_from_ints(sums: np.ndarray, n: np.ndarray) -> list[ExactTotal]:
    """Cells whose numbers are all small integers (|v| < 2^40: each is its own double)."""
    return [ExactTotal(k, 0, 0, s, Decimal(s), Fraction(s)) for s, k in zip(sums.tolist(), n.tolist())]


@dataclass
class CellSums:
    """Per reported cell: how many numbers, and their exact sum in one of three forms — limb sums
    of doubles (3, cells), int64 sums of small integers, or ExactTotals. Also a bucket's partial
    SUM/AVG column: arrays, cheap to save (runtime/codec), concatenate and add per group on the driver."""

    n: np.ndarray
    limbs: np.ndarray | None = None
    ints: np.ndarray | None = None
    totals: list[ExactTotal] | None = None

    def __len__(self) -> int:
        return len(self.n)

    @property
    def form(self) -> str:
        return "limbs" if self.limbs is not None else "ints" if self.ints is not None else "totals"

    def take(self, idx: np.ndarray) -> "CellSums":
        return CellSums(self.n[idx], None if self.limbs is None else self.limbs[:, idx],
                        None if self.ints is None else self.ints[idx],
                        None if self.totals is None else _objects(self.totals)[idx].tolist())

    def in_form(self, form: str) -> "CellSums":
        """The same sums in `form`: cells without numbers are zero in every form; anything else
        goes to ExactTotals (the only form every other one converts to)."""
        if form == self.form:
            return self
        if form == "limbs" and not self.n.any():
            return CellSums(self.n, limbs=np.zeros((3, len(self)), np.int64))
        if form == "ints" and not self.n.any():
            return CellSums(self.n, ints=np.zeros(len(self), np.int64))
        return CellSums(self.n, totals=self.exact())

    @staticmethod
    def concat(parts: list["CellSums"]) -> "CellSums":
        """One column of the parts' rows, in the form they share (ExactTotals when they differ)."""
        forms = {p.form for p in parts if p.n.any()}
        form = forms.pop() if len(forms) == 1 else "totals" if forms else parts[0].form
        parts = [p.in_form(form) for p in parts]
        n = np.concatenate([p.n for p in parts])
        if form == "limbs":
            return CellSums(n, limbs=np.concatenate([p.limbs for p in parts], axis=1))
        if form == "ints":
            return CellSums(n, ints=np.concatenate([p.ints for p in parts]))
        return CellSums(n, totals=[t for p in parts for t in p.exact()])

    def added(self, order: np.ndarray, starts: np.ndarray) -> "CellSums":
        """Per group of rows `order[starts[i]:starts[i + 1]]`, the sum of its rows' sums (the
        driver's merge of the buckets' partials): limbs and integers by numpy, else ExactTotals."""
        n = np.add.reduceat(self.n[order], starts)
        if self.limbs is not None:
            return CellSums(n, limbs=np.add.reduceat(self.limbs[:, order], starts, axis=1))
        widest = int(np.diff(np.append(starts, len(order))).max(initial=0))
        if self.ints is not None and int(np.abs(self.ints).max(initial=0)) * widest < 2**63:
            return CellSums(n, ints=np.add.reduceat(self.ints[order], starts))
        totals = _objects(self.exact())[order].tolist()
        bounds = np.append(starts, len(order)).tolist()
        return CellSums(n, totals=[sum(totals[lo:hi], ExactTotal()) for lo, hi in zip(bounds[:-1], bounds[1:])])

    def exact(self) -> list[ExactTotal]:
        if self.limbs is not None:
            return totals_from_limbs(self.limbs, self.n)
        if self.ints is not None:
            return totals_from_ints(self.ints, self.n)
        return self.totals or []

    def final(self, func: str) -> Values:
        """SUM or AVG as the oracle gives them (a cell without numbers: SUM 0.0, AVG unbound)."""
        n, has = self.n, self.n > 0
        if self.limbs is not None:
            total = np.where(has, rounded(self.limbs), 0.0)
            if func == "SUM":
                return Values("double", total, np.ones(len(n), bool))
            return Values("double", np.where(has, total / np.maximum(n, 1), 0.0), has)
        if self.ints is not None and func == "SUM" and has.all():
            return Values("int", self.ints, np.ones(len(n), bool))
        vals = [t.total() if func == "SUM" else t.average() for t in self.exact()]
        return Values("object", _objects(vals), np.array([x is not None for x in vals], dtype=bool))


def _objects(items: list) -> np.ndarray:
    out = np.empty(len(items), dtype=object)
    out[:] = items
    return out
