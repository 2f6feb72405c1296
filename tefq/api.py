"""tefq as a Python library: compile a TEF-SPARQL document, run it on events, read the results.

    import tefq
    q = tefq.compile(text)                     # or tefq.load("usecases/uc1.tef")
    result = q.run(events_df, engine="oracle")  # pandas / pyarrow / (ts, s, p, o) tuples / paths
    result.to_pandas()                          # tick + one column per SELECT name

This module wraps values: `Query.run` describes its run to the run service (`tefq.service`), which
runs it as `tefq run` would. Events are checked by the same rules as `tefq run --stream`
(in-memory events as a Parquet file's rows, in memory): a cell that is not an N-Triples term is a
TefqError naming its row and column. With `engine="spark"` in-memory events are handed to Spark
as a Parquet file.
"""
from __future__ import annotations

import functools
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from tefq.errors import TefqError
from tefq.results import QueryResult, RunResult, python_value  # python_value: part of the API
from tefq.service import RunRequest, execute

if TYPE_CHECKING:
    from collections.abc import Callable

    import pandas as pd
    import pyarrow as pa

    from tefq.facts.table import FactRows
    from tefq.plan.logical import Document

def compile(text: str, *, prefixes: dict[str, str] | None = None, name: str = "<string>") -> "Query":  # noqa: A001
    """Parse and bind a TEF-SPARQL document; errors are TefqError with `name`, line and column."""
    for what, value in (("the document", text), ("name=", name)):
        if not isinstance(value, str):
            raise TefqError(f"tefq.compile takes {what} as a str, not {type(value).__name__}")
    query = Query(text, name, _prefixes(prefixes))
    query.document()  # fail now, not at the first run
    return query


def load(path: str | os.PathLike, *, prefixes: dict[str, str] | None = None) -> "Query":
    """`compile` the document in a .tef file (read as `tefq run` reads it)."""
    from tefq.analysis import read_query_file

    if not isinstance(path, (str, os.PathLike)):
        raise TefqError(f"tefq.load takes a file path, not {type(path).__name__}")
    path = os.fspath(path)
    return compile(read_query_file(path), prefixes=prefixes, name=path)


def _prefixes(prefixes: Any) -> dict[str, str]:
    """`prefixes=` as a dict of str -> str (None: none)."""
    if prefixes is None:
        return {}
    if not isinstance(prefixes, dict) or not all(isinstance(k, str) and isinstance(v, str)
                                                 for k, v in prefixes.items()):
        raise TefqError(f"prefixes must map prefix names to IRIs (a dict of str), not {prefixes!r:.60}",
                        file="prefixes")
    return dict(prefixes)


@dataclass(frozen=True)
class Query:
    """A compiled document: one or more queries (and the facts they use)."""

    text: str
    name: str
    prefixes: dict[str, str] = field(default_factory=dict)

    def document(self, background_predicates: frozenset[str] = frozenset()) -> "Document":
        """The bound logical plan. The background's predicates take part in binding (a pattern
        on one of them is a background pattern, not an event pattern), hence a parameter."""
        return _bound(self.text, self.name, tuple(sorted(self.prefixes.items())), background_predicates)

    @property
    def names(self) -> list[str]:
        """The names of the document's queries, in order (`q1`, ... unless registered)."""
        return [q.name for q in self.document().queries]

    def run(self, events: Any, *, engine: str = "auto", background: Any = None, t0: int = 0,
            lateness: int | str = 0) -> "Result":
        """Run every query of the document over `events` (see the module doc) on one engine
        (`oracle`, `spark`, or `auto`, the default: the oracle for small inputs, Spark for large
        ones, the bar lower when a Spark session is already up in this process).

        `background`: a file (Turtle, N-Triples, TriG) or an rdflib Graph. `lateness`: ms or a
        duration such as "5s" (on the oracle each input file is one arrival batch: docs/semantics.md)."""
        if isinstance(events, Iterator):  # read once: the rows now, the fact table later
            events = list(events)
        request = RunRequest(self, events, background=background, engine=engine, t0=t0, lateness=lateness,
                             progress=False)
        return Result(execute(request).run, facts=functools.partial(self.facts, events, background=background,
                                                                     engine=engine))

    def facts(self, events: Any, *, engine: str = "auto", background: Any = None,
              master: str | None = None) -> "FactRows":
        """The fact table of spec §12 over `events`: `.rows`, `.columns`, `.to_pandas()`. `engine`:
        `oracle`, `spark` (the fact operator's table; `master` as `tefq facts --master`) or `auto`
        (the oracle for small inputs); both give the same table."""
        from tefq.facts.api import facts_of

        return facts_of(self, events, background, engine=engine, master=master)


@functools.lru_cache(maxsize=32)  # bind once per document (and print its warnings once)
def _bound(text: str, name: str, prefixes: tuple[tuple[str, str], ...],
           background_predicates: frozenset[str]) -> "Document":
    from tefq.analysis import bind_text  # the parser is slow to import: `import tefq` stays light

    return bind_text(text, name, dict(prefixes), background_predicates)


class Result:
    """The rows of every query of a run, and its metrics (spec §7)."""

    def __init__(self, run: RunResult, facts: "Callable[[], FactRows] | None" = None) -> None:
        self.results: list[QueryResult] = run.results
        self.metrics: dict[str, Any] = run.metrics.to_json()
        self._facts = facts

    @functools.cached_property
    def facts(self) -> "FactRows":
        """The fact table of the run's input (spec §12), computed on first use by the engine
        `Query.run` was asked for."""
        if self._facts is None:
            raise TefqError("this result was not made by Query.run: it has no input to compute facts from")
        return self._facts()

    @property
    def queries(self) -> list[str]:
        return [r.name for r in self.results]

    def query_result(self, query: str | None = None) -> QueryResult:
        """One query's rows (N-Triples cells); `query` None means the document's first."""
        if not self.results:
            raise TefqError("the document has no queries")
        if query is None:
            return self.results[0]
        for r in self.results:
            if r.name == query:
                return r
        raise TefqError(f"no query named {query!r}: the document has {', '.join(self.queries)}")

    def to_pandas(self, query: str | None = None) -> "pd.DataFrame":
        """`tick` (int ms) and one column per SELECT name, rows in spec §5 order."""
        import pandas as pd

        r = self.query_result(query)
        names = [c.lstrip("?$") for c in r.columns]
        rows = [[tick] + [python_value(c) for c in cells] for tick, cells in r.sorted_rows()]
        return pd.DataFrame(rows, columns=["tick"] + names)

    def to_arrow(self, query: str | None = None, *, terms: str = "ntriples") -> "pa.Table":
        """`tick` as timestamp[ms, UTC] and the cells as N-Triples strings (lossless); `terms="typed"`:
        typed columns (counts long, sums and averages double, IRIs without brackets, literals of
        one datatype by their type, mixed terms N-Triples). As --format arrow/parquet [--terms typed]."""
        from tefq.io.result_writers import arrow_table

        return arrow_table([self.query_result(query)], terms)

    def __repr__(self) -> str:
        sizes = ", ".join(f"{r.name}: {len(r.rows)} rows" for r in self.results)
        return f"<tefq.Result {sizes}>"


__all__ = ["compile", "load", "Query", "Result", "python_value"]
