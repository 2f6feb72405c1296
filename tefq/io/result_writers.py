"""Result tables (spec §5) as SPARQL 1.1 Query Results CSV, TSV and JSON, and the metrics file.

Decisions (docs/formats.md): CSV lines end with CRLF as SPARQL 1.1 CSV requires; TSV lines end
with LF and its header names are `?`-prefixed as SPARQL 1.1 TSV requires; JSON is JSON Lines: one
SPARQL results document per tick and line, with a top-level `"tick"` (and `"query"` when several
queries share one output).
"""
from __future__ import annotations

import contextlib
import csv
import io
import json
import os
import re
import sys
from collections.abc import Iterator
from functools import lru_cache
from typing import IO

from tefq import terms
from tefq.errors import TefqError
from tefq.results import Cell, Metrics, QueryResult

FORMATS = ("csv", "tsv", "json")
# Turtle's abbreviated numbers: a TSV cell may be bare only if reading it back gives the same term.
_BARE = {
    terms.XSD_INTEGER: re.compile(r"[+-]?[0-9]+"),
    terms.XSD_DECIMAL: re.compile(r"[+-]?[0-9]*\.[0-9]+"),
    terms.XSD_DOUBLE: re.compile(r"[+-]?(?:[0-9]+\.[0-9]*|\.?[0-9]+)[eE][+-]?[0-9]+"),
}

# Characters some line splitters break on besides LF/CR: written as \u escapes (TSV, JSON lines).
_LINE_BREAKS = str.maketrans({"\x85": "\\u0085", "\u2028": "\\u2028", "\u2029": "\\u2029"})


def _names(result: QueryResult) -> list[str]:
    return [c[1:] if c.startswith(("?", "$")) else c for c in result.columns]


# ---------------------------------------------------------------------------------------------
# Cells

@lru_cache(maxsize=1 << 16)  # the same terms recur in every tick's rows
def csv_cell(cell: Cell) -> str:
    """SPARQL CSV: IRIs without brackets, literals as their lexical form, `_:b` for blank nodes."""
    if cell is None:
        return ""
    if terms.is_iri(cell):
        return terms.iri_value(cell)
    if terms.is_literal(cell):
        return terms.split_literal(cell)[0]
    return cell


def tsv_cell(cell: Cell) -> str:
    """SPARQL TSV: terms in N-Triples/Turtle syntax; numbers bare when that reads back the same."""
    if cell is None:
        return ""
    if terms.is_literal(cell) and cell.endswith(">"):
        lex, dt, _ = terms.split_literal(cell)
        bare = _BARE.get(dt or "")
        if bare is not None and bare.fullmatch(lex):
            return lex
    return cell.translate(_LINE_BREAKS) if terms.is_literal(cell) else cell


def json_cell(cell: str) -> dict:
    if terms.is_iri(cell):
        return {"type": "uri", "value": terms.iri_value(cell)}
    if terms.is_blank(cell):
        return {"type": "bnode", "value": cell[2:]}
    lex, dt, lang = terms.split_literal(cell)
    out = {"type": "literal", "value": lex}
    if lang:
        out["xml:lang"] = lang
    elif dt:
        out["datatype"] = dt
    return out


# ---------------------------------------------------------------------------------------------
# Tables

def _write_table(out: IO[str], fmt: str, names: list[str],
                 rows: Iterator[tuple[str | None, int, dict[str, Cell]]]) -> None:
    """rows: (query name or None, tick, cells by column name). `query` column iff names[0] is it."""
    has_query = names[0] == "query"
    if fmt == "csv":
        w = csv.writer(out, lineterminator="\r\n")
        w.writerow(names)
        for q, tick, cells in rows:
            w.writerow(([q] if has_query else []) + [str(tick)]
                       + [csv_cell(cells.get(n)) for n in names[1 + has_query:]])
    else:
        out.write("\t".join("?" + n for n in names) + "\n")
        for q, tick, cells in rows:
            lead = [terms.literal(q)] if has_query else []  # the query name is a string literal
            out.write("\t".join(lead + [str(tick)] + [tsv_cell(cells.get(n)) for n in names[1 + has_query:]])
                      + "\n")


