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
from tefq.progress import plural
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
    # deferred: a command imports what it runs (measured: import tefq 0.3 s, tefq.spark.engine 12 s)
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
            lateness: int | str = 0, at: Any = None) -> "Result":
        """Run every query of the document over `events` (see the module doc) on one engine
        (`oracle`, `spark`, or `auto`, the default: the oracle for small inputs, Spark for large
        ones, the bar lower when a Spark session is already up in this process).

        `background`: a file (Turtle, N-Triples, TriG) or an rdflib Graph. `lateness`: ms or a
        duration such as "5s" (on the oracle each input file is one arrival batch: docs/semantics.md).
        `at`: report the aggregate queries only as of these instants (spec §12; as `tefq run --at`):
        one or a list of ms, ISO-8601 strings or datetimes."""
        if isinstance(events, Iterator):  # read once: the rows now, the fact table later
            events = list(events)
        facts = functools.partial(self.facts, events, background=background, engine=engine)
        if at is not None:
            # deferred: a command imports what it runs (measured: import tefq 0.3 s, tefq.spark.engine 12 s)
            from tefq.facts.api import as_of

            return Result(as_of(self, events, instants(at), background, engine=engine), facts, "as of")
        request = RunRequest(self, events, background=background, engine=engine, t0=t0, lateness=lateness,
                             progress=False)
        outcome = execute(request)
        return Result(outcome.run, facts, outcome.engine)

    def facts(self, events: Any, *, engine: str = "auto", background: Any = None,
              master: str | None = None) -> "FactRows":
        """The fact table of spec §12 over `events`: `.rows`, `.columns`, `.to_pandas()`. `engine`:
        `oracle`, `spark` (the fact operator's table; `master` as `tefq facts --master`) or `auto`
        (the oracle for small inputs); both give the same table."""
        # deferred: a command imports what it runs (measured: import tefq 0.3 s, tefq.spark.engine 12 s)
        from tefq.facts.api import facts_of

        return facts_of(self, events, background, engine=engine, master=master)

    def __repr__(self) -> str:
        return f"<tefq.Query {self.name}: {summary_line(self.document())}>"


@functools.lru_cache(maxsize=32)  # bind once per document (and print its warnings once)
def _bound(text: str, name: str, prefixes: tuple[tuple[str, str], ...],
           background_predicates: frozenset[str]) -> "Document":
    from tefq.analysis import bind_text  # the parser is slow to import: `import tefq` stays light

    return bind_text(text, name, dict(prefixes), background_predicates)


def instants(at: Any) -> list[int]:
    """`at` as ms: one or a list of ms, ISO-8601 strings (commas allowed, as `--at` takes them) or
    datetimes (no zone: UTC)."""
    from datetime import datetime, timezone

    # deferred: a command imports what it runs (measured: import tefq 0.3 s, tefq.spark.engine 12 s)
    from tefq.facts.as_of import parse_instants

    out: list[int] = []
    for t in at if isinstance(at, (list, tuple)) else [at]:
        if isinstance(t, datetime):
            t = t if t.tzinfo is not None else t.replace(tzinfo=timezone.utc)
            out.append(int(t.timestamp() * 1000))
        elif isinstance(t, int) and not isinstance(t, bool):
            out.append(t)
        elif isinstance(t, str):
            out += parse_instants(t, "at")
        else:
            raise TefqError(f"at= takes ms, ISO-8601 strings or datetimes, not {type(t).__name__}", file="at")
    return out


def summary_line(doc: "Document") -> str:
    """A document in a few words: its queries and its facts."""
    # deferred: a command imports what it runs (measured: import tefq 0.3 s, tefq.spark.engine 12 s)
    from tefq.analysis import summary

    lines = summary(doc)
    facts = [line.split(":", 1)[0].split()[1] for line in lines if line.startswith("fact ")]
    queries = [line.split(" -> ")[0].removeprefix("query ") for line in lines if line.startswith("query ")]
    return "; ".join(queries) + (f"; facts {', '.join(facts)}" if facts else "")


