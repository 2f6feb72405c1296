"""Allen's interval relations with tolerances (spec §11), on integer milliseconds.

`a = [a_s, a_e)` and `b = [b_s, b_e)`; an open fact's end is already `tau` (the caller binds it).
BEFORE/AFTER take an optional gap range `(min, max)`; every equality test of MEETS, METBY, STARTS,
STARTEDBY, FINISHES, FINISHEDBY and EQUALS takes an optional tolerance `tol` (`x = y` reads
`|x - y| <= tol`). The bind step guarantees the number of tolerances and that none is negative.
"""
from __future__ import annotations

from typing import Callable

Times = tuple[int, int, int, int]


def _near(x: int, y: int, tol: tuple[int, ...]) -> bool:
    return abs(x - y) <= (tol[0] if tol else 0)


def _gap(gap: int, tol: tuple[int, ...]) -> bool:
    """BEFORE/AFTER: a positive gap, or one within [min, max]."""
    return tol[0] <= gap <= tol[1] if tol else gap > 0


_RELATIONS: dict[str, Callable[[int, int, int, int, tuple[int, ...]], bool]] = {
    "BEFORE": lambda as_, ae, bs, be, t: _gap(bs - ae, t),
    "AFTER": lambda as_, ae, bs, be, t: _gap(as_ - be, t),
    "MEETS": lambda as_, ae, bs, be, t: _near(ae, bs, t),
    "METBY": lambda as_, ae, bs, be, t: _near(be, as_, t),
    "OVERLAPS": lambda as_, ae, bs, be, t: as_ < bs < ae < be,
    "OVERLAPPEDBY": lambda as_, ae, bs, be, t: bs < as_ < be < ae,
    "STARTS": lambda as_, ae, bs, be, t: _near(as_, bs, t) and ae < be,
    "STARTEDBY": lambda as_, ae, bs, be, t: _near(as_, bs, t) and be < ae,
    "DURING": lambda as_, ae, bs, be, t: bs < as_ and ae < be,
    "CONTAINS": lambda as_, ae, bs, be, t: as_ < bs and be < ae,
    "FINISHES": lambda as_, ae, bs, be, t: bs < as_ and _near(ae, be, t),
    "FINISHEDBY": lambda as_, ae, bs, be, t: as_ < bs and _near(ae, be, t),
    "EQUALS": lambda as_, ae, bs, be, t: _near(as_, bs, t) and _near(ae, be, t),
}


def holds(relation: str, times: Times, tolerances: tuple[int, ...] = ()) -> bool:
    """Does `relation(a, b)` hold for `times = (a_s, a_e, b_s, b_e)` (ms)?"""
    return _RELATIONS[relation](*times, tolerances)


__all__ = ["holds"]
