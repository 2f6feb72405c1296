"""User-facing errors: every problem with the user's input is a TefqError (exit code 2).

A TefqError knows where it happened (file, line, column) and renders the contract's message
`FILE:LINE:COL: error: ...` followed, when the source text is known, by the offending line and a
caret under the column.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Span:
    """A position in a source file; lines and columns count from 1 (0 = unknown)."""

    line: int = 0
    column: int = 0
    end_line: int = 0
    end_column: int = 0


class TefqError(Exception):
    """Bad user input. The CLI prints `render()` to stderr and exits with code 2."""

    exit_code = 2

    def __init__(self, message: str, file: str | None = None, line: int = 0, column: int = 0,
                 source_line: str | None = None, kind: str = "error") -> None:
        super().__init__(message)
        self.message = message
        self.file = file
        self.line = line
        self.column = column
        self.source_line = source_line
        self.kind = kind

    def located(self, file: str | None = None, source: str | None = None) -> "TefqError":
        """Fill in the file name and offending line if they were not known where it was raised."""
        if file and not self.file:
            self.file = file
        if source is not None and self.source_line is None and self.line > 0:
            lines = source.splitlines()
            if self.line <= len(lines):
                self.source_line = lines[self.line - 1]
        return self

    def render(self) -> str:
        where = self.file or "<input>"
        if self.line:
            where += f":{self.line}"
            if self.column:
                where += f":{self.column}"
        text = f"{where}: {self.kind}: {self.message}"
        if self.source_line is not None:
            text += "\n  " + shown(self.source_line.rstrip("\n"))
            if self.column:
                caret_pad = "".join("\t" if c == "\t" else " " for c in shown(self.source_line[: self.column - 1]))
                text += "\n  " + caret_pad + "^"
        return text

    def __str__(self) -> str:
        return self.render()


# Control characters (C0 but TAB, DEL, C1) as escapes: an offending line is shown, never replayed
# to the terminal (binary data, escape sequences).
_CONTROLS = {c: f"\\x{c:02x}" for c in (*range(0x00, 0x09), *range(0x0a, 0x20), *range(0x7f, 0xa0))}


def shown(text: str) -> str:
    """`text` safe to print: control characters escaped (`\\x1b`), TABs kept."""
    return text.translate(_CONTROLS)


def warn(message: str, file: str | None = None, line: int = 0, column: int = 0) -> None:
    """Print a located warning on stderr (the run goes on)."""
    import sys

    print(TefqError(message, file, line, column, kind="warning").render(), file=sys.stderr)