class Result:
    """The rows of every query of a run, and its metrics (spec §7). Iterating gives the rows of the
    document's first query as named tuples of Python values (`tick` a UTC datetime, counts int,
    IRIs str, as `to_pandas()` types them); `len()` counts them; in a notebook it shows as a table."""

    SHOWN_ROWS = 10  # rows in the notebook table

    def __init__(self, run: RunResult, facts: "Callable[[], FactRows] | None" = None, engine: str = "") -> None:
        self.results: list[QueryResult] = run.results
        self.metrics: dict[str, Any] = run.metrics.to_json()
        self.engine = engine
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

    def rows(self, query: str | None = None) -> list[tuple]:
        """One query's rows as named tuples (`tick`, then the SELECT names) of Python values."""
        from collections import namedtuple

        table = self.to_arrow(query)
        Row = namedtuple("Row", table.column_names, rename=True)  # a name Python refuses becomes _1, ...
        return [Row(*values) for values in zip(*(c.to_pylist() for c in table.columns))]

    def __iter__(self) -> Iterator[tuple]:
        return iter(self.rows())

    def __len__(self) -> int:
        return len(self.query_result().rows) if self.results else 0

    def to_pandas(self, query: str | None = None, *, terms: str = "typed") -> "pd.DataFrame":
        """`tick` (datetime64[ms, UTC]) and one column per SELECT name, rows in spec §5 order;
        typed columns (counts Int64, sums and averages float64, IRIs str; as `to_arrow`), or
        `terms="ntriples"`: every cell its N-Triples term (str), lossless."""
        import pandas as pd
        import pyarrow as pa

        nullable = {pa.int64(): pd.Int64Dtype(), pa.bool_(): pd.BooleanDtype()}  # an unbound cell stays <NA>
        return self.to_arrow(query, terms=terms).to_pandas(types_mapper=nullable.get)

    def to_arrow(self, query: str | None = None, *, terms: str = "typed") -> "pa.Table":
        """`tick` as timestamp[ms, UTC] and typed columns (counts long, sums and averages double, IRIs
        without brackets, literals of one datatype by their type, mixed terms N-Triples), as
        `tefq run --format arrow`; `terms="ntriples"`: the cells as N-Triples strings (lossless)."""
        # deferred: a command imports what it runs (measured: import tefq 0.3 s, tefq.spark.engine 12 s)
        from tefq.io.result_writers import arrow_table

        return arrow_table([self.query_result(query)], terms)

    def __repr__(self) -> str:
        sizes = ", ".join(f"{r.name}: {plural(len(r.rows), 'row')}" for r in self.results)
        return f"<tefq.Result {sizes}; {self._figures()}>"

    def _figures(self) -> str:
        m = self.metrics
        engine = f" ({self.engine})" if self.engine else ""
        return (f"{plural(m.get('events_in', 0), 'event')}, {plural(m.get('ticks', 0), 'tick')}, facts created "
                f"{m.get('facts_created', 0):,}, {m.get('wall_seconds', 0):.2f} s{engine}")

    def _repr_html_(self) -> str:
        """A notebook's view: the first rows of each query as a table, then the run's figures."""
        from html import escape

        parts = []
        for r in self.results:
            table = self.to_arrow(r.name).slice(0, self.SHOWN_ROWS)
            head = "".join(f"<th>{escape(n)}</th>" for n in table.column_names)
            body = "".join("<tr>" + "".join(f"<td>{escape(shown_cell(v))}</td>" for v in row) + "</tr>"
                           for row in zip(*(c.to_pylist() for c in table.columns)))
            more = len(r.rows) - table.num_rows
            caption = f"{escape(r.name)}: {plural(len(r.rows), 'row')}" + (f" (first {table.num_rows} shown)"
                                                                          if more > 0 else "")
            parts.append(f"<table><caption>{caption}</caption><thead><tr>{head}</tr></thead>"
                         f"<tbody>{body}</tbody></table>")
        return "".join(parts) + f"<p>{escape(self._figures())}</p>"


def shown_cell(value: Any) -> str:
    """A cell as a notebook shows it: a time in ISO-8601, unbound empty."""
    if value is None:
        return ""
    if hasattr(value, "isoformat"):
        return value.isoformat().replace("+00:00", "Z")
    return str(value)


def run(query: "Query | str", events: Any, **options: Any) -> Result:
    """`tefq.compile(query).run(events, **options)`: run a document (a Query or its text) in one call."""
    if isinstance(query, str):
        query = compile(query)
    if not isinstance(query, Query):
        raise TefqError(f"tefq.run takes a tefq.Query or a document's text, not {type(query).__name__}")
    return query.run(events, **options)


__all__ = ["compile", "load", "run", "Query", "Result", "python_value"]
