"""tefq as a Python library: compile a TEF-SPARQL document, run it on events, read the results.

    import tefq
    q = tefq.compile(text)                     # or tefq.load("usecases/uc1.tef")
    result = q.run(events_df, engine="oracle")  # pandas / pyarrow / (ts, s, p, o) tuples / paths
    result.to_pandas()                          # tick + one column per SELECT name

Events are checked by the same readers as `tefq run --stream` (in-memory events go through a
temporary Parquet file): a cell that is not an N-Triples term is a TefqError naming its row and
column. `engine="spark"` hands that file to `tefq.spark.run`.
"""
from __future__ import annotations

import functools
import os
import tempfile
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from tefq import terms
from tefq.errors import TefqError
from tefq.results import Cell, QueryResult, RunResult

if TYPE_CHECKING:
    import pandas as pd
    import pyarrow as pa

    from tefq.io.staging import StagedStreams
    from tefq.plan.logical import Document

ENGINES = ("oracle", "spark")
_NUMERIC = {terms.XSD_INTEGER: int, terms.XSD + "int": int, terms.XSD + "long": int, terms.XSD + "short": int,
            terms.XSD_DECIMAL: float, terms.XSD_DOUBLE: float, terms.XSD + "float": float}


def compile(text: str, *, prefixes: dict[str, str] | None = None, name: str = "<string>") -> "Query":  # noqa: A001
    """Parse and bind a TEF-SPARQL document; errors are TefqError with `name`, line and column."""
    query = Query(text, name, dict(prefixes or {}))
    query.document()  # fail now, not at the first run
    return query


def load(path: str | os.PathLike, *, prefixes: dict[str, str] | None = None) -> "Query":
    """`compile` the document in a .tef file."""
    path = os.fspath(path)
    try:
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
    except (OSError, UnicodeDecodeError) as e:
        reason = e.strerror if isinstance(e, OSError) and e.strerror else str(e)
        raise TefqError(f"cannot read query file: {reason}", path) from None
    return compile(text, prefixes=prefixes, name=path)


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

    def run(self, events: Any, *, engine: str = "oracle", background: Any = None, t0: int = 0,
            lateness: int | str = 0) -> "Result":
        """Run every query of the document over `events` (see the module doc) on one engine.

        `background`: a file (Turtle, N-Triples, TriG) or an rdflib Graph. `lateness`: ms or a
        duration such as "5s" (on the oracle each input file is one arrival batch: docs/semantics.md)."""
        if engine not in ENGINES:
            raise TefqError(f"unknown engine {engine!r}: expected oracle or spark", file="engine")
        lateness_ms = _duration_ms(lateness)
        graph = _background(background)
        doc = self.document(_predicates(graph))
        started = time.perf_counter()
        with tempfile.TemporaryDirectory(prefix="tefq-events-") as workdir:
            streams = stage_events(events, workdir)
            if engine == "oracle":
                run = run_oracle(doc, streams, graph, t0=t0, lateness_ms=lateness_ms)
            else:
                from tefq.io.staging import as_parquet
                from tefq.spark.engine import run as spark_run

                run = spark_run(doc, as_parquet(streams, workdir), graph, t0=t0, lateness_ms=lateness_ms,
                                progress=False)
        run.metrics.wall_seconds = round(time.perf_counter() - started, 3)
        run.metrics.rows_out = sum(len(r.rows) for r in run.results)
        return Result(run)


@functools.lru_cache(maxsize=32)  # bind once per document (and print its warnings once)
def _bound(text: str, name: str, prefixes: tuple[tuple[str, str], ...],
           background_predicates: frozenset[str]) -> "Document":
    from tefq.analysis import bind
    from tefq.syntax import parse

    return bind(parse(text, name), name, text, dict(prefixes), background_predicates)


def stage_events(events: Any, workdir: str) -> "StagedStreams":
    """Any kind of `events` as stream paths the readers check (paths are passed through)."""
    from tefq.io.staging import StagedStreams, stage_stream, table_to_parquet

    streams = StagedStreams()
    if isinstance(events, (str, os.PathLike)):
        events = [events]
    if isinstance(events, (list, tuple)) and events and all(isinstance(e, (str, os.PathLike)) for e in events):
        for path in events:
            if not os.path.exists(path):
                raise TefqError("no such stream file or directory", os.fspath(path))
            stage_stream(os.fspath(path), None, workdir, streams)
        return streams
    staged = table_to_parquet(events, workdir)
    streams.paths.append(staged)
    streams.shown[staged] = "<events>"
    return streams


