"""The `csparql-query` approach of `tefq compare`: the use-case written as C-SPARQL queries
(`usecases/ucN_csparql.rspql`), run by the windowed oracle (`tefq.oracle.windowed`, spec §8)
with every `RANGE` replaced by the window size. Its state lives only in REGISTER STREAM feedback,
so its `intermediate_bindings` are the feedback triples.

Its rows are checked against TEF's with the documented lag (docs/baselines.md): the result query
(the document's last windowed query; a CONSTRUCT's triples count as rows `(subject, object)`)
reports at close `c` the state TEF reports at `c - w`, so TEF's last tick is never reported; and
an event exactly on a window border falls in the next `[o, c)` window where TEF's `(tau - w, tau]`
keeps it in the earlier one, so the rows of that (tick, first cell) are not compared.
"""
from __future__ import annotations

import math
import os
import re
import time
from dataclasses import dataclass

from tefq.analysis import bind_text, read_query_file
from tefq.errors import TefqError
from tefq.oracle.windowed import run as windowed_run
from tefq.results import Row
from tefq.simulate.usecases import usecase_path
from tefq.vocabulary import Element

_RANGE = re.compile(r"RANGE\s+[^\s\]]+")  # C-SPARQL `RANGE 10s TUMBLING]`, RSP-QL `RANGE PT10S]`


def csparql_path(usecase: str) -> str:
    tef = usecase_path(usecase)
    path = os.path.join(os.path.dirname(tef), f"{usecase}_csparql.rspql")
    if not os.path.isfile(path):
        raise TefqError(f"no C-SPARQL version of {usecase}: {path} is missing (csparql-query runs for uc1 and uc2)",
                        file="--approaches")
    return path


def with_range(text: str, window_ms: int) -> str:
    """The queries with every window's RANGE set to `window_ms` (tumbling windows keep TUMBLING)."""
    return _RANGE.sub(f"RANGE {window_ms}ms", text)


@dataclass
class CsparqlRun:
    rows: list[Row]  # the result query's rows, ticks moved back by one window (TEF's ticks)
    feedback_triples: int
    ticks: int
    wall: float


def run_csparql(path: str, events: list[Element], window_ms: int, t0: int = 0) -> CsparqlRun:
    doc = bind_text(with_range(read_query_file(path), window_ms), path)
    started = time.perf_counter()
    out = windowed_run(doc, events, t0=t0)
    wall = time.perf_counter() - started
    if not out:
        raise TefqError("the C-SPARQL document has no windowed query", path)
    result = out[-1]
    construct = tuple(result.columns) == ("s", "p", "o")
    rows = sorted((c - window_ms, (cells[0], cells[2]) if construct else tuple(cells)) for c, cells in result.rows)
    return CsparqlRun(rows, out.feedback_triples, out.ticks, wall)


def border_keys(events: list[Element], tef_rows: list[Row], window_ms: int, t0: int) -> set[tuple[int, str]]:
    """(tick, first cell) of rows an event exactly on a window border may change."""
    border = {e[0] for e in events if (e[0] - t0) % window_ms == 0}
    return {(t, cells[0]) for t, cells in tef_rows if t in border}


def check(rows: list[Row], tef_rows: list[Row], events: list[Element], window_ms: int, t0: int) -> tuple[bool, str]:
    """Do the lagged rows equal TEF's (before its last tick, away from border events)? Numbers compare
    by value (the queries compute in xsd:decimal/double, TEF in doubles summed exactly)."""
    if not tef_rows:
        return (not rows), ("" if not rows else f"{len(rows)} rows where TEF has none")
    last = max(t for t, _ in tef_rows)
    skip = border_keys(events, tef_rows, window_ms, t0)
    want = [r for r in tef_rows if r[0] < last and (r[0], r[1][0]) not in skip]
    got = [r for r in rows if (r[0], r[1][0]) not in skip]
    bad = _differences(got, want)
    note = f"lag one window; {len(skip)} (tick, group) pairs with an event on a window border not compared"
    if bad:
        return False, f"{bad} rows differ from TEF's ({note})"
    return True, note


def _differences(got: list[Row], want: list[Row]) -> int:
    gi = {(t, c[0]): c for t, c in got}
    wi = {(t, c[0]): c for t, c in want}
    bad = sum(1 for k in gi.keys() ^ wi.keys())
    for k in gi.keys() & wi.keys():
        if len(gi[k]) != len(wi[k]) or not all(_same(a, b) for a, b in zip(gi[k], wi[k])):
            bad += 1
    return bad


def _same(a: str | None, b: str | None) -> bool:
    if a == b:
        return True
    x, y = _number(a), _number(b)
    return x is not None and y is not None and math.isclose(x, y, rel_tol=1e-9, abs_tol=1e-9)


def _number(term: str | None) -> float | None:
    if not term or not term.startswith('"'):
        return None
    try:
        return float(term[1:term.index('"', 1)])
    except ValueError:
        return None
