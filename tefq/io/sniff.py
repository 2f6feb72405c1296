"""What a file named as text holds when it is not text: said in a sentence, never echoed.

A `.tsv` that holds gzip data (a producer that compressed without renaming) would otherwise stop
at its first line as invalid UTF-8, with the line's bytes on the terminal. The first bytes of
every text input are compared with the signatures of the binary formats a stream file is likely
to be in; a match is one located error that names the format and the fix.
"""
from __future__ import annotations

import os
import re
import stat

from tefq.errors import TefqError

# (signature at offset 0, what it is, the extension that would make tefq read it or None)
SIGNATURES: tuple[tuple[re.Pattern[bytes], str, str | None], ...] = (
    (re.compile(rb"\x1f\x8b"), "gzip-compressed data", ".gz"),
    (re.compile(rb"BZh[1-9]1AY&SY"), "bzip2-compressed data", None),
    (re.compile(rb"\xfd7zXZ\x00"), "xz-compressed data", None),
    (re.compile(rb"\x28\xb5\x2f\xfd"), "zstd-compressed data", None),
    (re.compile(rb"PK\x03\x04"), "a zip archive", None),
    (re.compile(rb"PAR1"), "Parquet data", ".parquet"),
    (re.compile(rb"ARROW1"), "Arrow IPC data", None),
)
HEAD_BYTES = 16  # enough for every signature above


def binary_kind(head: bytes) -> tuple[str, str | None] | None:
    """(what the data is, the extension tefq would read it by) if `head` starts a binary format."""
    for signature, what, extension in SIGNATURES:
        if signature.match(head):
            return what, extension
    return None


def refuse_binary(head: bytes, path: str, expected: str) -> None:
    """A located TefqError if a file read as `expected` text (tsv, csv, nq, ...) starts like a
    binary format."""
    kind = binary_kind(head)
    if kind is None:
        return
    what, extension = kind
    name = os.path.basename(path)
    if extension == ".gz":
        fix = f"name it {name}.gz (tefq decompresses .gz files) or decompress it"
    elif extension is not None:
        fix = f"give it the {extension} extension (or --stream-format)"
    else:
        fix = "decompress or convert it to a stream format tefq reads"
    raise TefqError(f"this file holds {what}, not {expected} text: {fix}", path, 1)


__all__ = ["SIGNATURES", "HEAD_BYTES", "binary_kind", "refuse_binary"]


SPECIAL_KINDS = ((stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISCHR, "a character device"),
                 (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


def refuse_special(path: str, what: str) -> None:
    """Exit 2 naming what `path` is when it exists but is no regular file (nor directory): tefq
    reads an input file more than once (staging, a restart's check) and a FIFO or device would
    block, never end, or read differently each time. `what`: "stream file", "background"."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return  # missing: the caller says so
    kind = next((name for test, name in SPECIAL_KINDS if test(mode)), None)
    if kind is not None:
        pipe = " (pipe it in: --stream - < FILE)" if what == "stream file" else ""
        raise TefqError(f"this {what} is {kind}, not a regular file: tefq reads regular files only{pipe}", path)
