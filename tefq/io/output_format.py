"""Which format a table is written in, for every command that writes one (`tefq run`, `usecase`,
`run --at`, `facts`): one rule, so that `--out res.parquet` is Parquet wherever it is typed.

- A file's extension names its format (`res.parquet`, `res.json`, `res.txt` a text table); a
  `--format` that says otherwise is a mistake (exit 2), and so is an extension naming a format
  the command does not write. An output without a known extension (`/dev/null`, `DIR/`, `r.dat`)
  takes `--format`, else CSV; without `--format`, an extension one slip from a known one
  (`r.parqet`, `r.cvs`) is refused (exit 2): CSV written under it would fail later, in the reader.
- Standard output: `--format`, else an aligned table on a terminal and CSV into a pipe. A binary
  format (Parquet, Arrow) is refused on a terminal, where it would print bytes.
- Ticks are integer ms in CSV, TSV and the JSON formats (the CLI contract) and ISO-8601 in the
  text table unless `--tick-format` says otherwise; Parquet and Arrow hold timestamps. Their
  cells are typed columns unless `--terms ntriples` asks for N-Triples strings.
"""
from __future__ import annotations

import difflib
import os
import sys
from collections.abc import Sequence

from tefq.errors import TefqError

BINARY_FORMATS = ("parquet", "arrow")
# file extension -> the format it names (the SPARQL results media types' usual extensions too)
EXTENSION_FORMATS = {"csv": "csv", "tsv": "tsv", "json": "json", "srj": "json", "jsonl": "jsonl",
                     "ndjson": "jsonl", "xml": "xml", "srx": "xml", "txt": "text", "parquet": "parquet",
                     "arrow": "arrow", "feather": "arrow"}


def extension_format(out: str | None) -> str | None:
    """The format `out`'s extension names; None for standard output, a directory or an unknown one."""
    return EXTENSION_FORMATS.get(extension(out))


def extension(out: str | None) -> str:
    """`out`'s extension, lower case without its dot ("" for standard output or a directory)."""
    if out is None or out.endswith(("/", os.sep)) or os.path.isdir(out):
        return ""
    return os.path.splitext(out)[1].lstrip(".").lower()


def misspelt(ext: str) -> str | None:
    """The known extension `ext` is one slip from (letters swapped, one missing, extra or wrong:
    `parqet`, `cvs`, `jsno`), if any."""
    if not ext:
        return None
    for known in EXTENSION_FORMATS:
        if sorted(known) == sorted(ext):
            return known
    near = difflib.get_close_matches(ext, EXTENSION_FORMATS, n=1, cutoff=0.8)
    return near[0] if near else None


def on_terminal() -> bool:
    return sys.stdout.isatty()


def chosen_format(fmt: str | None, out: str | None, formats: Sequence[str], command: str, *,
                  terminal: str = "text") -> str:
    """The format of one output (see the module doc); `terminal`: standard output's on a terminal."""
    named = extension_format(out)
    if named is not None:
        if named not in formats:
            raise TefqError(f"--out {out} names {named} by its extension, which {command} does not write "
                            f"(it writes {', '.join(formats)})", file="--out")
        if fmt is not None and fmt != named:
            raise TefqError(f"--format {fmt} contradicts --out {out}, whose extension names {named}: drop "
                            "--format, or name the file by its format", file="--format")
        return named
    meant = misspelt(extension(out)) if fmt is None else None
    if meant is not None:
        raise TefqError(f"{out}: its extension '.{extension(out)}' names no format tefq writes; did you mean "
                        f"'.{meant}'? (or name the format: --format FMT)", file="--out")
    if fmt is None:
        fmt = terminal if out is None and on_terminal() else "csv"
    if fmt in BINARY_FORMATS and out is None and on_terminal():
        raise TefqError(f"{fmt} is a binary format: write it to a file (--out FILE.{fmt}) or pipe it into "
                        "another program", file="--format")
    return fmt


def chosen_tick_format(tick_format: str | None, fmt: str) -> str:
    """`--tick-format`, else ISO-8601 in the text table and integer ms elsewhere."""
    return tick_format or ("iso" if fmt == "text" else "ms")


def chosen_terms(terms: str | None, fmt: str) -> str:
    """`--terms`, else typed columns in Parquet and Arrow and N-Triples terms elsewhere."""
    return terms or ("typed" if fmt in BINARY_FORMATS else "ntriples")


__all__ = ["BINARY_FORMATS", "EXTENSION_FORMATS", "extension_format", "chosen_format", "chosen_tick_format",
           "chosen_terms"]
