"""Bad rows: stop the run with a located error, or (`--bad-rows DIR`) record each one and go on.

A record is one TAB-separated line `file, line, kind, reason, row` in `DIR/bad-<id>.tsv` (the row
last, its newlines as spaces); `kind` is a key of `tefq.io.validate.KINDS`.
"""
from __future__ import annotations

import os
import uuid

from tefq.errors import TefqError
from tefq.io.records import RecordFile
from tefq.io.validate import Fault


class BadRow(TefqError):
    """A located bad row; `bad_kind` names its kind (tefq.io.validate.KINDS)."""

    def __init__(self, fault: Fault, file: str, line: int, row: str | None, column_base: int = 1) -> None:
        super().__init__(fault.message, file, line, fault.offset + column_base, source_line=row)
        self.bad_kind = fault.kind


class BadRowLog:
    """Where bad rows go: `directory` None raises the first one (exit 2); else each is recorded
    there and counted, and reading goes on."""

    def __init__(self, directory: str | None = None) -> None:
        self.directory = directory
        self.count = 0
        self.by_kind: dict[str, int] = {}
        self._out: RecordFile | None = None

    def report(self, fault: Fault, file: str, line: int, row: str | None, column_base: int = 1) -> None:
        """`column_base` turns the fault's 0-based offset into a 1-based column (0: no column)."""
        err = BadRow(fault, file, line, row, column_base)
        if column_base == 0:
            err.column = 0
        if self.directory is None:
            raise err
        if self._out is None:
            try:
                os.makedirs(self.directory, exist_ok=True)
            except OSError as e:
                raise TefqError(f"cannot write bad rows: {e.strerror or e}", self.directory) from None
            self._out = RecordFile(os.path.join(self.directory, f"bad-{uuid.uuid4().hex}.tsv"), "bad rows")
        flat = (row or "").replace("\r", " ").replace("\n", " ")
        reason = f"col {err.column}: {fault.message}" if err.column else fault.message
        self._out.write(f"{file}\t{line}\t{fault.kind}\t{reason.replace(chr(9), ' ')}\t{flat}\n")
        self.count += 1
        self.by_kind[fault.kind] = self.by_kind.get(fault.kind, 0) + 1

    def close(self) -> None:
        if self._out is not None:
            self._out.close()
            self._out = None


class IgnoreBadRows(BadRowLog):
    """Skips bad rows without a trace: only for re-reading input already checked (to locate a row)."""

    def report(self, fault: Fault, file: str, line: int, row: str | None, column_base: int = 1) -> None:
        self.count += 1


STRICT = BadRowLog()  # the default: the first bad row stops the run
