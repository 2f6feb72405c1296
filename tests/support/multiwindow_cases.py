"""Documents for the multi-window evaluator and its planner (several windows, prefixes), shared by the kernel and planning tests."""
from __future__ import annotations

from tefq.plan.logical import Document, StreamWindow, WindowedQuery

EX = "http://ex.org/"
PRO = f"PREFIX : <{EX}>\n"


def ex(x: str) -> str:
    return f"<{EX}{x}>"


def doc(*queries: WindowedQuery) -> Document:
    return Document("t.rspql", None, (), (), queries)


def query(sparql: str, rng: int, step: int, form: str = "select", name: str = "Q", stream: str | None = None,
          registers: bool = False, extra: tuple[StreamWindow, ...] = ()) -> WindowedQuery:
    return WindowedQuery(name, registers, form, (StreamWindow(stream, rng, step), *extra), (), PRO + sparql)