def run_oracle(doc: "Document", streams: "StagedStreams", background: Any, *, t0: int = 0,
               lateness_ms: int | None = None, max_ticks: int | None = None,
               bad_rows: str | None = None) -> RunResult:
    """The reference semantics over staged streams: the oracle for TEF queries, the windowed oracle
    for REGISTER QUERY. Each file is one arrival batch (`lateness_ms`); bad rows go to `bad_rows`
    (a directory) or stop the run; `max_ticks` bounds the ticks with rows (docs/semantics.md)."""
    from tefq.io.bad_rows import BadRowLog
    from tefq.io.readers import read_stream_file, stream_files
    from tefq.oracle import run as oracle_run
    from tefq.oracle.query import DEFAULT_MAX_TICKS
    from tefq.plan.logical import WindowedQuery

    if max_ticks is not None and max_ticks < 0:
        raise TefqError("--max-ticks expects a count >= 0 (0: no bound)", file="--max-ticks")
    log = BadRowLog(bad_rows)
    elements: list = []
    sizes: list[int] = []  # one arrival batch per file (lateness)
    try:
        for f in [f for path in streams.paths for f in stream_files(path)]:
            n = len(elements)
            elements.extend(read_stream_file(f, log))
            sizes.append(len(elements) - n)
    except TefqError as e:
        raise streams.relabel(e) from None
    finally:
        log.close()
    bound = DEFAULT_MAX_TICKS if max_ticks is None else max_ticks

    run = oracle_run(doc, elements, background, t0=t0, max_ticks=bound, lateness_ms=lateness_ms or None,
                     batch_sizes=sizes, locate=streams.locate)
    run.metrics.extra["bad_rows"] = log.count
    if any(isinstance(q, WindowedQuery) for q in doc.queries):
        from tefq.oracle import name_the_row
        from tefq.oracle.query import TooManyTicks
        from tefq.oracle.windowed import run as windowed_run

        try:  # every window closes, empty or not: the bound counts them all (spec §8)
            windowed = windowed_run(doc, elements, background, t0=t0, max_ticks=bound)
        except TooManyTicks as e:
            raise name_the_row(e, sorted(el[0] for el in elements if el[0] >= t0), streams.locate) from None
        run.results.extend(windowed)
        # Windowed queries count their windows as ticks and their feedback triples as bindings (§7, §8).
        run.metrics.ticks += windowed.ticks
        run.metrics.intermediate_bindings += windowed.intermediate_bindings
        order = {q.name: i for i, q in enumerate(doc.queries)}
        run.results.sort(key=lambda r: order.get(r.name, len(order)))
    return run


def _duration_ms(value: int | str) -> int:
    if isinstance(value, int):
        return value
    from tefq.analysis import parse_duration

    return parse_duration(value)


def _background(background: Any):
    if background is None or not isinstance(background, (str, os.PathLike)):
        return background
    from tefq.io.readers import read_background

    return read_background(os.fspath(background))


def _predicates(graph: Any) -> frozenset[str]:
    if graph is None:
        return frozenset()
    from tefq.io.readers import background_triples

    return frozenset(p for _, p, _ in background_triples(graph))


def python_value(cell: Cell) -> Any:
    """A result cell for Python: IRIs as strings without brackets, blank nodes as `_:b`, numeric
    literals as int/float, booleans as bool, other literals as their lexical form; unbound None."""
    if cell is None:
        return None
    if terms.is_iri(cell):
        return terms.iri_value(cell)
    if not terms.is_literal(cell):
        return cell
    lex, dt, _ = terms.split_literal(cell)
    if dt in _NUMERIC:
        try:
            return _NUMERIC[dt](lex)
        except ValueError:
            return lex  # an ill-typed literal keeps its text
    if dt == terms.XSD_BOOLEAN and lex in ("true", "false", "1", "0"):
        return lex in ("true", "1")
    return lex


class Result:
    """The rows of every query of a run, and its metrics (spec §7)."""

    def __init__(self, run: RunResult) -> None:
        self.results: list[QueryResult] = run.results
        self.metrics: dict[str, Any] = run.metrics.to_json()

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

    def to_arrow(self, query: str | None = None) -> "pa.Table":
        """`tick` as timestamp[ms, UTC] and the cells as N-Triples strings (lossless; as --format arrow)."""
        from tefq.io.result_writers import arrow_table

        return arrow_table([self.query_result(query)])

    def __repr__(self) -> str:
        sizes = ", ".join(f"{r.name}: {len(r.rows)} rows" for r in self.results)
        return f"<tefq.Result {sizes}>"


__all__ = ["compile", "load", "Query", "Result", "python_value", "run_oracle", "stage_events"]
