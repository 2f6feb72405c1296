"""Allen's interval relations with tolerances (spec §11), on integer milliseconds.

`a = [a_s, a_e)` and `b = [b_s, b_e)`; an open fact's end is already `tau` (the caller binds it).
BEFORE/AFTER take an optional gap range `(min, max)`; every equality test of MEETS, METBY, STARTS,
STARTEDBY, FINISHES, FINISHEDBY and EQUALS takes an optional tolerance `tol` (`x = y` reads
`|x - y| <= tol`). The bind step guarantees the number of tolerances and that none is negative.
"""
from __future__ import annotations

from typing import Any, Callable

Times = tuple[int, int, int, int]


def near(x: Any, y: Any, tol: tuple[int, ...]) -> Any:
    return abs(x - y) <= (tol[0] if tol else 0)


def gap_within(gap: Any, tol: tuple[int, ...]) -> Any:
    """BEFORE/AFTER: a positive gap, or one within [min, max]."""
    return (tol[0] <= gap) & (gap <= tol[1]) if tol else gap > 0


# Spec §11's table, written with & so that it serves single values (the oracle) and numpy arrays
# (the Spark general plan's vectorised expressions) alike.
RELATIONS: dict[str, Callable[..., Any]] = {
    "BEFORE": lambda as_, ae, bs, be, t: gap_within(bs - ae, t),
    "AFTER": lambda as_, ae, bs, be, t: gap_within(as_ - be, t),
    "MEETS": lambda as_, ae, bs, be, t: near(ae, bs, t),
    "METBY": lambda as_, ae, bs, be, t: near(be, as_, t),
    "OVERLAPS": lambda as_, ae, bs, be, t: (as_ < bs) & (bs < ae) & (ae < be),
    "OVERLAPPEDBY": lambda as_, ae, bs, be, t: (bs < as_) & (as_ < be) & (be < ae),
    "STARTS": lambda as_, ae, bs, be, t: near(as_, bs, t) & (ae < be),
    "STARTEDBY": lambda as_, ae, bs, be, t: near(as_, bs, t) & (be < ae),
    "DURING": lambda as_, ae, bs, be, t: (bs < as_) & (ae < be),
    "CONTAINS": lambda as_, ae, bs, be, t: (as_ < bs) & (be < ae),
    "FINISHES": lambda as_, ae, bs, be, t: (bs < as_) & near(ae, be, t),
    "FINISHEDBY": lambda as_, ae, bs, be, t: (as_ < bs) & near(ae, be, t),
    "EQUALS": lambda as_, ae, bs, be, t: near(as_, bs, t) & near(ae, be, t),
}


def holds(relation: str, times: Times, tolerances: tuple[int, ...] = ()) -> bool:
    """Does `relation(a, b)` hold for `times = (a_s, a_e, b_s, b_e)` (ms)?"""
    return bool(RELATIONS[relation](*times, tolerances))


__all__ = ["holds", "RELATIONS"]