def _rows(result: QueryResult, with_query: bool) -> Iterator[tuple[str | None, int, dict[str, Cell]]]:
    names = _names(result)
    for tick, cells in result.sorted_rows():
        yield (result.name if with_query else None), tick, dict(zip(names, cells))


def _json_line(doc: dict) -> str:
    """One document per line: escape the characters other tools also take as line breaks."""
    return json.dumps(doc, ensure_ascii=False).translate(_LINE_BREAKS) + "\n"


def _write_json(out: IO[str], results: list[QueryResult], with_query: bool) -> None:
    """JSON Lines: one SPARQL 1.1 results document per (query, tick), ticks ascending."""
    for result in results:
        names = _names(result)
        doc: dict | None = None
        for tick, cells in result.sorted_rows():
            if doc is None or doc["tick"] != tick:
                if doc is not None:
                    out.write(_json_line(doc))
                doc = ({"query": result.name} if with_query else {}) | {
                    "tick": tick, "head": {"vars": names}, "results": {"bindings": []}}
            doc["results"]["bindings"].append(
                {n: json_cell(c) for n, c in zip(names, cells) if c is not None})
        if doc is not None:
            out.write(_json_line(doc))


def _write_one(out: IO[str], results: list[QueryResult], fmt: str) -> None:
    with_query = len(results) > 1
    if fmt == "json":
        _write_json(out, results, with_query)
        return
    if not with_query:
        _write_table(out, fmt, ["tick"] + _names(results[0]), _rows(results[0], False))
        return
    # One table for all queries: the union of their column names, in order of first appearance.
    names: list[str] = []
    for r in results:
        names += [n for n in _names(r) if n not in names]
    _write_table(out, fmt, ["query", "tick"] + names,
                 (row for r in results for row in _rows(r, True)))


@contextlib.contextmanager
def _open_out(path: str | None) -> Iterator[IO[str]]:
    if path is None:
        yield sys.stdout
        sys.stdout.flush()
        return
    try:
        f = open(path, "w", encoding="utf-8", newline="")
    except OSError as e:
        raise TefqError(f"cannot write the output: {e.strerror or e}", path) from None
    with f:
        yield f


def write_results(results: list[QueryResult], fmt: str = "csv", out: str | None = None) -> list[str]:
    """Write the results as spec §5 says; returns the files written (empty for stdout).

    `out` None -> stdout; a directory (existing, or a path ending in `/`) -> `DIR/<query>.<fmt>`
    per query; otherwise one file (several queries share it with a leading `query` column)."""
    fmt = fmt.lower()
    if fmt not in FORMATS:
        raise TefqError(f"unknown result format {fmt!r}: expected csv, tsv or json")
    if out is not None and (out.endswith(("/", os.sep)) or os.path.isdir(out)):
        try:
            os.makedirs(out, exist_ok=True)
        except OSError as e:
            raise TefqError(f"cannot create the output directory: {e.strerror or e}", out) from None
        written = []
        for r in results:
            path = os.path.join(out, f"{r.name}.{fmt}")
            with _open_out(path) as f:
                _write_one(f, [r], fmt)
            written.append(path)
        return written
    if not results:
        return []
    with _open_out(out) as f:
        _write_one(f, results, fmt)
    return [out] if out else []


def results_text(results: list[QueryResult], fmt: str = "csv") -> str:
    """What write_results would print (for tests and the REPL)."""
    buf = io.StringIO(newline="")
    _write_one(buf, results, fmt)
    return buf.getvalue()


def write_metrics(metrics: Metrics, path: str | None) -> None:
    """The metrics JSON object (spec §7), indented; `path` None means no metrics file."""
    if path is None:
        return
    with _open_out(path) as f:
        json.dump(metrics.to_json(), f, indent=2)
        f.write("\n")
