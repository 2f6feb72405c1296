"""Safe file names for things users name (query names, stream IRIs) inside a directory tefq owns.

A query name may be an IRI (`REGISTER QUERY <http://ex.org/q/1>`) or hold `/`, `..` or characters
a file system refuses: written as is, `--out DIR/` would write outside DIR. `safe_name` maps any
name to one path component; `path_in` joins it to a directory. Reused for checkpoint directories.
`stream_arg` splits a `--stream [IRI=]PATH` value.
"""
from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass

_UNSAFE = re.compile(r"(?:[^A-Za-z0-9._-]|\.\.+)+")  # `..` too: harmless inside one name, but alarming
_MAX_STEM = 100  # well under the usual 255-byte limit, leaving room for an extension and a temp suffix


def safe_name(name: str) -> str:
    """One path component for `name`: kept as is when already safe (`q1`, `UC1.counts`); otherwise
    unsafe runs become `_` and a short hash of the whole name keeps distinct names distinct
    (`http://ex.org/q/1` -> `http_ex.org_q_1-3f2a9c1b`). Never empty, never starts with `.`."""
    cleaned = _UNSAFE.sub("_", name).strip("_.") or "query"
    if cleaned == name and len(name) <= _MAX_STEM and not name.startswith("."):
        return name
    digest = hashlib.sha1(name.encode("utf-8")).hexdigest()[:8]
    return f"{cleaned[:_MAX_STEM]}-{digest}"


def local_path(uri: str) -> str:
    """A `file:` URI as Spark reports files (`_metadata.file_path`, binaryFile's `path`) -> the
    local path; anything else is returned as it is."""
    from urllib.parse import unquote, urlparse

    return unquote(urlparse(uri).path) if uri.startswith("file:") else uri


def path_in(directory: str, name: str, extension: str = "") -> str:
    """`directory/<safe_name(name)>[.extension]`, guaranteed to lie inside `directory`."""
    return os.path.join(directory, safe_name(name) + (f".{extension}" if extension else ""))


@dataclass(frozen=True)
class StreamArg:
    iri: str | None  # None: feeds every FROM STREAM and every TEF pattern
    path: str


def stream_arg(value: str) -> StreamArg:
    """`--stream PATH` or `--stream IRI=PATH` (the IRI part has a scheme, or is in angle brackets)."""
    left, sep, right = value.partition("=")
    if sep and right and ("://" in left or (left.startswith("<") and left.endswith(">")) or left.startswith("urn:")):
        return StreamArg(left.strip("<>"), right)
    return StreamArg(None, value)
