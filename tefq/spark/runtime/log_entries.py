"""Spark's metadata logs in a checkpoint, read strictly: an empty or garbled entry is never "no rows".

Each query directory holds four logs of one format (a version line `v1`, then one JSON object a
line): `checkpoint/offsets/N` (what batch N reads), `checkpoint/commits/N` (batch N done),
`checkpoint/sources/K/N` (the files source K gave batch N) and `output/_spark_metadata/N` (the
files the sink committed for batch N; `N.compact` holds every entry up to N). Spark writes each
entry to a temporary file and renames it, but without an fsync a crash or a full disk can leave a
zero-length or cut entry. Read leniently, an empty sink entry meant a batch's rows were silently
missing from the output (issue 26: 38 and 44,577 rows lost with exit 0).

Recovery: the last `offsets` entry with no commit, or the last `commits` entry, is dropped (Spark
then plans or runs that batch again: what it does after a crash between two log writes). Any
other broken entry is refused with exit 2 naming it: which files it listed cannot be known.
"""
from __future__ import annotations

import json
import os
import re

from tefq.errors import TefqError

ENTRY = re.compile(r"^\d+(\.compact)?$")
VERSION = re.compile(r"^v\d+$")


def broken_entry_error(path: str, why: str) -> TefqError:
    return TefqError(f"this checkpoint log entry is {why} (a crash or a full disk cut it short): the batch it "
                     "records cannot be recovered, so the run's rows would be incomplete; use a fresh "
                     "--checkpoint (or restore this directory from a copy)", path)


def read_entry(path: str) -> list[dict]:
    """The JSON records of one log entry; exit 2 naming it if it is empty, unreadable or garbled."""
    try:
        with open(path, encoding="utf-8") as fh:
            lines = fh.read().splitlines()
    except (OSError, UnicodeDecodeError) as e:
        raise broken_entry_error(path, f"unreadable ({getattr(e, 'strerror', None) or e})") from None
    if not lines:
        raise broken_entry_error(path, "empty")
    if not VERSION.match(lines[0].strip()):
        raise broken_entry_error(path, f"garbled (it starts {lines[0][:20]!r}, not a version line)")
    records = []
    for line in (text.strip() for text in lines[1:]):
        if not line or line == "-":  # `-`: an offsets entry's source without an offset yet
            continue
        try:
            record = json.loads(line)
        except ValueError:
            raise broken_entry_error(path, "cut short or garbled (a line is not JSON)") from None
        records.append(record if isinstance(record, dict) else {})
    return records


def entries(log: str) -> list[str]:
    """The entries of one log directory, by batch number (temporary and .crc files left out)."""
    if not os.path.isdir(log):
        return []
    names = [n for n in os.listdir(log) if ENTRY.match(n)]
    return [os.path.join(log, n) for n in sorted(names, key=lambda n: int(n.split(".")[0]))]


def broken(path: str) -> bool:
    try:
        read_entry(path)
    except TefqError:
        return True
    return False


def drop_entry(path: str) -> None:
    """Remove a log entry and its checksum file (`.N.crc`)."""
    os.remove(path)
    crc = os.path.join(os.path.dirname(path), "." + os.path.basename(path) + ".crc")
    if os.path.exists(crc):
        os.remove(crc)


def check_query_logs(query_dir: str) -> list[str]:
    """Check one query's logs (see the module doc); returns the entries dropped to recover."""
    ck = os.path.join(query_dir, "checkpoint")
    offsets, commits = entries(os.path.join(ck, "offsets")), entries(os.path.join(ck, "commits"))
    committed = {os.path.basename(c) for c in commits}
    dropped = []
    if commits and broken(commits[-1]):
        drop_entry(commits[-1])
        dropped.append(commits.pop())
        committed.discard(os.path.basename(dropped[-1]))
    if offsets and os.path.basename(offsets[-1]) not in committed and broken(offsets[-1]):
        drop_entry(offsets[-1])
        dropped.append(offsets.pop())
    sources = os.path.join(ck, "sources")
    logs = [os.path.join(sources, s) for s in sorted(os.listdir(sources))] if os.path.isdir(sources) else []
    planned = {os.path.basename(o) for o in offsets}
    for log in logs:  # a source logs its files before the batch's offsets entry is written
        last = entries(log)[-1:]
        if last and os.path.basename(last[0]) not in planned and broken(last[0]):
            drop_entry(last[0])
            dropped.append(last[0])
    for entry in offsets + commits + [e for log in logs for e in entries(log)] \
            + entries(os.path.join(query_dir, "output", "_spark_metadata")):
        read_entry(entry)
    return dropped


def check_logs(directory: str) -> list[str]:
    """Check the logs of every query in a checkpoint directory; returns the entries dropped."""
    if not os.path.isdir(directory):
        return []
    return [e for q in sorted(os.listdir(directory)) if os.path.isdir(os.path.join(directory, q, "checkpoint"))
            for e in check_query_logs(os.path.join(directory, q))]
